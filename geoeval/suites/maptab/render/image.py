"""Render a MapTab `MetroMap` as a metro-style map image, optionally downsampled.

The picture is drawn at full size (`m.width` x `m.height`, the pixel space of the
station coordinates) and, for the paper's resolution ablation (MapTab appendix G.1:
1, 1/2, 1/4, ... 1/32), shrunk afterwards with a LANCZOS filter, so a smaller image
holds strictly less information than the full-size one.

Visual conventions (the perception baseline in `perception/` reads these from pixels):

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

This module plans and draws a map; the look (sizes, colours, clearances) is `style`'s, the strokes
and markers are built by `network`, and labels and the legend are placed by `labels`.
"""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from geoeval.api import LruMemo
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.render.labels import _Obstacles, _place_labels, _place_legend
from geoeval.suites.maptab.render.network import (
    _build_markers,
    _build_strokes,
    _Marker,
    _segments_by_edge,
    _Stroke,
)
from geoeval.suites.maptab.render.style import (
    BACKGROUND,
    INTERCHANGE_OUTLINE,
    INTERCHANGE_OUTLINE_COLOR,
    LABEL_COLOR,
    LABEL_FONT_SIZE,
    LEGEND_FONT_SIZE,
    LINE_WIDTH,
    ORDINARY_OUTLINE,
    ORDINARY_OUTLINE_COLOR,
    _hex_to_rgb,
    _line_colors,
)

SUPPORTED_LANGUAGES: tuple[str, ...] = ("en", "zh")


def _load_font(font_path: str | None, size: int, language: str = "en") -> ImageFont.FreeTypeFont:
    if font_path is not None:
        return ImageFont.truetype(font_path, size)
    if language == "zh":
        from geoeval.suites.maptab.generator.language import cjk_font

        found = cjk_font()
        if found is None:
            from geoeval.api import GeoevalError

            raise GeoevalError(
                "suite.language=zh needs a font with Chinese glyphs: `pip install noto-cjk-sans-otc`, "
                "`apt-get install fonts-noto-cjk`, or set GEOEVAL_CJK_FONT to a .ttf/.otf/.ttc file"
            )
        return ImageFont.truetype(found[0], size, index=found[1])
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):  # Pillow built without FreeType
        raise RuntimeError("Pillow's scalable default font needs FreeType support (Pillow >= 10.1)")
    return font


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
    legend_lines = sorted(m.lines) or sorted({ln for runs in _segments_by_edge(m).values() for ln in runs if ln})
    legend_box = None
    legend_rows: tuple[tuple[str, str], ...] = ()
    if legend_lines:
        colors = _line_colors(m, set(legend_lines))
        legend_rows = tuple((ln, "#{:02x}{:02x}{:02x}".format(*colors[ln])) for ln in legend_lines)
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
    (`generator.language.cjk_font`; a GeoevalError says how to install one when there is none); the names
    themselves are the map's (`generator.language.localize_map` gives Chinese ones). `font_path` overrides
    the font. A Travelmap is drawn in travel style: paths in `TRAVEL_PATH_COLOR`, no legend, hubs
    with the larger marker.
    """
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"language must be one of {SUPPORTED_LANGUAGES}, got {language!r}")
    if not (0 < scale <= 1):
        raise ValueError(f"scale must be in (0, 1], got {scale!r}")
    from geoeval.api import stage

    with stage("render"):  # the time budget's render stage (bench/profile_main.py)
        return _draw(m, scale, language, font_path)


#: Full-size drawings of recent maps: a resolution sweep asks for each map at every scale, and
#: only the final downsampling depends on the scale (label placement is most of the cost).
_FULL_SIZE = LruMemo(maxsize=8)


def _font_identity(language: str, font_path: str | None) -> str | None:
    """The font a drawing uses, for the keys of drawings: `font_path`, or for zh without one the
    CJK font found on this machine now (None: Pillow's bundled font)."""
    if font_path is None and language == "zh":
        from geoeval.suites.maptab.generator.language import cjk_font

        return repr(cjk_font())
    return font_path


def _draw(m: MetroMap, scale: float, language: str, font_path: str | None) -> Image.Image:
    key = hashlib.sha256(repr((m, language, _font_identity(language, font_path))).encode()).hexdigest()
    img = _FULL_SIZE.get(key, lambda: _draw_full_size(m, language, font_path))
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


#: The disk cache of rendered maps (`map_png`); its version is the drawing code itself.
RENDER_NAMESPACE = "maptab-render"
#: relative to the suite folder
_DRAWING_MODULES = (
    "render/image.py",
    "render/labels.py",
    "render/network.py",
    "render/style.py",
    "generator/language.py",
)


@functools.lru_cache(maxsize=1)
def render_version() -> str:
    """The version of rendered maps in the disk cache: a hash of the drawing code's source and
    the Pillow release (fonts, resampling, PNG encoder), so an edit of either never serves an
    old drawing; no version number to forget to bump."""
    from geoeval.api import code_version

    suite = Path(__file__).resolve().parents[1]
    return code_version("code", [suite / name for name in _DRAWING_MODULES], ("pillow",))


def map_png(m: MetroMap, *, scale: float = 1.0, language: str = "en") -> bytes:
    """`render_map(m, scale=..., language=...)` as PNG bytes (`image_to_png_bytes`), drawn once
    per machine: the disk cache (`geoeval.core.cache.disk`, namespace `maptab-render`) keeps the
    bytes by the map, the scale, the language and its font, so a rerun in a fresh directory
    (a new work dir) reads them back instead of drawing and encoding each map again."""
    from geoeval.api import DiskCache, content_key

    key = content_key(repr(m), repr(float(scale)), language, repr(_font_identity(language, None)))
    png, _hit = DiskCache(RENDER_NAMESPACE, render_version()).get_or_compute(
        key, lambda: image_to_png_bytes(render_map(m, scale=scale, language=language))
    )
    return png
