"""What the pixel-only reader saw (`reader.read_map_image`): the perceived stations and the
perceived map, read by the reader and by the answers computed on it (`answers`)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
