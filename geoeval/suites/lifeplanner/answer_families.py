"""The meta-evaluation's answer families beyond the tiers (`meta_eval.py`): what real models write.

Each answer is built from the case's reference answer (or the tiers' wrong and invented answers)
and declares its expected order through its `Tier` (`geoeval.core.analysis.meta_eval`):

- `surface` (level 0: must score exactly as the reference on every metric): the reference as a
  string with prose and a markdown fence around it; with units and synonyms ("3.6 km",
  "14 min 34 s", "car", "fastest", "Yes, it is.", "86 CNY", numbers in words); typeset otherwise
  (full-width characters, bold names, keys in other case and spacing, place ids left out where
  the name says which place).
- `gaming` (level 1: strictly below the reference on the metrics it lists): two answers (a
  wrong one, then the reference "but maybe"); the reference followed by "Actually, go to <other>
  instead"; the recommendation withdrawn in its own reason, or a verdict its reason contradicts;
  every reason stuffed with "open 24 hours, rated 5.0, free parking" (RP); every candidate place
  named at once; a bare value or verdict with nothing to check (RP).
- `partial` (level 1): half the places of a Nearby answer, or one wrong place added (PIoU, PR);
  a route whose totals are 10% off (RD, PR, RP).
- `trajectory` (level 1): the right answer with no tool call (the paper's process metrics judge
  τ: IG and TE fall, and RP, since nothing stated was grounded in a tool result; the outcome
  metrics judge the answer and stay the reference's), and the reference's tool calls with an
  invented answer (the outcome metrics and RP fall; IG and TE credit the process and stay).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from geoeval.api import DEFECT, REFERENCE, AnswerPair, Tier, reading_family_answers
from geoeval.suites.lifeplanner.metrics import applicable
from geoeval.suites.lifeplanner.scoring.numbers import english_number
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import places as place_tools

OUTCOME = frozenset({"a", "piou", "rd_distance", "rd_time", "oc", "sc", "pr"})
INVENTED_CLAIMS = " Open 24 hours, rated 5.0, free parking."
_ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def in_words(n: int) -> str:
    """An integer below a million in English words ("seven hundred eighty-three")."""
    if n == 0:
        return "zero"
    whole, parts = n, []
    if n >= 1000:
        parts.append(f"{in_words(n // 1000)} thousand")
        n %= 1000
    if n >= 100:
        parts.append(f"{_ONES[n // 100]} hundred")
        n %= 100
    if n >= 20:
        parts.append(_TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else ""))
    elif n >= 10:
        parts.append(_TEENS[n - 10])
    elif n:
        parts.append(_ONES[n])
    out = " ".join(parts)
    assert english_number(out) == float(whole) or whole >= 1_000_000, out  # the reader reads what we write
    return out


def _tier(family: str, name: str, level: int, affects: frozenset[str] | None = None) -> Tier:
    return Tier(f"{family}:{name}", level, affects, family)


def _family(task: str) -> str:
    return "route" if task in ("routing", "trip") else task


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and c.isalnum() else c for c in s)


# --------------------------------------------------------------------------------------------
# surface: the reference written another way
# --------------------------------------------------------------------------------------------


def prose_fenced(case: dict[str, Any]) -> str:
    body = json.dumps(case["answer"], ensure_ascii=False, indent=2)
    return f"Here is my final answer:\n```json\n{body}\n```\nLet me know if you need anything else."


def units_and_synonyms(case: dict[str, Any]) -> Any:
    ans = copy.deepcopy(case["answer"])
    fam = _family(case["task"])
    if fam == "route":
        d, t = int(ans["total_distance_m"]), int(ans["total_time_s"])
        ans["total_distance_m"] = f"{d / 1000:g} km" if d >= 1000 else f"{d} m"
        ans["total_time_s"] = f"{t // 60} min {t % 60} s" if t >= 60 else in_words(t) + " seconds"
        ans["vehicle"] = {"driving": "car", "walking": "on foot", "cycling": "bike"}[ans["vehicle"]]
        ans["mode"] = {"time": "fastest", "distance": "shortest"}[ans["mode"]]
        return ans
    if fam == "place":
        v = ans["answer"]
        if isinstance(v, bool):
            ans["answer"] = "Yes, it is." if v else "No, it is not."
        elif isinstance(v, (int, float)):
            ans["answer"] = f"{in_words(int(v))} CNY" if float(v).is_integer() and v < 1000 else f"¥{v:g}"
        else:
            ans["answer"] = f"**{str(v).upper()}**"
        return ans
    for item in ans["answer"]:  # nearby: names bold, the ids left to the names
        item["name"] = f"**{item['name']}**"
        item.pop("place_id", None)
    return ans


def typeset(case: dict[str, Any]) -> Any:
    """Full-width characters in names, keys in other case and spacing."""

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {
                ("Place ID" if k == "place_id" else k): (
                    _fullwidth(v) if k == "name" and isinstance(v, str) else walk(v)
                )
                for k, v in x.items()
            }
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(copy.deepcopy(case["answer"]))


# --------------------------------------------------------------------------------------------
# gaming
# --------------------------------------------------------------------------------------------


def _main_item(ans: dict[str, Any], task: str) -> dict[str, Any] | None:
    if task == "place":
        return ans
    if task == "nearby":
        return ans["answer"][0]
    stops = ans.get("waypoints") or []
    return stops[0] if stops else None


def _other_name(city: city_handle.City, case: dict[str, Any], seen: list[dict[str, Any]]) -> str | None:
    ref = set(case["reference_places"]) | {case["context"].get("anchor")}
    for r in seen:
        if r["place_id"] not in ref:
            return str(r["name"])
    return None


def with_claims(case: dict[str, Any]) -> Any:
    ans = copy.deepcopy(case["answer"])
    fam = _family(case["task"])
    if fam == "place":
        items = [ans]
    elif fam == "nearby":
        items = ans["answer"]
    else:
        items = [ans["start"], ans["end"], *(ans.get("waypoints") or [])]
    for item in items:
        item["reason"] = (item.get("reason") or "") + INVENTED_CLAIMS
    return ans


def stripped(case: dict[str, Any]) -> Any:
    return {"answer": case["answer"]["answer"]}


def contradicted(case: dict[str, Any]) -> Any:
    ans = copy.deepcopy(case["answer"])
    kind = case["context"].get("kind")
    if kind == "open_verdict":
        ans["reason"] = "At that time it is closed." if ans["answer"] else "At that time it is open."
    else:
        ans["reason"] = "No post mentions it." if ans["answer"] else "A post about it says so."
    return ans


def retracted(case: dict[str, Any]) -> Any | None:
    if case["task"] == "place" and case["context"].get("kind") not in ("compare", "which_open", "preference"):
        return None  # the answer is a value, not a recommendation
    ans = copy.deepcopy(case["answer"])
    item = _main_item(ans, case["task"])
    if item is None:
        return None
    item["reason"] = "Not recommended: it has closed down."
    return ans


def stuffed(city: city_handle.City, case: dict[str, Any], seen: list[dict[str, Any]]) -> Any | None:
    ans = copy.deepcopy(case["answer"])
    if case["task"] == "place":
        cands = case["context"].get("candidates") or []
        if len(cands) < 2:
            return None
        ans["answer"] = ", ".join(place_tools.place_detail(city, c).payload["name"] for c in cands)
        return ans
    anchor = case["context"].get("anchor")
    extra = [r for r in seen if r["place_id"] not in case["reference_places"] and r["place_id"] != anchor]
    if not extra:
        return None
    ans["answer"] = ans["answer"] + [{"name": r["name"], "place_id": r["place_id"]} for r in extra]
    return ans


# --------------------------------------------------------------------------------------------
# partial
# --------------------------------------------------------------------------------------------


def half_places(case: dict[str, Any]) -> Any | None:
    items = case["answer"]["answer"]
    if len(items) < 2:
        return None
    return {**copy.deepcopy(case["answer"]), "answer": copy.deepcopy(items[: len(items) // 2])}


def totals_off(case: dict[str, Any]) -> Any:
    ans = copy.deepcopy(case["answer"])
    ans["total_distance_m"] = round(ans["total_distance_m"] * 1.1) + 1
    ans["total_time_s"] = round(ans["total_time_s"] * 1.1) + 1
    return ans


# --------------------------------------------------------------------------------------------
# all families of one case
# --------------------------------------------------------------------------------------------


def family_answers(
    city: city_handle.City,
    case: dict[str, Any],
    base: list[Any],
    seen: list[dict[str, Any]],
    wrong: Any | None,
    invented: Any,
) -> list[tuple[Tier, list[Any], Any]]:
    """(tier, trajectory, submitted answer) of every family answer the case can express. `base`
    is the reference trajectory, `wrong` the tiers' wrong-place answer (None if the case has
    none), `invented` their invented answer."""
    task, fam, level = case["task"], _family(case["task"]), case["level"]
    applies = {m for m in OUTCOME if _applies(task, level, m)}
    void = frozenset(applies | {"rp"})  # an answer that is no answer: every outcome metric and RP
    prompt = base[:2]
    out: list[tuple[Tier, list[Any], Any]] = [
        (_tier("surface", "prose_fenced", REFERENCE), base, prose_fenced(case)),
        (_tier("surface", "units_and_synonyms", REFERENCE), base, units_and_synonyms(case)),
        (_tier("surface", "typeset", REFERENCE), base, typeset(case)),
    ]
    ref_json = json.dumps(case["answer"], ensure_ascii=False)
    if wrong is not None:
        wrong_json = json.dumps(wrong, ensure_ascii=False)
        affects = frozenset({"a", "pr"}) if fam == "place" else frozenset({"piou", "pr"})
        out.append(
            (_tier("gaming", "two_answers", DEFECT, affects), base, f"Probably:\n{wrong_json}\nbut maybe:\n{ref_json}")
        )
    other = _other_name(city, case, seen)
    if other is not None:
        out.append(
            (
                _tier("gaming", "self_correction", DEFECT, void),
                base,
                f"{ref_json}\nActually, go to {other} instead.",
            )
        )
    if fam == "place" and isinstance(case["answer"]["answer"], bool):
        out.append((_tier("gaming", "contradicted_verdict", DEFECT, void), base, contradicted(case)))
    else:
        made = retracted(case)
        if made is not None:
            out.append((_tier("gaming", "retracted", DEFECT, void), base, made))
    out.append((_tier("gaming", "invented_reasons", DEFECT, frozenset({"rp"})), base, with_claims(case)))
    made = stuffed(city, case, seen) if fam in ("place", "nearby") else None
    if made is not None:
        affects = frozenset({"a", "pr"}) if fam == "place" else frozenset({"piou", "pr"})
        out.append((_tier("gaming", "stuffing", DEFECT, affects), base, made))
    if fam == "place" and not isinstance(case["answer"]["answer"], str):
        out.append((_tier("gaming", "nothing_checkable", DEFECT, frozenset({"rp"})), base, stripped(case)))
    if fam == "nearby":
        made = half_places(case)
        if made is not None:
            out.append((_tier("partial", "half_places", DEFECT, frozenset({"piou", "pr"})), base, made))
        if wrong is not None:
            extra = copy.deepcopy(case["answer"])
            extra["answer"].append(copy.deepcopy(wrong["answer"][0]))
            out.append((_tier("partial", "extra_wrong_place", DEFECT, frozenset({"piou", "pr"})), base, extra))
    if fam == "route":
        affects = frozenset({"rd_distance", "rd_time", "pr", "rp"})
        out.append((_tier("partial", "totals_off", DEFECT, affects), base, totals_off(case)))
    out += [(tier, base, text) for tier, text in reading_family_answers(answer_pair(case, wrong), rng_of(case))]
    process = {"rp"} | ({"ig"} if case["evidence"] else set()) | ({"te"} if case["tau_star"] else set())
    out.append((_tier("trajectory", "no_tools_right_answer", DEFECT, frozenset(process)), prompt, case["answer"]))
    out.append((_tier("trajectory", "right_tools_wrong_answer", DEFECT, void), base, invented))
    return out


def _applies(task: str, level: str, metric: str) -> bool:
    return metric in applicable(task, level)


# --------------------------------------------------------------------------------------------
# the core's reading families (core/analysis/answer_families.py)
# --------------------------------------------------------------------------------------------

_FIELD_NAMES = {
    "answer": "Answer",
    "reason": "Reason",
    "attribute_key": "Attribute key",
    "note_id": "Note ID",
    "implicit_logic": "Implicit logic",
    "name": "Name",
    "place_id": "Place ID",
}


def rng_of(case: dict[str, Any]) -> random.Random:
    return random.Random(f"{case['id']}/reading")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flat(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """A record's fields, its `ref` spread into attribute key and note id."""
    out = [(k, v) for k, v in record.items() if k != "ref"]
    out += list((record.get("ref") or {}).items())
    return out


def record_forms(answer: dict[str, Any], task: str) -> dict[str, str]:
    """A Place answer as a table of fields, as `## field` sections and as `Field: value` lines, and
    a Nearby answer as a table of its places (each row every field of one place); the forms that
    would lose a field of the answer are not made (a route's stops carry nested records)."""
    if task == "place":
        fields = [(k, v) for k, v in _flat(answer) if k in _FIELD_NAMES and not isinstance(v, (dict, list))]
        if len(fields) != len(_flat(answer)):
            return {}
        rows = "\n".join(f"| {_FIELD_NAMES[k]} | {_cell(v)} |" for k, v in fields)
        return {
            "table": f"| Field | Value |\n|---|---|\n{rows}",
            "sections": "\n\n".join(f"## {_FIELD_NAMES[k]}\n{_cell(v)}" for k, v in fields),
            "field_lines": "\n".join(f"**{_FIELD_NAMES[k]}:** {_cell(v)}" for k, v in fields),
        }
    if task == "nearby":
        items = [_flat(item) for item in answer.get("answer") or []]
        keys = list(dict.fromkeys(k for item in items for k, _ in item))
        if set(answer) != {"answer"} or not items or any(k not in _FIELD_NAMES for k in keys):
            return {}
        header = "| " + " | ".join(_FIELD_NAMES[k] for k in keys) + " |"
        lines = ["| " + " | ".join(_cell(dict(item).get(k, "")) for k in keys) + " |" for item in items]
        return {"table": "\n".join([header, "|" + "---|" * len(keys), *lines])}
    return {}


def _written(answer: Any, rng: random.Random) -> str:
    text = json.dumps(answer, ensure_ascii=False)
    return f"```json\n{json.dumps(answer, ensure_ascii=False, indent=2)}\n```" if rng.random() < 0.5 else text


def answer_pair(case: dict[str, Any], wrong: Any | None) -> AnswerPair:
    """The reference and a wrong answer of a case (the wrong-place answer; a route's totals 10 %
    off when it has none), as the reading families compose them."""
    fam = _family(case["task"])
    rng = rng_of(case)
    style = rng.random()
    if wrong is None and fam == "route":
        wrong, affects = totals_off(case), frozenset({"rd_distance", "rd_time", "pr", "rp"})
    else:
        affects = frozenset({"a", "pr"}) if fam == "place" else frozenset({"piou", "pr"})
        if fam == "route":
            affects = frozenset({"piou", "oc", "rd_distance", "rd_time", "pr"})
    return AnswerPair(
        right=_written(case["answer"], random.Random(style)),
        wrong=None if wrong is None else _written(wrong, random.Random(style)),
        affects=affects,
        question=str(case.get("question") or ""),
        forms=record_forms(case["answer"], case["task"]),
        wrong_forms={} if wrong is None else record_forms(wrong, case["task"]),
    )
