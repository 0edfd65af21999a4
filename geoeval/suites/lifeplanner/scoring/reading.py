"""Reading a submitted answer under the two answer protocols (`scoring.protocol`).

`paper`: the reading geoeval has always applied (`answers.load_answer` then `answers.parse_answer`).
The LifePlanner authors publish no evaluator code, so the paper protocol is geoeval's own reading of
the Table 5 schema, kept byte-identical so that stored scores stay comparable.

`robust` (the default) reads LifePlanner's answer type, a record of the Table 5 schema, wherever
and however the submission writes it, on the core's reading layer (`geoeval.core.reading`):

- where records are (the core's parse): JSON objects and arrays anywhere in the text (fenced,
  inline, the whole text; a fragment of the explanation such as `{"leg": 1}` is not one when an
  answer-shaped value is there); a markdown table of fields and values, or with the fields as
  its header and a record a row (Nearby: a place a row); `## field` sections (a heading naming a
  field, its text or its list below); `Field: value` lines; else the whole text, read as a value
  (`to_schema.normalise_answer`: a verdict, a number, the place a Place value in prose offers);
- what each record says, however typeset: `to_schema.py`;
- which record is the answer: the core's roles and one-answer rule (`core.reading.rule`): a
  record after a correction replaces those before it ("Wait, actually: {...}"), one after an
  explicit final answer supersedes the reasoning's, a rejected or echoed one is not offered, and
  several live records are scored at the worst. A correction in prose that the reader cannot turn
  into a record ("Actually, go to X instead" after a route) is a candidate that is no answer, and
  so is a record that is itself several answers or none (`to_schema.Void`).

Each rule that fires is named in `Reading.rules` (the public scoring entry point returns them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from geoeval.api import RETRACTED, Document, Found, Role, Segment, assign_roles, decide, fold, nfkc, parse
from geoeval.api import lexicon as cue
from geoeval.suites.lifeplanner.scoring.answers import load_answer
from geoeval.suites.lifeplanner.scoring.places_named import mentions
from geoeval.suites.lifeplanner.scoring.to_schema import (
    Void,
    clean_text,
    looks_like_answer,
    norm_key,
    normalise_answer,
)
from geoeval.suites.lifeplanner.tools import city as city_handle

PROTOCOLS = ("robust", "paper")

#: the Table 5 fields each task's record may have (keys as `to_schema.norm_key` writes them)
TASK_FIELDS = {
    "place": {"answer", "reason", "ref", "attribute_key", "note_id", "implicit_logic"},
    "nearby": {"answer", "places", "name", "place_id", "reason", "ref", "attribute_key", "note_id", "implicit_logic"},
    "routing": {"start", "end", "waypoints", "optimal_order", "vehicle", "mode", "total_distance_m", "total_time_s"},
    "trip": {"start", "end", "waypoints", "optimal_order", "vehicle", "mode", "total_distance_m", "total_time_s"},
}
_REF_FIELDS = ("attribute_key", "note_id")
_FIELD_LINE = re.compile(r"^\s*([^:：]{1,40}?)\s*[:：]\s*(.*?)\s*$")
_LIST_SPLIT = re.compile(r"\s*(?:,|;|→|->|、|，)\s*")


@dataclass
class Reading:
    """What the reader made of a submission: the JSON value of each distinct answer it offers
    (normalised under the robust protocol), the rules that fired, and `void`: why one of its
    candidates is no answer (the one-answer rule), or None."""

    candidates: list[Any] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    void: str | None = None


@dataclass(frozen=True)
class _Record:
    """A candidate record: its normalised value, or why it is no answer."""

    value: Any = None
    void: str | None = None


# --------------------------------------------------------------------------------- finding records


def _record_of(fields: list[tuple[str, Any]], task: str) -> dict[str, Any] | None:
    """A record from (field name as written, value) pairs naming fields of the task."""
    allowed = TASK_FIELDS.get(task, set())
    record: dict[str, Any] = {}
    for name, value in fields:
        key = norm_key(name)
        if key not in allowed:
            continue
        if key in _REF_FIELDS:
            record.setdefault("ref", {})[key] = value
        elif key in ("waypoints", "optimal_order", "places") and isinstance(value, str):
            record[key] = [v for v in _LIST_SPLIT.split(value) if v]
        else:
            record.setdefault(key, value)
    if task == "nearby" and isinstance(record.get("places"), list) and "answer" not in record:
        record["answer"] = record.pop("places")
    return record or None


def _from_table(rows: list[Segment], task: str) -> Iterator[tuple[Segment, Any]]:
    allowed = TASK_FIELDS.get(task, set())
    header = rows[0].header
    named = [norm_key(h) in allowed for h in header]
    body = [r for r in rows if r.cells != header]
    if len(header) == 2 and sum(norm_key(r.cells[0]) in allowed for r in rows if r.cells) * 2 >= len(rows):
        # a table of fields and values (its header may be a field too, or "Field | Value")
        record = _record_of([(r.cells[0], r.cells[1]) for r in rows if len(r.cells) >= 2], task)
        if record:
            yield rows[0], record
        return
    if sum(named) >= 2 or (sum(named) == 1 and task == "nearby"):
        records = [_record_of(list(zip(header, r.cells)), task) for r in body]
        records = [r for r in records if r]
        if task == "nearby" and records:
            yield rows[0], {"answer": records}
        else:
            yield from ((rows[0], r) for r in records)


def _from_sections(doc: Document, task: str) -> Iterator[tuple[Segment, Any]]:
    """`## field` headings with their text or list below; consecutive ones are one record, and a
    field named again starts the next record (two answers written one after the other)."""
    allowed = TASK_FIELDS.get(task, set())
    records: list[tuple[Segment, list[tuple[str, Any]]]] = []
    current: tuple[str, list[Segment]] | None = None

    def close() -> None:
        if current is not None:
            name, body = current
            items = [s.text for s in body if s.kind == "item"]
            text = " ".join(s.text for s in body if s.kind in ("line", "code"))
            records[-1][1].append((name, items if items and (len(items) > 1 or not text) else text))

    for seg in doc.segments:
        if seg.kind == "heading":
            close()
            current = None
            key = norm_key(seg.text)
            if key in allowed:
                if not records or key in {norm_key(n) for n, _ in records[-1][1]}:
                    records.append((seg, []))
                current = (seg.text, [])
        elif current is not None:
            current[1].append(seg)
    close()
    for first, fields in records:
        record = _record_of(fields, task)
        if record:
            yield first, record


def _from_field_lines(doc: Document, task: str, taken: set[int]) -> Iterator[tuple[Segment, Any]]:
    """Runs of `Field: value` lines (or items) naming fields of the task, each run one record (a
    field named again starts the next)."""
    allowed = TASK_FIELDS.get(task, set())
    run: list[tuple[Segment, str, str]] = []

    def flush() -> Iterator[tuple[Segment, Any]]:
        if run:
            record = _record_of([(name, value) for _s, name, value in run], task)
            if record:
                yield run[0][0], record
        run.clear()

    for seg in doc.segments:
        found = _FIELD_LINE.match(seg.text) if seg.kind in ("line", "item") and seg.index not in taken else None
        if found and norm_key(found.group(1)) in allowed:
            if norm_key(found.group(1)) in {norm_key(name) for _s, name, _v in run}:
                yield from flush()  # a field named again: the next record
            run.append((seg, found.group(1), found.group(2)))
        else:
            yield from flush()
    yield from flush()


def _json_records(doc: Document, task: str, rules: list[str]) -> list[tuple[Segment, Any]]:
    values = [seg for seg in doc.segments if seg.kind == "json"]
    answers = [seg for seg in values if looks_like_answer(task, seg.value)]
    if answers and len(answers) < len(values):
        rules.append("JSON fragments that are not answers left out")
        values = answers
    return [(seg, seg.value) for seg in values]


def _unreadable_corrections(doc: Document, city: city_handle.City, taken: set[int]) -> Iterator[Segment]:
    """Prose lines that correct the answer to a place ("Actually, go to X instead") but hold no
    record: a candidate the reader cannot read, which replaces what came before it."""
    for seg in doc.segments:
        if seg.index in taken or seg.kind not in ("line", "item") or not seg.text:
            continue
        folded = fold(seg.text)
        corrects = cue.CORRECTION.search(folded) or re.search(r"\binstead\b(?!\s+of)", folded)
        if corrects and mentions(city, seg.text):
            yield seg


def _normalised(city: city_handle.City, task: str, value: Any, rules: list[str], request: frozenset[str]) -> _Record:
    try:
        return _Record(normalise_answer(city, task, value, rules, request))
    except Void as exc:
        return _Record(void=str(exc))


def _key(record: _Record, seg: Segment) -> Any:
    if record.void is not None:
        return ("void", record.void, seg.index)
    return json.dumps(record.value, sort_keys=True, ensure_ascii=False, default=str)


def _find(
    doc: Document, city: city_handle.City, task: str, rules: list[str], request: frozenset[str]
) -> list[Found[_Record]]:
    raw_records = _json_records(doc, task, rules)
    taken = {seg.index for seg, _ in raw_records}
    structured: list[tuple[Segment, Any, str]] = [(seg, v, "") for seg, v in raw_records]
    if not structured:
        for rows in doc.groups("row").values():
            structured += [(seg, v, "record read from a table") for seg, v in _from_table(rows, task)]
    if not structured:
        structured += [(seg, v, "record read from its sections") for seg, v in _from_sections(doc, task)]
    if not structured:
        structured += [(seg, v, "record read from field lines") for seg, v in _from_field_lines(doc, task, taken)]
    found: list[Found[_Record]] = []
    for seg, value, rule in structured:
        if rule and rule not in rules:
            rules.append(rule)
        record = _normalised(city, task, value, rules, request)
        found.append(Found(seg.index, 0, 0, record, _key(record, seg)))
    if found:
        taken |= {f.segment for f in found}
        for seg in _unreadable_corrections(doc, city, taken):
            void = _Record(void="a correction the reader cannot read as an answer")
            found.append(Found(seg.index, 0, len(seg.text), void, _key(void, seg)))
    return found


# --------------------------------------------------------------------------------- the submission


def read_submission(city: city_handle.City, task: str, raw: Any, protocol: str, question: str = "") -> Reading:
    """The submission `raw` (submit_answer's `result`) read under `protocol`; `question`: the
    request, whose own places are not places a Nearby answer in prose offers."""
    if protocol == "paper":
        return Reading([load_answer(raw)])
    if protocol != "robust":
        raise ValueError(f"protocol must be robust or paper, got {protocol!r}")
    reading = Reading()
    request = frozenset(pid for _s, _e, pid in mentions(city, question)) if question else frozenset()
    if not isinstance(raw, str):
        record = _normalised(city, task, raw, reading.rules, request)
        return _finish(reading, [record])
    text = nfkc(raw).strip()
    doc = parse(text)
    found = _find(doc, city, task, reading.rules, request)
    if not found:  # the whole text, read as a value
        return _finish(reading, [_normalised(city, task, clean_text(text), reading.rules, request)])
    if any(seg.kind != "json" and seg.text for seg in doc.segments) and any(
        doc.segments[f.segment].kind == "json" for f in found
    ):
        reading.rules.append("JSON read from the prose around it")
    candidates, retractions = assign_roles(doc, found, question)
    decision = decide(candidates, retractions)
    for rule in decision.rules():
        if "live candidates" not in rule and rule != "no candidate answer":
            reading.rules.append(f"one-answer rule: {rule}")
    if not decision.live:
        retracted = decision.aside(RETRACTED) or any(c.role is Role.CORRECTION for c in candidates)
        reading.void = (
            "the answer corrects itself and offers no answer in its place"
            if retracted or decision.retractions
            else "the answer rejects every answer it names"
        )
        reading.rules.append(f"one-answer rule: {reading.void}")
        return reading
    return _finish(reading, [c.value for c in decision.live])


def _finish(reading: Reading, records: list[_Record]) -> Reading:
    seen: set[str] = set()
    for record in records:
        if record.void is not None:
            reading.void = reading.void or record.void
            continue
        key = json.dumps(record.value, sort_keys=True, ensure_ascii=False, default=str)
        if key not in seen:
            seen.add(key)
            reading.candidates.append(record.value)
    if len(reading.candidates) > 1:
        reading.rules.append(f"one-answer rule: {len(reading.candidates)} different answers, the worst is scored")
    if reading.void:
        reading.rules.append(f"one-answer rule: {reading.void}")
    return reading
