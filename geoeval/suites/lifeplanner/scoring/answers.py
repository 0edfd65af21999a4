"""The answer schema of Table 5, the fields each task and level carries (Table 6), and reading a
submitted answer back into the places, order and totals the metrics compare.

Answer shapes (Table 5 field names; the route shape is Figure 9's):

- Place Perception: `{"answer": <value>, "reason": str, "ref": {"attribute_key": str,
  "note_id": str}, "implicit_logic": "True"}` — the value is the attribute asked for, a verdict
  (true/false) or the name of the place chosen.
- Nearby Discovery: `{"answer": [{"name", "place_id", "reason", "ref": {...},
  "implicit_logic"}, ...]}` — the places found.
- Routing and Trip Design: `{"start": {...}, "end": {...}, "waypoints": [...], "optimal_order":
  [{"name", "place_id", "visit_order"}, ...], "vehicle", "mode", "total_distance_m",
  "total_time_s"}`.

`ref.note_id` and `ref.attribute_key` are comma-separated strings (Figure 8); lists are accepted
when reading.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from geoeval.api import MAX_DEPTH, nesting_depth

# Table 6: which fields an instance of each family and level carries ("start/end" expanded).
TABLE6_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("nearby", "l0"): frozenset({"type", "question", "answer", "name", "place_id", "reason", "ref", "attribute_key"}),
    ("nearby", "l1"): frozenset(
        {"type", "question", "answer", "name", "place_id", "reason", "ref", "attribute_key", "note_id"}
    ),
    ("nearby", "l2"): frozenset(
        {
            "type",
            "question",
            "answer",
            "name",
            "place_id",
            "reason",
            "ref",
            "attribute_key",
            "note_id",
            "implicit_logic",
        }
    ),
    ("place", "l0"): frozenset({"type", "question", "answer", "ref", "attribute_key", "note_id"}),
    ("place", "l1"): frozenset({"type", "question", "answer", "reason", "ref", "attribute_key", "note_id"}),
    ("place", "l2"): frozenset(
        {"type", "question", "answer", "reason", "ref", "attribute_key", "note_id", "implicit_logic"}
    ),
    ("routing", "l0"): frozenset(
        {
            "type",
            "question",
            "answer",
            "start",
            "end",
            "name",
            "place_id",
            "vehicle",
            "mode",
            "total_distance_m",
            "total_time_s",
            "reason",
        }
    ),
    ("routing", "l1"): frozenset(
        {
            "type",
            "question",
            "answer",
            "start",
            "end",
            "waypoints",
            "optimal_order",
            "name",
            "place_id",
            "vehicle",
            "mode",
            "total_distance_m",
            "total_time_s",
            "reason",
            "ref",
            "attribute_key",
        }
    ),
    ("routing", "l2"): frozenset(
        {
            "type",
            "question",
            "answer",
            "start",
            "end",
            "waypoints",
            "optimal_order",
            "name",
            "place_id",
            "vehicle",
            "mode",
            "total_distance_m",
            "total_time_s",
            "reason",
            "ref",
            "attribute_key",
            "note_id",
            "implicit_logic",
        }
    ),
    ("trip", "l1"): frozenset(
        {
            "type",
            "question",
            "answer",
            "start",
            "end",
            "waypoints",
            "optimal_order",
            "name",
            "place_id",
            "vehicle",
            "mode",
            "total_distance_m",
            "total_time_s",
            "reason",
            "ref",
            "attribute_key",
        }
    ),
    ("trip", "l2"): frozenset(
        {
            "type",
            "question",
            "answer",
            "start",
            "end",
            "waypoints",
            "optimal_order",
            "name",
            "place_id",
            "vehicle",
            "mode",
            "total_distance_m",
            "total_time_s",
            "reason",
            "ref",
            "attribute_key",
            "note_id",
            "implicit_logic",
        }
    ),
}
# Keys that are containers or bookkeeping rather than Table 6 fields.
_STRUCTURAL = frozenset({"visit_order"})


def instance_fields(task: str, level: str, answer: Any) -> set[str]:
    """Every Table 5 field name an instance `{type, question, answer}` uses (the keys of the
    answer, recursively), for checking a reference against Table 6."""
    names = {"type", "question", "answer"}

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k not in _STRUCTURAL:
                    names.add(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(answer)
    return names


# --------------------------------------------------------------------------------------------
# Building reference answers
# --------------------------------------------------------------------------------------------


def ref_block(level: str, attribute_keys: list[str], note_ids: list[str], *, notes_field: bool) -> dict[str, str]:
    """A `ref` object: attribute_key always, note_id where Table 6 has it for this level."""
    out = {"attribute_key": ",".join(attribute_keys)}
    if notes_field:
        out["note_id"] = ",".join(note_ids)
    return out


def place_stop(place: Any, reason: str) -> dict[str, str]:
    return {"name": place.name, "place_id": place.id, "reason": reason}


def optimal_order(places: list[Any]) -> list[dict[str, Any]]:
    return [{"name": p.name, "place_id": p.id, "visit_order": k + 1} for k, p in enumerate(places)]


# --------------------------------------------------------------------------------------------
# Reading a submitted answer
# --------------------------------------------------------------------------------------------


class AnswerSchemaError(ValueError):
    """A submitted answer that does not follow the schema of its task (the reason is recorded and
    the outcome metrics score 0)."""


@dataclass
class ParsedAnswer:
    """What the metrics and judges need from an answer, whatever its exact spelling."""

    task: str
    level: str
    raw: Any
    value: Any = None  # Place Perception: the answer value
    places: list[str] = field(default_factory=list)  # every place_id the answer names
    start: str | None = None
    end: str | None = None
    waypoints: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # the visiting order (routing/trip)
    vehicle: str | None = None
    mode: str | None = None
    total_distance_m: Any = None
    total_time_s: Any = None
    note_ids: list[str] = field(default_factory=list)  # every note cited in a ref
    attribute_keys: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # place_id -> the name the answer gives


def _split_ids(v: Any) -> list[str]:
    if v is None:
        return []
    items = v if isinstance(v, (list, tuple)) else str(v).split(",")
    return [str(x).strip() for x in items if str(x).strip()]


def _collect_refs(obj: Any, out: ParsedAnswer) -> None:
    if isinstance(obj, dict):
        ref = obj.get("ref")
        if isinstance(ref, dict):
            out.note_ids += [n for n in _split_ids(ref.get("note_id")) if n not in out.note_ids]
            out.attribute_keys += [a for a in _split_ids(ref.get("attribute_key")) if a not in out.attribute_keys]
        for v in obj.values():
            _collect_refs(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _collect_refs(v, out)


def _place_id(obj: Any, where: str) -> str:
    if isinstance(obj, str) and obj.strip():
        return obj.strip()
    if not isinstance(obj, dict):
        raise AnswerSchemaError(f"{where} must be an object with a place_id")
    pid = obj.get("place_id", obj.get("osm_id"))  # Figure 10 spells it osm_id
    if not isinstance(pid, str) or not pid.strip():
        raise AnswerSchemaError(f"{where} has no place_id")
    return pid.strip()


def load_answer(raw: Any) -> Any:
    """A submitted `result` as a JSON value: objects and arrays as they are, a string parsed as
    JSON when it is JSON (models often pass the object as text), else kept as the string."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("```"):
            text = text.strip("`")
            text = text[text.find("\n") + 1 :] if "\n" in text else text
        if text[:1] in "[{":
            try:
                return json.loads(text)
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested past the parser's limit
                return raw
    return raw


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool):
        raise AnswerSchemaError(f"{where} must be a number")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise AnswerSchemaError(f"{where} must be a number, got {v!r:.40}") from None
    if not math.isfinite(x):
        raise AnswerSchemaError(f"{where} must be a finite number")
    return x


def parse_answer(task: str, level: str, raw: Any) -> ParsedAnswer:
    """Read a submitted answer of `task`/`level`; raises `AnswerSchemaError` naming what is
    missing when it does not follow the schema."""
    obj = load_answer(raw)
    if nesting_depth(obj) > MAX_DEPTH:  # no schema nests so deep; reading it would exhaust the stack
        raise AnswerSchemaError(f"the answer nests more than {MAX_DEPTH} levels deep")
    out = ParsedAnswer(task=task, level=level, raw=obj)
    if obj is None or obj == "" or obj == {}:
        raise AnswerSchemaError("no answer was submitted")
    if task == "place":
        if isinstance(obj, dict):
            if "answer" not in obj:
                raise AnswerSchemaError("a Place Perception answer needs the field 'answer'")
            out.value = obj["answer"]
        else:  # a bare value is what the question asked for
            out.value = obj
        if isinstance(out.value, (dict, list)):
            raise AnswerSchemaError("'answer' must be a value (text, number or true/false), not a container")
        if isinstance(out.value, str) and out.value.strip().startswith("B0"):
            out.places = [out.value.strip()]
    elif task == "nearby":
        items = obj.get("answer", obj.get("places")) if isinstance(obj, dict) else obj
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list) or not items:
            raise AnswerSchemaError("a Nearby Discovery answer needs 'answer': a list of places with place_id")
        for k, item in enumerate(items):
            pid = _place_id(item, f"answer[{k}]")
            if pid not in out.places:
                out.places.append(pid)
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out.names[pid] = item["name"]
    else:  # routing, trip
        if not isinstance(obj, dict):
            raise AnswerSchemaError("a route answer must be an object with start, end and totals (Figure 9)")
        out.start = _place_id(obj.get("start"), "start")
        out.end = _place_id(obj.get("end"), "end")
        for key in ("start", "end"):
            if isinstance(obj[key], dict) and isinstance(obj[key].get("name"), str):
                out.names[_place_id(obj[key], key)] = obj[key]["name"]
        wps = obj.get("waypoints") or []
        if not isinstance(wps, list):
            raise AnswerSchemaError("waypoints must be a list")
        for k, w in enumerate(wps):
            pid = _place_id(w, f"waypoints[{k}]")
            out.waypoints.append(pid)
            if isinstance(w, dict) and isinstance(w.get("name"), str):
                out.names[pid] = w["name"]
        order = obj.get("optimal_order")
        if order is not None:
            if not isinstance(order, list):
                raise AnswerSchemaError("optimal_order must be a list")
            stops = []
            for k, o in enumerate(order):
                pid = _place_id(o, f"optimal_order[{k}]")
                rank = o.get("visit_order", k + 1) if isinstance(o, dict) else k + 1
                try:
                    rank = float(rank)
                except (TypeError, ValueError):
                    raise AnswerSchemaError(f"optimal_order[{k}].visit_order must be a number") from None
                stops.append((rank, k, pid))
                if isinstance(o, dict) and isinstance(o.get("name"), str):
                    out.names.setdefault(pid, o["name"])
            out.order = [pid for _, _, pid in sorted(stops)]
        elif level != "l0" and not wps:
            raise AnswerSchemaError("a route with stops needs optimal_order (or waypoints)")
        else:
            out.order = [out.start, *out.waypoints, out.end]
        for key in ("vehicle", "mode"):
            v = obj.get(key)
            if not isinstance(v, str) or not v.strip():
                raise AnswerSchemaError(f"a route answer needs '{key}'")
            setattr(out, key, v.strip().lower())
        for key in ("total_distance_m", "total_time_s"):
            if key not in obj:
                raise AnswerSchemaError(f"a route answer needs '{key}'")
            setattr(out, key, _number(obj[key], key))
        for pid in [out.start, *out.waypoints, *out.order, out.end]:
            if pid not in out.places:
                out.places.append(pid)
    _collect_refs(obj, out)
    return out
