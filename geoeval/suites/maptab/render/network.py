"""The network as drawn by `image`: one stroke per line and segment (parallel strokes, offset
side by side, for a segment several lines run on) and one marker per station (interchanges and
Travelmap hubs larger, big enough to cover their bundle of strokes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.render.style import (
    INTERCHANGE_RADIUS,
    LINE_WIDTH,
    ORDINARY_RADIUS,
    TRAVEL_PATH_COLOR,
    _line_colors,
)


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


def _segments_by_edge(m: MetroMap) -> dict[tuple[str, str], tuple[str, ...]]:
    """Every drawn segment (as a name-sorted station pair) with the lines that run on it.

    Both the edge list and the lines' station sequences contribute, so a map that lists a
    loop's closing edge in only one of the two still draws it.
    """
    runs: dict[tuple[str, str], set[str]] = {}
    for e in m.edges:
        if e.a in m.stations and e.b in m.stations and e.a != e.b:
            runs.setdefault(cast("tuple[str, str]", tuple(sorted((e.a, e.b)))), set()).update(e.lines)
    for line in m.lines.values():
        seq = list(line.stations)
        pairs = list(zip(seq, seq[1:]))
        if line.loop and len(seq) > 2:
            pairs.append((seq[-1], seq[0]))
        for a, b in pairs:
            if a in m.stations and b in m.stations and a != b:
                runs.setdefault(cast("tuple[str, str]", tuple(sorted((a, b)))), set()).add(line.name)
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
            strokes.append(_Stroke(p.x + nx * off, p.y + ny * off, q.x + nx * off, q.y + ny * off, colors[ln]))
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
