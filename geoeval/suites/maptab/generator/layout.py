"""The station grid and the line walks of the synthetic Metromap generator (`metro`).

What a layout guarantees (spacing, unit steps, shared stations only at grid points, no crossings
away from a station) is described in `metro`'s module docstring; the Travelmap generator
(`travel`) places its spots on the same grid.
"""

from __future__ import annotations

import random

import networkx as nx

from geoeval.api import GeoevalError

GRID_MARGIN = 140  # px between the border and the outermost grid line (spec: >= 120)
MIN_GRID_PITCH = 160  # px between neighbouring grid lines (spec: adjacent >= 140, any pair >= 120)


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


def _open_walk(rng: random.Random, grid: _Grid, k: int, orientation: str) -> list[tuple[int, int]] | None:
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
    r = rng.randint(0, max(0, grid.rows // 2 - 1)) if dy_sign == 1 else rng.randint(grid.rows // 2, grid.rows - 1)
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


def _loop_walk(rng: random.Random, grid: _Grid, length_range: tuple[int, int]) -> list[tuple[int, int]] | None:
    """The perimeter of a w x h grid rectangle near the centre (2(w+h) stations, clockwise)."""
    lo, hi = length_range
    shapes = [
        (w, h) for w in range(1, grid.cols) for h in range(1, grid.rows) if lo <= 2 * (w + h) <= hi and w + h >= 3
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
