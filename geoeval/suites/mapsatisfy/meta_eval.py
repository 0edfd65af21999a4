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
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from geoeval.api import (
    DEFECT,
    REFERENCE,
    WORTHLESS,
    AnswerPair,
    ScoredAnswer,
    Tier,
    reading_family_answers,
    reading_family_targets,
)
from geoeval.suites.mapsatisfy.generate.reference import (
    Segment,
    choose_record,
    compose,
    implicit_segments,
    lead_segments,
    render,
    route_segments,
)
from geoeval.suites.mapsatisfy.judging.answer_facts import (
    PLACE_WORDS,
    ROUTING_TOOLS,
    evidence_of,
    norm,
    number_grounded,
)
from geoeval.suites.mapsatisfy.judging.rules_judge import (
    MODES,
    constraint_checks,
    hours_of,
    key_terms,
    price_of,
    topics_of,
)
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory
from geoeval.suites.mapsatisfy.metrics import METRIC_NAMES
from geoeval.suites.mapsatisfy.replay.catalogue import PROFILE_TOOLS

if TYPE_CHECKING:
    from geoeval.api import RunSpec
    from geoeval.suites.mapsatisfy.config import MapSatisfySuiteConfig

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
_RECOMMENDATION = frozenset({"ecr", "ar", "ses", "cei"})
_ACCEPTANCE = frozenset({"ar", "ses", "cei"})
#: the answer families of issue 22 (module docstring, "Families"): the right answer written
#: another way (level 0: scores as the reference), answers that game the reader, partly right
#: answers (level 1: strictly below the reference on what they lose, never below the worthless
#: answers), and tool-use probes
FAMILY_TIERS = {
    "surface:markdown": Tier("surface:markdown", REFERENCE, family="surface"),
    "surface:full_width": Tier("surface:full_width", REFERENCE, family="surface"),
    "surface:number_words": Tier("surface:number_words", REFERENCE, family="surface"),
    "surface:explained": Tier("surface:explained", REFERENCE, family="surface"),
    "gaming:negated": Tier("gaming:negated", DEFECT, _RECOMMENDATION, family="gaming"),
    "gaming:corrected": Tier("gaming:corrected", DEFECT, _ACCEPTANCE, family="gaming"),
    "gaming:hedged": Tier("gaming:hedged", DEFECT, _ACCEPTANCE, family="gaming"),
    "gaming:echoed": Tier("gaming:echoed", DEFECT, _RECOMMENDATION, family="gaming"),
    "gaming:keyword_list": Tier("gaming:keyword_list", DEFECT, _ACCEPTANCE, family="gaming"),
    "partial:name_only": Tier("partial:name_only", DEFECT, _ACCEPTANCE, family="partial"),
    "partial:route_only": Tier("partial:route_only", DEFECT, _RECOMMENDATION, family="partial"),
    "trajectory:right_tools_wrong_answer": Tier(
        "trajectory:right_tools_wrong_answer", DEFECT, _ACCEPTANCE, family="trajectory"
    ),
    "trajectory:no_tools_right_answer": Tier(
        "trajectory:no_tools_right_answer",
        DEFECT,
        frozenset({"ts", "ifs", "ecr", "iisr", "ar", "ses", "cei"}),
        family="trajectory",
    ),
}
TIERS.update(FAMILY_TIERS)
FAMILIES = ("surface", "gaming", "partial", "trajectory")
#: ordering-accuracy targets: the rules judge's metrics 0.9 on the tiers (offline rules judge), the
#: deterministic TS and Eff 1.0; every metric 0.95 on the answer families (issue 22)
_METRIC_TARGETS = {"ecr": 0.9, "iisr": 0.9, "ifs": 0.9, "ar": 0.9, "ses": 0.9, "cei": 0.9, "ts": 1.0, "eff": 1.0}
TARGETS: dict[str, float] = {
    **_METRIC_TARGETS,
    **{f"{family}:{m}": 0.95 for family in FAMILIES for m in METRIC_NAMES},
    **reading_family_targets(_METRIC_TARGETS, list(METRIC_NAMES)),
}
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

    profile = [i for i, c in enumerate(calls) if c["name"] in PROFILE_TOOLS]
    drop = profile[0] if profile else len(calls) - 1
    return [c for i, c in enumerate(calls) if i != drop]


# ---------------------------------------------------------------------------------------------
# answers of one sample


def _dialogue(answer: str, calls: list[dict[str, Any]], given: list[str], turns: int = 1) -> dict[str, Any]:
    return {"answer": answer, "tool_calls": calls, "given": given, "turns": turns, "tokens": turns * TOKENS_PER_TURN}


def constructed(
    instance: Any, calls: list[dict[str, Any]], given: list[str], families: bool = True
) -> list[tuple[str | Tier, dict[str, Any]]]:
    """(tier key, dialogue record without verdicts) for every tier this sample can have, and the
    answer families' (`family_answers`) unless `families` is False."""
    from geoeval.suites.mapsatisfy.user.simulator import RuleBasedUser

    segments = compose(instance, calls)
    reference = render(segments)
    ev = evidence_of(calls, given, instance.context.city)
    out: list[tuple[str | Tier, dict[str, Any]]] = [("reference", _dialogue(reference, calls, given))]
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
    if families:
        out += family_answers(instance, calls, given, segments, ev)
    out += [
        ("empty", _dialogue("", calls, given)),
        ("refusal", _dialogue(refusal(instance), calls, given)),
        ("invented", _dialogue(invented_answer(instance, ev.sources, implicit), calls, given)),
    ]
    return out


# ---------------------------------------------------------------------------------------------
# answer families (issue 22)

_CN_DIGIT_WORDS = "零一二三四五六七八九"
_WORD_UNITS = re.compile(r"(?<![\d.])(\d+(?:\.\d)?)(?=公里|米|分钟|小时|元)")


def cn_words(number: str) -> str:
    """A number as Chinese words: "3.5" -> 三点五, "190" -> 一百九十, "18" -> 十八."""
    whole, _, frac = number.partition(".")
    n = int(whole)
    if n == 0:
        words = "零"
    else:
        words, zero = "", False
        for value, unit in ((10000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
            digit, n = divmod(n, value)
            if digit:
                if zero:
                    words += "零"
                words += ("" if value == 10 and not words and digit == 1 else _CN_DIGIT_WORDS[digit]) + unit
                zero = False
            elif words:
                zero = True
    return words + ("点" + "".join(_CN_DIGIT_WORDS[int(d)] for d in frac) if frac else "")


def _outside_names(text: str, fn: Callable[[str], str]) -> str:
    """`fn` applied to the text outside 「」 (record names stay as the outputs write them)."""
    parts = re.split(r"(「[^」]*」)", text)
    return "".join(p if p.startswith("「") else fn(p) for p in parts)


def surface_variants(reference: str) -> list[tuple[str, str]]:
    """The reference written another way: markdown, full-width forms, numbers in words, an
    explanation after it."""
    sentences = [x for x in re.split(r"(?<=。)", reference) if x]
    markdown = "### 推荐\n" + "\n".join(f"- {x}" for x in sentences).replace("「", "**「").replace("」", "」**")
    full_width = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in reference)
    words = _outside_names(reference, lambda t: _WORD_UNITS.sub(lambda m: cn_words(m.group(1)), t))
    explained = reference + "\n\n说明：以上信息均来自地图工具的查询结果，供您参考。"
    return [
        ("surface:markdown", markdown),
        ("surface:full_width", full_width),
        ("surface:number_words", words),
        ("surface:explained", explained),
    ]


def _key_terms_of(instance: Any) -> list[str]:

    texts = [instance.query, *instance.context.history]
    return [t for f in instance.ground_truth.explicit_intent for t in key_terms(f, texts)]


def _asks_recommendation(instance: Any) -> bool:
    """An explicit factor asks for a recommended entity: a recommendation topic or the entity's words."""
    return bool(_key_terms_of(instance)) or any(
        "recommend" in topics_of(f) for f in instance.ground_truth.explicit_intent
    )


def _asks_beyond_a_name(instance: Any) -> bool:
    """A factor needs more than an entity's name: a route, price, traffic, booking or order, or an
    implicit rubric's travel mode, topic or constraint."""
    explicit = any(set(topics_of(f)) - {"recommend"} for f in instance.ground_truth.explicit_intent)
    implicit = any(constraint_checks(f.rubric_instruction) for f in instance.ground_truth.implicit_intent)
    return explicit or implicit


def _other_records(ev: Any, chosen: Any) -> list[Any]:

    if chosen is None:
        return []
    c = norm(chosen.name)
    return [r for r in ev.records if r.tool not in ROUTING_TOOLS and norm(r.name) not in c and c not in norm(r.name)]


def wrong_record(instance: Any, ev: Any, chosen: Any) -> Any:
    """An output record other than the reference's that a record-specific check fails: it lacks
    one of the explicit factors' key terms (a place of another kind or elsewhere), or breaks an
    implicit rubric's price cap or opening time; None when there is none."""
    others = _other_records(ev, chosen)
    terms = _key_terms_of(instance)
    for r in others:
        if terms and any(t not in r.text for t in terms):
            return r
    for factor in instance.ground_truth.implicit_intent:
        for check in constraint_checks(factor.rubric_instruction):
            if check[0] in ("cap", "open_at"):
                record = _violating_record(check, others)
                if record is not None:
                    return record
    return None


def family_answers(
    instance: Any, calls: list[dict[str, Any]], given: list[str], segments: list[Segment], ev: Any
) -> list[tuple[str | Tier, dict[str, Any]]]:
    """(tier key, dialogue record) of every answer family this case can have (module docstring)."""

    reference = render(segments)
    out: list[tuple[str | Tier, dict[str, Any]]] = [
        (key, _dialogue(text, calls, given)) for key, text in surface_variants(reference)
    ]
    out.append(("trajectory:no_tools_right_answer", _dialogue(reference, [], given)))
    chosen = choose_record(instance, ev.records)
    if chosen is None or f"「{chosen.name}」" not in reference:
        return out  # the reference recommends no record: nothing to negate, hedge or correct
    named = True
    wrong = wrong_record(instance, ev, chosen)
    recommending = _asks_recommendation(instance)
    if named and recommending:
        negated = reference.replace(f"为您推荐「{chosen.name}」", f"不推荐「{chosen.name}」（已经不营业）", 1)
        if negated != reference:
            out.append(("gaming:negated", _dialogue(negated, calls, given)))
    if wrong is not None:
        out.append(("gaming:corrected", _dialogue(reference + f"更正：请改去「{wrong.name}」。", calls, given)))
        out.append(("gaming:hedged", _dialogue(f"可能是「{wrong.name}」，也可能是" + reference, calls, given)))
        wrong_answer = render(compose(instance, calls, record=wrong))
        out.append(("trajectory:right_tools_wrong_answer", _dialogue(wrong_answer, list(calls), given)))
        terms = _key_terms_of(instance)
        if terms and any(t not in wrong.text for t in terms):  # the request's words, echoed, name the right kind
            echoed = f"您说“{instance.query}”，明白。为您推荐「{wrong.name}」。"
            out.append(("gaming:echoed", _dialogue(echoed, calls, given)))
    if named and _asks_beyond_a_name(instance):
        out.append(("gaming:keyword_list", _dialogue(f"「{chosen.name}」。{' '.join(_KEYWORDS)}", calls, given)))
        out.append(("partial:name_only", _dialogue(render(lead_segments(chosen)[:1]) + "。", calls, given)))
    route = render(route_segments(calls))
    if named and recommending and route:
        out.append(("partial:route_only", _dialogue(route, calls, given)))
    wrong_text = render(compose(instance, calls, record=wrong)) if wrong is not None else None
    pair = AnswerPair(reference, wrong_text, _ACCEPTANCE, instance.query, _forms(reference), _forms(wrong_text or ""))
    rng = random.Random(f"{instance.task_id}/reading")
    out += [(tier, _dialogue(text, calls, given)) for tier, text in reading_family_answers(pair, rng)]
    return out


def _forms(answer: str) -> dict[str, str]:
    """An answer's sentences as a bulleted list, a numbered list and a one-column table."""
    sentences = [s.strip() for s in re.findall(r"[^。！？]+[。！？]?", answer) if s.strip()]
    if len(sentences) < 2:
        return {}
    return {
        "bullets": "\n".join(f"- {s}" for s in sentences),
        "numbered": "\n".join(f"{k + 1}. {s}" for k, s in enumerate(sentences)),
        "table": "| 内容 |\n|---|\n" + "\n".join(f"| {s} |" for s in sentences),
    }


_KEYWORDS = ("驾车", "孩子", "停车", "营业", "人均", "路线", "距离", "价格", "路况", "预约", "顺序")


def _not_applicable(scores: dict[str, float], record: dict[str, Any], reference: dict[str, Any]) -> dict[str, float]:
    """NaN for a metric whose inputs are the reference's (module docstring)."""
    if record is not reference:
        if record["tool_calls"] is reference["tool_calls"]:
            scores["ts"] = math.nan
        if record["turns"] == reference["turns"]:
            scores["eff"] = math.nan
    return scores


async def _judge_all(instance: Any, records: list[dict[str, Any]], judge: Callable[..., Any]) -> None:

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
        scores = {m: math.nan if (score := raw[m]) is None else float(score) for m in METRIC_NAMES}
        tier = TIERS[key] if isinstance(key, str) else key
        answers.append(
            ScoredAnswer(instance.task_id, tier, record["answer"], _not_applicable(scores, record, reference))
        )
    return answers


def meta_eval_answers(spec: RunSpec[MapSatisfySuiteConfig], env: Any, samples: list[Any]) -> list[ScoredAnswer]:
    """The tiers and answer families of every sample, scored with the run's judges
    (`judging.ensemble.judge_settings`) under the run's answer protocol (`scoring.protocol`)."""
    from geoeval.suites.mapsatisfy.judging.ensemble import judge_dialogue, judge_settings
    from geoeval.suites.mapsatisfy.schema import parse_instance

    settings = judge_settings(spec)
    sandbox = env.sandbox()

    def judge(instance: Any, trajectory: Any) -> Any:
        return judge_dialogue(instance, trajectory, **settings, protocol=spec.scoring.protocol)

    answers: list[ScoredAnswer] = []
    for sample in samples:
        instance = parse_instance(sample.metadata["instance"])
        calls = replay(instance, list(sample.metadata.get("oracle_plan", [])), sandbox)
        answers += sample_answers(instance, calls, given_of(instance, spec.suite.setting), judge)
    return answers
