"""Synthetic Metromap and Travelmap generators and the map quality checks of MapTab appendices
B.5 / B.6. (Travelmap: `generate_travel_map`, described in its own section below.)

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
"""

from __future__ import annotations

import difflib
import math
import random
from collections import defaultdict

import networkx as nx

from geoeval.core.errors import GeoevalError
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

GRID_MARGIN = 140  # px between the border and the outermost grid line (spec: >= 120)
MIN_GRID_PITCH = 160  # px between neighbouring grid lines (spec: adjacent >= 140, any pair >= 120)
MAX_LAYOUT_ATTEMPTS = 5000
PREFER_CYCLE_ATTEMPTS = 400
NAME_SIMILARITY_LIMIT = 0.5  # the scorer's match threshold; generated names stay strictly below
MAX_NAME_ROOT_LENGTH = 9

# Layout limits checked by `layout_violations` (and guaranteed by the generator).
LAYOUT_MARGIN = 120.0
MIN_ADJACENT_DISTANCE = 140.0
MIN_STATION_DISTANCE = 120.0
SEGMENT_CLEARANCE = 30.0

_ONSETS = (
    "b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "j", "k", "l", "m", "n", "p",
    "pr", "r", "s", "sh", "st", "t", "tr", "v", "w", "y",
)
_VOWELS = ("a", "e", "i", "o", "u", "ea", "ai", "oa")
_CODAS = ("", "", "", "n", "r", "l", "m", "s", "t", "nd", "rn", "st")
_ENDINGS = (
    "ton", "ley", "ford", "by", "wick", "mere", "dale", "well", "more", "ham", "stead", "worth",
    "field", "bury", "ridge", "combe", "holm", "thorpe", "low", "den", "hurst", "side",
)
_SECOND_SYLLABLE_VOWELS = ("a", "o", "ie", "ey", "en", "in")
_PLACE_WORDS = (
    "Park", "Square", "Cross", "Hill", "Gate", "Market", "Bridge", "Wharf", "Green", "Heights",
    "Road", "Lane", "Common", "Fields", "Quay", "Row", "Yard", "Vale", "Abbey", "Docks", "Court",
    "Mills", "Halt", "Circus", "Junction", "Plaza", "Terrace", "Walk",
)


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
        lines = tuple(point_lines[p])
        x, y = grid.xy(p)
        is_transfer = len(lines) > 1
        stations[point_name[p]] = Station(
            name=point_name[p],
            lines=lines,
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


# --------------------------------------------------------------------------------------------
# Layout


class _Grid:
    """The station grid: `cols` x `rows` points, pitch >= MIN_GRID_PITCH, inside GRID_MARGIN."""

    def __init__(self, width: int, height: int) -> None:
        usable_w = width - 2 * GRID_MARGIN
        usable_h = height - 2 * GRID_MARGIN
        if usable_w < 2 * MIN_GRID_PITCH or usable_h < 2 * MIN_GRID_PITCH:
            raise GeoevalError(f"a {width}x{height} map is too small; use at least 600x600 px")
        self.cols = int(usable_w // MIN_GRID_PITCH) + 1
        self.rows = int(usable_h // MIN_GRID_PITCH) + 1
        self.pitch_x = usable_w / (self.cols - 1)
        self.pitch_y = usable_h / (self.rows - 1)

    def xy(self, p: tuple[int, int]) -> tuple[float, float]:
        return (
            round(GRID_MARGIN + p[0] * self.pitch_x, 1),
            round(GRID_MARGIN + p[1] * self.pitch_y, 1),
        )


def _draw_lines(
    rng: random.Random,
    grid: _Grid,
    n_lines: int,
    length_range: tuple[int, int],
    loop_probability: float,
) -> list[tuple[list[tuple[int, int]], bool]] | None:
    """One candidate layout: per line its grid points in running order and whether it loops."""
    orientations = ["H", "V", "D"]
    rng.shuffle(orientations)
    walks: list[tuple[list[tuple[int, int]], bool]] = []
    for i in range(n_lines):
        k = rng.randint(*length_range)
        is_loop = i == n_lines - 1 and n_lines >= 2 and rng.random() < loop_probability
        if is_loop:
            points = _loop_walk(rng, grid, length_range)
        else:
            orientation = orientations[i] if i < 3 else rng.choice(("H", "V", "D"))
            points = _open_walk(rng, grid, k, orientation)
        if points is None:
            return None
        walks.append((points, is_loop))
    return walks


def _open_walk(
    rng: random.Random, grid: _Grid, k: int, orientation: str
) -> list[tuple[int, int]] | None:
    """k grid points, unit steps, monotone along the main axis (never revisits a point)."""
    if orientation in ("H", "V"):
        along, across = (grid.cols, grid.rows) if orientation == "H" else (grid.rows, grid.cols)
        if k > along:
            return None
        a0 = rng.randint(0, along - k)
        # start in the middle band so that lines of different orientation cross
        b = rng.randint(across // 4, across - 1 - across // 4)
        pts = []
        for step in range(k):
            pts.append((a0 + step, b) if orientation == "H" else (b, a0 + step))
            db = rng.choices((-1, 0, 1), weights=(0.2, 0.6, 0.2))[0]
            if not 0 <= b + db < across:
                db = 0
            b += db
        return pts
    # "D": monotone in both axes, going down-right or up-right
    dy_sign = rng.choice((1, -1))
    c = rng.randint(0, max(0, grid.cols // 2 - 1))
    r = rng.randint(0, max(0, grid.rows // 2 - 1)) if dy_sign == 1 else rng.randint(
        grid.rows // 2, grid.rows - 1
    )
    pts = [(c, r)]
    for _ in range(k - 1):
        moves = [(1, 0), (0, dy_sign), (1, dy_sign)]
        moves = [(dc, dr) for dc, dr in moves if 0 <= c + dc < grid.cols and 0 <= r + dr < grid.rows]
        if not moves:
            return None
        dc, dr = rng.choices(moves, weights=[1.0 if (dc and dr) else 0.7 for dc, dr in moves])[0]
        c, r = c + dc, r + dr
        pts.append((c, r))
    return pts


def _loop_walk(
    rng: random.Random, grid: _Grid, length_range: tuple[int, int]
) -> list[tuple[int, int]] | None:
    """The perimeter of a w x h grid rectangle near the centre (2(w+h) stations, clockwise)."""
    lo, hi = length_range
    shapes = [
        (w, h)
        for w in range(1, grid.cols)
        for h in range(1, grid.rows)
        if lo <= 2 * (w + h) <= hi and w + h >= 3
    ]
    if not shapes:
        return None
    w, h = rng.choice(shapes)
    c_lo, c_hi = max(0, grid.cols // 2 - w), min(grid.cols - 1 - w, grid.cols // 2)
    r_lo, r_hi = max(0, grid.rows // 2 - h), min(grid.rows - 1 - h, grid.rows // 2)
    if c_lo > c_hi or r_lo > r_hi:
        return None
    c0, r0 = rng.randint(c_lo, c_hi), rng.randint(r_lo, r_hi)
    pts = [(c0 + i, r0) for i in range(w)]
    pts += [(c0 + w, r0 + j) for j in range(h)]
    pts += [(c0 + w - i, r0 + h) for i in range(w)]
    pts += [(c0, r0 + h - j) for j in range(h)]
    return pts


def _topology_ok(walks: list[tuple[list[tuple[int, int]], bool]], *, want_cycle: bool = False) -> bool:
    """No shared track, no diagonal X crossing inside a cell, and the union is connected (and,
    with `want_cycle`, has a cycle that is not just a loop line)."""
    seen_segments: set[frozenset[tuple[int, int]]] = set()
    diagonal_cells: dict[tuple[int, int], int] = {}
    g = nx.Graph()
    for points, loop in walks:
        pairs = list(zip(points, points[1:])) + ([(points[-1], points[0])] if loop else [])
        for p, q in pairs:
            key = frozenset((p, q))
            if key in seen_segments:
                return False
            seen_segments.add(key)
            g.add_edge(p, q)
            if p[0] != q[0] and p[1] != q[1]:
                cell = (min(p[0], q[0]), min(p[1], q[1]))
                slope = (q[0] - p[0]) * (q[1] - p[1])  # +1 "\" or -1 "/"
                if diagonal_cells.get(cell, slope) != slope:
                    return False
                diagonal_cells[cell] = slope
    if not nx.is_connected(g):
        return False
    if want_cycle:
        loop_cycles = sum(1 for _points, loop in walks if loop)
        if g.number_of_edges() - g.number_of_nodes() + 1 <= loop_cycles:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Names


def _station_names(rng: random.Random, n: int) -> list[str]:
    """n unique, pronounceable names whose pairwise difflib ratio (lower-cased) is < 0.5."""
    names: list[str] = []
    lowered: list[str] = []
    used_words: set[str] = set()
    for _ in range(200_000):
        if len(names) == n:
            return names
        root = rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        if rng.random() < 0.75:
            root += rng.choice(_ENDINGS)
        else:
            root += rng.choice(_ONSETS) + rng.choice(_SECOND_SYLLABLE_VOWELS)
        if len(root) > MAX_NAME_ROOT_LENGTH or len(root) < 4:
            continue
        candidate = root.capitalize()
        free_words = [w for w in _PLACE_WORDS if w not in used_words]
        word = None
        if free_words and rng.random() < 0.45:
            word = rng.choice(free_words)
            candidate = f"{candidate} {word}"
        low = candidate.lower()
        # SequenceMatcher is not symmetric, and the scorer may compare in either order
        if any(
            difflib.SequenceMatcher(None, low, other).ratio() >= NAME_SIMILARITY_LIMIT
            or difflib.SequenceMatcher(None, other, low).ratio() >= NAME_SIMILARITY_LIMIT
            for other in lowered
        ):
            continue
        names.append(candidate)
        lowered.append(low)
        if word:
            used_words.add(word)
    raise GeoevalError(f"could not draw {n} mutually dissimilar station names")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Travelmap
#
# `generate_travel_map(seed)` builds one connected graph of scenic spots (appendix B.6: "a single
# fully connected graph"), with the Travelmap attributes of appendix E.1:
# * Layout: spots on random points of the same grid as the metro generator (pitch >= 160 px, margin
#   140 px). Edges are the Euclidean minimum spanning tree of the spots (a planar, connected
#   skeleton, like roads between neighbouring attractions) plus, as the paper adds "loop connections
#   ... to improve the overall topological completeness", the shortest extra segments that cross no
#   edge and pass no other spot closer than SEGMENT_CLEARANCE, until `extra_edges` × spots of them
#   (at least one, so every map has a loop; Angkor Wat has 29 edges on 26 spots). Hence
#   `layout_violations` finds nothing.
# * Hubs: `n_hubs` spots (drawn from the range) are transport hubs, named "<Name> Airport" or
#   "<Name> Station" (alternately); E.1: their Time is 0 and their Price one of 100, 200, 300. The
#   route cost rule that goes with them ("transportation station costs are counted only at the
#   final destination") is `routing`'s.
# * Edge_tab (no map annotations to read, so E.1's fallback): Time U{10..60} min; Price an integer
#   in 10..80 with smaller values more frequent (10 + floor(71 u^2), u uniform); Comfort Level one
#   decimal in 1.0..5.0 with >= 3.0 the majority (70 %: U{3.0..5.0}, else U{1.0..2.9});
#   Reliability a/365 rounded to 6 decimals, a in 1..365 with a > 180 more frequent (70 %:
#   U{181..365}, else U{1..180}).
# * Vertex_tab: Time U{30..180} min (hubs 0); Price a multiple of 5 in 10..200 (hubs 100/200/300);
#   Comfort Level as for edges; Reliability a/365 with a in 60..365, a > 180 at 70 %.
# * Names: as the metro generator's (pairwise difflib ratio < 0.5 in both orders), hub suffixes
#   included.

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
        for i, a in enumerate(lowered) for j, b in enumerate(lowered) if i != j
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


def _segment_fits(p, q, placed: list[tuple[tuple[float, float], tuple[float, float]]],
                  points: list[tuple[float, float]]) -> bool:
    """Whether segment p-q crosses or overlaps no placed segment and clears every other point."""
    for a, b in placed:
        if _collinear_overlap(p, q, a, b):
            return False
        if not ({p, q} & {a, b}) and _segments_intersect(p, q, a, b):
            return False
    return all(_point_segment_distance(x, p, q) >= SEGMENT_CLEARANCE for x in points if x not in (p, q))


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
    """A connected synthetic Travelmap, deterministic for `seed` (see the section comment above).
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
        for d, i, j in sorted((math.dist(points[i], points[j]), i, j) for i in range(n) for j in range(i + 1, n)):
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
    hub_names = set(names[n - hubs:])
    stations: dict[str, Station] = {}
    for nm, (x, y) in zip(names, points):
        hub = nm in hub_names
        stations[nm] = Station(
            name=nm, lines=(), x=x, y=y,
            time=0.0 if hub else float(rng.randint(30, 180)),
            price=float(rng.choice(TRAVEL_HUB_PRICES)) if hub else float(rng.randrange(10, 201, 5)),
            comfort=_comfort_rating(rng),
            reliability=_reliability_days(rng, 60),
        )
    edges = [
        Edge(
            a=names[i], b=names[j], lines=(),
            time=float(rng.randint(10, 60)),
            price=float(10 + math.floor(71 * rng.random() ** 2)),
            comfort=_comfort_rating(rng),
            reliability=_reliability_days(rng, 1),
        )
        for i, j in pairs
    ]
    return MetroMap(name=name or f"travel_{seed}", scenario="travelmap", stations=stations, edges=edges,
                    lines={}, width=width, height=height, country="synthetic")


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


# --------------------------------------------------------------------------------------------
# Quality checks


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
        key = frozenset((e.a, e.b))
        if e.a == e.b:
            problems.append(f"edge {e.label!r} is a self-loop")
        if key in seen:
            problems.append(f"duplicate edge: {e.label!r} repeats {seen[key]!r}")
        seen[key] = e.label
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
            problems.append(
                f"station {name!r}: {len(st.lines)} line(s) but Transfer Time {st.transfer_time}"
            )

    line_edges: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for e in m.edges:
        for ln in e.lines:
            line_edges[ln].append((e.a, e.b))
    loops = 0
    for ln, pairs in line_edges.items():
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
            e = m.edge_between(a, b)
            if e is None or ln not in e.lines:
                problems.append(f"line {ln!r}: no edge {a}-{b} on that line")
        if ln in line_edges and len(pairs) != len(line_edges[ln]):
            problems.append(
                f"line {ln!r} lists {len(pairs)} consecutive pairs but {len(line_edges[ln])} edges"
            )
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
            if _point_segment_distance((s.x, s.y), (p.x, p.y), (q.x, q.y)) < clearance:
                problems.append(f"edge {e.label!r} passes within {clearance}px of station {s.name!r}")
    for i, (e1, p1, q1) in enumerate(segments):
        for e2, p2, q2 in segments[i + 1 :]:
            shared = {e1.a, e1.b} & {e2.a, e2.b}
            if _collinear_overlap(p1, q1, p2, q2):
                problems.append(f"edges {e1.label!r} and {e2.label!r} overlap collinearly")
            elif not shared and _segments_intersect(p1, q1, p2, q2):
                problems.append(f"edges {e1.label!r} and {e2.label!r} cross away from a station")
    return problems


def _point_segment_distance(p, a, b) -> float:
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


def _collinear_overlap(p1, q1, p2, q2, eps: float = 1e-6) -> bool:
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


def _segments_intersect(p1, q1, p2, q2, eps: float = 1e-9) -> bool:
    d1, d2 = _cross(p2, q2, p1), _cross(p2, q2, q1)
    d3, d4 = _cross(p1, q1, p2), _cross(p1, q1, q2)
    if ((d1 > eps and d2 < -eps) or (d1 < -eps and d2 > eps)) and (
        (d3 > eps and d4 < -eps) or (d3 < -eps and d4 > eps)
    ):
        return True
    # touching (an endpoint lying on the other segment) also counts as meeting away from a station
    for p, a, b, d in ((p1, p2, q2, d1), (q1, p2, q2, d2), (p2, p1, q1, d3), (q2, p1, q1, d4)):
        if abs(d) <= eps and _point_segment_distance(p, a, b) <= 1e-6:
            return True
    return False
