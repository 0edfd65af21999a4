"""A candidate answer of LifePlanner read into the Table 5 schema (`scoring.protocol=robust`): the
answer's typesetting taken away, its values read as the paper protocol reads them.

- Keys in any case and spacing, with a few synonyms (`Place ID` -> `place_id`, `distance` ->
  `total_distance_m`), a total whose key names its unit (`"total_time_min": 14.5`), a wrapper
  object (`{"result": {...}}`) unwrapped.
- Numbers with units on totals (`"783 m"`, `"1.2 km"`, `"14 min 34 s"`), numbers in words,
  currency and rating units on Place values.
- Enumerations: vehicle and mode synonyms (`car` -> `driving`, `fastest` -> `time`), verdict
  synonyms (`Yes, it is open.` -> true).
- Places: a place item without a usable `place_id` read from its id or name in its text; a Place
  value in prose is the place it offers (`places_named.place_mentions`, on the core's reading).

A candidate that is itself several answers or none raises `Void` (the one-answer rule then scores
it as no answer): a value naming several places, a hedged verdict, a verdict its own reason
contradicts, a recommendation its own reason withdraws (`core.reading.lexicon.WITHDRAWAL`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from geoeval.api import fold
from geoeval.api import lexicon as cue
from geoeval.suites.lifeplanner.scoring.numbers import quantity, words_to_digits
from geoeval.suites.lifeplanner.scoring.places_named import name_key, place_mentions, place_name
from geoeval.suites.lifeplanner.tools import city as city_handle

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
# a verdict word opens the value; "No. 114 Meian Avenue" is an address, not a verdict
_YES = re.compile(
    r"^(?:yes|true|correct|right|yep|indeed|affirmative|sí|si|oui|ja|sim|vrai|wahr|verdadero|cierto|是|对|有|可以|はい)"
    r"\b(?!\.?\s*\d)",
    re.IGNORECASE,
)
_NO = re.compile(
    r"^(?:no|false|incorrect|nope|negative|non|nein|não|nao|faux|falsch|falso|否|不|没有|不可以|いいえ)\b(?!\.?\s*\d)",
    re.IGNORECASE,
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
# a verdict between two ("yes or no", "either")
_EITHER = re.compile(r"\b(?:or|either|oder|ou|o)\b|或者|还是")
_NUMERIC_VALUE = re.compile(
    r"^(?:about|approx\.?|approximately|around|roughly|约|大约)?\s*[¥￥$€£]?\s*[-+]?\d[\d,]*(?:\.\d+)?\s*"
    r"(?:cny|rmb|yuan|元|块|stars?|/\s*5|out of 5|星|分)?\s*(?:per person|a person|each|/person|pp|人均)?\.?$",
    re.IGNORECASE,
)


def clean_text(s: str) -> str:
    """NFKC (full-width forms), markdown marks removed, spacing collapsed."""
    s = unicodedata.normalize("NFKC", s).replace("\u200b", "")
    s = _MARKDOWN.sub("", s)
    return " ".join(s.split())


# --------------------------------------------------------------------------------------------


def norm_key(k: Any) -> str:
    key = "_".join(re.sub(r"[^\w]+", " ", unicodedata.normalize("NFKC", str(k)).casefold()).split())
    return _KEY_ALIASES.get(key, _KEY_ALIASES.get(key.replace("_", ""), key))


def _norm_json(x: Any) -> Any:
    if isinstance(x, dict):
        out: dict[str, Any] = {}
        for k, v in x.items():
            out.setdefault(norm_key(k), _norm_json(v))
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


class Void(Exception):
    """The answer offers a candidate that is no answer (the one-answer rule)."""


def _item(city: city_handle.City, item: Any, where: str, rules: list[str]) -> Any:
    """A place item ({name, place_id, reason, ...} or a bare name / id) with its place_id found."""
    if isinstance(item, str):
        item = {"name": item}
    if not isinstance(item, dict):
        return item
    reason = item.get("reason")
    if isinstance(reason, str) and cue.WITHDRAWAL.search(reason):
        raise Void(f"{where}: its reason withdraws the recommendation")
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
        raise Void(f"{where} names several places")
    return item


def _verdict(text: str) -> bool | None:
    t = text.strip()
    yes, no = bool(_YES.match(t)), bool(_NO.match(t))
    if yes == no:
        return None
    if cue.HEDGE.search(fold(t)) or _EITHER.search(fold(t)):
        raise Void("the verdict hedges")
    return yes


def _place_value(city: city_handle.City, value: Any, rules: list[str]) -> Any:
    if isinstance(value, list):
        if len(value) == 1:
            return _place_value(city, value[0], rules)
        raise Void("the answer offers several values")
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
        raise Void("the answer names several places")
    if len(asserted) == 1:
        name = place_name(city, asserted[0])
        if name != value:
            rules.append("place read from the text" + (" (an alternative named to reject it)" if rejected else ""))
        return name
    return text if text != value else value


def _check_verdict_reason(obj: dict[str, Any]) -> None:
    value, reason = obj.get("answer"), obj.get("reason")
    if not isinstance(value, bool) or not isinstance(reason, str):
        return
    if value and _SAYS_NO.search(reason) and not _SAYS_YES.search(reason):
        raise Void("the verdict is true but its reason says no")
    if not value and _SAYS_YES.search(reason) and not _SAYS_NO.search(reason):
        raise Void("the verdict is false but its reason says yes")


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
    without offering them). Raises `Void` when the candidate is itself several answers or none."""
    obj = _unwrap(_norm_json(obj), task)
    if task == "place":
        if not isinstance(obj, dict):
            return _place_value(city, obj, rules)
        if "answer" in obj:
            obj = {**obj, "answer": _place_value(city, obj["answer"], rules)}
            reason = obj.get("reason")
            recommends = isinstance(obj["answer"], str) and place_mentions(city, obj["answer"])[0]
            if recommends and isinstance(reason, str) and cue.WITHDRAWAL.search(reason):
                raise Void("its reason withdraws the recommendation")
            _check_verdict_reason(obj)
        return obj
    if task == "nearby":
        items = obj.get("answer", obj.get("places")) if isinstance(obj, dict) else obj
        if isinstance(items, dict):
            items = [items]
        if isinstance(items, str):  # the places named in prose ("1. **A** (28 m) 2. **B** ...")
            if cue.WITHDRAWAL.search(items):
                raise Void("the answer withdraws a recommendation")
            asserted, _ = place_mentions(city, items)
            asserted = [p for p in asserted if p not in request_places]  # "28 m from <the anchor>"
            if asserted:
                rules.append("places read from the prose")
                items = [{"name": place_name(city, pid), "place_id": pid} for pid in asserted]
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


_ANSWER_KEYS = {
    "place": {"answer"},
    "nearby": {"answer", "places", "place_id", "name"},
    "routing": {"start", "end", "waypoints", "optimal_order", "total_distance_m", "total_time_s"},
    "trip": {"start", "end", "waypoints", "optimal_order", "total_distance_m", "total_time_s"},
}


def looks_like_answer(task: str, value: Any) -> bool:
    """Whether a JSON value found in prose has the top-level fields of the task's answer."""
    value = _unwrap(_norm_json(value), task)
    if isinstance(value, list):
        return task == "nearby" and any(isinstance(v, dict) and {"place_id", "name"} & set(v) for v in value)
    return isinstance(value, dict) and bool(_ANSWER_KEYS.get(task, set()) & set(value))
