"""The generic Inspect scorer every suite uses: it computes the configured metric set for one
sample by calling the registered metric functions, and attaches the sample's dimensions.

Metric functions are pure: `fn(MetricInput) -> float`. A malformed answer is the metric's to
score (usually 0). A metric that *raises* is a harness failure, not a judgement of the answer: the
sample becomes an error (its metrics NaN, the reason kept), so a buggy plugin metric never crashes
a run and never hides as a 0.

A suite's solver can flag a sample as an error the same way, by putting a one-line reason under
`state.metadata[SAMPLE_ERROR_KEY]` (LifePlanner and MapSatisfy do when every judge failed), and
can keep per-sample facts for the warehouse (every judge vote and its raw reply) under
`state.metadata[DETAILS_KEY]`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState

from geoeval.core import registry

#: `state.metadata` key of a suite's reason to count the sample as an error (see module doc).
SAMPLE_ERROR_KEY = "geoeval_error"
#: `state.metadata` key of per-sample details stored with the result (judge votes, raw replies).
DETAILS_KEY = "geoeval_details"


@dataclass(frozen=True)
class MetricInput:
    """What a metric sees: the extracted answer, the raw completion, every reference, and the
    sample's metadata (suite-specific facts such as MapTab's scenario and difficulties)."""

    answer: str
    raw: str
    target: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)


def evaluated_model_tokens(state: TaskState) -> dict[str, int]:
    """Input and output tokens of the evaluated model over the whole sample (every turn of a
    multi-turn agent), not counting judges or simulated users that ran under other models."""
    from geoeval.core.private_api import sample_model_usage

    usage_by_model = sample_model_usage()
    usage = usage_by_model.get(str(state.model))
    if usage is None and state.output is not None:
        usage = state.output.usage
    return {
        "input": int(usage.input_tokens) if usage else 0,
        "output": int(usage.output_tokens) if usage else 0,
    }


def compute_metrics(names: list[str], inp: MetricInput) -> tuple[dict[str, float], list[str]]:
    """Apply each metric; returns the values and the failures met. A metric that raised has no
    value (NaN) and one line in the failures, which make the sample an error."""
    values: dict[str, float] = {}
    problems: list[str] = []
    for name in names:
        try:
            values[name] = float(registry.get_metric(name, inp.metadata.get("suite")).fn(inp))
        except Exception as exc:  # recorded, never raised: one bad metric must not lose the sample
            values[name] = math.nan
            problems.append(f"metric {name} failed: {type(exc).__name__}: {exc}")
    return values, problems


@scorer(metrics={"*": [mean()]}, name="geoeval")
def geoeval_scorer(metric_names: list[str], extract_answer: Callable[[str], tuple[str, str]]):
    """`extract_answer(raw) -> (answer, problem)`: the suite's parser of a model's answer; a
    non-empty `problem` (e.g. "no route in the answer") goes into the explanation."""

    async def score(state: TaskState, target: Target) -> Score:
        raw = state.output.completion if state.output is not None else ""
        answer, problem = extract_answer(raw or "")
        inp = MetricInput(
            answer=answer,
            raw=raw or "",
            target=list(target.target),
            metadata=dict(state.metadata or {}),
            tokens=evaluated_model_tokens(state),
        )
        values, failures = compute_metrics(metric_names, inp)
        metadata = state.metadata or {}
        errors = [e for e in [metadata.get(SAMPLE_ERROR_KEY), *failures] if e]
        notes = [problem] if problem else []
        return Score(
            value=values,
            answer=answer,
            explanation="; ".join(notes + errors),
            metadata={
                "dims": metadata.get("dims", {}),
                "error": "; ".join(errors) or None,
                "details": metadata.get(DETAILS_KEY) or {},
            },
        )

    return score
