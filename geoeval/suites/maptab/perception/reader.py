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
   legend painted white, so that only text is left (its text detector on a 5/8-size copy of that,
   its recogniser on the full-size pixels of each box found); each text box goes to the nearest
   free marker (globally nearest pairs first). A station is a transfer station when its
   marker is an interchange marker or two line colours touch it. With no marker found there is
   nothing a label could name, and OCR (most of a reading's cost) is not run: what is read is the
   same, only the diagnostic `texts` stay empty.

`route_on_perceived` then answers the MapTab route question on the perceived graph.

This module holds the pipeline, its result types and the reading's version; the steps live in
`colour` (2), `markers` (3, 4), `edges` (5) and `ocr` (6), and what is answered from a reading in
`answers`.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import cast

import cv2
import numpy as np
from PIL import Image

from geoeval.suites.maptab.perception import answers as perception_answers
from geoeval.suites.maptab.perception import colour as perception_colour
from geoeval.suites.maptab.perception import edges as perception_edges
from geoeval.suites.maptab.perception import markers as perception_markers
from geoeval.suites.maptab.perception import ocr as perception_ocr
from geoeval.suites.maptab.perception import perceived as perception_perceived
from geoeval.suites.maptab.perception.colour import _colour_layer, _hex
from geoeval.suites.maptab.perception.edges import _detect_edges
from geoeval.suites.maptab.perception.markers import (
    _classify_markers,
    _detect_markers,
    _find_legend_frames,
    _inside,
)
from geoeval.suites.maptab.perception.ocr import (
    OcrEngine,
    _attach_labels,
    _merge_split_labels,
    _run_ocr,
    get_ocr_engine,
)
from geoeval.suites.maptab.perception.perceived import PerceivedMap, PerceivedStation

# Working size: images whose longer side is below this are enlarged by a power of two.
WORK_MIN_LONG_SIDE = 1600


# ---------------------------------------------------------------------------- version

#: Bump when the reader's output changes for a reason the source hash cannot see (a new OCR
#: model file, a changed default outside these modules).
#: Part of the perception baseline's run identity too (`MapTabSuite.agent_versions`).
PERCEPTION_VERSION = 2  # 2: text detection on a 5/8-size copy (ocr.DETECTION_SCALE)

#: The modules whose source a reading depends on: this one and every perception module it uses.
#: A change in any of them is a new version, so the disk cache never serves an outdated reading.
_SOURCE_MODULES = (
    perception_colour,
    perception_markers,
    perception_edges,
    perception_ocr,
    perception_answers,
    perception_perceived,
)

_VERSION_CACHE: list[str] = []


def perception_version() -> str:
    """What a cached reading of an image depends on besides the image: the source of this module
    and of the perception modules it uses (`_SOURCE_MODULES`), `PERCEPTION_VERSION`, and the
    versions of the OCR engine and the image libraries. Any change gives a new version, and the
    disk cache (`geoeval.core.cache.disk`) never reads another version's entries."""
    if not _VERSION_CACHE:
        from geoeval.api import code_version

        # modules loaded from files: each has its __file__
        sources = [Path(__file__), *(Path(cast(str, module.__file__)) for module in _SOURCE_MODULES)]
        _VERSION_CACHE.append(
            code_version(
                f"v{PERCEPTION_VERSION}",
                sources,
                ("rapidocr_onnxruntime", "onnxruntime", "opencv-python-headless", "opencv-python", "numpy", "pillow"),
            )
        )
    return _VERSION_CACHE[0]


def _working_factor(width: int, height: int) -> int:
    k = 1
    while max(width, height) * k < WORK_MIN_LONG_SIDE:
        k *= 2
    return k


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
    markers = [mk for mk in _detect_markers(gray, chroma, cidx, rgb) if not any(_inside(mk.x, mk.y, f) for f in frames)]
    markers = _classify_markers(markers)
    edges = _detect_edges(markers, cidx, len(palette))

    # Only text should be left for OCR: strokes, markers and the legend go white.
    text_img = gray.copy()
    text_img[(cidx >= 0) | (chroma >= 40)] = 255
    for mk in markers:
        cv2.circle(text_img, (int(round(mk.x)), int(round(mk.y))), int(math.ceil(mk.outer + 3)), 255, -1)
    for left, top, right, bottom in frames:
        text_img[max(top - 2, 0) : bottom + 3, max(left - 2, 0) : right + 3] = 255

    t0 = time.perf_counter()
    boxes = []
    if markers:  # a label only names a marker: without one, OCR could change nothing that is read
        engine = ocr if ocr is not None else get_ocr_engine()
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
            names[mi],
            (mk.x + 0.5) / k - 0.5,
            (mk.y + 0.5) / k - 0.5,
            mk.interchange or len(colours) >= 2,
            colours,
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
