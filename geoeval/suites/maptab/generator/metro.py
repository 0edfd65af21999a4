"""The synthetic Metromap generator of MapTab (appendices B.5 / B.6, E.1). (Travelmap:
`generate_travel_map`, described in `travel`; the map quality checks: `checks`.)

`generate_metro_map(seed)` builds a `MetroMap` that looks like a small schematic metro network and
carries Edge_tab / Vertex_tab attributes drawn from the ranges of appendix E.1. The same seed gives
the same map, byte for byte (only a private `random.Random(seed)` is used).

Layout (what the renderer and the perception agents rely on)
------------------------------------------------------------
* Stations sit on a regular grid whose pitch is at least `MIN_GRID_PITCH` (160 px) inside a margin
  of `GRID_MARGIN` (140 px), so every station is >= 120 px from the border and from every other
  station, and adjacent stations are >= 140 px apart.
* Every line is a walk of unit grid steps (orthogonal or diagonal). Open lines are monotone along
  their main axis (horizontal-ish "H", vertical-ish "V" or diagonal "D"), so they never revisit a
  point. With probability `loop_probability` the last line is a rectangular loop line instead.
* Two lines meet only at grid points, and a grid point used by two lines is ONE shared station: the
  interchange. Layouts where two lines share a track segment, or where two diagonal steps cross
  inside a grid cell (a crossing without a station), are rejected and redrawn. Hence every edge is
  a straight segment between consecutive stations of one line, no two segments overlap or cross
  away from a station, and a unit segment passes no closer than ~110 px (pitch/sqrt(2)) to any
  other station.
* The union of the lines must be connected; otherwise the layout is redrawn. With three or more
  lines the first `PREFER_CYCLE_ATTEMPTS` draws also require a cycle formed by different lines (so
  that a query usually has competing routes); after that any valid layout is accepted.

Choices where the paper is silent
---------------------------------
* Generated edges carry exactly one line each (lines share stations, never track), so transfers
  happen only at interchanges. The route solver still handles multi-line edges (real maps have them).
* A loop line lists each station once in `Line.stations`; the closing edge last -> first is implied
  by `Line.loop`. `n_lines` counts the loop line.
* Line names follow E.1's "x Line" form using the line's colour ("Red Line"), which also helps
  a colour-reading perception agent.
* Station names are synthetic, English-like and pairwise dissimilar: the difflib ratio of any two
  lower-cased names is < 0.5 in both argument orders (SequenceMatcher is not symmetric), because
  the authors' scorer accepts a station when the ratio is >= 0.5.
* Attribute values (E.1, Metromap): edge Time U{2.00..3.00}, Price U{0.00..1.50},
  Comfort U{0.00..1.00}, Reliability 0; station dwell Time U{0.50..2.00}, Price 0,
  Comfort U{0.00..1.00}, Reliability U{0.50..1.00}; Transfer Time U{5..15} (integer) at stations on
  two or more lines and 0 elsewhere. All uniform on the 0.01 grid.

Modules
-------
This module holds `generate_metro_map` and its palette; the concerns around it have their own
modules in this folder: `layout` (the grid and the line walks), `names` (station names), `travel`
(the Travelmap generator) and `checks` (the quality, range and layout checks).
"""

from __future__ import annotations

import random
from collections import defaultdict

from geoeval.api import GeoevalError
from geoeval.suites.maptab.generator.layout import (
    _draw_lines,
    _Grid,
    _topology_ok,
)
from geoeval.suites.maptab.generator.names import (
    _station_names,
)
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station

# Saturated, mutually distinct line colours (no black / grey / white), named for the line names.
PALETTE: tuple[tuple[str, str], ...] = (
    ("Red", "#E32017"),
    ("Blue", "#0072CE"),
    ("Green", "#00A651"),
    ("Orange", "#F7941D"),
    ("Purple", "#8E24AA"),
    ("Pink", "#E4007C"),
    ("Teal", "#00A0A0"),
    ("Brown", "#A0522D"),
    ("Yellow", "#F5C400"),
    ("Navy", "#1F3A93"),
)

MAX_LAYOUT_ATTEMPTS = 5000
PREFER_CYCLE_ATTEMPTS = 400


def generate_metro_map(
    seed: int,
    *,
    n_lines: int = 3,
    stations_per_line: tuple[int, int] = (6, 10),
    width: int = 2000,
    height: int = 1600,
    loop_probability: float = 0.2,
    name: str | None = None,
) -> MetroMap:
    """A connected synthetic Metromap, deterministic for `seed` (see the module docstring)."""
    lo, hi = stations_per_line
    if not 1 <= n_lines <= len(PALETTE):
        raise GeoevalError(f"n_lines must be between 1 and {len(PALETTE)}, got {n_lines}")
    if not 3 <= lo <= hi:
        raise GeoevalError(f"stations_per_line must satisfy 3 <= low <= high, got {stations_per_line}")
    if not 0.0 <= loop_probability <= 1.0:
        raise GeoevalError(f"loop_probability must be in [0, 1], got {loop_probability}")
    grid = _Grid(width, height)
    if hi > max(grid.cols, grid.rows):
        raise GeoevalError(
            f"a {width}x{height} map fits lines of at most {max(grid.cols, grid.rows)} stations; "
            f"lower stations_per_line or enlarge the map"
        )

    rng = random.Random(seed)
    for attempt in range(MAX_LAYOUT_ATTEMPTS):
        walks = _draw_lines(rng, grid, n_lines, (lo, hi), loop_probability)
        # With 3+ lines, prefer a network with a cycle (more than one sensible route) while
        # such layouts keep turning up; then accept any valid one.
        want_cycle = n_lines >= 3 and attempt < PREFER_CYCLE_ATTEMPTS
        if walks is not None and _topology_ok(walks, want_cycle=want_cycle):
            break
    else:  # pragma: no cover - the parameters above always admit layouts
        raise GeoevalError(
            f"could not lay out {n_lines} lines of {stations_per_line} stations on a "
            f"{width}x{height} map; use fewer lines or a larger map"
        )

    line_names = [f"{PALETTE[i][0]} Line" for i in range(n_lines)]
    point_lines: dict[tuple[int, int], list[str]] = defaultdict(list)
    point_order: list[tuple[int, int]] = []
    for line_name, (points, _loop) in zip(line_names, walks):
        for p in points:
            if p not in point_lines:
                point_order.append(p)
            point_lines[p].append(line_name)

    names = _station_names(rng, len(point_order))
    point_name = dict(zip(point_order, names))

    stations: dict[str, Station] = {}
    for p in point_order:
        station_lines = tuple(point_lines[p])
        x, y = grid.xy(p)
        is_transfer = len(station_lines) > 1
        stations[point_name[p]] = Station(
            name=point_name[p],
            lines=station_lines,
            x=x,
            y=y,
            time=rng.randint(50, 200) / 100,
            price=0.0,
            comfort=rng.randint(0, 100) / 100,
            reliability=rng.randint(50, 100) / 100,
            transfer_time=float(rng.randint(5, 15)) if is_transfer else 0.0,
        )

    edges: list[Edge] = []
    lines: dict[str, Line] = {}
    for i, (line_name, (points, loop)) in enumerate(zip(line_names, walks)):
        seq = [point_name[p] for p in points]
        lines[line_name] = Line(name=line_name, color=PALETTE[i][1], stations=tuple(seq), loop=loop)
        pairs = list(zip(seq, seq[1:])) + ([(seq[-1], seq[0])] if loop else [])
        for a, b in pairs:
            edges.append(
                Edge(
                    a=a,
                    b=b,
                    lines=(line_name,),
                    time=rng.randint(200, 300) / 100,
                    price=rng.randint(0, 150) / 100,
                    comfort=rng.randint(0, 100) / 100,
                    reliability=0.0,
                )
            )

    return MetroMap(
        name=name or f"synthetic_{seed}",
        scenario="metromap",
        stations=stations,
        edges=edges,
        lines=lines,
        width=width,
        height=height,
        country="synthetic",
    )
