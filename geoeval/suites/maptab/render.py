"""Render a MapTab `MetroMap` as a metro-style map image, optionally downsampled.

The picture is drawn at full size (`m.width` x `m.height`, the pixel space of the
station coordinates) and, for the paper's resolution ablation (MapTab appendix G.1:
1, 1/2, 1/4, ... 1/32), shrunk afterwards with a LANCZOS filter, so a smaller image
holds strictly less information than the full-size one.

Visual conventions (the perception baseline in `perception.py` reads these from pixels):

* each line is a thick stroke of its colour; an edge run by several lines is drawn as
  parallel strokes side by side, offset perpendicular to the edge;
* an ordinary station is a small white circle with a thin dark outline;
* an interchange (a station on two or more lines) is a larger white circle with a thick
  black outline, big enough to cover the bundle of parallel strokes;
* every station has its name in black text next to its marker, placed where it overlaps
  no other label, marker, line stroke or the legend and stays clearly nearer to its own
  marker than to any other one (on a crowded map where no candidate position is free,
  the least-colliding one);
* a framed legend in a free corner lists the line names next to a swatch of their colour.

Drawing uses no antialiasing for shapes (text is antialiased by FreeType), so the output
is deterministic: the same map and scale give byte-identical PNGs.
"""

from __future__ import annotations

import hashlib
import io
import math
import zlib
from collections import OrderedDict
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from geoeval.suites.maptab.graph import MetroMap

SUPPORTED_LANGUAGES: tuple[str, ...] = ("en", "zh")

# Geometry at full size, in pixels.
LINE_WIDTH = 10
ORDINARY_RADIUS = 11
ORDINARY_OUTLINE = 3
ORDINARY_OUTLINE_COLOR = (34, 34, 34)
INTERCHANGE_RADIUS = 17
INTERCHANGE_OUTLINE = 5
INTERCHANGE_OUTLINE_COLOR = (0, 0, 0)
LABEL_FONT_SIZE = 24
LEGEND_FONT_SIZE = 22
LABEL_COLOR = (0, 0, 0)
BACKGROUND = (255, 255, 255)
# Travel style: a scenic area's paths are one trail colour (no lines, no legend), and transport
# hubs (spots with Time 0: airports, stations) get the larger interchange marker.
TRAVEL_PATH_COLOR = (46, 139, 87)

# Label placement clearances. They are generous on purpose: an OCR reader must see each
# label as a separate text line (so labels keep apart by more than a word space) and must
# be able to attach it to the right marker (so a label keeps away from foreign markers).
LABEL_GAP = 6  # between a label and its own marker
LABEL_CLEARANCE_LABEL_X = 40  # between two labels side by side (OCR joins close words)
LABEL_CLEARANCE_LABEL_Y = 12  # between two labels one above the other
LABEL_CLEARANCE_STROKE = 10  # between a label and a line stroke
LABEL_CLEARANCE_MARKER = 26  # between a label and a marker that is not its own
LABEL_CLEARANCE_BORDER = 6  # between a label and the image border
LABEL_NEAREST_MARGIN = 20  # a foreign marker is this much further from a label than its own

# Fallback colours for lines that a map references on its edges without a `Line` entry.
_FALLBACK_COLORS = (
    "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4",
    "#42d4f4", "#f032e6", "#bfef45", "#469990", "#9a6324",
)


@dataclass(frozen=True)
class _Rect:
    left: float
    top: float
    right: float
    bottom: float

    def inflate(self, d: float, dy: float | None = None) -> "_Rect":
        dy = d if dy is None else dy
        return _Rect(self.left - d, self.top - dy, self.right + d, self.bottom + dy)

    def overlap_area(self, o: "_Rect") -> float:
        w = min(self.right, o.right) - max(self.left, o.left)
        h = min(self.bottom, o.bottom) - max(self.top, o.top)
        return w * h if w > 0 and h > 0 else 0.0

    def distance_to_point(self, x: float, y: float) -> float:
        dx = max(self.left - x, 0.0, x - self.right)
        dy = max(self.top - y, 0.0, y - self.bottom)
        return math.hypot(dx, dy)

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x <= self.right and self.top <= y <= self.bottom


@dataclass(frozen=True)
class _Stroke:
    """One coloured stroke: a segment of one line, already offset inside its bundle."""

    x0: float
    y0: float
    x1: float
    y1: float
    color: tuple[int, int, int]


@dataclass(frozen=True)
class _Marker:
    name: str
    x: float
    y: float
    radius: float
    interchange: bool


def _segment_point_distance(x0, y0, x1, y1, px, py) -> float:
    dx, dy = x1 - x0, y1 - y0
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((px - x0) * dx + (py - y0) * dy) / length2))
    return math.hypot(x0 + t * dx - px, y0 + t * dy - py)


def _segments_intersect(a, b, c, d) -> bool:
    def orient(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    o1, o2, o3, o4 = orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
    return (o1 > 0) != (o2 > 0) and (o3 > 0) != (o4 > 0)


def _segment_rect_distance(x0, y0, x1, y1, r: _Rect) -> float:
    """Shortest distance between a segment and an axis-aligned rectangle (0 if they meet)."""
    if r.contains(x0, y0) or r.contains(x1, y1):
        return 0.0
    corners = [(r.left, r.top), (r.right, r.top), (r.right, r.bottom), (r.left, r.bottom)]
    for i in range(4):
        if _segments_intersect((x0, y0), (x1, y1), corners[i], corners[(i + 1) % 4]):
            return 0.0
    best = min(r.distance_to_point(x0, y0), r.distance_to_point(x1, y1))
    for cx, cy in corners:
        best = min(best, _segment_point_distance(x0, y0, x1, y1, cx, cy))
    return best


def _hex_to_rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    if len(c) != 6:
        raise ValueError(f"line colour must be '#rrggbb', got {color!r}")
    return (int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16))


def _line_colors(m: MetroMap, line_names: set[str]) -> dict[str, tuple[int, int, int]]:
    colors: dict[str, tuple[int, int, int]] = {}
    for name in sorted(line_names):
        line = m.lines.get(name)
        if line is not None:
            colors[name] = _hex_to_rgb(line.color)
        else:
            # Stable across runs (unlike hash()), so renders stay deterministic.
            idx = zlib.crc32(name.encode("utf-8")) % len(_FALLBACK_COLORS)
            colors[name] = _hex_to_rgb(_FALLBACK_COLORS[idx])
    return colors


def _segments_by_edge(m: MetroMap) -> dict[tuple[str, str], tuple[str, ...]]:
    """Every drawn segment (as a name-sorted station pair) with the lines that run on it.

    Both the edge list and the lines' station sequences contribute, so a map that lists a
    loop's closing edge in only one of the two still draws it.
    """
    runs: dict[tuple[str, str], set[str]] = {}
    for e in m.edges:
        if e.a in m.stations and e.b in m.stations and e.a != e.b:
            runs.setdefault(tuple(sorted((e.a, e.b))), set()).update(e.lines)
    for line in m.lines.values():
        seq = list(line.stations)
        pairs = list(zip(seq, seq[1:]))
        if line.loop and len(seq) > 2:
            pairs.append((seq[-1], seq[0]))
        for a, b in pairs:
            if a in m.stations and b in m.stations and a != b:
                runs.setdefault(tuple(sorted((a, b))), set()).add(line.name)
    return {k: tuple(sorted(v)) for k, v in sorted(runs.items())}


def _build_strokes(m: MetroMap) -> tuple[list[_Stroke], dict[str, int]]:
    """Offset strokes for every segment, and the widest bundle touching each station."""
    segments = _segments_by_edge(m)
    all_lines = {ln for lines in segments.values() for ln in lines}
    colors = _line_colors(m, all_lines)
    strokes: list[_Stroke] = []
    bundle: dict[str, int] = {}
    for (a, b), lines in segments.items():
        if not lines:
            lines = ("",)
            colors.setdefault("", TRAVEL_PATH_COLOR if m.scenario == "travelmap" else (90, 90, 90))
        p, q = m.stations[a], m.stations[b]
        dx, dy = q.x - p.x, q.y - p.y
        length = math.hypot(dx, dy) or 1.0
        nx, ny = -dy / length, dx / length  # same normal for both lines: a < b by name
        k = len(lines)
        for i, ln in enumerate(lines):
            off = (i - (k - 1) / 2) * LINE_WIDTH
            strokes.append(
                _Stroke(p.x + nx * off, p.y + ny * off, q.x + nx * off, q.y + ny * off, colors[ln])
            )
        bundle[a] = max(bundle.get(a, 1), k)
        bundle[b] = max(bundle.get(b, 1), k)
    return strokes, bundle


def _station_lines(m: MetroMap) -> dict[str, set[str]]:
    lines = {name: set(st.lines) for name, st in m.stations.items()}
    for (a, b), runs in _segments_by_edge(m).items():
        lines[a].update(runs)
        lines[b].update(runs)
    return lines


def _build_markers(m: MetroMap, bundle: dict[str, int]) -> list[_Marker]:
    station_lines = _station_lines(m)
    markers = []
    for name in sorted(m.stations):
        st = m.stations[name]
        interchange = len(station_lines[name]) >= 2 or (m.scenario == "travelmap" and st.time == 0)
        if interchange:
            # Cover the whole bundle of parallel strokes, plus a white rim.
            k = bundle.get(name, 1)
            radius = max(INTERCHANGE_RADIUS, (k - 1) / 2 * LINE_WIDTH + LINE_WIDTH / 2 + 8)
        else:
            radius = ORDINARY_RADIUS
        markers.append(_Marker(name, st.x, st.y, radius, interchange))
    return markers


def _load_font(font_path: str | None, size: int, language: str = "en") -> ImageFont.FreeTypeFont:
    if font_path is not None:
        return ImageFont.truetype(font_path, size)
    if language == "zh":
        from geoeval.suites.maptab.language import cjk_font

        found = cjk_font()
        if found is None:
            from geoeval.core.errors import GeoevalError

            raise GeoevalError(
                "suite.language=zh needs a font with Chinese glyphs: `pip install noto-cjk-sans-otc`, "
                "`apt-get install fonts-noto-cjk`, or set GEOEVAL_CJK_FONT to a .ttf/.otf/.ttc file")
        return ImageFont.truetype(found[0], size, index=found[1])
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):  # Pillow built without FreeType
        raise RuntimeError("Pillow's scalable default font needs FreeType support (Pillow >= 10.1)")
    return font


class _Obstacles:
    """Everything a label must keep clear of.

    The network (strokes, markers), the border and the legend are fixed before labels are
    placed, so their cost is computed once per candidate (`static_penalty`); only the
    other labels change while placing (`label_penalty`).
    """

    def __init__(self, width: int, height: int, strokes: list[_Stroke], markers: list[_Marker]):
        self.width = width
        self.height = height
        self.strokes = strokes
        self.markers = markers
        self.blocks: list[_Rect] = []  # the legend
        # Stroke bounding boxes, to skip far strokes cheaply.
        reach = LINE_WIDTH / 2 + LABEL_CLEARANCE_STROKE
        self._stroke_boxes = [
            _Rect(min(s.x0, s.x1) - reach, min(s.y0, s.y1) - reach, max(s.x0, s.x1) + reach, max(s.y0, s.y1) + reach)
            for s in strokes
        ]

    def static_penalty(self, box: _Rect, own: _Marker | None) -> float:
        """0 when `box` clears the border, legend, markers and strokes; otherwise grows with
        how badly it collides."""
        cost = 0.0
        b = LABEL_CLEARANCE_BORDER
        if box.left < b or box.top < b or box.right > self.width - b or box.bottom > self.height - b:
            cost += 1e6
        for other in self.blocks:
            ov = box.overlap_area(other.inflate(LABEL_CLEARANCE_LABEL_Y))
            if ov > 0:
                cost += 5000 + ov
        own_gap = 0.0 if own is None else box.distance_to_point(own.x, own.y) - own.radius
        for mk in self.markers:
            d = box.distance_to_point(mk.x, mk.y) - mk.radius
            if own is not None and mk.name == own.name:
                need = LABEL_GAP - 1
            else:
                # Keep clear of foreign markers, and clearly nearer to its own one.
                need = max(LABEL_CLEARANCE_MARKER, own_gap + LABEL_NEAREST_MARGIN)
            if d < need:
                cost += 3000 + 100 * (need - d)
        for s, sb in zip(self.strokes, self._stroke_boxes):
            if sb.overlap_area(box) <= 0:
                continue
            d = _segment_rect_distance(s.x0, s.y0, s.x1, s.y1, box) - LINE_WIDTH / 2
            if d < LABEL_CLEARANCE_STROKE:
                cost += 500 + 20 * (LABEL_CLEARANCE_STROKE - d)
        return cost


def _label_penalty(box: _Rect, placed: _Rect) -> float:
    """Cost of `box` against one already placed label (0 when they keep clear)."""
    ov = box.overlap_area(placed.inflate(LABEL_CLEARANCE_LABEL_X, LABEL_CLEARANCE_LABEL_Y))
    return 1000 + ov if ov > 0 else 0.0


def _label_candidates(mk: _Marker, w: float, h: float) -> list[_Rect]:
    """Candidate ink boxes around a marker, best first.

    Per ring: beside the marker (right, left), above and below it, each also slid off the
    marker's axis so that it clears a stroke running straight through the marker, then
    the four diagonals. The rings move outwards step by step.
    """
    out = []
    x, y = mk.x, mk.y
    slide = LINE_WIDTH / 2 + LABEL_CLEARANCE_STROKE + 2
    for extra in (0.0, 12.0, 26.0, 42.0):
        g = mk.radius + LABEL_GAP + extra
        d = (mk.radius + LABEL_GAP) * 0.72 + extra
        out += [
            _Rect(x + g, y - h / 2, x + g + w, y + h / 2),  # right
            _Rect(x - g - w, y - h / 2, x - g, y + h / 2),  # left
            _Rect(x - w / 2, y - g - h, x + w / 2, y - g),  # above
            _Rect(x - w / 2, y + g, x + w / 2, y + g + h),  # below
            _Rect(x + g, y - slide - h, x + g + w, y - slide),  # right, raised
            _Rect(x + g, y + slide, x + g + w, y + slide + h),  # right, lowered
            _Rect(x - g - w, y - slide - h, x - g, y - slide),  # left, raised
            _Rect(x - g - w, y + slide, x - g, y + slide + h),  # left, lowered
            _Rect(x + slide, y - g - h, x + slide + w, y - g),  # above, to the right
            _Rect(x - slide - w, y - g - h, x - slide, y - g),  # above, to the left
            _Rect(x + slide, y + g, x + slide + w, y + g + h),  # below, to the right
            _Rect(x - slide - w, y + g, x - slide, y + g + h),  # below, to the left
            _Rect(x + d, y - d - h, x + d + w, y - d),  # upper right
            _Rect(x + d, y + d, x + d + w, y + d + h),  # lower right
            _Rect(x - d - w, y - d - h, x - d, y - d),  # upper left
            _Rect(x - d - w, y + d, x - d, y + d + h),  # lower left
        ]
    return out


def _place_labels(
    markers: list[_Marker], sizes: dict[str, tuple[float, float]], obstacles: _Obstacles
) -> dict[str, _Rect]:
    """Choose every label's box.

    Most constrained first: while some marker still has a free candidate, the one with the
    fewest free candidates takes its first free one (so crowded stations are served before
    their neighbours use up the room). Markers left without any free candidate then take
    their least-colliding candidate, one at a time.
    """
    cands: dict[str, list[_Rect]] = {}
    static: dict[str, list[float]] = {}
    for mk in markers:
        w, h = sizes[mk.name]
        cands[mk.name] = _label_candidates(mk, w, h)
        static[mk.name] = [obstacles.static_penalty(box, mk) for box in cands[mk.name]]
    # dynamic[name][i]: cost of candidate i against the labels placed so far
    dynamic = {mk.name: [0.0] * len(cands[mk.name]) for mk in markers}
    tiebreak = {mk.name: (not mk.interchange, mk.y, mk.x, mk.name) for mk in markers}
    placed: dict[str, _Rect] = {}
    unplaced = {mk.name for mk in markers}
    while unplaced:
        best_name, best_free = None, None
        for name in unplaced:
            free = [i for i, (sc, dc) in enumerate(zip(static[name], dynamic[name])) if sc == 0 and dc == 0]
            if free and (
                best_free is None
                or (len(free), tiebreak[name]) < (len(best_free), tiebreak[best_name])
            ):
                best_name, best_free = name, free
        if best_name is not None:
            choice = best_free[0]
        else:
            best_name = min(unplaced, key=lambda n: tiebreak[n])
            costs = [sc + dc for sc, dc in zip(static[best_name], dynamic[best_name])]
            choice = min(range(len(costs)), key=lambda i: (costs[i], i))
        box = cands[best_name][choice]
        placed[best_name] = box
        unplaced.discard(best_name)
        for name in unplaced:
            dyn = dynamic[name]
            for i, c in enumerate(cands[name]):
                dyn[i] += _label_penalty(c, box)
    return placed


def _place_legend(
    m: MetroMap, obstacles: _Obstacles, w: float, h: float
) -> _Rect:
    inset = 16
    candidates = [
        _Rect(inset, inset, inset + w, inset + h),
        _Rect(m.width - inset - w, inset, m.width - inset, inset + h),
        _Rect(inset, m.height - inset - h, inset + w, m.height - inset),
        _Rect(m.width - inset - w, m.height - inset - h, m.width - inset, m.height - inset),
    ]
    best, best_cost = candidates[0], math.inf
    for box in candidates:
        cost = 0.0
        for mk in obstacles.markers:
            if box.distance_to_point(mk.x, mk.y) < mk.radius + 30:
                cost += 1.0
        for s in obstacles.strokes:
            if _segment_rect_distance(s.x0, s.y0, s.x1, s.y1, box) < LINE_WIDTH + 12:
                cost += 1.0
        if cost < best_cost:
            best, best_cost = box, cost
        if cost == 0:
            break
    return best


@dataclass(frozen=True)
class MarkerSpec:
    """Where and how a station's marker is drawn (full-size pixels)."""

    x: float
    y: float
    radius: float
    interchange: bool


@dataclass(frozen=True)
class MapLayout:
    """Everything `render_map` decides before drawing, in full-size pixels.

    `labels` maps each station to the ink box of its name, (left, top, right, bottom);
    `legend` is the legend's frame box (None when the map has no lines);
    `legend_rows` lists the legend's (line name, "#rrggbb") rows in drawing order.
    """

    width: int
    height: int
    markers: dict[str, MarkerSpec]
    labels: dict[str, tuple[float, float, float, float]]
    legend: tuple[float, float, float, float] | None
    legend_rows: tuple[tuple[str, str], ...]


@dataclass
class _Plan:
    layout: MapLayout
    strokes: list[_Stroke]
    markers: list[_Marker]
    label_font: ImageFont.FreeTypeFont
    legend_font: ImageFont.FreeTypeFont
    label_ink: dict[str, tuple[float, float, float, float]]


def _plan(m: MetroMap, font_path: str | None, language: str = "en") -> _Plan:
    label_font = _load_font(font_path, LABEL_FONT_SIZE, language)
    legend_font = _load_font(font_path, LEGEND_FONT_SIZE, language)
    strokes, bundle = _build_strokes(m)
    markers = _build_markers(m, bundle)
    obstacles = _Obstacles(m.width, m.height, strokes, markers)

    # The legend goes first, in the corner that collides least with the network; the
    # labels then keep clear of it.
    legend_lines = sorted(m.lines) or sorted(
        {ln for runs in _segments_by_edge(m).values() for ln in runs if ln}
    )
    legend_box = None
    legend_rows: tuple[tuple[str, str], ...] = ()
    if legend_lines:
        colors = _line_colors(m, set(legend_lines))
        legend_rows = tuple((ln, "#%02x%02x%02x" % colors[ln]) for ln in legend_lines)
        text_w = max(legend_font.getbbox(ln)[2] for ln in legend_lines)
        lw = _LEGEND_PAD + _LEGEND_SWATCH_W + 12 + text_w + _LEGEND_PAD
        lh = 2 * _LEGEND_PAD + _LEGEND_ROW_H * (len(legend_lines) - 1) + 24
        legend_box = _place_legend(m, obstacles, lw, lh)
        obstacles.blocks.append(legend_box)

    label_ink = {mk.name: label_font.getbbox(mk.name) for mk in markers}
    sizes = {name: (r - l, b - t) for name, (l, t, r, b) in label_ink.items()}
    boxes = _place_labels(markers, sizes, obstacles)
    layout = MapLayout(
        width=m.width,
        height=m.height,
        markers={mk.name: MarkerSpec(mk.x, mk.y, mk.radius, mk.interchange) for mk in markers},
        labels={name: (b.left, b.top, b.right, b.bottom) for name, b in sorted(boxes.items())},
        legend=None if legend_box is None else (legend_box.left, legend_box.top, legend_box.right, legend_box.bottom),
        legend_rows=legend_rows,
    )
    return _Plan(layout, strokes, markers, label_font, legend_font, label_ink)


_LEGEND_PAD = 14
_LEGEND_ROW_H = 34
_LEGEND_SWATCH_W = 44


def compute_layout(m: MetroMap, *, font_path: str | None = None, language: str = "en") -> MapLayout:
    """Marker sizes, label boxes and legend position that `render_map` uses for `m`."""
    return _plan(m, font_path, language).layout


def render_map(
    m: MetroMap,
    *,
    scale: float = 1.0,
    language: str = "en",
    font_path: str | None = None,
) -> Image.Image:
    """Draw `m` as a map and return an RGB image.

    The map is drawn at `m.width` x `m.height`; with `scale` < 1 the result is then
    downsampled with LANCZOS to `round(width*scale)` x `round(height*scale)` (at least
    1x1), as in the MapTab resolution ablation. `language` selects the font
    of the labels: "en" draws with Pillow's bundled font, "zh" with a CJK font
    (`language.cjk_font`; a GeoevalError says how to install one when there is none); the names
    themselves are the map's (`language.localize_map` gives Chinese ones). `font_path` overrides
    the font. A Travelmap is drawn in travel style: paths in `TRAVEL_PATH_COLOR`, no legend, hubs
    with the larger marker.
    """
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"language must be one of {SUPPORTED_LANGUAGES}, got {language!r}")
    if not (0 < scale <= 1):
        raise ValueError(f"scale must be in (0, 1], got {scale!r}")
    from geoeval.core.timing import stage

    with stage("render"):  # the time budget's render stage (bench/profile_main.py)
        return _draw(m, scale, language, font_path)


#: Full-size drawings of recent maps: a resolution sweep asks for each map at every scale, and
#: only the final downsampling depends on the scale (label placement is most of the cost).
_FULL_SIZE: OrderedDict[str, Image.Image] = OrderedDict()
_FULL_SIZE_MAX = 8


def _draw(m: MetroMap, scale: float, language: str, font_path: str | None) -> Image.Image:
    # the font is part of the drawing: for zh without a font_path, the CJK font found now
    font = font_path
    if font is None and language == "zh":
        from geoeval.suites.maptab.language import cjk_font

        font = repr(cjk_font())
    key = hashlib.sha256(repr((m, language, font)).encode()).hexdigest()
    img = _FULL_SIZE.get(key)
    if img is None:
        img = _draw_full_size(m, language, font_path)
        _FULL_SIZE[key] = img
        while len(_FULL_SIZE) > _FULL_SIZE_MAX:
            _FULL_SIZE.popitem(last=False)
    else:
        _FULL_SIZE.move_to_end(key)
    if scale < 1:
        size = (max(1, round(m.width * scale)), max(1, round(m.height * scale)))
        return img.resize(size, Image.Resampling.LANCZOS)
    return img.copy()  # the cached drawing stays as drawn, whatever the caller does


def _draw_full_size(m: MetroMap, language: str, font_path: str | None) -> Image.Image:
    plan = _plan(m, font_path, language)
    layout = plan.layout
    img = Image.new("RGB", (m.width, m.height), BACKGROUND)
    draw = ImageDraw.Draw(img)

    # 1. line strokes
    for s in plan.strokes:
        draw.line([(s.x0, s.y0), (s.x1, s.y1)], fill=s.color, width=LINE_WIDTH)

    # 2. station markers, on top of the strokes
    for mk in plan.markers:
        r = mk.radius
        box = [mk.x - r, mk.y - r, mk.x + r, mk.y + r]
        if mk.interchange:
            draw.ellipse(box, fill=BACKGROUND, outline=INTERCHANGE_OUTLINE_COLOR, width=INTERCHANGE_OUTLINE)
        else:
            draw.ellipse(box, fill=BACKGROUND, outline=ORDINARY_OUTLINE_COLOR, width=ORDINARY_OUTLINE)

    # 3. legend: a framed list of colour swatches and line names
    if layout.legend is not None:
        left, top, right, bottom = layout.legend
        draw.rectangle([left, top, right, bottom], fill=BACKGROUND, outline=(68, 68, 68), width=2)
        for i, (ln, color) in enumerate(layout.legend_rows):
            cy = top + _LEGEND_PAD + 12 + i * _LEGEND_ROW_H
            sx = left + _LEGEND_PAD
            draw.rectangle(
                [sx, cy - LINE_WIDTH / 2, sx + _LEGEND_SWATCH_W, cy + LINE_WIDTH / 2], fill=_hex_to_rgb(color)
            )
            l, t, r, b = plan.legend_font.getbbox(ln)
            draw.text((sx + _LEGEND_SWATCH_W + 12 - l, cy - (t + b) / 2), ln, fill=LABEL_COLOR, font=plan.legend_font)

    # 4. station names
    for name, (left, top, _, _) in layout.labels.items():
        l, t, _, _ = plan.label_ink[name]
        # Position the text so that its ink box is exactly the planned box.
        draw.text((left - l, top - t), name, fill=LABEL_COLOR, font=plan.label_font)
    return img


def image_to_png_bytes(img: Image.Image) -> bytes:
    """Encode `img` as PNG with fixed settings and no metadata, so equal images give equal
    bytes."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()
