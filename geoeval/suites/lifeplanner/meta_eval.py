"""Meta-evaluation of LifePlanner's metrics (issue 11): answers of known quality per sample,
scored by the suite's real scoring path.

Every answer is scored exactly as a run scores it: its messages (a trajectory and a
`submit_answer` call) go through `scorers.evaluate_sample` with the run's judge ensemble (the
`rules` judge offline) and then the registered metric functions through `scorers.metric_values`
(the core's `compute_metrics`, which the Inspect scorer calls too).

Tiers, per sample (a tier that a case cannot express is left out for that case):

- `reference`: τ* replayed through the standard tools, then the case's reference answer;
- `defect:wrong_place`: a place of the answer swapped for another real place the trajectory
  saw (a non-answer candidate, or a place off the reference's set);
- `defect:wrong_order`: two stops of the visiting order swapped (totals kept), where the route
  has at least two stops between its ends;
- `defect:missed_constraint`: an answer that misses one constraint of the request: a candidate
  that fails the need or a filter (Place, Nearby), or a route without one of its stops;
- `defect:invented_attribute`: the reference plus one fabricated claim: a cited note id that
  does not exist, or (a route without stops to cite notes for) an invented total distance;
- worthless, with no tool calls: `empty` (an empty submission), `refusal` (a refusal in plain
  text, nothing submitted), `invented` (a fluent answer in the schema naming places and notes
  that do not exist).

Each defect tier lists the metrics it must lower (`Tier.affects`) for its task family; metrics
that do not apply to a case are NaN and left out. Token counts are not quality metrics and are
not reported.
"""

from __future__ import annotations

import copy
import json
import math
from typing import TYPE_CHECKING, Any

from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall

from geoeval.api import DEFECT, REFERENCE, WORTHLESS, ScoredAnswer, Tier, reading_family_targets
from geoeval.judges.ensemble import JudgeEnsemble
from geoeval.suites.lifeplanner.answer_families import family_answers
from geoeval.suites.lifeplanner.prompts import system_prompt, user_prompt
from geoeval.suites.lifeplanner.scoring.judging import straight_distance
from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import places as place_tools

if TYPE_CHECKING:
    from geoeval.api import RunSpec
    from geoeval.suites.lifeplanner.suite import LifePlannerSuiteConfig

METRICS = ["a", "piou", "rd_distance", "rd_time", "oc", "sc", "pr", "ig", "te", "rp"]
# SC and RP come from the judge ensemble (the rules judge offline), and PR gates on SC; the answer
# families of real models' writing (answer_families.py) must order 95% of their pairs.
FAMILIES = ("surface", "gaming", "partial", "trajectory")
_METRIC_TARGETS = {m: 1.0 for m in METRICS} | {"sc": 0.9, "rp": 0.9, "pr": 0.9}
TARGETS: dict[str, float] = (
    _METRIC_TARGETS
    | {f"{family}:{m}": 0.95 for family in FAMILIES for m in METRICS}
    | reading_family_targets(_METRIC_TARGETS, METRICS)
)

_ROUTE_TOTALS = frozenset({"piou", "oc", "rd_distance", "rd_time", "pr"})
_TIERS = {
    ("wrong_place", "place"): frozenset({"a", "pr"}),
    ("wrong_place", "nearby"): frozenset({"a", "piou", "pr"}),
    ("wrong_place", "route"): _ROUTE_TOTALS,
    ("wrong_order", "route"): frozenset({"oc", "pr"}),
    ("missed_constraint", "place"): frozenset({"sc", "pr"}),
    ("missed_constraint", "nearby"): frozenset({"sc", "pr"}),
    ("missed_constraint", "route"): frozenset({"piou", "sc", "pr"}),
    ("invented_attribute", "cite"): frozenset({"rp"}),
    ("invented_attribute", "total"): frozenset({"rp", "rd_distance", "pr"}),
}
REFERENCE_TIER = Tier("reference", REFERENCE)
WORTHLESS_TIERS = {name: Tier(name, WORTHLESS) for name in ("empty", "refusal", "invented")}
FAKE_NOTE = "ffffffff0000000000c0ffee"  # 24 hex like a note id; never generated (ids start with a time)
FAKE_PLACES = (
    ("Golden Lotus Teahouse", "B0ZZZZZZZ1"),
    ("Moonlit Harbour Bistro", "B0ZZZZZZZ2"),
    ("Silver Pine Garden", "B0ZZZZZZZ3"),
    ("Jade Crane Books", "B0ZZZZZZZ4"),
)


def _tier(defect: str, kind: str) -> Tier:
    return Tier(f"defect:{defect}", DEFECT, _TIERS[(defect, kind)])


def _family(task: str) -> str:
    return "route" if task in ("routing", "trip") else task


# --------------------------------------------------------------------------------------------
# Trajectories
# --------------------------------------------------------------------------------------------


def reference_messages(city: city_handle.City, case: dict[str, Any]) -> list[Any]:
    """The prompt and τ* replayed through the real standard tools (what the oracle does)."""
    from geoeval.suites.lifeplanner.cases.case import run_standard

    msgs: list[Any] = [
        ChatMessageSystem(content=system_prompt(case["task"])),
        ChatMessageUser(content=user_prompt(case["question"])),
    ]
    for k, step in enumerate(case["tau_star"]):
        call = ToolCall(id=f"t{k}", function=step["tool"], arguments=dict(step["arguments"]))
        res = run_standard(city, step["tool"], dict(step["arguments"]))
        msgs.append(ChatMessageAssistant(content="", tool_calls=[call]))
        msgs.append(
            ChatMessageTool(
                content=json.dumps(res.payload, ensure_ascii=False), tool_call_id=call.id, function=call.function
            )
        )
    return msgs


def _submitted(base: list[Any], result: Any) -> list[Any]:
    call = ToolCall(id="submit", function=SUBMIT_TOOL, arguments={"result": result})
    return [
        *base,
        ChatMessageAssistant(content="", tool_calls=[call]),
        ChatMessageTool(content="Answer submitted.", tool_call_id="submit", function=SUBMIT_TOOL),
    ]


def _seen_places(base: list[Any]) -> list[dict[str, Any]]:
    """Place records (place_id, name, place_type, distance_m when given) in the tool results."""
    out: dict[str, dict[str, Any]] = {}
    for m in base:
        if getattr(m, "role", "") != "tool":
            continue
        try:
            payload = json.loads(m.text)
        except (json.JSONDecodeError, TypeError):
            continue
        rows = payload.get("results") if isinstance(payload, dict) else None
        for r in rows if isinstance(rows, list) else ([payload] if isinstance(payload, dict) else []):
            if isinstance(r, dict) and isinstance(r.get("place_id"), str) and r.get("name"):
                out.setdefault(r["place_id"], r)
    return list(out.values())


# --------------------------------------------------------------------------------------------
# Answers of each tier
# --------------------------------------------------------------------------------------------


def _other_place(city: city_handle.City, case: dict[str, Any], seen: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A real place that cannot be right: a non-answer candidate the case lists, else a place of
    another type than every reference place, seen in the trajectory when possible."""
    ref = set(case["reference_places"])
    cands = [c for c in (case["context"].get("candidates") or []) if c not in ref]
    if cands and case["level"] == "l1":  # a losing candidate of a comparison
        return place_tools.place_detail(city, cands[0]).payload
    if case["level"] == "l2":  # every candidate passes A at L2 (SC judges the need): go outside them
        ref |= set(case["context"].get("candidates") or [])
    ref_types = {place_tools.place_detail(city, p).payload["place_type"] for p in ref}
    anchor, radius = case["context"].get("anchor"), case["context"].get("radius_m")

    def wrong(pid: str, place_type: Any) -> bool:
        far = anchor is None or radius is None or straight_distance(city, pid, anchor) > float(radius) + 50.0
        return pid not in ref and pid != anchor and place_type not in ref_types and far

    for r in seen:
        if wrong(r["place_id"], r.get("place_type")):
            return place_tools.place_detail(city, r["place_id"]).payload
    for pid in city.place_ids:  # deterministic: the first place in id order that qualifies
        rec = place_tools.place_detail(city, pid).payload
        if wrong(pid, rec["place_type"]):
            return rec
    return None


def _swap_stop(answer: dict[str, Any], old: str, new: dict[str, Any]) -> None:
    for w in answer.get("waypoints") or []:
        if w["place_id"] == old:
            w["place_id"], w["name"] = new["place_id"], new["name"]
    for o in answer.get("optimal_order") or []:
        if o["place_id"] == old:
            o["place_id"], o["name"] = new["place_id"], new["name"]


def wrong_place(city: city_handle.City, case: dict[str, Any], seen: list[dict[str, Any]]) -> tuple[Tier, Any] | None:
    ans = copy.deepcopy(case["answer"])
    other = _other_place(city, case, seen)
    fam = _family(case["task"])
    if other is None:
        return None
    if fam == "place":
        if case["context"].get("kind") not in ("compare", "which_open", "preference"):
            return None  # the answer is a value or a verdict, not a place
        ans["answer"] = other["name"]
    elif fam == "nearby":
        ans["answer"][0].update(place_id=other["place_id"], name=other["name"])
    else:
        stops = ans.get("waypoints") or []
        if not stops:
            return None
        _swap_stop(ans, stops[0]["place_id"], other)
    return _tier("wrong_place", fam), ans


def wrong_order(case: dict[str, Any]) -> tuple[Tier, Any] | None:
    order = case["answer"].get("optimal_order") or []
    if _family(case["task"]) != "route" or len(order) < 4:
        return None
    ans = copy.deepcopy(case["answer"])
    o = ans["optimal_order"]
    o[1]["place_id"], o[2]["place_id"] = o[2]["place_id"], o[1]["place_id"]
    o[1]["name"], o[2]["name"] = o[2]["name"], o[1]["name"]
    return _tier("wrong_order", "route"), ans


def missed_constraint(
    city: city_handle.City, case: dict[str, Any], seen: list[dict[str, Any]]
) -> tuple[Tier, Any] | None:
    if case["level"] == "l0":
        return None  # no constraints are judged at L0 (Table 3: SC from L1)
    fam = _family(case["task"])
    ans = copy.deepcopy(case["answer"])
    ref = set(case["reference_places"])
    if fam == "route":
        stops = ans.get("waypoints") or []
        if not stops:
            return None
        drop = stops[-1]["place_id"]
        ans["waypoints"] = stops[:-1]
        ans["optimal_order"] = [
            dict(o, visit_order=k + 1) for k, o in enumerate(o for o in ans["optimal_order"] if o["place_id"] != drop)
        ]
        if not ans["waypoints"]:
            del ans["waypoints"]
        return _tier("missed_constraint", "route"), ans
    kind = case["context"].get("kind")
    if fam == "place":
        if kind in ("open_verdict", "social_verdict"):
            return None  # a verdict has one constraint; flipping it is a wrong value, not a missed one
        other = next((c for c in case["context"].get("candidates") or [] if c not in ref), None)
        if other is None:
            return None
        ans["answer"] = place_tools.place_detail(city, other).payload["name"]
        return _tier("missed_constraint", "place"), ans
    # nearby: a candidate of the search τ* made that is not the answer (closed, or not fitting)
    anchor = case["context"].get("anchor")
    other = next((r for r in seen if r["place_id"] not in ref and r["place_id"] != anchor and "distance_m" in r), None)
    if other is None:
        return None
    ans["answer"][0].update(place_id=other["place_id"], name=other["name"])
    return _tier("missed_constraint", "nearby"), ans


def _refs(answer: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(answer.get("answer"), list):
        return [item.setdefault("ref", {}) for item in answer["answer"]]
    if "answer" in answer:
        return [answer.setdefault("ref", {})]
    return [w.setdefault("ref", {}) for w in answer.get("waypoints") or []]


def invented_attribute(case: dict[str, Any]) -> tuple[Tier, Any]:
    ans = copy.deepcopy(case["answer"])
    refs = _refs(ans)
    if refs:
        ref = refs[0]
        ref["note_id"] = ",".join([n for n in str(ref.get("note_id") or "").split(",") if n] + [FAKE_NOTE])
        return _tier("invented_attribute", "cite"), ans
    ans["total_distance_m"] = int(ans["total_distance_m"]) + 137 + int(0.2 * ans["total_distance_m"])
    return _tier("invented_attribute", "total"), ans


def invented(case: dict[str, Any]) -> Any:
    """A fluent answer in the case's schema naming places and a note that do not exist."""
    ans = copy.deepcopy(case["answer"])
    fakes = iter(FAKE_PLACES * 4)
    ref = {"note_id": FAKE_NOTE, "attribute_key": "tag:Lakeside terrace"}
    if isinstance(ans.get("answer"), list):
        for item in ans["answer"]:
            name, pid = next(fakes)
            item.update(name=name, place_id=pid, reason="A local favourite with exactly what you need.", ref=dict(ref))
        return ans
    if "answer" in ans:
        ans["answer"] = (
            FAKE_PLACES[0][0]
            if isinstance(ans["answer"], str)
            else f"{FAKE_PLACES[0][0]} says so"
            if isinstance(ans["answer"], bool)
            else 0
        )
        ans.update(reason=f"{FAKE_PLACES[0][0]} is known for it.", ref=dict(ref))
        return ans
    renamed = {}
    for key in ("start", "end"):
        name, pid = next(fakes)
        renamed[ans[key]["place_id"]] = (name, pid)
        ans[key].update(name=name, place_id=pid)
    for w in ans.get("waypoints") or []:
        name, pid = next(fakes)
        renamed[w["place_id"]] = (name, pid)
        w.update(name=name, place_id=pid, ref=dict(ref))
    for o in ans.get("optimal_order") or []:
        o["name"], o["place_id"] = renamed.get(o["place_id"], (o["name"], o["place_id"]))
    ans["total_distance_m"] = int(ans["total_distance_m"]) + 911
    ans["total_time_s"] = int(ans["total_time_s"]) + 97
    return ans


# --------------------------------------------------------------------------------------------
# Scoring through the suite's scorers
# --------------------------------------------------------------------------------------------


def score_messages(
    case: dict[str, Any], messages: list[Any], db_path: str, ensemble: Any, alpha: float, protocol: str = "robust"
) -> dict[str, float]:
    """The run's scoring path (`scorers.score_sample`: the judging step under both protocols,
    then the core scorer over the registered metric functions), under `protocol`."""
    from geoeval.suites.lifeplanner.scorers import score_sample

    scored = score_sample(
        {"case": case}, messages, db_path, ensemble, alpha=alpha, protocol=protocol, metric_names=METRICS
    )
    return {m: float(scored.values.get(m, math.nan)) for m in METRICS}


def answers_for_case(
    city: city_handle.City, case: dict[str, Any], db_path: str, ensemble: Any, alpha: float, protocol: str = "robust"
) -> list[ScoredAnswer]:
    base = reference_messages(city, case)
    seen = _seen_places(base)
    prompt = base[:2]
    built: list[tuple[Tier, list[Any], Any]] = [(REFERENCE_TIER, base, case["answer"])]
    wrong = wrong_place(city, case, seen)
    for made in (wrong, wrong_order(case), missed_constraint(city, case, seen), invented_attribute(case)):
        if made is not None:
            built.append((made[0], base, made[1]))
    built.append((WORTHLESS_TIERS["empty"], prompt, ""))
    built.append((WORTHLESS_TIERS["invented"], prompt, invented(case)))
    built += family_answers(city, case, base, seen, wrong[1] if wrong else None, invented(case))
    out = []
    for tier, msgs, answer in built:
        scores = score_messages(case, _submitted(msgs, answer), db_path, ensemble, alpha, protocol)
        shown = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        out.append(ScoredAnswer(case["id"], tier, shown, scores))
    refusal = "I'm sorry, but I can't help with planning this."
    out.append(
        ScoredAnswer(
            case["id"],
            WORTHLESS_TIERS["refusal"],
            refusal,
            score_messages(case, [*prompt, ChatMessageAssistant(content=refusal)], db_path, ensemble, alpha, protocol),
        )
    )
    return out


def meta_eval_answers(spec: RunSpec[LifePlannerSuiteConfig], env: Any, samples: list[Any]) -> list[ScoredAnswer]:
    """Every tier of every sample, scored with the run's judge ensemble (`spec.judge`) under the
    run's answer protocol (`spec.scoring.protocol`)."""
    from geoeval.suites.lifeplanner.scoring.judging import rules_judge

    ensemble = JudgeEnsemble(spec.judge, rules=rules_judge)
    city = city_handle.open_city(env.db_path)
    out: list[ScoredAnswer] = []
    for sample in samples:
        case = sample.metadata["case"]
        out += answers_for_case(city, case, env.db_path, ensemble, spec.suite.alpha, spec.scoring.protocol)
    return out
