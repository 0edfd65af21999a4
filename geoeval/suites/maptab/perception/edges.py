"""Edges between perceived station markers (`reader.read_map_image`, step 5).

Two markers are joined when the straight segment between them is covered along most of its
length by one palette colour running at a steady offset, and the segment passes near no other
marker; every colour covering it is one of the edge's lines.
"""

from __future__ import annotations

import math

import numpy as np

from geoeval.suites.maptab.perception.markers import _Marker, _sample

# Edges, in working pixels.
_EDGE_HALF_WINDOW = 16  # perpendicular search half-width: a bundle of parallel strokes
_EDGE_STEP = 2.0
_EDGE_MIN_COVERAGE = 0.8
_EDGE_OFFSET_TOLERANCE = 4.0  # how far a stroke's centre may wander from its median offset
_EDGE_BLOCK_MARGIN = 8.0  # a segment this close to a third marker's rim is not an edge


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
        if k in (i, j):
            continue
        px, py = mk.x - a.x, mk.y - a.y
        t = px * ux + py * uy
        if t <= 0 or t >= length:
            continue
        if abs(px * uy - py * ux) < mk.outer + _EDGE_BLOCK_MARGIN:
            return True
    return False
