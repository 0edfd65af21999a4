"""MapSatisfy's meta-evaluation: answers of known quality for every sample, scored by the suite's
real judges and metrics (`judging.ensemble.judge_dialogue`, then `scorers.scores_from_record`, the functions
the solver and the scorer use), for `geoeval.core.analysis.meta_eval.ordering_report`.

Every answer keeps the reference trajectory (the oracle's calls of the case, replayed by the
sandbox) unless its tier changes it, so that the judges must read the answer to tell the tiers
apart:

| tier | answer | must lower |
| --- | --- | --- |
| reference | `generate.reference.compose`: the fitting entity, the route, one sentence per implicit rubric | - |
| defect:missed_factor | the reference without the part that serves explicit factor 1 (its route, price, traffic, booking, order, or the entity's name) | ECR, AR, SES, CEI |
| defect:violated_constraint | the reference that breaks a hard implicit rubric: another travel mode, an entity over the price cap or closed at the time (only where the outputs offer one) | IISR, AR, SES, CEI |
| defect:invented_fact | the reference plus one invented place and distance | IFS |
| defect:needless_clarification | a question first ("请问您打算怎么去？"), the rule-based user's reply, then the reference: one more assistant turn | Eff, SES, CEI |
| defect:missed_tool | the reference trajectory without one expected call (the profile call when there is one, else the last), answered from what is left | TS |
| empty / refusal / invented | "", a refusal that restates the request, a fluent answer naming places and numbers no output has | every metric that applies |

A metric whose inputs the construction leaves as the reference's is NaN for that answer (it cannot
tell them apart, so the pair says nothing): TS for every answer that keeps the reference's calls,
Eff for every answer with the reference's one turn. Tokens (CEI's denominator) are a nominal
`TOKENS_PER_TURN` per assistant turn, since constructed answers have no model usage.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from geoeval.core.analysis.meta_eval import DEFECT, REFERENCE, WORTHLESS
from geoeval.core.records import ScoredAnswer, Tier
from geoeval.suites.mapsatisfy.generate.reference import Segment, compose, implicit_segments, render
from geoeval.suites.mapsatisfy.judging.answer_facts import evidence_of, norm, number_grounded
from geoeval.suites.mapsatisfy.judging.rules_judge import MODES, constraint_checks, hours_of, price_of, topics_of
from geoeval.suites.mapsatisfy.metrics import METRIC_NAMES

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

TOKENS_PER_TURN = 1000
_COMPOSITE = frozenset({"ar", "ses", "cei"})
TIERS = {
    "reference": Tier("reference", REFERENCE),
    "missed_factor": Tier("defect:missed_factor", DEFECT, frozenset({"ecr"}) | _COMPOSITE),
    "violated_constraint": Tier("defect:violated_constraint", DEFECT, frozenset({"iisr"}) | _COMPOSITE),
    "invented_fact": Tier("defect:invented_fact", DEFECT, frozenset({"ifs"})),
    "needless_clarification": Tier("defect:needless_clarification", DEFECT, frozenset({"eff", "ses", "cei"})),
    "missed_tool": Tier("defect:missed_tool", DEFECT, frozenset({"ts"})),
    "empty": Tier("empty", WORTHLESS),
    "refusal": Tier("refusal", WORTHLESS),
    "invented": Tier("invented", WORTHLESS),
}
#: ordering-accuracy targets: the rules judge's metrics 0.9 (offline rules judge), the rest 1.0
TARGETS = {"ecr": 0.9, "iisr": 0.9, "ifs": 0.9, "ar": 0.9, "ses": 0.9, "cei": 0.9, "ts": 1.0, "eff": 1.0}
CLARIFY_QUESTION = "请问您打算怎么去？"
_TOPIC_PARTS = {
    "route": {"route", "distance"},
    "distance": {"distance", "route"},
    "price": {"price"},
    "traffic": {"traffic"},
    "booking": {"booking"},
    "order": {"order"},
    "recommend": {"recommend"},
}
_OTHER_MODE_ORDER = (
    "transit",
    "drive",
    "walk",
    "taxi",
    "bike",
)  # the mode a violation switches to: the first not asked
_FAKE_NAMES = ("翠微阁", "云栖里", "星河湾", "澜庭轩", "枫丹苑", "听涛居")


# ---------------------------------------------------------------------------------------------
# the reference trajectory


def replay(instance: Any, plan: list[dict[str, Any]], sandbox: Any) -> list[dict[str, Any]]:
    """The plan's calls as the sandbox answers them (stages 1-2: exact, vector, else no_record)."""
    calls = []
    for step in plan:
        r = sandbox.lookup(step["tool"], step["arguments"], trace_id=instance.task_id)
        calls.append(
            {
                "name": step["tool"],
                "arguments": dict(step["arguments"]),
                "content": r.content,
                "match_type": r.match_type,
                "error": r.error,
                "score": r.score,
            }
        )
    return calls


def given_of(instance: Any, setting: str) -> list[str]:
    """What the agent is given, as the solver records it."""
    given = [instance.query, json.dumps(instance.context.model_dump(mode="json"), ensure_ascii=False)]
    if setting == "profile" and instance.user_profile is not None:
        given.append(json.dumps(instance.user_profile.model_dump(mode="json"), ensure_ascii=False))
    return given


# ---------------------------------------------------------------------------------------------
# defects


def missed_factor(segments: list[Segment], factor: str, names: list[str]) -> str | None:
    """The reference without what serves `factor`; None when the factor calls for nothing the
    reference's parts carry separately."""
    parts = set().union(*(_TOPIC_PARTS[t] for t in topics_of(factor))) if topics_of(factor) else set()
    if not parts:
        return None
    kept = [s for s in segments if not (s.serves & parts - {"recommend"})]
    text = render(kept)
    if "recommend" in parts:  # the answer names no entity: each name becomes a generic place
        for name in sorted(names, key=len, reverse=True):
            text = text.replace(f"「{name}」", "附近一家").replace(name, "附近一家")
    return text


def _violating_record(check: tuple[str, Any], records: list[Any]) -> Any:
    kind, param = check
    for r in records:
        if kind == "cap" and (price_of(r) or 0) > param:
            return r
        if kind == "open_at":
            hours = hours_of(r)
            if hours is not None and not hours[0] <= param < hours[1]:
                return r
    return None


def violated_constraint(instance: Any, calls: list[dict[str, Any]], segments: list[Segment]) -> str | None:
    """The reference made to break the first hard rubric that can be broken (module docstring)."""
    records = evidence_of(calls, [], instance.context.city).records
    for i, factor in enumerate(instance.ground_truth.implicit_intent):
        if factor.constraint_type != "hard":
            continue
        for kind, param in constraint_checks(factor.rubric_instruction):
            if kind == "mode":
                text = render(segments)
                others = [m for m in _OTHER_MODE_ORDER if m not in param]
                for mode in param:
                    for word in MODES[mode]:
                        text = text.replace(word, MODES[others[0]][0])
                return text
            if kind in ("cap", "open_at"):
                record = _violating_record((kind, param), records)
                if record is not None:
                    return render(compose(instance, calls, record=record))
            if kind == "mention":
                return render([s for s in segments if f"implicit:{i}" not in s.serves])
    return None


def _fake_name(instance: Any, sources: list[str], word: str) -> str:
    digest = int(hashlib.sha1(instance.task_id.encode()).hexdigest()[:8], 16)
    for k in range(len(_FAKE_NAMES)):
        name = f"{_FAKE_NAMES[(digest + k) % len(_FAKE_NAMES)]}{word}({digest % 97 + 3}号店)"
        if not any(norm(name.split("(")[0])[-4:] in s for s in sources):
            return name
    raise RuntimeError("no invented name is free of the sources")


def _fake_number(sources: list[str], unit: str, start: float) -> str:
    value = start
    while number_grounded(value, 2, unit, sources):
        value += 0.37
    return f"{value:.2f}"


def _place_word(instance: Any) -> str:
    from geoeval.suites.mapsatisfy.judging.answer_facts import PLACE_WORDS

    text = instance.query + "".join(instance.ground_truth.explicit_intent)
    return next((w for w in PLACE_WORDS if len(w) > 1 and w in text), "店")


def invented_fact(instance: Any, reference: str, sources: list[str]) -> str:
    name = _fake_name(instance, sources, "服务区")
    return reference + f"途中可在「{name}」稍作休息，距离约{_fake_number(sources, '公里', 47.83)}公里。"


def invented_answer(instance: Any, sources: list[str], implicit: list[Segment]) -> str:
    name = _fake_name(instance, sources, _place_word(instance))
    return (
        f"关于您的需求“{instance.query}”：为您推荐「{name}」，距离约{_fake_number(sources, '米', 873.41)}米，"
        f"人均{_fake_number(sources, '元', 91.29)}元。驾车前往全程约{_fake_number(sources, '公里', 13.67)}公里，"
        f"约{_fake_number(sources, '分钟', 29.53)}分钟。" + render(implicit)
    )


def refusal(instance: Any) -> str:
    return f"抱歉，关于您的需求“{instance.query}”，我暂时无法为您提供帮助。"


def drop_one_call(instance: Any, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from geoeval.suites.mapsatisfy.replay.catalogue import PROFILE_TOOLS

    profile = [i for i, c in enumerate(calls) if c["name"] in PROFILE_TOOLS]
    drop = profile[0] if profile else len(calls) - 1
    return [c for i, c in enumerate(calls) if i != drop]


# ---------------------------------------------------------------------------------------------
# answers of one sample


def _dialogue(answer: str, calls: list[dict[str, Any]], given: list[str], turns: int = 1) -> dict[str, Any]:
    return {"answer": answer, "tool_calls": calls, "given": given, "turns": turns, "tokens": turns * TOKENS_PER_TURN}


def constructed(instance: Any, calls: list[dict[str, Any]], given: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(tier key, dialogue record without verdicts) for every tier this sample can have."""
    from geoeval.suites.mapsatisfy.user.simulator import RuleBasedUser

    segments = compose(instance, calls)
    reference = render(segments)
    ev = evidence_of(calls, given, instance.context.city)
    out = [("reference", _dialogue(reference, calls, given))]
    explicit = instance.ground_truth.explicit_intent
    missed = missed_factor(segments, explicit[0], [r.name for r in ev.records]) if explicit else None
    if missed is not None:
        out.append(("missed_factor", _dialogue(missed, calls, given)))
    violated = violated_constraint(instance, calls, segments)
    if violated is not None:
        out.append(("violated_constraint", _dialogue(violated, calls, given)))
    out.append(("invented_fact", _dialogue(invented_fact(instance, reference, ev.sources), calls, given)))
    reply = RuleBasedUser(instance.query, instance.full_intent).reply_to(CLARIFY_QUESTION)
    out.append(("needless_clarification", _dialogue(reference, calls, [*given, reply], turns=2)))
    fewer = drop_one_call(instance, calls)
    out.append(("missed_tool", _dialogue(render(compose(instance, fewer)), fewer, given)))
    # the invented answer addresses the rubrics too, with no fact of the outputs (no record to cite)
    implicit = implicit_segments(instance, None, dataclasses.replace(ev, records=[]))
    out += [
        ("empty", _dialogue("", calls, given)),
        ("refusal", _dialogue(refusal(instance), calls, given)),
        ("invented", _dialogue(invented_answer(instance, ev.sources, implicit), calls, given)),
    ]
    return out


def _not_applicable(scores: dict[str, float], record: dict[str, Any], reference: dict[str, Any]) -> dict[str, float]:
    """NaN for a metric whose inputs are the reference's (module docstring)."""
    if record is not reference:
        if record["tool_calls"] is reference["tool_calls"]:
            scores["ts"] = math.nan
        if record["turns"] == reference["turns"]:
            scores["eff"] = math.nan
    return scores


async def _judge_all(instance: Any, records: list[dict[str, Any]], judge: Callable[..., Any]) -> None:
    from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory

    for record in records:
        record["verdicts"] = (await judge(instance, Trajectory.from_record(record))).to_record()


def sample_answers(
    instance: Any, calls: list[dict[str, Any]], given: list[str], judge: Callable[..., Any]
) -> list[ScoredAnswer]:
    """Every tier's answer to one case, judged by `judge(instance, trajectory) -> Verdicts`."""
    from geoeval.suites.mapsatisfy.scorers import scores_from_record

    built = constructed(instance, calls, given)
    asyncio.run(_judge_all(instance, [r for _, r in built], judge))
    reference = built[0][1]
    answers = []
    for key, record in built:
        raw = scores_from_record(instance, record)
        scores = {m: math.nan if raw[m] is None else float(raw[m]) for m in METRIC_NAMES}
        answers.append(
            ScoredAnswer(instance.task_id, TIERS[key], record["answer"], _not_applicable(scores, record, reference))
        )
    return answers


def meta_eval_answers(spec: RunSpec, env: Any, samples: list[Any]) -> list[ScoredAnswer]:
    """The tiers of every sample, scored with the run's judges (`judging.ensemble.judge_settings`)."""
    from geoeval.suites.mapsatisfy.judging.ensemble import judge_dialogue, judge_settings
    from geoeval.suites.mapsatisfy.schema import parse_instance

    settings = judge_settings(spec)
    sandbox = env.sandbox()

    def judge(instance: Any, trajectory: Any) -> Any:
        return judge_dialogue(instance, trajectory, **settings)

    answers: list[ScoredAnswer] = []
    for sample in samples:
        instance = parse_instance(sample.metadata["instance"])
        calls = replay(instance, list(sample.metadata.get("oracle_plan", [])), sandbox)
        answers += sample_answers(instance, calls, given_of(instance, spec.suite.setting), judge)
    return answers
