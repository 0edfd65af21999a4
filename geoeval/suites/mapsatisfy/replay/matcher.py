"""The vector stage's matcher (section 3.2): which recorded calls are candidates for a call, and
the best of them by the embedding cosine of the open-text arguments.

A recorded call is a candidate when its *anchor* arguments (ids, flags, modes, numbers) agree
with the call's, numbers within `COORDINATE_TOLERANCE`; the *open-text* arguments (search
keywords, place and line names: `OPEN_TEXT_PARAMS`) are compared by embedding, and labels that
only name a place for display (`LABEL_PARAMS`) are ignored. `ToolIndex` holds one tool's
recorded calls grouped by anchor shape, with their open texts embedded once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geoeval.suites.mapsatisfy.replay.store import ToolRecord

# Section 3.2: "parameters with simple and explicit semantics, such as poi_name, are resolved by
# exact matching, while open-text parameters such as search queries are resolved by
# embedding-based retrieval" (the authors' mock files store embeddings of exactly those fields).
# So a recorded call is a vector candidate when its *anchor* arguments agree with the call's
# (strings and flags equal, numbers within `coordinate_tolerance`), and its *open-text*
# arguments are compared by embedding. Embedding the whole argument text instead was measured
# and rejected (README "Vector stage"): coordinates and shared keys dominate the text, so calls
# of other cases scored as high as perturbed copies of the same call.

# Free-text parameters per tool: compared by embedding.
OPEN_TEXT_PARAMS: dict[str, tuple[str, ...]] = {
    "search_poi": ("query",),
    "search_around_poi": ("query",),
    "search_poi_along_route": ("keywords",),
    "search_poi_around_multipoints": ("query",),
    "route_station_info": ("line_nums", "station_names"),
    "get_weather": ("location",),
    "scenic_ticket_transaction": ("sightName",),
    "transaction_service": ("itemName", "orderObject"),
    "ainative_kuake_search": ("query", "query_write", "query_location"),
}

# Parameters that only label what other parameters locate (the rules call end_name "用于前端展示",
# for display); they do not change a response, so the vector stage ignores them, also inside
# nested points ({"lat", "lon", "name"}).
LABEL_PARAMS = frozenset({"start_name", "end_name", "via_name", "via_names", "name", "request"})

COORDINATE_TOLERANCE = 5e-4  # degrees, about 50 m: an agent's rounding of a POI's coordinates
_NUMBER_LIST = re.compile(r"^[+-]?\d+(?:\.\d+)?(?:[,;][+-]?\d+(?:\.\d+)?)+$")  # "lon,lat;lon,lat"


def open_text(tool: str, normalized: Mapping[str, Any]) -> str:
    """The open-text argument values of a call, in the tool's parameter order, one a line."""
    parts = []
    for name in OPEN_TEXT_PARAMS.get(tool, ()):
        value = normalized.get(name)
        if value is None:
            continue
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "\n".join(parts)


def anchor_signature(tool: str, normalized: Mapping[str, Any]) -> tuple[str, tuple[float, ...]]:
    """The anchor arguments of a call as (shape, numbers): the shape is their canonical JSON with
    every number (also inside "lon,lat;lon,lat" strings) replaced by `#`, the numbers in order.
    Two calls are vector candidates of each other when their shapes are equal and their numbers
    agree within the tolerance."""
    numbers: list[float] = []
    skip = LABEL_PARAMS | set(OPEN_TEXT_PARAMS.get(tool, ()))

    def walk(value: Any) -> str:
        if value is None or isinstance(value, bool):
            return json.dumps(value)
        if isinstance(value, (int, float)):
            numbers.append(float(value))
            return "#"
        if isinstance(value, str):
            if _NUMBER_LIST.match(value):
                pieces = re.split(r"([,;])", value)
                numbers.extend(float(p) for p in pieces if p not in (",", ";"))
                return '"' + "".join(p if p in (",", ";") else "#" for p in pieces) + '"'
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, list):
            return "[" + ",".join(walk(v) for v in value) + "]"
        if isinstance(value, dict):
            return (
                "{"
                + ",".join(
                    f"{json.dumps(k, ensure_ascii=False)}:{walk(value[k])}"
                    for k in sorted(value)
                    if k not in LABEL_PARAMS
                )
                + "}"
            )
        return json.dumps(str(value), ensure_ascii=False)

    shape = (
        "{"
        + ",".join(
            f"{json.dumps(k, ensure_ascii=False)}:{walk(normalized[k])}" for k in sorted(normalized) if k not in skip
        )
        + "}"
    )
    return shape, tuple(numbers)


@dataclass
class _ShapeGroup:
    """The distinct recorded keys of one tool that share an anchor shape."""

    keys: list[str] = field(default_factory=list)
    numbers: list[tuple[float, ...]] = field(default_factory=list)
    text_rows: list[int] = field(default_factory=list)  # row in the tool's text matrix, -1: no text
    _numbers: np.ndarray | None = None
    _rows: np.ndarray | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._numbers is None or len(self._numbers) != len(self.keys):
            width = len(self.numbers[0]) if self.numbers else 0
            self._numbers = np.asarray(self.numbers, dtype=np.float64).reshape(len(self.keys), width)
            self._rows = np.asarray(self.text_rows, dtype=np.int64)
        assert self._rows is not None
        return self._numbers, self._rows


# texts -> their embeddings as unit rows (the sandbox's embedder, normalised)
EmbedUnit = Callable[[list[str]], np.ndarray]


@dataclass
class ToolIndex:
    """The vector index of one tool's recorded calls, extended with the records added to the
    (append-only) store since it was last used."""

    groups: dict[str, _ShapeGroup] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)
    texts: dict[str, int] = field(default_factory=dict)  # open text -> row of `matrix`
    matrix: np.ndarray | None = None  # unit rows
    n_records: int = 0  # how many of the tool's records are indexed

    def extend(self, tool: str, records: Sequence[ToolRecord], embed_unit: EmbedUnit) -> None:
        """Index the records past the `n_records` already indexed; a key seen before is skipped."""
        if self.n_records >= len(records):
            return
        new_texts: list[str] = []
        for record in records[self.n_records :]:
            if record.key in self.keys:
                continue
            self.keys.add(record.key)
            normalized = json.loads(record.key)
            shape, numbers = anchor_signature(tool, normalized)
            text = open_text(tool, normalized)
            row = -1
            if text:
                if text not in self.texts:
                    self.texts[text] = len(self.texts)
                    new_texts.append(text)
                row = self.texts[text]
            group = self.groups.setdefault(shape, _ShapeGroup())
            group.keys.append(record.key)
            group.numbers.append(numbers)
            group.text_rows.append(row)
        if new_texts:
            vectors = embed_unit(new_texts)
            self.matrix = vectors if self.matrix is None else np.vstack([self.matrix, vectors])
        self.n_records = len(records)

    def nearest(
        self, tool: str, normalized: Mapping[str, Any], coordinate_tolerance: float, embed_unit: EmbedUnit
    ) -> tuple[float, str] | None:
        """The best vector candidate of a call as (similarity, recorded key), or None when no
        indexed call has agreeing anchor arguments.

        Similarity is the cosine of the open-text embeddings; 1.0 when neither side has open
        text (the anchors agree and nothing else is compared), 0.0 when only one side has.
        Ties go to the smallest largest-number deviation, then to the earliest recorded.
        """
        shape, numbers = anchor_signature(tool, normalized)
        group = self.groups.get(shape)
        if group is None or not group.keys:
            return None
        recorded, rows = group.arrays()
        if recorded.shape[1]:
            deviation = np.max(np.abs(recorded - np.asarray(numbers, dtype=np.float64)), axis=1)
            candidates = np.nonzero(deviation <= coordinate_tolerance)[0]
        else:
            deviation = np.zeros(len(group.keys))
            candidates = np.arange(len(group.keys))
        if candidates.size == 0:
            return None
        text = open_text(tool, normalized)
        cand_rows = rows[candidates]
        similarity = np.where(cand_rows < 0, 0.0 if text else 1.0, 0.0)
        if text and np.any(cand_rows >= 0):
            assert self.matrix is not None
            query = embed_unit([text])[0]
            with_text = cand_rows >= 0
            similarity[with_text] = self.matrix[cand_rows[with_text]] @ query
        order = np.lexsort((candidates, deviation[candidates], -similarity))
        best = int(order[0])
        return float(similarity[best]), group.keys[int(candidates[best])]
