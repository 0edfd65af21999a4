"""An honest metro-map reader: recover stations, lines and edges from the pixels alone.

This is the perception half of MapTab's offline baseline agent. It never sees the
`MetroMap` behind an image, only the image, so its accuracy falls the way a model's
would when the resolution ablation (MapTab appendix G.1) shrinks the map: once the
station names are a few pixels tall, OCR cannot read them and the agent cannot even
find the stations a question asks about.

Pipeline (`read_map_image`):

1. Small images are enlarged by a power of two to a working size (longer side at least
   1600 px) so that the geometric thresholds below have one meaning at every scale.
   Enlarging interpolates; it cannot bring back what downsampling destroyed.
2. Line colours: strongly coloured pixels are clustered into a palette; every pixel gets
   the index of its palette colour (or none).
3. Station markers: white, round, enclosed blobs whose rim is a dark achromatic ring and
   which a coloured stroke touches from outside (letter holes fail the last test). Their
   sizes fall into groups: the most populous is the ordinary marker, larger ones are
   interchanges, smaller ones are impostors and dropped.
4. The legend is a large dark rectangular frame; everything inside it is ignored.
5. Edges: two markers are joined when the straight segment between them is covered
   along most of its length by one palette colour running at a steady offset, and the
   segment passes near no other marker. All colours covering it are the edge's lines
   (parallel strokes of a shared section).
6. Labels: OCR (RapidOCR) runs on a copy of the image with line colours, markers and the
   legend painted white, so that only text is left; each text box goes to the nearest
   free marker (globally nearest pairs first). A station is a transfer station when its
   marker is an interchange marker or two line colours touch it.

`route_on_perceived` then answers the MapTab route question on the perceived graph.
"""

from __future__ import annotations

import os

import difflib
import heapq
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import cv2
import numpy as np
from PIL import Image

# Working size: images whose longer side is below this are enlarged by a power of two.
WORK_MIN_LONG_SIDE = 1600

# Colour layer. A pixel belongs to a line stroke when it is clearly chromatic; black,
# grey and white (text, marker outlines, background) are not.
_MIN_CHROMA = 60
_MIN_BRIGHTEST_CHANNEL = 80
_PALETTE_MERGE_DISTANCE = 40.0  # RGB distance under which a colour peak is an earlier one (or its tint)
_PALETTE_ASSIGN_DISTANCE = 90.0  # RGB distance under which a pixel takes a palette colour

# Station markers, in working pixels.
_MARKER_MIN_INNER_RADIUS = 4.0
_MARKER_MAX_INNER_RADIUS = 32.0
_DARK_GRAY = 150  # ring pixels are darker than this ...
_DARK_MAX_CHROMA = 60  # ... and nearly achromatic
_RAYS = 36
_RING_MIN_FRACTION = 0.85  # share of rays that must cross the dark ring
_MIN_COLOUR_RAYS = 2  # rays that must meet a line colour just outside the ring
_MARKER_GROUP_RATIO = 1.2  # marker kinds differ in outer radius at least this much
_INTERCHANGE_MIN_OUTER_RADIUS = 14.5  # used when the sizes do not split into two groups

# Edges, in working pixels.
_EDGE_HALF_WINDOW = 16  # perpendicular search half-width: a bundle of parallel strokes
_EDGE_STEP = 2.0
_EDGE_MIN_COVERAGE = 0.8
_EDGE_OFFSET_TOLERANCE = 4.0  # how far a stroke's centre may wander from its median offset
_EDGE_BLOCK_MARGIN = 8.0  # a segment this close to a third marker's rim is not an edge

# OCR.
_OCR_MIN_SCORE = 0.5
_LABEL_MAX_GAP_PER_HEIGHT = 2.5  # label-to-marker-rim gap allowed, in text-box heights

_MATCH_MIN_RATIO = 0.5


@dataclass(frozen=True)
class PerceivedStation:
    """A station as read from the image. `x`, `y` are pixel coordinates in the input
    image; `line_colors` are the "#rrggbb" colours of the strokes touching its marker."""

    name: str
    x: float
    y: float
    is_transfer: bool
    line_colors: tuple[str, ...]


@dataclass
class PerceivedMap:
    """What `read_map_image` saw.

    `stations` is keyed by the OCR'd name (markers without a readable label get a
    placeholder name "?<n>" so that paths through them still exist). `edges` holds
    `(station_a, station_b, line_colours)`. `line_colors` is the palette of line colours.
    """

    stations: dict[str, PerceivedStation]
    edges: list[tuple[str, str, tuple[str, ...]]]
    line_colors: tuple[str, ...] = ()
    width: int = 0
    height: int = 0
    ocr_seconds: float = 0.0
    texts: list[str] = field(default_factory=list)  # every OCR text kept, for diagnostics


# ---------------------------------------------------------------------------- version

#: Bump when the reader's output changes for a reason the source hash cannot see (a new OCR
#: model file, a changed default outside this module).
PERCEPTION_VERSION = 1

_VERSION_CACHE: list[str] = []


def perception_version() -> str:
    """What a cached reading of an image depends on besides the image: this module's source,
    `PERCEPTION_VERSION`, and the versions of the OCR engine and the image libraries. Any change
    gives a new version, and the disk cache (`geoeval.core.diskcache`) never reads another
    version's entries."""
    if not _VERSION_CACHE:
        import hashlib
        from importlib import metadata
        from pathlib import Path

        parts = [f"v{PERCEPTION_VERSION}", hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]]
        for dist in ("rapidocr_onnxruntime", "onnxruntime", "opencv-python-headless", "opencv-python", "numpy", "pillow"):
            try:
                parts.append(f"{dist}={metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                continue
        _VERSION_CACHE.append(f"v{PERCEPTION_VERSION}-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:16])
    return _VERSION_CACHE[0]


# ---------------------------------------------------------------------------- OCR engine

_OCR_ENGINE: Any = None
_OCR_LOCK = threading.Lock()

OcrEngine = Callable[..., Any]


def get_ocr_engine() -> OcrEngine:
    """The process-wide RapidOCR engine, created on first use (creation loads the ONNX
    models and costs about a second).

    ONNX Runtime threads: `GEOEVAL_OCR_THREADS`, else `OMP_NUM_THREADS` (Ray sets it to a task's
    CPU count), else all cores. Its threads spin while waiting, so two workers each using every
    core would slow each other down instead of running in parallel."""
    global _OCR_ENGINE
    with _OCR_LOCK:
        if _OCR_ENGINE is None:
            from rapidocr_onnxruntime import RapidOCR

            threads = os.environ.get("GEOEVAL_OCR_THREADS") or os.environ.get("OMP_NUM_THREADS")
            kwargs = {}
            if threads and threads.isdigit() and int(threads) >= 1:
                kwargs = {"intra_op_num_threads": int(threads), "inter_op_num_threads": 1}
                try:
                    import cv2

                    cv2.setNumThreads(int(threads))
                except Exception:  # OpenCV threading is an optimisation only
                    pass
            _OCR_ENGINE = RapidOCR(**kwargs)
        return _OCR_ENGINE


# ---------------------------------------------------------------------------- internals


@dataclass
class _Marker:
    x: float
    y: float
    inner: float
    outer: float
    colours: tuple[int, ...]
    interchange: bool = False


@dataclass
class _TextBox:
    text: str
    left: float
    top: float
    right: float
    bottom: float
    score: float

    @property
    def height(self) -> float:
        return self.bottom - self.top

    def gap_to_circle(self, x: float, y: float, r: float) -> float:
        dx = max(self.left - x, 0.0, x - self.right)
        dy = max(self.top - y, 0.0, y - self.bottom)
        return math.hypot(dx, dy) - r


def _working_factor(width: int, height: int) -> int:
    k = 1
    while max(width, height) * k < WORK_MIN_LONG_SIDE:
        k *= 2
    return k


_WHITE = np.array([255.0, 255.0, 255.0], dtype=np.float32)


def _blend_distance(pix: np.ndarray, palette: np.ndarray, max_tint: float = 0.8) -> np.ndarray:
    """Distance (N x K) from each pixel to the tints of each palette colour.

    A downsampled stroke's rim is its colour mixed with the white background, so a pixel is
    measured against the segment from the pure colour towards white (up to `max_tint` of the
    way), not just against the pure colour.
    """
    towards_white = _WHITE[None, :] - palette  # K x 3
    norm2 = np.maximum((towards_white**2).sum(axis=1), 1e-6)  # K
    diff = pix[:, None, :] - palette[None, :, :]  # N x K x 3
    t = np.clip((diff * towards_white[None, :, :]).sum(axis=2) / norm2[None, :], 0.0, max_tint)
    closest = palette[None, :, :] + t[:, :, None] * towards_white[None, :, :]
    return np.linalg.norm(pix[:, None, :] - closest, axis=2)


def _colour_layer(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cluster chromatic pixels into a palette of line colours.

    Returns (palette K x 3 float, per-pixel palette index with -1 for none, chroma).
    Works on the distinct colours with their pixel counts, which are far fewer than the
    pixels.
    """
    h, w = rgb.shape[:2]
    rgb16 = rgb.astype(np.int16)
    maxc = rgb16.max(axis=2)
    chroma = maxc - rgb16.min(axis=2)
    chromatic = (chroma >= _MIN_CHROMA) & (maxc >= _MIN_BRIGHTEST_CHANNEL)
    index = np.full((h, w), -1, dtype=np.int8)
    px = rgb[chromatic].astype(np.int32)
    empty = np.zeros((0, 3), np.float32)
    if len(px) == 0:
        return empty, index, chroma
    packed = (px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2]
    uniq, inverse, weight = np.unique(packed, return_inverse=True, return_counts=True)
    colours = np.stack([(uniq >> 16) & 255, (uniq >> 8) & 255, uniq & 255], axis=1).astype(np.float32)

    q = (colours // 32).astype(np.int32)
    bins = q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2]
    counts = np.bincount(bins, weights=weight, minlength=512)
    # A line is long and thick, so its pure colour owns many pixels. Tints (a colour
    # mixed with white at a stroke's rim) and mixes of two colours are spread over many
    # bins with fewer pixels each; tints are recognised as such, not as new lines.
    min_count = max(60, int(0.0004 * h * w))
    centres: list[np.ndarray] = []
    for b in np.argsort(-counts, kind="stable"):
        if counts[b] < min_count or len(centres) >= 24:
            break
        sel = bins == b
        mean = (colours[sel] * weight[sel, None]).sum(axis=0) / weight[sel].sum()
        if centres and _explained_by(mean, np.stack(centres)):
            continue
        centres.append(mean)
    if not centres:
        return empty, index, chroma

    palette = np.stack(centres).astype(np.float32)
    for _ in range(2):  # refine each centre on the colours it clearly owns
        d = np.linalg.norm(colours[:, None, :] - palette[None, :, :], axis=2)
        nearest = d.argmin(axis=1)
        dmin = d[np.arange(len(colours)), nearest]
        for i in range(len(palette)):
            core = (nearest == i) & (dmin < 45)
            if core.any():
                palette[i] = (colours[core] * weight[core, None]).sum(axis=0) / weight[core].sum()
    d = _blend_distance(colours, palette)
    nearest = d.argmin(axis=1)
    dmin = d[np.arange(len(colours)), nearest]
    assigned = np.where(dmin < _PALETTE_ASSIGN_DISTANCE, nearest, -1)
    # Drop palette entries that own almost nothing after refinement.
    owned = np.bincount(assigned[assigned >= 0], weights=weight[assigned >= 0], minlength=len(palette))
    keep = [i for i in range(len(palette)) if owned[i] >= min_count]
    remap = np.full(len(palette) + 1, -1, dtype=np.int8)
    for new, old in enumerate(keep):
        remap[old] = new
    index[chromatic] = remap[assigned][inverse]  # -1 indexes the last slot, which stays -1
    return palette[keep], index, chroma


def _explained_by(colour: np.ndarray, palette: np.ndarray) -> bool:
    """Whether `colour` is one of the palette colours or one of their tints.

    (Mixes of two line colours are not tested: a mix of, say, green and blue can look
    just like a genuine teal line; such mixes own too few pixels to become peaks anyway.)
    """
    return bool(_blend_distance(colour[None, :], palette, max_tint=0.95).min() < _PALETTE_MERGE_DISTANCE)


def _sample(arr: np.ndarray, xs: np.ndarray, ys: np.ndarray, fill) -> np.ndarray:
    """Nearest-pixel lookup with out-of-image positions reading `fill`."""
    h, w = arr.shape[:2]
    xi = np.rint(xs).astype(np.int64)
    yi = np.rint(ys).astype(np.int64)
    inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
    out = np.full(xs.shape, fill, dtype=arr.dtype)
    out[inside] = arr[yi[inside], xi[inside]]
    return out


def _detect_markers(gray: np.ndarray, chroma: np.ndarray, cidx: np.ndarray, rgb: np.ndarray) -> list[_Marker]:
    """Station markers: enclosed, round, white blobs ringed by a dark achromatic outline
    that at least one line colour touches from outside.

    The last condition is what separates markers from the holes of letters such as "o":
    the renderer keeps labels well clear of strokes.
    """
    h, w = gray.shape
    whiteish = (rgb.min(axis=2) >= 200) & (chroma <= 40)
    dark = (gray < _DARK_GRAY) & (chroma < _DARK_MAX_CHROMA)
    n, labels, stats, cents = cv2.connectedComponentsWithStats(whiteish.astype(np.uint8), connectivity=4)
    min_area = math.pi * _MARKER_MIN_INNER_RADIUS**2
    max_area = math.pi * _MARKER_MAX_INNER_RADIUS**2
    angles = np.linspace(0, 2 * math.pi, _RAYS, endpoint=False)
    cos, sin = np.cos(angles), np.sin(angles)
    markers: list[_Marker] = []
    for i in range(1, n):
        x, y, bw, bh, area = (int(v) for v in stats[i])
        if x == 0 or y == 0 or x + bw >= w or y + bh >= h:
            continue  # the background, or something cut by the border
        if not (min_area <= area <= max_area):
            continue
        if min(bw, bh) / max(bw, bh) < 0.75 or not (0.6 <= area / (bw * bh) <= 0.92):
            continue  # not round
        cx, cy = cents[i]
        r_in = math.sqrt(area / math.pi)
        # Walk outwards along rays from the blob's rim: a marker's rim is a dark ring,
        # and just outside it some rays meet the coloured stroke of its line.
        ts = np.arange(r_in - 1.0, r_in + 14.0, 0.5)
        xs = cx + cos[:, None] * ts[None, :]
        ys = cy + sin[:, None] * ts[None, :]
        d = _sample(dark.view(np.uint8), xs, ys, 0).astype(bool)
        c = _sample(cidx, xs, ys, -1)
        ring_starts, ring_ends, colour_hits = [], [], []
        limit_start = int((4.5 + 1.0) / 0.5)  # the ring begins within ~4 px of the rim
        for r in range(_RAYS):
            on = np.flatnonzero(d[r])
            if len(on) == 0 or on[0] > limit_start:
                continue
            start = on[0]
            off = np.flatnonzero(~d[r, start:])
            end = start + (off[0] if len(off) else d.shape[1] - start)
            ring_starts.append(ts[start])
            ring_ends.append(ts[min(end, len(ts) - 1)])
            after = c[r, end : end + 10]  # within 5 px past the ring
            hits = after[after >= 0]
            if len(hits):
                colour_hits.append(int(np.bincount(hits).argmax()))
        if len(ring_starts) < _RING_MIN_FRACTION * _RAYS or len(colour_hits) < _MIN_COLOUR_RAYS:
            continue
        outer = float(np.median(ring_ends))
        counts = np.bincount(colour_hits)
        colours = tuple(int(k) for k in np.flatnonzero(counts >= _MIN_COLOUR_RAYS))
        if not colours:
            continue
        markers.append(_Marker(float(cx), float(cy), float(np.median(ring_starts)), outer, colours))
    return markers


def _classify_markers(markers: list[_Marker]) -> list[_Marker]:
    """Tell interchange markers from ordinary ones, and drop impostors.

    Marker sizes fall into groups (sorted outer radii split wherever one is at least
    `_MARKER_GROUP_RATIO` times the previous). Most stations are ordinary and all ordinary
    markers are drawn alike, so the most populous group is the ordinary one; larger groups
    are interchanges, and smaller ones are impostors (in practice the hole of a letter such
    as "b" or "Q" in a label squeezed against a stroke). With one group only, an absolute
    size decides.
    """
    if not markers:
        return []
    order = sorted(markers, key=lambda mk: mk.outer)
    groups: list[list[_Marker]] = [[order[0]]]
    for prev, mk in zip(order, order[1:]):
        if prev.outer > 0 and mk.outer / prev.outer >= _MARKER_GROUP_RATIO:
            groups.append([])
        groups[-1].append(mk)
    if len(groups) == 1:
        for mk in markers:
            mk.interchange = mk.outer >= _INTERCHANGE_MIN_OUTER_RADIUS
        return list(markers)
    ordinary = max(range(len(groups)), key=lambda g: (len(groups[g]), -g))
    kept = set()
    for g, group in enumerate(groups):
        for mk in group:
            if g >= ordinary:
                mk.interchange = g > ordinary
                kept.add(id(mk))
    return [mk for mk in markers if id(mk) in kept]


def _find_legend_frames(gray: np.ndarray, chroma: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Large thin dark rectangles (the legend's frame) as (left, top, right, bottom)."""
    dark = ((gray < _DARK_GRAY) & (chroma < _DARK_MAX_CHROMA)).astype(np.uint8)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(dark, connectivity=8)
    frames = []
    for i in range(1, n):
        x, y, bw, bh, area = (int(v) for v in stats[i])
        if bw < 80 or bh < 40 or area > 0.15 * bw * bh:
            continue
        ys, xs = np.nonzero(labels[y : y + bh, x : x + bw] == i)
        band = 8
        near_border = (xs < band) | (xs >= bw - band) | (ys < band) | (ys >= bh - band)
        if near_border.mean() < 0.9:
            continue
        # All four sides must be present (a long stroke or an L-shape is not a frame).
        sides = [(xs < band).mean(), (xs >= bw - band).mean(), (ys < band).mean(), (ys >= bh - band).mean()]
        if min(sides) < 0.05:
            continue
        frames.append((x, y, x + bw, y + bh))
    return frames


def _inside(x: float, y: float, rect: tuple[int, int, int, int]) -> bool:
    return rect[0] <= x <= rect[2] and rect[1] <= y <= rect[3]


def _detect_edges(markers: list[_Marker], cidx: np.ndarray, n_colours: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Pairs of markers joined by a straight stroke: (i, j, palette indices on it).

    For every pair whose segment passes no third marker, the band along the segment
    (`_EDGE_HALF_WINDOW` to either side, wide enough for a bundle of parallel strokes) is
    sampled; each colour that runs through most of it at a steady offset is a line on
    the edge.
    """
    edges = []
    offsets = np.arange(-_EDGE_HALF_WINDOW, _EDGE_HALF_WINDOW + 1, 1.0)
    for i in range(len(markers)):
        for j in range(i + 1, len(markers)):
            a, b = markers[i], markers[j]
            dx, dy = b.x - a.x, b.y - a.y
            length = math.hypot(dx, dy)
            start, stop = a.outer + 3, length - b.outer - 3
            if stop - start < 4:
                continue
            ux, uy = dx / length, dy / length
            if _blocked(markers, i, j, a, b, ux, uy, length):
                continue
            # Cheap pre-check on a few samples before the full scan.
            for n_samples in (12, None):
                if n_samples is None:
                    ts = np.arange(start, stop, _EDGE_STEP)
                else:
                    ts = np.linspace(start, stop, n_samples)
                xs = a.x + ux * ts[:, None] - uy * offsets[None, :]
                ys = a.y + uy * ts[:, None] + ux * offsets[None, :]
                c = _sample(cidx, xs, ys, -1)
                on = tuple(k for k in range(n_colours) if _straight_coverage(c == k, offsets) >= _EDGE_MIN_COVERAGE)
                if not on:
                    break
            else:
                edges.append((i, j, on))
    return edges


def _straight_coverage(present: np.ndarray, offsets: np.ndarray) -> float:
    """Share of samples along a segment where one colour's stroke runs at a steady
    perpendicular offset.

    `present` is samples x offsets. A real edge is a straight stroke, so its centre keeps
    one offset (its place in a bundle); a chord across two edges that bend slightly at a
    middle station drifts away and back, and fails here.
    """
    any_present = present.any(axis=1)
    if not any_present.any():
        return 0.0
    weights = present.sum(axis=1)
    centres = np.where(any_present, (present * offsets[None, :]).sum(axis=1) / np.maximum(weights, 1), np.nan)
    median = float(np.nanmedian(centres))
    steady = any_present & (np.abs(centres - median) <= _EDGE_OFFSET_TOLERANCE)
    return float(steady.mean())


def _blocked(markers, i, j, a, b, ux, uy, length) -> bool:
    """Whether a third marker sits on or near the segment a-b (then a-b is no edge)."""
    for k, mk in enumerate(markers):
        if k == i or k == j:
            continue
        px, py = mk.x - a.x, mk.y - a.y
        t = px * ux + py * uy
        if t <= 0 or t >= length:
            continue
        if abs(px * uy - py * ux) < mk.outer + _EDGE_BLOCK_MARGIN:
            return True
    return False


def _run_ocr(engine: OcrEngine, image: np.ndarray) -> list[_TextBox]:
    try:
        result = engine(image, use_cls=False)
    except TypeError:  # an injected engine without RapidOCR's keyword arguments
        result = engine(image)
    if isinstance(result, tuple):
        result = result[0]
    boxes = []
    for item in result or []:
        pts, text, score = item[0], str(item[1]).strip(), float(item[2])
        if score < _OCR_MIN_SCORE or sum(ch.isalpha() for ch in text) < 2:
            continue
        pts = np.asarray(pts, dtype=np.float32)
        boxes.append(
            _TextBox(text, float(pts[:, 0].min()), float(pts[:, 1].min()),
                     float(pts[:, 0].max()), float(pts[:, 1].max()), score)
        )
    return boxes


def _merge_split_labels(boxes: list[_TextBox]) -> list[_TextBox]:
    """Join text boxes that sit on one text row a word-space apart: OCR sometimes splits a
    two-word name, while the renderer keeps different labels much further apart."""
    boxes = sorted(boxes, key=lambda b: (b.top, b.left))
    merged = True
    while merged:
        merged = False
        for i in range(len(boxes)):
            for j in range(len(boxes)):
                if i == j:
                    continue
                p, q = boxes[i], boxes[j]
                if p.left > q.left:
                    continue
                overlap = min(p.bottom, q.bottom) - max(p.top, q.top)
                hmax = max(p.height, q.height)
                gap = q.left - p.right
                if overlap >= 0.6 * min(p.height, q.height) and -0.2 * hmax <= gap <= 0.45 * hmax:
                    boxes[i] = _TextBox(
                        f"{p.text} {q.text}", p.left, min(p.top, q.top), max(p.right, q.right),
                        max(p.bottom, q.bottom), min(p.score, q.score),
                    )
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return boxes


def _attach_labels(boxes: list[_TextBox], markers: list[_Marker]) -> dict[int, _TextBox]:
    """Give each marker at most one label: globally nearest (box edge to marker rim) first."""
    pairs = []
    for bi, box in enumerate(boxes):
        limit = _LABEL_MAX_GAP_PER_HEIGHT * box.height
        for mi, mk in enumerate(markers):
            gap = box.gap_to_circle(mk.x, mk.y, mk.outer)
            if gap <= limit:
                pairs.append((max(gap, 0.0), bi, mi))
    pairs.sort()
    used_boxes: set[int] = set()
    labels: dict[int, _TextBox] = {}
    for _, bi, mi in pairs:
        if bi in used_boxes or mi in labels:
            continue
        used_boxes.add(bi)
        labels[mi] = boxes[bi]
    return labels


def _hex(colour: np.ndarray) -> str:
    r, g, b = (int(round(float(v))) for v in np.clip(colour, 0, 255))
    return f"#{r:02x}{g:02x}{b:02x}"


# ---------------------------------------------------------------------------- public API


def read_map_image(img: Image.Image, *, ocr: OcrEngine | None = None) -> PerceivedMap:
    """Read a rendered metro map from its pixels.

    `ocr` is a RapidOCR-compatible callable (`ocr(ndarray) -> (results, elapse)`, results
    as `[box_points, text, score]`); by default the shared RapidOCR engine.
    """
    rgb0 = np.asarray(img.convert("RGB"))
    h0, w0 = rgb0.shape[:2]
    k = _working_factor(w0, h0)
    rgb = cv2.resize(rgb0, (w0 * k, h0 * k), interpolation=cv2.INTER_CUBIC) if k > 1 else rgb0
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)

    palette, cidx, chroma = _colour_layer(rgb)
    frames = _find_legend_frames(gray, chroma)
    markers = [
        mk for mk in _detect_markers(gray, chroma, cidx, rgb)
        if not any(_inside(mk.x, mk.y, f) for f in frames)
    ]
    markers = _classify_markers(markers)
    edges = _detect_edges(markers, cidx, len(palette))

    # Only text should be left for OCR: strokes, markers and the legend go white.
    text_img = gray.copy()
    text_img[(cidx >= 0) | (chroma >= 40)] = 255
    for mk in markers:
        cv2.circle(text_img, (int(round(mk.x)), int(round(mk.y))), int(math.ceil(mk.outer + 3)), 255, -1)
    for left, top, right, bottom in frames:
        text_img[max(top - 2, 0) : bottom + 3, max(left - 2, 0) : right + 3] = 255

    engine = ocr if ocr is not None else get_ocr_engine()
    t0 = time.perf_counter()
    boxes = _run_ocr(engine, cv2.cvtColor(text_img, cv2.COLOR_GRAY2BGR))
    ocr_seconds = time.perf_counter() - t0
    boxes = [b for b in boxes if not any(_inside((b.left + b.right) / 2, (b.top + b.bottom) / 2, f) for f in frames)]
    boxes = _merge_split_labels(boxes)
    labels = _attach_labels(boxes, markers)

    names: list[str] = []
    taken: set[str] = set()
    for mi in range(len(markers)):
        base = labels[mi].text if mi in labels else f"?{mi}"
        name, n = base, 2
        while name in taken:
            name, n = f"{base} ({n})", n + 1
        taken.add(name)
        names.append(name)

    hex_palette = [_hex(c) for c in palette]
    stations: dict[str, PerceivedStation] = {}
    for mi, mk in enumerate(markers):
        colours = tuple(hex_palette[c] for c in mk.colours)
        # Back to input-image pixels (resize maps pixel centres: x_in = (x + 0.5) / k - 0.5).
        stations[names[mi]] = PerceivedStation(
            names[mi], (mk.x + 0.5) / k - 0.5, (mk.y + 0.5) / k - 0.5,
            mk.interchange or len(colours) >= 2, colours,
        )
    perceived_edges = [(names[i], names[j], tuple(hex_palette[c] for c in cs)) for i, j, cs in edges]
    return PerceivedMap(
        stations=stations,
        edges=perceived_edges,
        line_colors=tuple(hex_palette),
        width=w0,
        height=h0,
        ocr_seconds=ocr_seconds,
        texts=[b.text for b in boxes],
    )


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
    "red": (220, 30, 30), "blue": (0, 100, 210), "green": (0, 160, 80), "orange": (245, 145, 30),
    "purple": (140, 40, 170), "pink": (228, 0, 124), "teal": (0, 160, 160), "brown": (160, 82, 45),
    "yellow": (245, 196, 0), "navy": (31, 58, 147),
    "红": (220, 30, 30), "蓝": (0, 100, 210), "绿": (0, 160, 80), "橙": (245, 145, 30), "紫": (140, 40, 170),
    "粉": (228, 0, 124), "青": (0, 160, 160), "棕": (160, 82, 45), "黄": (245, 196, 0), "藏青": (31, 58, 147),
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
            path, cur = [], b
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
    """The answer text of a Map-only or Map+Mix_tab QA question (`qa.ParsedQuestion`) from the
    perceived map, with values from the Vertex Table for Map+Mix_tab; None when what it needs was
    not read (an unmatched station name, a line colour not found)."""
    import networkx as nx

    from geoeval.suites.maptab.qa_answers import KINDS, Answer

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
        prices = [_table_value(rows, v, "Price") for v in g.neighbors(a)]
        prices = [x for x in prices if x is not None]
        return done(min(prices)) if prices else None
    if qa_type == "MM-LP":
        b = station("b")
        if b is None or not nx.has_path(g, a, b):
            return None
        times = [_table_value(rows, v, "Time") for path in nx.all_shortest_paths(g, a, b) for v in path]
        return done(int(any(t is not None and t < p["n"] for t in times)))
    return None
