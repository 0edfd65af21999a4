"""MapSatisfyBench's per-case metrics, as the authors' published calculator defines them
(SPEC.md; the paper's text leaves the formulas out). Pure functions: the judges' verdicts, the
trajectory's tool calls, the turn count and the token count go in, numbers come out.

- ECR  = explicit factors met / explicit factors                      (1.0 when there are none)
- IISR = sum(w_i * c_i) / sum(w_i) over every implicit rubric, hard and soft alike
                                                                      (1.0 when there are none)
- AR   = ECR * IISR
- TS   = |correct| / (|correct| + |incorrect| + |extra| + |missed|) over tool *names*
- IFS  = faithful rubric rows / rubric rows                           (1.0 when there are none)
- Eff  = S_median / (S_median + S_actual), S_median = clarification_policy.max_allowed,
         S_actual = assistant turns (at least 1); skipped (None) when max_allowed = 0
- SES  = AR * Eff
- CEI  = SES / total tokens * 10^6

A verdict is a number in [0, 1] (1 = met / satisfied / grounded) or a bool; a verdict that is
None is a judge reply that could not be parsed, and it makes only the metrics that depend on it
None ("failed"), as the authors' calculator does. Composite metrics (AR, SES, CEI) are None
when a part is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from geoeval.suites.mapsatisfy.replay.catalogue import ARGUMENT_ALIASES

Verdict = bool | int | float | None

METRIC_NAMES = ("ecr", "iisr", "ar", "ts", "ifs", "eff", "ses", "cei")


def _verdict(value: Verdict, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    x = float(value)
    if math.isnan(x) or not 0.0 <= x <= 1.0:
        raise ValueError(f"{what} must be a verdict in [0, 1] (or a bool, or None), got {value!r}")
    return x


def ecr(explicit_met: Sequence[Verdict]) -> float | None:
    """Explicit-decision-factor Completion Rate: met / total; 1.0 with no explicit factors."""
    verdicts = [_verdict(v, "an explicit-factor verdict") for v in explicit_met]
    if not verdicts:
        return 1.0
    if any(v is None for v in verdicts):
        return None
    return sum(verdicts) / len(verdicts)  # type: ignore[arg-type]


def iisr(weights: Sequence[float], satisfied: Sequence[Verdict]) -> float | None:
    """Implicit-decision-factor Satisfaction Rate: sum(w_i c_i) / sum(w_i), hard constraints in
    the same weighted sum; 1.0 with no implicit factors. None when a c_i is None, and when every
    weight is 0 (the ratio is undefined: no factor carries evidence)."""
    if len(weights) != len(satisfied):
        raise ValueError(f"iisr: {len(weights)} weights but {len(satisfied)} verdicts")
    if not weights:
        return 1.0
    ws = [float(w) for w in weights]
    if any(math.isnan(w) or w < 0 for w in ws):
        raise ValueError(f"iisr: weights must be >= 0, got {list(weights)}")
    cs = [_verdict(c, "an implicit-factor verdict") for c in satisfied]
    if any(c is None for c in cs):
        return None
    total = sum(ws)
    if total == 0:
        return None
    known = cast("list[float]", cs)  # no None among them (returned above)
    return sum(w * c for w, c in zip(ws, known)) / total


def ar(ecr_value: float | None, iisr_value: float | None) -> float | None:
    """Accepted-response probability: ECR * IISR."""
    if ecr_value is None or iisr_value is None:
        return None
    return ecr_value * iisr_value


# ---------------------------------------------------------------------------------------------
# Tool selection


@dataclass(frozen=True)
class ToolSelection:
    """TS's four sets of tool names (each sorted) and the score."""

    correct: tuple[str, ...]
    incorrect: tuple[str, ...]  # gold, called, but no call carried every required parameter
    extra: tuple[str, ...]  # called, not gold
    missed: tuple[str, ...]  # gold, never called

    @property
    def score(self) -> float:
        denominator = len(self.correct) + len(self.incorrect) + len(self.extra) + len(self.missed)
        # nothing expected and nothing called: the trajectory is exactly right
        return len(self.correct) / denominator if denominator else 1.0


def _call_name_and_arguments(call: Any) -> tuple[str, Mapping[str, Any]]:
    """A call as (name, arguments) from a (name, arguments) pair, a mapping with name/function/
    tool and arguments, or an object with `function` (Inspect's ToolCall) or `tool`/`name`."""
    if isinstance(call, (tuple, list)) and len(call) == 2:
        name, arguments = call
    elif isinstance(call, Mapping):
        name = call.get("name") or call.get("function") or call.get("tool")
        arguments = call.get("arguments") or {}
    else:
        name = getattr(call, "function", None) or getattr(call, "tool", None) or getattr(call, "name", None)
        arguments = getattr(call, "arguments", None) or {}
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool call needs a name, got {call!r}")
    if not isinstance(arguments, Mapping):
        raise ValueError(f"the arguments of a call of '{name}' must be a mapping, got {type(arguments).__name__}")
    return name, arguments


def _carried(value: Any) -> bool:
    """A parameter is carried when it is present with a value: None, "" and empty collections
    are the same as leaving it out (the authors' recorder writes unset parameters as null)."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, tuple, dict)):
        return bool(value)
    return True


def tool_selection(
    calls: Iterable[Any],
    expected_tools: Iterable[str],
    required_parameters: Mapping[str, Sequence[str]] | None = None,
    aliases: Mapping[str, Mapping[str, str]] | None = None,
) -> ToolSelection:
    """Classify the called and the gold tool names (both deduplicated).

    A gold tool is correct when at least one of its calls carries every required parameter
    (`parameter_rules[tool].paramter`); a gold tool without rules needs none. `aliases`
    (tool -> {name used: canonical name}) lets a call's parameter count under its canonical
    name, e.g. the sandbox's `adiu` -> `uid`.
    """
    required_parameters = required_parameters or {}
    aliases = aliases or {}
    gold = list(dict.fromkeys(expected_tools))
    carried_all: dict[str, bool] = {}
    for call in calls:
        name, arguments = _call_name_and_arguments(call)
        rename = aliases.get(name, {})
        present = {rename.get(k, k) for k, v in arguments.items() if _carried(v)}
        ok = all(p in present for p in required_parameters.get(name, ()))
        carried_all[name] = carried_all.get(name, False) or ok
    gold_set = set(gold)
    return ToolSelection(
        correct=tuple(sorted(t for t in gold if carried_all.get(t) is True)),
        incorrect=tuple(sorted(t for t in gold if carried_all.get(t) is False)),
        extra=tuple(sorted(t for t in carried_all if t not in gold_set)),
        missed=tuple(sorted(t for t in gold if t not in carried_all)),
    )


def ts(
    calls: Iterable[Any],
    expected_tools: Iterable[str],
    required_parameters: Mapping[str, Sequence[str]] | None = None,
    aliases: Mapping[str, Mapping[str, str]] | None = None,
) -> float:
    """Tool Selection accuracy (see `tool_selection`)."""
    return tool_selection(calls, expected_tools, required_parameters, aliases).score


# ---------------------------------------------------------------------------------------------
# Information faithfulness


@dataclass(frozen=True)
class FactCheck:
    """One fact a factual-rubric row covers: whether the answer claims it, and whether the claim
    is grounded in the tool outputs (None: the judge's verdict could not be parsed)."""

    claimed: bool
    grounded: bool | None = None


def row_faithful(facts: Iterable[FactCheck | Verdict]) -> bool | None:
    """A rubric row is faithful when every fact the answer claims is grounded; facts it does not
    claim are ignored, so a row the answer claims nothing under is faithful. A plain verdict
    stands for a claimed fact. False as soon as one claimed fact is ungrounded; otherwise None
    when a claimed fact's verdict is missing."""
    unknown = False
    for fact in facts:
        if isinstance(fact, FactCheck):
            if not fact.claimed:
                continue
            grounded: float | None = _verdict(fact.grounded, "a grounding verdict")
        else:
            grounded = _verdict(fact, "a grounding verdict")
        if grounded is None:
            unknown = True
        elif grounded < 1.0:
            return False
    return None if unknown else True


def ifs(rows: Sequence[Iterable[FactCheck | Verdict] | None]) -> float | None:
    """Information Faithfulness Score: faithful rows / rows; 1.0 with no rubric rows. A row given
    as None (no verdict at all) or undetermined by `row_faithful` makes IFS None."""
    if not rows:
        return 1.0
    verdicts = [None if row is None else row_faithful(row) for row in rows]
    if any(v is None for v in verdicts):
        return None
    return sum(1 for v in verdicts if v) / len(verdicts)


# ---------------------------------------------------------------------------------------------
# Efficiency


def eff(max_allowed: int, assistant_turns: int) -> float | None:
    """Interaction efficiency S_median / (S_median + S_actual), S_median = max_allowed and
    S_actual = max(1, assistant turns). None (the case is skipped) when max_allowed is 0."""
    if max_allowed < 0 or assistant_turns < 0:
        raise ValueError(f"eff: max_allowed and assistant_turns must be >= 0, got {max_allowed}, {assistant_turns}")
    if max_allowed == 0:
        return None
    actual = max(1, int(assistant_turns))
    return max_allowed / (max_allowed + actual)


def ses(ar_value: float | None, eff_value: float | None) -> float | None:
    """Satisfaction Efficiency Score: AR * Eff."""
    if ar_value is None or eff_value is None:
        return None
    return ar_value * eff_value


def cei(ses_value: float | None, total_tokens: int) -> float | None:
    """Cost-Efficiency Index: SES per million tokens. None without SES or without tokens (the
    ratio is undefined for a run that reports no usage)."""
    if ses_value is None or total_tokens <= 0:
        return None
    return ses_value / total_tokens * 1e6


def assistant_turns(messages: Iterable[Any]) -> int:
    """S_actual: the assistant messages the user sees, i.e. assistant messages without tool calls
    (a ReAct step that only calls tools is not a dialogue turn). Accepts Inspect messages or
    dicts with `role` and `tool_calls`."""
    count = 0
    for message in messages:
        if isinstance(message, Mapping):
            role, tool_calls = message.get("role"), message.get("tool_calls")
        else:
            role, tool_calls = getattr(message, "role", None), getattr(message, "tool_calls", None)
        if role == "assistant" and not tool_calls:
            count += 1
    return count


# ---------------------------------------------------------------------------------------------
# One case


def case_scores(
    instance: Any,
    *,
    explicit_met: Sequence[Verdict],
    implicit_satisfied: Sequence[Verdict],
    tool_calls: Iterable[Any],
    fact_rows: Sequence[Iterable[FactCheck | Verdict] | None],
    turns: int,
    total_tokens: int,
    aliases: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, float | None]:
    """All eight metrics of one case (`schema.MapSatisfyInstance`) from the judges' verdicts, in
    the ground truth's order: one per explicit factor, one per implicit rubric, one row of fact
    checks per factual-rubric row. `aliases` defaults to the sandbox's parameter aliases."""
    gt = instance.ground_truth
    checks = [
        ("explicit_met", explicit_met, gt.explicit_intent),
        ("implicit_satisfied", implicit_satisfied, gt.implicit_intent),
        ("fact_rows", fact_rows, instance.factual_answer_rubric),
    ]
    for name, given, expected in checks:
        if len(given) != len(expected):
            raise ValueError(
                f"case {instance.task_id}: {name} has {len(given)} entries for {len(expected)} rubric items"
            )
    if aliases is None:
        aliases = ARGUMENT_ALIASES
    e = ecr(explicit_met)
    i = iisr([f.evidence_confidence for f in gt.implicit_intent], implicit_satisfied)
    a = ar(e, i)
    f = eff(gt.clarification_policy.max_allowed, turns)
    s = ses(a, f)
    return {
        "ecr": e,
        "iisr": i,
        "ar": a,
        "ts": ts(tool_calls, instance.expected_tools, instance.required_parameters, aliases),
        "ifs": ifs(fact_rows),
        "eff": f,
        "ses": s,
        "cei": cei(s, total_tokens),
    }
