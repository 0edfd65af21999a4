"""The generic Inspect scorer every suite uses: it computes the configured metric set for one
sample by calling the registered metric functions, and attaches the sample's dimensions.

Metric functions are pure: `fn(MetricInput) -> float`. A metric that raises is scored 0 with the
reason in the explanation, so a malformed answer or a buggy plugin metric never crashes a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState

from geoeval.core import registry


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
    from inspect_ai.model._model import sample_model_usage

    usage_by_model = sample_model_usage() or {}
    usage = usage_by_model.get(str(state.model))
    if usage is None and state.output is not None:
        usage = state.output.usage
    return {
        "input": int(usage.input_tokens) if usage else 0,
        "output": int(usage.output_tokens) if usage else 0,
    }


def compute_metrics(names: list[str], inp: MetricInput) -> tuple[dict[str, float], list[str]]:
    """Apply each metric; returns the values and the problems met (for the explanation)."""
    values: dict[str, float] = {}
    problems: list[str] = []
    for name in names:
        try:
            values[name] = float(registry.get_metric(name, inp.metadata.get("suite")).fn(inp))
        except Exception as exc:  # recorded, never raised: one bad metric must not lose the sample
            values[name] = 0.0
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
        values, problems = compute_metrics(metric_names, inp)
        if problem:
            problems.insert(0, problem)
        return Score(
            value=values,
            answer=answer,
            explanation="; ".join(problems),
            metadata={"dims": (state.metadata or {}).get("dims", {})},
        )

    return score
