"""The look of a rendered MapTab map (`image`): sizes, colours and label clearances in full-size
pixels, and the colour each line is drawn in.
"""

from __future__ import annotations

import zlib

from geoeval.suites.maptab.graph import MetroMap

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
    "#e6194b",
    "#3cb44b",
    "#4363d8",
    "#f58231",
    "#911eb4",
    "#42d4f4",
    "#f032e6",
    "#bfef45",
    "#469990",
    "#9a6324",
)


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
