"""Answers computed on a perceived map (`perceived.PerceivedMap`) rather than on the true one.

The offline perception baseline reads a map image once (`reader.read_map_image`) and then
answers from what it saw: the MapTab route question (`route_on_perceived`) and the Map-only and
Map+Mix_tab QA questions (`answer_from_image`). Station names from a question are matched to the
OCR'd names by similarity, since OCR misreads some letters.
"""

from __future__ import annotations

import difflib
import heapq
import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from geoeval.suites.maptab.perception.perceived import PerceivedMap

_MATCH_MIN_RATIO = 0.5


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower().strip(), b.lower().strip()).ratio()


def match_station_name(query: str, names: list[str] | tuple[str, ...]) -> str | None:
    """The perceived name most similar to `query` (difflib ratio, case-insensitive), or
    None when even the best is below 0.5."""
    best, best_ratio = None, _MATCH_MIN_RATIO
    for name in names:
        r = _similarity(query, name)
        if r >= best_ratio and (best is None or r > best_ratio):
            best, best_ratio = name, r
    return best


def route_on_perceived(pm: PerceivedMap, source: str, target: str) -> str | None:
    """The fewest-station route from `source` to `target` on the perceived graph.

    Among the shortest routes it takes one with the fewest line changes, where a line is a
    colour; intermediate stations at which the colour changes get "(transfer)". Stations
    are written with their OCR'd names, except the endpoints, which keep the question's
    spelling. None when an endpoint cannot be matched or no path exists.
    """
    names = list(pm.stations)
    s = match_station_name(source, names)
    t = match_station_name(target, names)
    if s is None or t is None:
        return None
    if s == t:
        # The same station for two different names means one of them was not read.
        return source if _similarity(source, target) == 1.0 else None

    adjacency: dict[str, list[tuple[str, tuple[str, ...]]]] = {n: [] for n in names}
    for a, b, colours in pm.edges:
        cs = colours or ("?",)
        adjacency.setdefault(a, []).append((b, cs))
        adjacency.setdefault(b, []).append((a, cs))

    # Dijkstra over (station, colour of the arriving edge), cost = (edges, transfers).
    start = (s, "")
    dist: dict[tuple[str, str], tuple[int, int]] = {start: (0, 0)}
    prev: dict[tuple[str, str], tuple[str, str]] = {}
    heap: list[tuple[int, int, str, str]] = [(0, 0, s, "")]
    while heap:
        n_edges, n_transfers, u, cu = heapq.heappop(heap)
        if dist.get((u, cu)) != (n_edges, n_transfers):
            continue
        if u == t:
            break
        for v, colours in adjacency.get(u, []):
            for c in colours:
                cost = (n_edges + 1, n_transfers + (1 if cu and c != cu else 0))
                if cost < dist.get((v, c), (math.inf, math.inf)):
                    dist[(v, c)] = cost
                    prev[(v, c)] = (u, cu)
                    heapq.heappush(heap, (cost[0], cost[1], v, c))
    ends = [(cost, key) for key, cost in dist.items() if key[0] == t]
    if not ends:
        return None
    _, state = min(ends)
    path: list[tuple[str, str]] = [state]
    while state != start:
        state = prev[state]
        path.append(state)
    path.reverse()

    parts = []
    for idx, (station, colour) in enumerate(path):
        if idx == 0:
            parts.append(source)
        elif idx == len(path) - 1:
            parts.append(target)
        else:
            changes = path[idx + 1][1] != colour
            parts.append(f"{station}(transfer)" if changes else station)
    return "-".join(parts)


# ---------------------------------------------------------------------------- QA from the image

# What a colour word in a line name ("Red Line", "红线") looks like, for finding that line's strokes.
COLOUR_WORDS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "blue": (0, 100, 210),
    "green": (0, 160, 80),
    "orange": (245, 145, 30),
    "purple": (140, 40, 170),
    "pink": (228, 0, 124),
    "teal": (0, 160, 160),
    "brown": (160, 82, 45),
    "yellow": (245, 196, 0),
    "navy": (31, 58, 147),
    "红": (220, 30, 30),
    "蓝": (0, 100, 210),
    "绿": (0, 160, 80),
    "橙": (245, 145, 30),
    "紫": (140, 40, 170),
    "粉": (228, 0, 124),
    "青": (0, 160, 160),
    "棕": (160, 82, 45),
    "黄": (245, 196, 0),
    "藏青": (31, 58, 147),
}


def line_colour(pm: PerceivedMap, line_name: str) -> str | None:
    """The perceived line colour a line name's colour word points to (nearest in RGB), or None
    when the name has no colour word or nothing was perceived."""
    low = line_name.lower()
    words = sorted((w for w in COLOUR_WORDS if w in low), key=len, reverse=True)
    if not words or not pm.line_colors:
        return None
    want = np.array(COLOUR_WORDS[words[0]], dtype=float)

    def rgb(h: str) -> np.ndarray:
        return np.array([int(h[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    return min(pm.line_colors, key=lambda c: float(np.linalg.norm(rgb(c) - want)))


def _colour_path(pm: PerceivedMap, a: str, b: str) -> list[str] | None:
    """The fewest-edge path from a to b that stays on one line colour (the line they share)."""
    best: list[str] | None = None
    for colour in pm.line_colors:
        adjacency: dict[str, list[str]] = {}
        for x, y, colours in pm.edges:
            if colour in colours:
                adjacency.setdefault(x, []).append(y)
                adjacency.setdefault(y, []).append(x)
        prev: dict[str, str | None] = {a: None}
        queue = [a]
        for u in queue:
            for v in adjacency.get(u, []):
                if v not in prev:
                    prev[v] = u
                    queue.append(v)
        if b in prev:
            path: list[str] = []
            cur: str | None = b
            while cur is not None:
                path.append(cur)
                cur = prev[cur]
            if best is None or len(path) < len(best):
                best = path[::-1]
    return best


def _table_value(rows: list[dict[str, Any]], perceived: str, column: str) -> float | None:
    """A column of the Vertex Table row whose name matches a perceived name."""
    names = [str(r.get("Vertex", "")) for r in rows]
    match = match_station_name(perceived, names)
    if match is None:
        return None
    value = rows[names.index(match)].get(column)
    return float(value) if isinstance(value, (int, float)) else None


def answer_from_image(pm: PerceivedMap, parsed: Any, tables: dict[str, list[dict[str, Any]]]) -> str | None:
    """The answer text of a Map-only or Map+Mix_tab QA question (`qa.wording.ParsedQuestion`) from the
    perceived map, with values from the Vertex Table for Map+Mix_tab; None when what it needs was
    not read (an unmatched station name, a line colour not found)."""
    import networkx as nx

    from geoeval.suites.maptab.qa.answers import KINDS, Answer

    p, qa_type = parsed.params, parsed.qa_type
    kind = KINDS[parsed.scenario][qa_type]
    names = list(pm.stations)
    rows = tables.get("Vertex Table", [])
    g = nx.Graph()
    g.add_nodes_from(names)
    g.add_edges_from((x, y) for x, y, _c in pm.edges)

    def station(key: str) -> str | None:
        return match_station_name(p[key], names)

    def done(value: float | None) -> str | None:
        return None if value is None else Answer(float(value), kind).text

    if parsed.scenario == "metromap":
        if qa_type == "M-GP":
            return done(len(pm.line_colors))
        if qa_type in ("M-LP", "MM-LP"):
            a, b = station("a"), station("b")
            path = _colour_path(pm, a, b) if a and b and a != b else None
            if path is None:
                return None
            if qa_type == "M-LP":
                return done(len(path) - 2)
            values = [_table_value(rows, s, "Reliability") for s in path]
            return None if None in values else done(sum(values) / len(values))  # type: ignore[arg-type]
        if qa_type == "M-SR":
            a, colour = station("a"), line_colour(pm, p["line"])
            if a is None or colour is None:
                return None
            return done(int(colour in pm.stations[a].line_colors))
        if qa_type == "MM-GP":
            totals = []
            for colour in pm.line_colors:
                values = [_table_value(rows, s.name, "Time") for s in pm.stations.values() if colour in s.line_colors]
                totals.append(sum(v for v in values if v is not None))
            return done(max(totals)) if totals else None
        if qa_type == "MM-SR":
            if len(pm.line_colors) < 2:
                return done(1)
            cx, cy = line_colour(pm, p["line"]), line_colour(pm, p["line2"])
            if cx is None or cy is None:
                return None
            shared = [s.name for s in pm.stations.values() if cx in s.line_colors and cy in s.line_colors]
            times = [t for t in (_table_value(rows, s, "Transfer Time") for s in shared) if t is not None]
            return done(min(times) if times else 0)
        return None
    if qa_type == "M-GP":
        return done(len(names))
    if qa_type == "MM-GP":
        return done(int(len(rows) == len(names)))
    a = station("a")
    if a is None:
        return None
    if qa_type == "M-LP":
        bridges = {frozenset(e) for e in nx.bridges(g)}
        return done(int(any(frozenset((a, v)) not in bridges for v in g.neighbors(a))))
    if qa_type == "M-SR":
        return done(g.degree(a))
    if qa_type == "MM-SR":
        neighbour_prices = [_table_value(rows, v, "Price") for v in g.neighbors(a)]
        prices = [x for x in neighbour_prices if x is not None]
        return done(min(prices)) if prices else None
    if qa_type == "MM-LP":
        b = station("b")
        if b is None or not nx.has_path(g, a, b):
            return None
        path_times = [_table_value(rows, v, "Time") for path in nx.all_shortest_paths(g, a, b) for v in path]
        return done(int(any(t is not None and t < p["n"] for t in path_times)))
    return None
