"""Where `image` puts the station labels and the legend: candidate boxes around each marker,
their collisions with the network, the border, the legend and the other labels, and the choice
of a box per label (most constrained first) and of a corner for the legend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.render.network import _Marker, _Stroke
from geoeval.suites.maptab.render.style import (
    LABEL_CLEARANCE_BORDER,
    LABEL_CLEARANCE_LABEL_X,
    LABEL_CLEARANCE_LABEL_Y,
    LABEL_CLEARANCE_MARKER,
    LABEL_CLEARANCE_STROKE,
    LABEL_GAP,
    LABEL_NEAREST_MARGIN,
    LINE_WIDTH,
)


@dataclass(frozen=True)
class _Rect:
    left: float
    top: float
    right: float
    bottom: float

    def inflate(self, d: float, dy: float | None = None) -> _Rect:
        dy = d if dy is None else dy
        return _Rect(self.left - d, self.top - dy, self.right + d, self.bottom + dy)

    def overlap_area(self, o: _Rect) -> float:
        w = min(self.right, o.right) - max(self.left, o.left)
        h = min(self.bottom, o.bottom) - max(self.top, o.top)
        return w * h if w > 0 and h > 0 else 0.0

    def distance_to_point(self, x: float, y: float) -> float:
        dx = max(self.left - x, 0.0, x - self.right)
        dy = max(self.top - y, 0.0, y - self.bottom)
        return math.hypot(dx, dy)

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x <= self.right and self.top <= y <= self.bottom


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
                need: float = LABEL_GAP - 1
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
        best_name: str | None = None
        best_free: list[int] | None = None
        for name in unplaced:
            free = [i for i, (sc, dc) in enumerate(zip(static[name], dynamic[name])) if sc == 0 and dc == 0]
            # best_name is set whenever best_free is
            if free and (
                best_free is None or (len(free), tiebreak[name]) < (len(best_free), tiebreak[cast(str, best_name)])
            ):
                best_name, best_free = name, free
        if best_name is not None:
            assert best_free is not None  # set together with best_name
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


def _place_legend(m: MetroMap, obstacles: _Obstacles, w: float, h: float) -> _Rect:
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
