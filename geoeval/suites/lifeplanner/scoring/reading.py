"""Reading a submitted answer under the two answer protocols (`scoring.protocol`).

`paper`: the reading geoeval has always applied (`answers.load_answer` then `answers.parse_answer`).
The LifePlanner authors publish no evaluator code, so the paper protocol is geoeval's own reading of
the Table 5 schema, kept byte-identical so that stored scores stay comparable.

`robust` (the default) reads what the answer says, however it is typeset, and applies the
one-answer rule. Each rule that fires is named in `Reading.rules` (the public scoring entry point
returns them). See the suite README, "Answer protocol", for the list and the reasons.

- Text: NFKC (full-width forms), markdown emphasis and code marks, bullets and fences removed;
  prose before or after the JSON; a wrapper object (`{"result": {...}}`) unwrapped; keys matched
  by case and spacing and a few synonyms (`distance` -> `total_distance_m`).
- Numbers: units on totals (`"783 m"`, `"1.2 km"`, `"14 min 34 s"`) converted to metres and
  seconds, numbers in words (English and Chinese), currency and rating units on Place values.
- Enumerations: vehicle and mode synonyms (`car` -> `driving`, `fastest` -> `time`), verdict
  synonyms (`Yes, it is open.` -> true).
- Places: a place named by its id anywhere in the text, or by its name (case, spacing and
  punctuation ignored), when the id field is missing or the value is prose.

The one-answer rule: an answer gets no more credit than its worst candidate. Several different
JSON answers are several candidates (each is scored, the minimum kept). A submission that also
offers something that is no answer at all (a correction in prose the reader cannot turn into a
plan, a recommendation the answer itself retracts, a verdict its own reason contradicts, a value
naming several places, a hedged verdict) is "void": its worst candidate is no answer, which
scores as an answer off the schema. Naming an alternative to reject it ("rather than B", "not B")
does not make it a candidate.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from geoeval.core.text import nesting_depth
from geoeval.suites.lifeplanner.scoring.answers import load_answer
from geoeval.suites.lifeplanner.scoring.numbers import quantity, words_to_digits
from geoeval.suites.lifeplanner.tools import city as city_handle

PROTOCOLS = ("robust", "paper")

VEHICLES = {
    "driving": ("driving", "drive", "car", "auto", "automobile", "by car", "taxi", "motor", "驾车", "开车", "自驾"),
    "walking": ("walking", "walk", "on foot", "foot", "pedestrian", "by foot", "步行", "走路"),
    "cycling": ("cycling", "cycle", "bike", "bicycle", "biking", "by bike", "bicycling", "骑行", "自行车"),
}
MODES = {
    "time": ("time", "fastest", "quickest", "shortest time", "least time", "duration", "最快", "时间"),
    "distance": ("distance", "shortest", "shortest distance", "least distance", "最短", "距离"),
}
_KEY_ALIASES = {
    "placeid": "place_id",
    "place_id": "place_id",
    "id": "place_id",
    "osm_id": "place_id",
    "poi_id": "place_id",
    "total_distance": "total_distance_m",
    "total_distance_meters": "total_distance_m",
    "total_distance_metres": "total_distance_m",
    "distance": "total_distance_m",
    "distance_m": "total_distance_m",
    "total_time": "total_time_s",
    "total_time_seconds": "total_time_s",
    "total_duration": "total_time_s",
    "duration": "total_time_s",
    "duration_s": "total_time_s",
    "time_s": "total_time_s",
    "visitorder": "visit_order",
    "optimalorder": "optimal_order",
    "travel_mode": "vehicle",
    "transport": "vehicle",
    "transport_mode": "vehicle",
    "stops": "waypoints",
}
#: a total whose key names its unit ("total_time_min": 14.5, "distance_km": 3.6)
_UNIT_KEY = re.compile(
    r"^(?:total_)?(?P<what>distance|time|duration)_(?P<unit>km|kms|kilometers|kilometres|m|meters|metres|"
    r"min|mins|minutes|h|hr|hrs|hours|sec|secs|seconds)$"
)
_KEY_UNITS = {
    "km": 1000.0,
    "kms": 1000.0,
    "kilometers": 1000.0,
    "kilometres": 1000.0,
    "m": 1.0,
    "meters": 1.0,
    "metres": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hours": 3600.0,
    "sec": 1.0,
    "secs": 1.0,
    "seconds": 1.0,
}
_WRAPPERS = ("result", "final_answer", "answer_json", "plan", "route")
_MARKDOWN = re.compile(r"\*\*|__|`+|^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)
#: prose that corrects or retracts the answer it follows
CORRECTION_RE = re.compile(
    r"\b(?:actually|correction|on second thought|scratch that|i meant|let me correct|wait[,!.]|"
    r"ignore (?:the|my) (?:above|previous)|disregard|better yet|instead\b(?! of))|更正|改为|改去|不对|应该是",
    re.IGNORECASE,
)
#: a reason that withdraws the recommendation it accompanies
RETRACTION_RE = re.compile(
    r"\b(?:not recommended|do not (?:go|visit|recommend)|don't (?:go|visit|recommend)|"
    r"i (?:would|do) not recommend|i wouldn't recommend|avoid (?:it|this|going)|skip (?:it|this)|"
    r"(?:permanently )?closed down|no longer (?:open|operating|in business)|out of business|shut down|"
    r"permanently closed)\b|不推荐|不建议|别去|已经?不营业|停业|倒闭",
    re.IGNORECASE,
)
#: cues just before a place name that reject it ("rather than B")
_REJECT_BEFORE = re.compile(
    r"(?:\bnot|\brather than|\binstead of|\bover|\bthan|\bavoid|\bskip|\bunlike|\bexcept|\bexcluding|"
    r"\bbesides|\bnor|而不是|不是|不要|不如)\W*(?:the\W+)?$",
    re.IGNORECASE,
)
# a verdict word opens the value; "No. 114 Meian Avenue" is an address, not a verdict
_YES = re.compile(r"^(?:yes|true|correct|right|yep|indeed|affirmative|是|对|有|可以)\b(?!\.?\s*\d)", re.IGNORECASE)
_NO = re.compile(r"^(?:no|false|incorrect|nope|negative|否|不|没有|不可以)\b(?!\.?\s*\d)", re.IGNORECASE)
_VERDICT_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|not sure|unclear|either|possibly|or)\b|不确定|也许|可能", re.IGNORECASE
)
#: a reason's conclusion that says no / yes (checked against a verdict of the other polarity)
_SAYS_NO = re.compile(
    r"\b(?:is|are|was|will be) (?:closed|shut)\b|\b(?:isn't|is not|aren't|are not|won't be|will not be) open\b|"
    r"\bno (?:post|note)s?\b|\b(?:does not|doesn't|do not|don't) mention\b|\bnot mentioned\b|"
    r"\b(?:cannot|can't|can not) go\b|\bso,? no\b|\bthe answer is (?:no|false)\b",
    re.IGNORECASE,
)
_SAYS_YES = re.compile(
    r"\b(?:is|are) open\b(?! until| till| from)|\bsays so\b|\b(?:does|do) mention\b|\bso,? yes\b|"
    r"\byou can (?:still )?go\b|\bthe answer is (?:yes|true)\b",
    re.IGNORECASE,
)
_NUMERIC_VALUE = re.compile(
    r"^(?:about|approx\.?|approximately|around|roughly|约|大约)?\s*[¥￥$€£]?\s*[-+]?\d[\d,]*(?:\.\d+)?\s*"
    r"(?:cny|rmb|yuan|元|块|stars?|/\s*5|out of 5|星|分)?\s*(?:per person|a person|each|/person|pp|人均)?\.?$",
    re.IGNORECASE,
)


@dataclass
class Reading:
    """What the reader made of a submission: the JSON value of each distinct answer it offers
    (normalised under the robust protocol), the rules that fired, and `void`: why one of its
    candidates is no answer (the one-answer rule), or None."""

    candidates: list[Any] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    void: str | None = None


def clean_text(s: str) -> str:
    """NFKC (full-width forms), markdown marks removed, spacing collapsed."""
    s = unicodedata.normalize("NFKC", s).replace("\u200b", "")
    s = _MARKDOWN.sub("", s)
    return " ".join(s.split())


def name_key(s: Any) -> str:
    """A name as compared: NFKC, case-folded, punctuation and spacing ignored."""
    s = unicodedata.normalize("NFKC", str(s)).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", s).split())


def loose_equal_text(a: Any, b: Any) -> bool:
    return name_key(a) == name_key(b)


# --------------------------------------------------------------------------------------------
# Places named in text
# --------------------------------------------------------------------------------------------

_NAME_INDEX: dict[str, tuple[dict[str, list[str]], dict[str, str]]] = {}


def _names(city: city_handle.City) -> tuple[dict[str, list[str]], dict[str, str]]:
    """({name key: place ids}, {place id: name}) of the city, once per opened city."""
    key = f"{city.db_path}@{id(city)}"
    got = _NAME_INDEX.get(key)
    if got is None:
        by_key: dict[str, list[str]] = {}
        by_id: dict[str, str] = {}
        for pid, name in city.cursor().execute("SELECT id, name FROM places ORDER BY id").fetchall():
            by_key.setdefault(name_key(name), []).append(pid)
            by_id[pid] = name
        got = (by_key, by_id)
        _NAME_INDEX.clear()
        _NAME_INDEX[key] = got
    return got


def place_mentions(city: city_handle.City, text: str) -> tuple[list[str], list[str]]:
    """(places asserted, places rejected) that `text` names, by id or by full name, in order.
    A name inside a longer name counts once, as the longer name; a mention right after a
    rejecting cue ("not", "rather than", "instead of") is rejected."""
    norm = " " + name_key(text) + " "
    raw_tokens = re.findall(r"[A-Za-z0-9]+", unicodedata.normalize("NFKC", text))
    spans: list[tuple[int, int, str]] = []
    for tok in raw_tokens:
        if tok in city.place_index:
            pos = norm.find(" " + tok.casefold() + " ")
            spans.append((max(pos, 0), max(pos, 0) + len(tok) + 1, tok))
    for key, pids in _names(city)[0].items():
        if len(pids) != 1 or not key:
            continue
        start = norm.find(" " + key + " ")
        while start >= 0:
            spans.append((start, start + len(key) + 1, pids[0]))
            start = norm.find(" " + key + " ", start + 1)
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    asserted: list[str] = []
    rejected: list[str] = []
    end = -1
    for s, e, pid in spans:
        if s < end and e <= end:
            continue  # inside a longer mention
        end = max(end, e)
        before = norm[max(0, s - 24) : s + 1]
        target = rejected if _REJECT_BEFORE.search(before.rstrip()) else asserted
        if pid not in target:
            target.append(pid)
    return asserted, [p for p in rejected if p not in asserted]


def _place_name(city: city_handle.City, pid: str) -> str:
    return _names(city)[1][pid]


# --------------------------------------------------------------------------------------------
# Normalising one JSON answer
# --------------------------------------------------------------------------------------------


def _norm_key(k: Any) -> str:
    key = "_".join(re.sub(r"[^\w]+", " ", unicodedata.normalize("NFKC", str(k)).casefold()).split())
    return _KEY_ALIASES.get(key, _KEY_ALIASES.get(key.replace("_", ""), key))


def _norm_json(x: Any) -> Any:
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            out.setdefault(_norm_key(k), _norm_json(v))
        return out
    if isinstance(x, list):
        return [_norm_json(v) for v in x]
    if isinstance(x, str):
        return clean_text(x)
    return x


def _enum(value: Any, table: dict[str, tuple[str, ...]]) -> Any:
    if not isinstance(value, str):
        return value
    v = name_key(value)
    for canonical, words in table.items():
        if v in {name_key(w) for w in words}:
            return canonical
    hits = {c for c, words in table.items() for w in words if re.search(rf"\b{re.escape(name_key(w))}\b", v)}
    return hits.pop() if len(hits) == 1 else value


class _Void(Exception):
    """The answer offers a candidate that is no answer (the one-answer rule)."""


def _item(city: city_handle.City, item: Any, where: str, rules: list[str]) -> Any:
    """A place item ({name, place_id, reason, ...} or a bare name / id) with its place_id found."""
    if isinstance(item, str):
        item = {"name": item}
    if not isinstance(item, dict):
        return item
    reason = item.get("reason")
    if isinstance(reason, str) and RETRACTION_RE.search(reason):
        raise _Void(f"{where}: its reason withdraws the recommendation")
    pid = item.get("place_id")
    if isinstance(pid, str) and pid.strip() in city.place_index:
        return item
    found: list[str] = []
    for text in (pid, item.get("name")):
        if isinstance(text, str) and text:
            asserted, _ = place_mentions(city, text)
            found = asserted
            if found:
                break
    if len(found) == 1:
        rules.append(f"{where}: place read from its name or text")
        return {**item, "place_id": found[0]}
    if len(found) > 1:
        raise _Void(f"{where} names several places")
    return item


def _verdict(text: str) -> bool | None:
    t = text.strip()
    yes, no = bool(_YES.match(t)), bool(_NO.match(t))
    if yes == no:
        return None
    if _VERDICT_HEDGE.search(t):
        raise _Void("the verdict hedges")
    return yes


def _place_value(city: city_handle.City, value: Any, rules: list[str]) -> Any:
    if isinstance(value, list):
        if len(value) == 1:
            return _place_value(city, value[0], rules)
        raise _Void("the answer offers several values")
    if isinstance(value, dict):
        for key in ("place_id", "name", "value", "answer"):
            if key in value:
                return _place_value(city, value[key], rules)
        return value
    if not isinstance(value, str):
        return value
    text = value.strip().rstrip(".。!！")
    verdict = _verdict(text)
    if verdict is not None:
        rules.append("verdict read from words")
        return verdict
    digits = words_to_digits(text)
    if _NUMERIC_VALUE.match(digits):
        x = quantity(digits)
        if x is not None:
            rules.append("number read with its unit or from words")
            return int(x) if float(x).is_integer() else x
    asserted, rejected = place_mentions(city, text)
    if len(asserted) > 1:
        raise _Void("the answer names several places")
    if len(asserted) == 1:
        name = _place_name(city, asserted[0])
        if name != value:
            rules.append("place read from the text" + (" (an alternative named to reject it)" if rejected else ""))
        return name
    return text if text != value else value


def _check_verdict_reason(obj: dict[str, Any]) -> None:
    value, reason = obj.get("answer"), obj.get("reason")
    if not isinstance(value, bool) or not isinstance(reason, str):
        return
    if value and _SAYS_NO.search(reason) and not _SAYS_YES.search(reason):
        raise _Void("the verdict is true but its reason says no")
    if not value and _SAYS_YES.search(reason) and not _SAYS_NO.search(reason):
        raise _Void("the verdict is false but its reason says yes")


def _unwrap(obj: Any, task: str) -> Any:
    route_keys = {"start", "end", "waypoints", "optimal_order"}
    for _ in range(3):
        if not isinstance(obj, dict) or len(obj) != 1:
            return obj
        ((key, inner),) = obj.items()
        if key in _WRAPPERS or (task in ("routing", "trip") and isinstance(inner, dict) and route_keys & set(inner)):
            obj = inner
        else:
            return obj
    return obj


def normalise_answer(
    city: city_handle.City, task: str, obj: Any, rules: list[str], request_places: frozenset[str] = frozenset()
) -> Any:
    """One candidate answer rewritten into the Table 5 schema the paper protocol reads
    (`request_places`: the places the request names, which a Nearby answer in prose mentions
    without offering them). Raises `_Void` when the candidate is itself several answers or none."""
    obj = _unwrap(_norm_json(obj), task)
    if task == "place":
        if not isinstance(obj, dict):
            return _place_value(city, obj, rules)
        if "answer" in obj:
            obj = {**obj, "answer": _place_value(city, obj["answer"], rules)}
            reason = obj.get("reason")
            recommends = isinstance(obj["answer"], str) and place_mentions(city, obj["answer"])[0]
            if recommends and isinstance(reason, str) and RETRACTION_RE.search(reason):
                raise _Void("its reason withdraws the recommendation")
            _check_verdict_reason(obj)
        return obj
    if task == "nearby":
        items = obj.get("answer", obj.get("places")) if isinstance(obj, dict) else obj
        if isinstance(items, dict):
            items = [items]
        if isinstance(items, str):  # the places named in prose ("1. **A** (28 m) 2. **B** ...")
            if RETRACTION_RE.search(items):
                raise _Void("the answer withdraws a recommendation")
            asserted, _ = place_mentions(city, items)
            asserted = [p for p in asserted if p not in request_places]  # "28 m from <the anchor>"
            if asserted:
                rules.append("places read from the prose")
                items = [{"name": _place_name(city, pid), "place_id": pid} for pid in asserted]
        if isinstance(items, list):
            items = [_item(city, it, f"answer[{k}]", rules) for k, it in enumerate(items)]
            return {**obj, "answer": items} if isinstance(obj, dict) else {"answer": items}
        return obj
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    for key in ("start", "end"):
        if key in out:
            out[key] = _item(city, out[key], key, rules)
    if isinstance(out.get("waypoints"), list):
        out["waypoints"] = [_item(city, w, f"waypoints[{k}]", rules) for k, w in enumerate(out["waypoints"])]
    if isinstance(out.get("optimal_order"), list):
        out["optimal_order"] = [
            _item(city, o, f"optimal_order[{k}]", rules) for k, o in enumerate(out["optimal_order"])
        ]
    for key, table in (("vehicle", VEHICLES), ("mode", MODES)):
        if key in out:
            value = _enum(out[key], table)
            if value != out[key]:
                rules.append(f"{key} synonym {out[key]!r} read as {value!r}")
            out[key] = value
    for key in list(out):
        m = _UNIT_KEY.match(key)
        target = m and ("total_distance_m" if m.group("what") == "distance" else "total_time_s")
        if m and target and target not in out:
            factor, value = _KEY_UNITS[m.group("unit")], out[key]
            x = value * factor if isinstance(value, (int, float)) and not isinstance(value, bool) else value
            rules.append(f"{target} read from '{key}'")
            out[target] = int(x) if isinstance(x, float) and x.is_integer() else x
    for key, dim in (("total_distance_m", "distance"), ("total_time_s", "time")):
        v = out.get(key)
        if isinstance(v, str):
            x = quantity(v, dim)
            if x is not None:
                rules.append(f"{key} read from {v!r}")
                out[key] = int(x) if float(x).is_integer() else x
    return out


# --------------------------------------------------------------------------------------------
# Reading a submission
# --------------------------------------------------------------------------------------------


#: no answer of any task nests deeper (the paper protocol's schema check says the same)
MAX_ANSWER_DEPTH = 100


def _json_spans(text: str) -> list[tuple[int, int, Any]]:
    """Every top-level JSON object or array in `text` (prose around them allowed)."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except RecursionError:
                # nested beyond the parser: every opener inside belongs to the same too-deep value
                while i < len(text) and (text[i] in "{[" or text[i].isspace()):
                    i += 1
                continue
            except json.JSONDecodeError:
                i += 1
                continue
            if nesting_depth(value, MAX_ANSWER_DEPTH + 1) > MAX_ANSWER_DEPTH:  # deeper than any answer
                i = end
                continue
            if isinstance(value, (dict, list)) and value:
                out.append((i, end, value))
                i = end
                continue
        i += 1
    return out


_ANSWER_KEYS = {
    "place": {"answer"},
    "nearby": {"answer", "places", "place_id", "name"},
    "routing": {"start", "end", "waypoints", "optimal_order", "total_distance_m", "total_time_s"},
    "trip": {"start", "end", "waypoints", "optimal_order", "total_distance_m", "total_time_s"},
}


def _looks_like_answer(task: str, value: Any) -> bool:
    """Whether a JSON value found in prose has the top-level fields of the task's answer."""
    value = _unwrap(_norm_json(value), task)
    if isinstance(value, list):
        return task == "nearby" and any(isinstance(v, dict) and {"place_id", "name"} & set(v) for v in value)
    return isinstance(value, dict) and bool(_ANSWER_KEYS.get(task, set()) & set(value))


def read_submission(city: city_handle.City, task: str, raw: Any, protocol: str, question: str = "") -> Reading:
    """The submission `raw` (submit_answer's `result`) read under `protocol`; `question`: the
    request, whose own places are not places a Nearby answer in prose offers."""
    if protocol == "paper":
        return Reading([load_answer(raw)])
    if protocol != "robust":
        raise ValueError(f"protocol must be robust or paper, got {protocol!r}")
    reading = Reading()
    values: list[Any] = [raw]
    if isinstance(raw, str):
        text = unicodedata.normalize("NFKC", raw).strip()
        spans = _json_spans(text)
        if spans:
            values = [v for _, _, v in spans]
            if text[: spans[0][0]].strip() or text[spans[-1][1] :].strip():
                reading.rules.append("JSON read from the prose around it")
            after = text[spans[0][1] :]
            prose_after = "".join(text[e:s] for (_, e, _), (s, _, _) in zip(spans, [*spans[1:], (len(text), 0, None)]))
            if CORRECTION_RE.search(prose_after) and len(spans) == 1:
                reading.void = "the answer corrects itself after its JSON"
            elif RETRACTION_RE.search(after if len(spans) == 1 else prose_after):
                reading.void = "the answer withdraws its recommendation"
        else:
            values = [clean_text(text)]
    if len(values) > 1:
        # a JSON fragment of the explanation ({"leg": 1}) is not an answer the submission offers
        answers = [v for v in values if _looks_like_answer(task, v)]
        if answers and len(answers) < len(values):
            reading.rules.append("JSON fragments that are not answers left out")
            values = answers
    request_places = frozenset(place_mentions(city, question)[0]) if question else frozenset()
    seen: set[str] = set()
    for value in values:
        try:
            cand = normalise_answer(city, task, value, reading.rules, request_places)
        except _Void as exc:
            reading.void = reading.void or str(exc)
            continue
        key = json.dumps(cand, sort_keys=True, ensure_ascii=False, default=str)
        if key not in seen:
            seen.add(key)
            reading.candidates.append(cand)
    if len(reading.candidates) > 1:
        reading.rules.append(f"one-answer rule: {len(reading.candidates)} different answers, the worst is scored")
    if reading.void:
        reading.rules.append(f"one-answer rule: {reading.void}")
    return reading
