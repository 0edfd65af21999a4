"""Station labels read by OCR (`reader.read_map_image`, step 6).

The shared RapidOCR engine, the text boxes it returns, the joining of a name that OCR split in
two, and the pairing of each label with the nearest free marker.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from geoeval.suites.maptab.perception.markers import _Marker

# OCR.
_OCR_MIN_SCORE = 0.5
_LABEL_MAX_GAP_PER_HEIGHT = 2.5  # label-to-marker-rim gap allowed, in text-box heights


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


#: The text detector reads a copy of the working image shrunk to this share of its sides, and the
#: recogniser reads each box it finds from the full-size image. Detection is ~70% of an OCR pass
#: over the whole image and its cost goes with the pixel count, so 5/8 makes it ~2.6x cheaper.
#: Measured (perception version 2, 7 maps incl. the suite's test maps, 30 routes each, at 1, 1/2,
#: 1/4, 1/8): route accuracy 1.000 / 1.000 / 0.805 / 0.000, the same as detecting at full size,
#: for 55% of the reading time; 1/2 lost labels at 1/4 (0.719).
DETECTION_SCALE = 0.625
#: RapidOCR's detector enlarges an image whose shorter side is below this; shrinking past it
#: would only be undone.
_DETECTOR_MIN_SIDE = 736


def _detect_then_recognise(engine: Any, image: np.ndarray) -> list[list[Any]]:
    """RapidOCR's two stages with the detection on a smaller copy (`DETECTION_SCALE`): the boxes
    are scaled back and every text is recognised from the full-size pixels. The same
    `[points, text, score]` rows as `engine(image)`."""
    h, w = image.shape[:2]
    f = min(1.0, max(DETECTION_SCALE, _DETECTOR_MIN_SIDE / max(1, min(h, w))))
    small = (
        cv2.resize(image, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
        if f < 1
        else image
    )
    found, _ = engine.text_det(small)
    if found is None or len(found) == 0:
        return []
    boxes = np.asarray(engine.sorted_boxes(found), dtype=np.float32)
    boxes[:, :, 0] *= w / small.shape[1]
    boxes[:, :, 1] *= h / small.shape[0]
    recognised, _ = engine.text_rec(engine.get_crop_img_list(image, list(boxes)))
    return [[box, text, score] for box, (text, score, *_) in zip(boxes, recognised)]


def _is_rapidocr(engine: Any) -> bool:
    return all(hasattr(engine, name) for name in ("text_det", "text_rec", "get_crop_img_list", "sorted_boxes"))


def _run_ocr(engine: OcrEngine, image: np.ndarray) -> list[_TextBox]:
    if _is_rapidocr(engine):
        result = _detect_then_recognise(engine, image)
    else:  # an injected engine: called as RapidOCR is called
        try:
            result = engine(image, use_cls=False)
        except TypeError:  # without RapidOCR's keyword arguments
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
            _TextBox(
                text,
                float(pts[:, 0].min()),
                float(pts[:, 1].min()),
                float(pts[:, 0].max()),
                float(pts[:, 1].max()),
                score,
            )
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
                        f"{p.text} {q.text}",
                        p.left,
                        min(p.top, q.top),
                        max(p.right, q.right),
                        max(p.bottom, q.bottom),
                        min(p.score, q.score),
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
