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
import math
import random
from collections.abc import Sequence
from typing import TypeAlias

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import MetroMap

GraphLike: TypeAlias = "MetroMap | nx.Graph"
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


# --------------------------------------------------------------------------------------------
# Appendix B.4, Algorithm 1: balanced query allocation for paper-scale generation

SPLITS = ("train", "test")
TEST_SHARE = 0.2  # 4:1 training-test queries
PAPER_TOTALS = {"metromap": 8000, "travelmap": 8400}
PAPER_ALPHA = 1.5
PAPER_Q_MIN = 5


def allocate_queries(
    cities: Sequence[tuple[str, str, str, int]],
    total: int,
    alpha: float = PAPER_ALPHA,
    q_min: int = PAPER_Q_MIN,
) -> dict[str, int]:
    """Algorithm 1 of appendix B.4: how many queries each city (map) gets.

    `cities` are (name, Map Difficulty "Easy"|"Medium"|"Hard", split "train"|"test", vertex
    count). Each group is walked from its smallest city to its largest (ties by input order), so
    that the city that absorbs the group's rounding (the last) is the one that best can: walked in
    an arbitrary order, a small last city is often left below q_min by its group's rounding.

    Phase 1: base = floor(Q/3); T_Medium = T_Hard = base, T_Easy = Q - 2 base.
    Phase 2: per difficulty d, target_train = floor(0.8 T_d) and target_test = T_d - target_train;
    within each (d, split) group a city gets max(round(v^alpha / W x target), q_min), W the group's
    sum of v^alpha, and the group's last city the remainder.
    Phase 3 (strict 4:1): the test excess E = (test queries) - round(0.2 Q) is taken from the last
    Easy-test city and given to the last Medium-train and Hard-train cities (E/2 each).

    Choices where the paper is silent: `round` is Python's (half to even); counts stay integers,
    so Medium gets floor(E/2) and Hard the rest; a compensation that would push the Easy-test city
    below q_min takes the shortfall from the cities before it in its group (step 7's "second-to-last
    city"), and one that would leave a receiving train city below q_min moves to the city before it
    (Algorithm 1's test). A group with queries to place but no city, or whose minimums exceed its
    target, cannot be allocated and is a GeoevalError naming it.
    """
    if total < 0 or q_min < 0:
        raise GeoevalError(f"total and q_min must be >= 0, got {total} and {q_min}")
    groups: dict[tuple[str, str], list[tuple[str, int]]] = {(d, s): [] for d in LEVELS for s in SPLITS}
    for name, level, split, vertices in cities:
        if (level, split) not in groups:
            raise GeoevalError(
                f"city {name!r}: level must be one of {LEVELS} and split one of {SPLITS}, got {level!r}, {split!r}"
            )
        groups[(level, split)].append((name, int(vertices)))
    for members in groups.values():
        members.sort(key=lambda c: c[1])  # stable: ties keep the input order
    base = total // 3
    targets = {"Easy": total - 2 * base, "Medium": base, "Hard": base}
    q: dict[str, int] = {}
    for d in LEVELS:
        train = math.floor(targets[d] * (1 - TEST_SHARE))
        for s, target in (("train", train), ("test", targets[d] - train)):
            members = groups[(d, s)]
            if not members:
                if target:
                    raise GeoevalError(f"no {d} {s} city to take its {target} queries")
                continue
            weight = sum(v**alpha for _n, v in members)
            assigned = 0
            for i, (name, v) in enumerate(members):
                if i < len(members) - 1:
                    share = round((v**alpha) / weight * target) if weight else 0
                    q[name] = max(share, q_min)
                else:
                    q[name] = target - assigned
                    if q[name] < q_min:
                        raise GeoevalError(
                            f"the {d} {s} cities' minimum of {q_min} queries each exceeds "
                            f"the group's {target}; lower q_min or the city count"
                        )
                assigned += q[name]
    excess = sum(q[n] for d in LEVELS for n, _v in groups[(d, "test")]) - round(total * TEST_SHARE)
    if excess > 0:
        _take(q, [n for n, _v in groups[("Easy", "test")]], excess, q_min)
        half = excess // 2
        for d, amount in (("Medium", half), ("Hard", excess - half)):
            train_cities = [n for n, _v in groups[(d, "train")]]
            if not train_cities:
                raise GeoevalError(f"no {d} train city to receive {amount} compensated queries")
            receiver = train_cities[-1]
            if q[receiver] + amount < q_min and len(train_cities) > 1:
                receiver = train_cities[-2]
            q[receiver] += amount
    return q


def _take(q: dict[str, int], group: list[str], amount: int, q_min: int) -> None:
    """Remove `amount` queries from the last cities of `group`, none going below q_min."""
    for name in reversed(group):
        spare = min(amount, q[name] - q_min)
        if spare > 0:
            q[name] -= spare
            amount -= spare
        if amount == 0:
            return
    raise GeoevalError(f"the Easy test cities cannot give up {amount} more queries without going below {q_min}")


def train_test_split(scores: Sequence[float], seed: int) -> list[str]:
    """Appendix C.2's map split: sort by difficulty score, group every three consecutive maps, and
    send one map of each group (drawn with `random.Random(seed)`) to the test set, the other two to
    training (a trailing group of one or two maps goes to training). Returns "train"/"test" per map."""

    rng = random.Random(seed)
    order = sorted(range(len(scores)), key=lambda i: (scores[i], i))
    out = ["train"] * len(scores)
    for g in range(0, len(order) - len(order) % 3, 3):
        out[order[g + rng.randrange(3)]] = "test"
    return out
