"""The map quality checks of MapTab appendices B.5 / B.6: structure (`run_quality_checks`), the
Metromap attribute ranges of E.1 (`range_violations`; Travelmap's are
`travel.travel_range_violations`) and the layout geometry (`layout_violations`), with
the segment geometry they use.
"""

from __future__ import annotations

import math
from collections import defaultdict

import networkx as nx

from geoeval.suites.maptab.graph import MetroMap

# Layout limits checked by `layout_violations` (and guaranteed by the generator).
LAYOUT_MARGIN = 120.0
MIN_ADJACENT_DISTANCE = 140.0
MIN_STATION_DISTANCE = 120.0
SEGMENT_CLEARANCE = 30.0


def run_quality_checks(m: MetroMap) -> list[str]:
    """The automatic validation of appendix B.5 (Metromap) / B.6 (Travelmap): a list of
    violations, empty when the map is fine.

    Checked: duplicate stations and duplicate edges (A-B and B-A are the same edge); every edge
    endpoint is a station and every station is on some edge; each edge's lines are lines of both
    endpoints; a station's lines equal the lines of its edges; transfer consistency (a station is on
    >= 2 lines iff its Transfer Time > 0); connectivity; and the identity
    edges + lines - loops = station occurrences, where an edge is counted once per line running on
    it and a station once per line it belongs to (a loop line is a line whose edges form one cycle).
    The Line-based checks apply to Metromap only.
    """
    problems: list[str] = []
    for key, st in m.stations.items():
        if key != st.name:
            problems.append(f"station key {key!r} differs from its name {st.name!r}")
    lowered: dict[str, str] = {}
    for name in m.stations:
        norm = name.strip().lower()
        if norm in lowered:
            problems.append(f"duplicate station: {name!r} and {lowered[norm]!r}")
        lowered[norm] = name

    seen: dict[frozenset[str], str] = {}
    for e in m.edges:
        edge_key = frozenset((e.a, e.b))
        if e.a == e.b:
            problems.append(f"edge {e.label!r} is a self-loop")
        if edge_key in seen:
            problems.append(f"duplicate edge: {e.label!r} repeats {seen[edge_key]!r}")
        seen[edge_key] = e.label
        for end in (e.a, e.b):
            if end not in m.stations:
                problems.append(f"edge {e.label!r}: endpoint {end!r} is not a station")

    on_edges = {x for e in m.edges for x in (e.a, e.b)}
    for name in m.stations:
        if name not in on_edges:
            problems.append(f"station {name!r} is on no edge")

    g = nx.Graph()
    g.add_nodes_from(m.stations)
    g.add_edges_from((e.a, e.b) for e in m.edges if e.a in m.stations and e.b in m.stations)
    if g.number_of_nodes() and not nx.is_connected(g):
        problems.append(f"the map is not connected ({nx.number_connected_components(g)} components)")

    if m.scenario != "metromap":
        return problems

    edge_lines_of_station: dict[str, set[str]] = defaultdict(set)
    for e in m.edges:
        if not e.lines:
            problems.append(f"edge {e.label!r} has no line")
        for end in (e.a, e.b):
            edge_lines_of_station[end].update(e.lines)
            if end in m.stations and not set(e.lines) <= set(m.stations[end].lines):
                problems.append(
                    f"edge {e.label!r} runs on {sorted(e.lines)} but station {end!r} is on "
                    f"{sorted(m.stations[end].lines)}"
                )
    for name, st in m.stations.items():
        if name in edge_lines_of_station and set(st.lines) != edge_lines_of_station[name]:
            problems.append(
                f"station {name!r} lists lines {sorted(st.lines)} but its edges run on "
                f"{sorted(edge_lines_of_station[name])}"
            )
        if (len(st.lines) > 1) != (st.transfer_time > 0):
            problems.append(f"station {name!r}: {len(st.lines)} line(s) but Transfer Time {st.transfer_time}")

    line_edges: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for e in m.edges:
        for ln in e.lines:
            line_edges[ln].append((e.a, e.b))
    loops = 0
    for pairs in line_edges.values():
        lg = nx.Graph(pairs)
        if nx.is_connected(lg) and all(d == 2 for _, d in lg.degree()):
            loops += 1
    edge_occurrences = sum(len(p) for p in line_edges.values())
    station_occurrences = sum(len(st.lines) for st in m.stations.values())
    if edge_occurrences + len(line_edges) - loops != station_occurrences:
        problems.append(
            f"edges ({edge_occurrences}) + lines ({len(line_edges)}) - loops ({loops}) != "
            f"station occurrences ({station_occurrences})"
        )

    for ln, line in m.lines.items():
        seq = list(line.stations)
        pairs = list(zip(seq, seq[1:])) + ([(seq[-1], seq[0])] if line.loop and len(seq) > 2 else [])
        for a, b in pairs:
            between = m.edge_between(a, b)
            if between is None or ln not in between.lines:
                problems.append(f"line {ln!r}: no edge {a}-{b} on that line")
        if ln in line_edges and len(pairs) != len(line_edges[ln]):
            problems.append(f"line {ln!r} lists {len(pairs)} consecutive pairs but {len(line_edges[ln])} edges")
    return problems


def range_violations(m: MetroMap) -> list[str]:
    """Attribute values outside the Metromap ranges of appendix E.1, or not on the 0.01 grid."""
    problems: list[str] = []

    def check(what: str, value: float, lo: float, hi: float) -> None:
        if not lo <= value <= hi:
            problems.append(f"{what} = {value} is outside [{lo}, {hi}]")
        if abs(value * 100 - round(value * 100)) > 1e-6:
            problems.append(f"{what} = {value} has more than 2 decimals")

    for e in m.edges:
        check(f"edge {e.label} Time", e.time, 2.0, 3.0)
        check(f"edge {e.label} Price", e.price, 0.0, 1.5)
        check(f"edge {e.label} Comfort Level", e.comfort, 0.0, 1.0)
        check(f"edge {e.label} Reliability", e.reliability, 0.0, 0.0)
    for st in m.stations.values():
        check(f"station {st.name} Time", st.time, 0.5, 2.0)
        check(f"station {st.name} Price", st.price, 0.0, 0.0)
        check(f"station {st.name} Comfort Level", st.comfort, 0.0, 1.0)
        check(f"station {st.name} Reliability", st.reliability, 0.5, 1.0)
        if st.is_transfer:
            check(f"station {st.name} Transfer Time", st.transfer_time, 5, 15)
            if st.transfer_time != int(st.transfer_time):
                problems.append(f"station {st.name} Transfer Time {st.transfer_time} is not an integer")
    return problems


def layout_violations(
    m: MetroMap,
    *,
    margin: float = LAYOUT_MARGIN,
    min_adjacent: float = MIN_ADJACENT_DISTANCE,
    min_distance: float = MIN_STATION_DISTANCE,
    clearance: float = SEGMENT_CLEARANCE,
) -> list[str]:
    """Geometric problems of the layout that a renderer or a perception agent would trip on:
    stations inside the margin, stations too close, adjacent stations too close, a segment passing
    within `clearance` px of a station that is not its endpoint, two segments overlapping
    collinearly, and two segments crossing away from a shared station."""
    problems: list[str] = []
    st = list(m.stations.values())
    for s in st:
        if not (margin <= s.x <= m.width - margin and margin <= s.y <= m.height - margin):
            problems.append(f"station {s.name!r} at ({s.x}, {s.y}) is inside the {margin}px margin")
    for i, s in enumerate(st):
        for u in st[i + 1 :]:
            d = math.hypot(s.x - u.x, s.y - u.y)
            if d < min_distance:
                problems.append(f"stations {s.name!r} and {u.name!r} are {d:.1f}px apart")
    segments = []
    for e in m.edges:
        if e.a not in m.stations or e.b not in m.stations:
            continue
        p, q = m.stations[e.a], m.stations[e.b]
        d = math.hypot(p.x - q.x, p.y - q.y)
        if d < min_adjacent:
            problems.append(f"adjacent stations of edge {e.label!r} are {d:.1f}px apart")
        segments.append((e, (p.x, p.y), (q.x, q.y)))
        for s in st:
            if s.name in (e.a, e.b):
                continue
            if point_segment_distance((s.x, s.y), (p.x, p.y), (q.x, q.y)) < clearance:
                problems.append(f"edge {e.label!r} passes within {clearance}px of station {s.name!r}")
    for i, (e1, p1, q1) in enumerate(segments):
        for e2, p2, q2 in segments[i + 1 :]:
            shared = {e1.a, e1.b} & {e2.a, e2.b}
            if collinear_overlap(p1, q1, p2, q2):
                problems.append(f"edges {e1.label!r} and {e2.label!r} overlap collinearly")
            elif not shared and segments_intersect(p1, q1, p2, q2):
                problems.append(f"edges {e1.label!r} and {e2.label!r} cross away from a station")
    return problems


def point_segment_distance(p, a, b) -> float:
    ax, ay = a
    bx, by = b
    px, py = p
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    if length2 == 0:
        return math.hypot(px - ax, py - ay)
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length2))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def collinear_overlap(p1, q1, p2, q2, eps: float = 1e-6) -> bool:
    """Both segments on one line and sharing a stretch of positive length."""
    if abs(_cross(p1, q1, p2)) > eps or abs(_cross(p1, q1, q2)) > eps:
        return False
    dx, dy = q1[0] - p1[0], q1[1] - p1[1]
    length = math.hypot(dx, dy)
    if length == 0:
        return False
    ux, uy = dx / length, dy / length

    def proj(p):
        return (p[0] - p1[0]) * ux + (p[1] - p1[1]) * uy

    lo2, hi2 = sorted((proj(p2), proj(q2)))
    return min(length, hi2) - max(0.0, lo2) > eps


def segments_intersect(p1, q1, p2, q2, eps: float = 1e-9) -> bool:
    d1, d2 = _cross(p2, q2, p1), _cross(p2, q2, q1)
    d3, d4 = _cross(p1, q1, p2), _cross(p1, q1, q2)
    if ((d1 > eps and d2 < -eps) or (d1 < -eps and d2 > eps)) and (
        (d3 > eps and d4 < -eps) or (d3 < -eps and d4 > eps)
    ):
        return True
    # touching (an endpoint lying on the other segment) also counts as meeting away from a station
    for p, a, b, d in ((p1, p2, q2, d1), (q1, p2, q2, d2), (p2, p1, q1, d3), (q2, p1, q1, d4)):
        if abs(d) <= eps and point_segment_distance(p, a, b) <= 1e-6:
            return True
    return False
