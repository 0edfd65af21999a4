"""Station markers and the legend frame, found in the pixels (`reader.read_map_image`,
steps 3 and 4).

A marker is a white, round, enclosed blob ringed by a dark achromatic outline that a line colour
touches from outside; marker sizes tell interchanges from ordinary stations. The legend is a
large thin dark rectangle, and whatever lies inside it is not part of the map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

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


@dataclass
class _Marker:
    x: float
    y: float
    inner: float
    outer: float
    colours: tuple[int, ...]
    interchange: bool = False


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
