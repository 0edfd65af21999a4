"""MapSatisfy's eight metrics registered with the core for suite "mapsatisfy".

Each metric function reads what the dialogue solver recorded (`metadata["mapsatisfy"]`: the
judges' verdicts, the tool calls, the assistant turns, the agent's tokens) and the instance's
ground truth (`metadata["instance"]`), and computes the case's value with `metrics.case_scores`,
from the verdicts of the answer protocol the core asks for (`MetricInput.protocol`: the judge step
judged under both, so the core's paper/robust disagreement is the judges' disagreement).
A value the formulas leave undefined (Eff with max_allowed = 0, CEI without tokens, a metric whose
judge verdict failed) is NaN: the core's scorer takes floats only, and NaN is "no value", not 0.
"""

from __future__ import annotations

import math
from typing import Any

from geoeval.api import MetricInput, register_metric
from geoeval.suites.mapsatisfy.judging.verdicts import Verdicts
from geoeval.suites.mapsatisfy.metrics import METRIC_NAMES, case_scores
from geoeval.suites.mapsatisfy.replay.catalogue import PROFILE_TOOLS

DESCRIPTIONS = {
    "ecr": "Explicit-factor Completion Rate: explicit factors met / explicit factors",
    "iisr": "Implicit-factor Satisfaction Rate: sum(w_i c_i) / sum(w_i)",
    "ar": "Accepted-response probability: ECR x IISR",
    "ts": "Tool Selection: correct / (correct + incorrect + extra + missed) tool names",
    "ifs": "Information Faithfulness Score: faithful rubric rows / rubric rows",
    "eff": "Interaction efficiency: S_median / (S_median + S_actual); NaN when max_allowed = 0",
    "ses": "Satisfaction Efficiency Score: AR x Eff",
    "cei": "Cost-Efficiency Index: SES per million agent tokens",
}


#: the dialogue record's key of the judges' verdicts under each answer protocol ({protocol: verdicts})
VERDICTS_BY_PROTOCOL = "verdicts_by_protocol"


def extract_answer(raw: str) -> tuple[str, str]:
    """The final assistant turn is the answer; the metrics read the recorded dialogue."""
    return raw.strip(), ""


def scores_of(metadata: dict[str, Any], protocol: str | None = None) -> dict[str, float | None]:
    from geoeval.suites.mapsatisfy.schema import parse_instance

    record = metadata.get("mapsatisfy")
    if record is None:
        raise ValueError("no dialogue record: the mapsatisfy solver did not run on this sample")
    return scores_from_record(parse_instance(metadata["instance"]), record, protocol)


def scores_from_record(instance: Any, record: dict[str, Any], protocol: str | None = None) -> dict[str, float | None]:
    """The eight metrics of one dialogue record (the solver's, or a meta-evaluation answer's),
    with the judges' verdicts under the answer protocol `protocol` (`record["verdicts_by_protocol"]`,
    the judge step judged under each); None, or a record judged under one protocol only: its
    `verdicts`."""

    by_protocol = record.get(VERDICTS_BY_PROTOCOL) or {}
    chosen = by_protocol.get(protocol) if protocol is not None else None
    verdicts = Verdicts.from_record(chosen if chosen is not None else record["verdicts"])
    calls = [(c["name"], c.get("arguments") or {}) for c in record["tool_calls"]]
    return case_scores(
        instance,
        explicit_met=verdicts.explicit_met,
        implicit_satisfied=verdicts.implicit_satisfied,
        tool_calls=calls,
        fact_rows=verdicts.fact_rows,
        turns=int(record["turns"]),
        total_tokens=int(record["tokens"]),
    )


def _metric(name: str):
    def fn(inp: MetricInput) -> float:
        value = scores_of(inp.metadata, inp.protocol)[name]
        return math.nan if value is None else float(value)

    fn.__name__ = f"{name}_metric"
    fn.__doc__ = DESCRIPTIONS[name]
    return fn


for _name in METRIC_NAMES:
    register_metric(_name, suites=["mapsatisfy"], description=DESCRIPTIONS[_name])(_metric(_name))


def profile_call_metric(inp: MetricInput) -> float:
    """1.0 when the agent called a profile tool (search_user_profile / search_user_action_summary)
    in the dialogue, else 0.0: the per-case input of the Figure 4 call rate (reports.py)."""

    record = inp.metadata.get("mapsatisfy")
    if record is None:
        raise ValueError("no dialogue record: the mapsatisfy solver did not run on this sample")
    return float(any(c["name"] in PROFILE_TOOLS for c in record["tool_calls"]))


register_metric("profile_call", suites=["mapsatisfy"], description="a profile tool was called (Figure 4 call rate)")(
    profile_call_metric
)
