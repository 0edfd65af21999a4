"""Map and query difficulty (MapTab appendix C.2).

Map difficulty: Graph Size GS = |V| + |E|; Weighted Average Shortest Path WASP = the node-count
weighted mean of each connected component's average shortest-path length (hop counts, so for a
connected graph it is the ordinary average shortest path length); Meshedness Coefficient
MC = (|E| - |V| + 2) / |E|. Metromap scores a map by the mean of GS and WASP, each min-max
normalised over the maps being classified; Travelmap also averages in MC. Scores are split 1:1:1
into Easy / Medium / Hard by `tercile_levels`.

Query difficulty: SPLI(s, t) = number of edges on a shortest s-t path (Metromap);
SPCI(s, t) = mean edge count over all simple s-t paths (Travelmap). Enumerating simple paths is
exponential in the worst case, so `spci` stops after `max_paths` paths (default 100,000) and
returns the mean over those it enumerated (in networkx's deterministic DFS order);
`simple_path_stats` also says whether it stopped early.

Choices where the paper is silent
---------------------------------
* Graph distances are hop counts (the paper's WASP text uses d(u, v) with no edge weight).
* A single-node component has average shortest path 0; MC of an edgeless graph is 0.
* Min-max normalisation maps every value to 0 when all maps have the same value.
* `tercile_levels` sorts ascending by value (ties broken by input position, so the split is
  deterministic), gives the top floor(n/3) "Hard", the next floor(n/3) "Medium" and the rest
  "Easy" -- the remainder goes to Easy as in B.4 (T_Easy = Q - 2*floor(Q/3)).
"""

from __future__ import annotations

import itertools
from typing import Sequence

import networkx as nx

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.graph import MetroMap

GraphLike = MetroMap | nx.Graph
LEVELS = ("Easy", "Medium", "Hard")
DEFAULT_MAX_SIMPLE_PATHS = 100_000


def to_graph(g: GraphLike) -> nx.Graph:
    """The undirected station graph of a map (a networkx graph is returned as is)."""
    if isinstance(g, nx.Graph):
        return g
    out = nx.Graph()
    out.add_nodes_from(g.stations)
    out.add_edges_from((e.a, e.b) for e in g.edges)
    return out


def gs(g: GraphLike) -> int:
    """Graph Size |V| + |E|."""
    graph = to_graph(g)
    return graph.number_of_nodes() + graph.number_of_edges()


def wasp(g: GraphLike) -> float:
    """Weighted Average Shortest Path (Eq. 4): sum_i |C_i| * ASPD(C_i) / |V|."""
    graph = to_graph(g)
    n = graph.number_of_nodes()
    if n == 0:
        return 0.0
    total = 0.0
    for comp in nx.connected_components(graph):
        sub = graph.subgraph(comp)
        aspd = nx.average_shortest_path_length(sub) if len(comp) > 1 else 0.0
        total += len(comp) * aspd
    return total / n


def mc(g: GraphLike) -> float:
    """Meshedness Coefficient (Eq. 5): (|E| - |V| + 2) / |E|."""
    graph = to_graph(g)
    e = graph.number_of_edges()
    return (e - graph.number_of_nodes() + 2) / e if e else 0.0


def spli(g: GraphLike, s: str, t: str) -> int:
    """Shortest Path Length Index: edges on a shortest s-t path."""
    graph = to_graph(g)
    try:
        return nx.shortest_path_length(graph, s, t)
    except (nx.NetworkXNoPath, nx.NodeNotFound) as exc:
        raise GeoevalError(f"no path between {s!r} and {t!r}") from exc


def simple_path_stats(
    g: GraphLike, s: str, t: str, max_paths: int = DEFAULT_MAX_SIMPLE_PATHS
) -> tuple[float, int, bool]:
    """(mean edge count, number of paths enumerated, stopped early) over the simple s-t paths."""
    graph = to_graph(g)
    if s not in graph or t not in graph:
        raise GeoevalError(f"unknown station {s if s not in graph else t!r}")
    if s == t:
        return 0.0, 1, False
    total = count = 0
    paths = nx.all_simple_paths(graph, s, t)
    for path in itertools.islice(paths, max_paths):
        total += len(path) - 1
        count += 1
    truncated = count == max_paths and next(paths, None) is not None
    if count == 0:
        raise GeoevalError(f"no path between {s!r} and {t!r}")
    return total / count, count, truncated


def spci(g: GraphLike, s: str, t: str, max_paths: int = DEFAULT_MAX_SIMPLE_PATHS) -> float:
    """Simple Path Complexity Index (Eq. 7): mean edge count of the simple s-t paths (over at most
    `max_paths` of them)."""
    return simple_path_stats(g, s, t, max_paths)[0]


def _minmax(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in values]


def map_difficulty_score(maps: Sequence[GraphLike], scenario: str = "metromap") -> list[float]:
    """Per map, the mean of the min-max normalised indices over `maps`: GS and WASP for Metromap,
    GS, WASP and MC for Travelmap."""
    if not maps:
        return []
    columns = [_minmax([gs(m) for m in maps]), _minmax([wasp(m) for m in maps])]
    if scenario == "travelmap":
        columns.append(_minmax([mc(m) for m in maps]))
    elif scenario != "metromap":
        raise GeoevalError(f"scenario must be 'metromap' or 'travelmap', got {scenario!r}")
    return [sum(col[i] for col in columns) / len(columns) for i in range(len(maps))]


def tercile_levels(values: Sequence[float]) -> list[str]:
    """Easy / Medium / Hard for each value, split 1:1:1 by ascending value (see module docstring)."""
    n = len(values)
    order = sorted(range(n), key=lambda i: (values[i], i))
    third = n // 3
    levels = [""] * n
    for rank, i in enumerate(order):
        if rank >= n - third:
            levels[i] = "Hard"
        elif rank >= n - 2 * third:
            levels[i] = "Medium"
        else:
            levels[i] = "Easy"
    return levels
