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
  no other label, marker, line stroke or the legend, and stays clearly nearer to its own
  marker than to any other one;
* a framed legend in a free corner lists the line names next to a swatch of their colour.

Drawing uses no antialiasing for shapes (text is antialiased by FreeType), so the output
is deterministic: the same map and scale give byte-identical PNGs.
"""

from __future__ import annotations

import io
import math
import zlib
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from geoeval.suites.maptab.graph import MetroMap

SUPPORTED_LANGUAGES: tuple[str, ...] = ("en",)

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

# Label placement clearances. They are generous on purpose: an OCR reader must see each
# label as a separate text line (so labels keep apart by more than a word space) and must
# be able to attach it to the right marker (so a label keeps away from foreign markers).
LABEL_GAP = 6  # between a label and its own marker
LABEL_CLEARANCE_LABEL_X = 40  # between two labels side by side (OCR joins close words)
LABEL_CLEARANCE_LABEL_Y = 12  # between two labels one above the other
LABEL_CLEARANCE_STROKE = 10  # between a label and a line stroke
LABEL_CLEARANCE_MARKER = 26  # between a label and a marker that is not its own
LABEL_CLEARANCE_BORDER = 6  # between a label and the image border

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
            colors.setdefault("", (90, 90, 90))
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
        interchange = len(station_lines[name]) >= 2
        if interchange:
            # Cover the whole bundle of parallel strokes, plus a white rim.
            k = bundle.get(name, 1)
            radius = max(INTERCHANGE_RADIUS, (k - 1) / 2 * LINE_WIDTH + LINE_WIDTH / 2 + 8)
        else:
            radius = ORDINARY_RADIUS
        markers.append(_Marker(name, st.x, st.y, radius, interchange))
    return markers


def _load_font(font_path: str | None, size: int) -> ImageFont.FreeTypeFont:
    if font_path is not None:
        return ImageFont.truetype(font_path, size)
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):  # Pillow built without FreeType
        raise RuntimeError("Pillow's scalable default font needs FreeType support (Pillow >= 10.1)")
    return font


class _Obstacles:
    """Everything a label must keep clear of, with a penalty for the fallback choice."""

    def __init__(self, width: int, height: int, strokes: list[_Stroke], markers: list[_Marker]):
        self.width = width
        self.height = height
        self.strokes = strokes
        self.markers = markers
        self.labels: list[_Rect] = []
        self.blocks: list[_Rect] = []  # the legend

    def penalty(self, box: _Rect, own: _Marker | None) -> float:
        """0 when `box` is free; otherwise grows with how badly it collides."""
        cost = 0.0
        b = LABEL_CLEARANCE_BORDER
        if box.left < b or box.top < b or box.right > self.width - b or box.bottom > self.height - b:
            cost += 1e6
        for other in self.labels:
            ov = box.overlap_area(other.inflate(LABEL_CLEARANCE_LABEL_X, LABEL_CLEARANCE_LABEL_Y))
            if ov > 0:
                cost += 1000 + ov
        for other in self.blocks:
            ov = box.overlap_area(other.inflate(LABEL_CLEARANCE_LABEL_Y))
            if ov > 0:
                cost += 5000 + ov
        for mk in self.markers:
            d = box.distance_to_point(mk.x, mk.y) - mk.radius
            need = LABEL_GAP - 1 if own is not None and mk.name == own.name else LABEL_CLEARANCE_MARKER
            if d < need:
                cost += 3000 + 100 * (need - d)
        for s in self.strokes:
            d = _segment_rect_distance(s.x0, s.y0, s.x1, s.y1, box) - LINE_WIDTH / 2
            if d < LABEL_CLEARANCE_STROKE:
                cost += 500 + 20 * (LABEL_CLEARANCE_STROKE - d)
        return cost


def _label_candidates(mk: _Marker, w: float, h: float) -> list[_Rect]:
    """Candidate ink boxes around a marker, best first: right, left, above, below, the
    diagonals, then the same ring again a little further out."""
    out = []
    for extra in (0.0, 14.0, 30.0):
        g = mk.radius + LABEL_GAP + extra
        d = (mk.radius + LABEL_GAP) * 0.72 + extra
        x, y = mk.x, mk.y
        out += [
            _Rect(x + g, y - h / 2, x + g + w, y + h / 2),  # right
            _Rect(x - g - w, y - h / 2, x - g, y + h / 2),  # left
            _Rect(x - w / 2, y - g - h, x + w / 2, y - g),  # above
            _Rect(x - w / 2, y + g, x + w / 2, y + g + h),  # below
            _Rect(x + d, y - d - h, x + d + w, y - d),  # upper right
            _Rect(x + d, y + d, x + d + w, y + d + h),  # lower right
            _Rect(x - d - w, y - d - h, x - d, y - d),  # upper left
            _Rect(x - d - w, y + d, x - d, y + d + h),  # lower left
        ]
    return out


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


def render_map(
    m: MetroMap,
    *,
    scale: float = 1.0,
    language: str = "en",
    font_path: str | None = None,
) -> Image.Image:
    """Draw `m` as a metro map and return an RGB image.

    The map is drawn at `m.width` x `m.height`; with `scale` < 1 the result is then
    downsampled with LANCZOS to `round(width*scale)` x `round(height*scale)` (at least
    1x1), as in the MapTab resolution ablation. `language` selects the label language
    (only "en" so far). `font_path` overrides Pillow's bundled scalable font.
    """
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"language must be one of {SUPPORTED_LANGUAGES}, got {language!r}")
    if not (0 < scale <= 1):
        raise ValueError(f"scale must be in (0, 1], got {scale!r}")

    label_font = _load_font(font_path, LABEL_FONT_SIZE)
    legend_font = _load_font(font_path, LEGEND_FONT_SIZE)

    img = Image.new("RGB", (m.width, m.height), BACKGROUND)
    draw = ImageDraw.Draw(img)

    strokes, bundle = _build_strokes(m)
    markers = _build_markers(m, bundle)
    obstacles = _Obstacles(m.width, m.height, strokes, markers)

    # 1. line strokes
    for s in strokes:
        draw.line([(s.x0, s.y0), (s.x1, s.y1)], fill=s.color, width=LINE_WIDTH)

    # 2. station markers, on top of the strokes
    for mk in markers:
        r = mk.radius
        box = [mk.x - r, mk.y - r, mk.x + r, mk.y + r]
        if mk.interchange:
            draw.ellipse(box, fill=BACKGROUND, outline=INTERCHANGE_OUTLINE_COLOR, width=INTERCHANGE_OUTLINE)
        else:
            draw.ellipse(box, fill=BACKGROUND, outline=ORDINARY_OUTLINE_COLOR, width=ORDINARY_OUTLINE)

    # 3. legend, in the corner that collides least with the network
    legend_lines = [ln for ln in sorted(m.lines)] or sorted(
        {ln for runs in _segments_by_edge(m).values() for ln in runs if ln}
    )
    if legend_lines:
        colors = _line_colors(m, set(legend_lines))
        pad, row_h, swatch_w, swatch_h = 14, 34, 44, LINE_WIDTH
        text_w = max(legend_font.getbbox(ln)[2] for ln in legend_lines)
        lw = pad + swatch_w + 12 + text_w + pad
        lh = pad + row_h * len(legend_lines) + pad - (row_h - 24)
        legend = _place_legend(m, obstacles, lw, lh)
        draw.rectangle(
            [legend.left, legend.top, legend.right, legend.bottom],
            fill=BACKGROUND, outline=(68, 68, 68), width=2,
        )
        for i, ln in enumerate(legend_lines):
            cy = legend.top + pad + 12 + i * row_h
            sx = legend.left + pad
            draw.rectangle([sx, cy - swatch_h / 2, sx + swatch_w, cy + swatch_h / 2], fill=colors[ln])
            l, t, r, b = legend_font.getbbox(ln)
            draw.text((sx + swatch_w + 12 - l, cy - (t + b) / 2), ln, fill=LABEL_COLOR, font=legend_font)
        obstacles.blocks.append(legend)

    # 4. station labels: crowded interchanges first, then top-to-bottom
    order = sorted(markers, key=lambda mk: (not mk.interchange, mk.y, mk.x, mk.name))
    for mk in order:
        l, t, r, b = label_font.getbbox(mk.name)
        w, h = r - l, b - t
        best, best_cost = None, math.inf
        for box in _label_candidates(mk, w, h):
            cost = obstacles.penalty(box, mk)
            if cost < best_cost:
                best, best_cost = box, cost
            if cost == 0:
                break
        assert best is not None
        obstacles.labels.append(best)
        # Position the text so that its ink box is exactly `best`.
        draw.text((best.left - l, best.top - t), mk.name, fill=LABEL_COLOR, font=label_font)

    if scale < 1:
        size = (max(1, round(m.width * scale)), max(1, round(m.height * scale)))
        img = img.resize(size, Image.Resampling.LANCZOS)
    return img


def image_to_png_bytes(img: Image.Image) -> bytes:
    """Encode `img` as PNG with fixed settings and no metadata, so equal images give equal
    bytes."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()
