"""The synthetic Travelmap generator (MapTab appendices B.6 and E.1) and its range checks.

`generate_travel_map(seed)` builds one connected graph of scenic spots (appendix B.6: "a single
fully connected graph"), with the Travelmap attributes of appendix E.1:
* Layout: spots on random points of the same grid as the metro generator (pitch >= 160 px, margin
  140 px). Edges are the Euclidean minimum spanning tree of the spots (a planar, connected
  skeleton, like roads between neighbouring attractions) plus, as the paper adds "loop connections
  ... to improve the overall topological completeness", the shortest extra segments that cross no
  edge and pass no other spot closer than SEGMENT_CLEARANCE, until `extra_edges` × spots of them
  (at least one, so every map has a loop; Angkor Wat has 29 edges on 26 spots). Hence
  `layout_violations` finds nothing.
* Hubs: `n_hubs` spots (drawn from the range) are transport hubs, named "<Name> Airport" or
  "<Name> Station" (alternately); E.1: their Time is 0 and their Price one of 100, 200, 300. The
  route cost rule that goes with them ("transportation station costs are counted only at the
  final destination") is `routing.cost`'s.
* Edge_tab (no map annotations to read, so E.1's fallback): Time U{10..60} min; Price an integer
  in 10..80 with smaller values more frequent (10 + floor(71 u^2), u uniform); Comfort Level one
  decimal in 1.0..5.0 with >= 3.0 the majority (70 %: U{3.0..5.0}, else U{1.0..2.9});
  Reliability a/365 rounded to 6 decimals, a in 1..365 with a > 180 more frequent (70 %:
  U{181..365}, else U{1..180}).
* Vertex_tab: Time U{30..180} min (hubs 0); Price a multiple of 5 in 10..200 (hubs 100/200/300);
  Comfort Level as for edges; Reliability a/365 with a in 60..365, a > 180 at 70 %.
* Names: as the metro generator's (pairwise difflib ratio < 0.5 in both orders), hub suffixes
  included.
"""

from __future__ import annotations

import difflib
import math
import random

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.generator.checks import (
    SEGMENT_CLEARANCE,
    collinear_overlap,
    point_segment_distance,
    segments_intersect,
)
from geoeval.suites.maptab.generator.layout import _Grid
from geoeval.suites.maptab.generator.names import NAME_SIMILARITY_LIMIT, _station_names
from geoeval.suites.maptab.graph import Edge, MetroMap, Station

TRAVEL_HUB_KINDS = ("Airport", "Station")
TRAVEL_HUB_PRICES = (100, 200, 300)
MAX_TRAVEL_LAYOUT_ATTEMPTS = 200


def _comfort_rating(rng: random.Random) -> float:
    return rng.randint(30, 50) / 10 if rng.random() < 0.7 else rng.randint(10, 29) / 10


def _reliability_days(rng: random.Random, low: int) -> float:
    a = rng.randint(181, 365) if rng.random() < 0.7 else rng.randint(low, 180)
    return round(a / 365, 6)


def _dissimilar(names: list[str]) -> bool:
    lowered = [n.lower() for n in names]
    return not any(
        difflib.SequenceMatcher(None, a, b).ratio() >= NAME_SIMILARITY_LIMIT
        for i, a in enumerate(lowered)
        for j, b in enumerate(lowered)
        if i != j
    )


def _spot_names(rng: random.Random, n: int, n_hubs: int) -> list[str]:
    """n names, the last `n_hubs` of them hub names, pairwise dissimilar as station names are."""
    for _ in range(MAX_TRAVEL_LAYOUT_ATTEMPTS):
        names = _station_names(rng, n)
        for i in range(n_hubs):
            names[n - n_hubs + i] = f"{names[n - n_hubs + i].split(' ')[0]} {TRAVEL_HUB_KINDS[i % 2]}"
        if _dissimilar(names):
            return names
    raise GeoevalError(f"could not draw {n} dissimilar spot names with {n_hubs} hubs")  # pragma: no cover


def _segment_fits(
    p, q, placed: list[tuple[tuple[float, float], tuple[float, float]]], points: list[tuple[float, float]]
) -> bool:
    """Whether segment p-q crosses or overlaps no placed segment and clears every other point."""
    for a, b in placed:
        if collinear_overlap(p, q, a, b):
            return False
        if not ({p, q} & {a, b}) and segments_intersect(p, q, a, b):
            return False
    return all(point_segment_distance(x, p, q) >= SEGMENT_CLEARANCE for x in points if x not in (p, q))


def generate_travel_map(
    seed: int,
    *,
    n_spots: tuple[int, int] = (12, 24),
    n_hubs: tuple[int, int] = (0, 2),
    extra_edges: float = 0.15,
    width: int = 1200,
    height: int = 1400,
    name: str | None = None,
) -> MetroMap:
    """A connected synthetic Travelmap, deterministic for `seed` (see the module docstring).
    The default size is about the paper's average Travelmap image (1,126 x 1,352)."""
    lo, hi = n_spots
    if not 3 <= lo <= hi:
        raise GeoevalError(f"n_spots must satisfy 3 <= low <= high, got {n_spots}")
    if not 0 <= n_hubs[0] <= n_hubs[1] < lo:
        raise GeoevalError(f"n_hubs must satisfy 0 <= low <= high < n_spots low, got {n_hubs}")
    if not 0.0 <= extra_edges <= 1.0:
        raise GeoevalError(f"extra_edges must be in [0, 1], got {extra_edges}")
    grid = _Grid(width, height)
    if hi > grid.cols * grid.rows:
        raise GeoevalError(f"a {width}x{height} map fits at most {grid.cols * grid.rows} spots; lower n_spots")
    rng = random.Random(seed)
    n = rng.randint(lo, hi)
    hubs = rng.randint(*n_hubs)
    cells = [(c, r) for r in range(grid.rows) for c in range(grid.cols)]
    for _ in range(MAX_TRAVEL_LAYOUT_ATTEMPTS):
        points = [grid.xy(c) for c in rng.sample(cells, n)]
        complete = nx.Graph()
        for i, p in enumerate(points):
            for j in range(i + 1, n):
                complete.add_edge(i, j, weight=math.dist(p, points[j]))
        tree = sorted(tuple(sorted(e)) for e in nx.minimum_spanning_tree(complete).edges())
        placed: list[tuple[tuple[float, float], tuple[float, float]]] = []
        for i, j in tree:
            if not _segment_fits(points[i], points[j], placed, points):
                break  # a spanning-tree segment grazes a spot: draw the points again
            placed.append((points[i], points[j]))
        if len(placed) < len(tree):
            continue
        pairs = list(tree)
        want = max(1, round(extra_edges * n))
        by_length = sorted((math.dist(points[i], points[j]), i, j) for i in range(n) for j in range(i + 1, n))
        for _length, i, j in by_length:
            if len(pairs) - len(tree) >= want:
                break
            if (i, j) not in tree and _segment_fits(points[i], points[j], placed, points):
                placed.append((points[i], points[j]))
                pairs.append((i, j))
        if len(pairs) > len(tree):  # at least one loop
            break
    else:  # pragma: no cover - grids of the allowed sizes always admit layouts
        raise GeoevalError(f"could not lay out {n} spots on a {width}x{height} map")

    names = _spot_names(rng, n, hubs)
    hub_names = set(names[n - hubs :])
    stations: dict[str, Station] = {}
    for nm, (x, y) in zip(names, points):
        hub = nm in hub_names
        stations[nm] = Station(
            name=nm,
            lines=(),
            x=x,
            y=y,
            time=0.0 if hub else float(rng.randint(30, 180)),
            price=float(rng.choice(TRAVEL_HUB_PRICES)) if hub else float(rng.randrange(10, 201, 5)),
            comfort=_comfort_rating(rng),
            reliability=_reliability_days(rng, 60),
        )
    edges = [
        Edge(
            a=names[i],
            b=names[j],
            lines=(),
            time=float(rng.randint(10, 60)),
            price=float(10 + math.floor(71 * rng.random() ** 2)),
            comfort=_comfort_rating(rng),
            reliability=_reliability_days(rng, 1),
        )
        for i, j in pairs
    ]
    return MetroMap(
        name=name or f"travel_{seed}",
        scenario="travelmap",
        stations=stations,
        edges=edges,
        lines={},
        width=width,
        height=height,
        country="synthetic",
    )


def travel_range_violations(m: MetroMap) -> list[str]:
    """Attribute values outside the Travelmap ranges and rules of appendix E.1 (hubs: spots with
    Time 0 must be priced 100, 200 or 300)."""
    problems: list[str] = []

    def check(what: str, value: float, lo: float, hi: float, step: float) -> None:
        if not lo <= value <= hi:
            problems.append(f"{what} = {value} is outside [{lo}, {hi}]")
        if abs(value / step - round(value / step)) > 1e-6:
            problems.append(f"{what} = {value} is not a multiple of {step}")

    for e in m.edges:
        check(f"edge {e.label} Time", e.time, 1, 60, 1)  # >= 1 min when derived from distances
        check(f"edge {e.label} Price", e.price, 10, 80, 1)
        check(f"edge {e.label} Comfort Level", e.comfort, 1.0, 5.0, 0.1)
        check(f"edge {e.label} Reliability", e.reliability, round(1 / 365, 6), 1.0, 1e-6)
    for st in m.stations.values():
        if st.time == 0:
            if st.price not in TRAVEL_HUB_PRICES:
                problems.append(f"hub {st.name} (Time 0) Price = {st.price} is not one of {TRAVEL_HUB_PRICES}")
        else:
            check(f"spot {st.name} Time", st.time, 30, 180, 1)
            check(f"spot {st.name} Price", st.price, 10, 200, 5)
        check(f"spot {st.name} Comfort Level", st.comfort, 1.0, 5.0, 0.1)
        check(f"spot {st.name} Reliability", st.reliability, round(60 / 365, 6), 1.0, 1e-6)
    return problems
