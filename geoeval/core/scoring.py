"""The generic Inspect scorer every suite uses: it computes the configured metric set for one
sample by calling the registered metric functions, and attaches the sample's dimensions.

Metric functions are pure: `fn(MetricInput) -> float`. A malformed answer is the metric's to
score (usually 0). A metric that *raises* is a harness failure, not a judgement of the answer: the
sample becomes an error (its metrics NaN, the reason kept), so a buggy plugin metric never crashes
a run and never hides as a 0.

Two answer protocols (`scoring.protocol`): `robust` reads what an answer says however it is
typeset; `paper` reads it exactly as the papers' authors' evaluators do. A metric sees the run's
protocol in `MetricInput.protocol`, and the suite's answer extractor gets it as a `protocol` keyword when it
takes one (and the sample's metadata as `metadata`). Every sample is scored under both; the metrics on which they differ
are kept in the score's metadata (`PROTOCOL_DISAGREEMENT_KEY`), so a run can say how many of its
scores depend on the protocol (`n_protocol_disagreements`).

A suite's solver can flag a sample as an error the same way, by putting a one-line reason under
`state.metadata[SAMPLE_ERROR_KEY]` (LifePlanner and MapSatisfy do when every judge failed), and
can keep per-sample facts for the warehouse (every judge vote and its raw reply) under
`state.metadata[DETAILS_KEY]`.

This module and `registry.py` are one layer of the core, the face a suite plugs into: `Suite`'s
defaults score through this module, which finds the metrics in the registry.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState

from geoeval.core import registry
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import sample_model_usage
from geoeval.core.records import AnswerScore, AnswerToScore, ScoredAnswer, Tier

if TYPE_CHECKING:
    from inspect_ai.dataset import Sample

    from geoeval.core.config.schema import RunSpec

#: `state.metadata` key of a suite's reason to count the sample as an error (see module doc).
SAMPLE_ERROR_KEY = "geoeval_error"
#: `state.metadata` key of per-sample details stored with the result (judge votes, raw replies).
DETAILS_KEY = "geoeval_details"
#: the answer protocols (`scoring.protocol`); the first is the default
PROTOCOLS = ("robust", "paper")
#: {metric: {"robust": x, "paper": y}} for the metrics the two protocols score differently: a
#: result `details` key, and a `state.metadata` key where a judge step that judged under both
#: protocols leaves its verdicts' disagreement (merged into the score's)
PROTOCOL_DISAGREEMENT_KEY = "protocol_disagreement"


@dataclass(frozen=True)
class MetricInput:
    """What a metric sees: the extracted answer, the raw completion, every reference, and the
    sample's metadata (suite-specific facts such as MapTab's scenario and difficulties)."""

    answer: str
    raw: str
    target: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    #: the answer protocol the metric applies (`scoring.protocol`): "robust" or "paper"
    protocol: str = "robust"


def evaluated_model_tokens(state: TaskState) -> dict[str, int]:
    """Input and output tokens of the evaluated model over the whole sample (every turn of a
    multi-turn agent), not counting judges or simulated users that ran under other models."""

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


def extract_with(
    extract_answer: Callable[..., tuple[str, str]], raw: str, protocol: str, metadata: dict[str, Any] | None = None
) -> tuple[str, str]:
    """`extract_answer(raw)`, with `protocol=` and `metadata=` (the sample's, e.g. MapTab's
    station names) passed as keywords to an extractor that takes them."""
    try:
        parameters = inspect.signature(extract_answer).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no keywords
        parameters = {}  # type: ignore[assignment]
    keywords: dict[str, Any] = {}
    if "protocol" in parameters:
        keywords["protocol"] = protocol
    if "metadata" in parameters:
        keywords["metadata"] = metadata or {}
    return extract_answer(raw, **keywords)


def protocol_disagreement(
    primary: dict[str, float], other: dict[str, float], protocol: str
) -> dict[str, dict[str, float]]:
    """{metric: {protocol: value, other protocol: value}} where the two protocols' values differ
    (NaN equals NaN: a metric that does not apply under both is no disagreement)."""
    other_name = PROTOCOLS[1] if protocol == PROTOCOLS[0] else PROTOCOLS[0]
    out: dict[str, dict[str, float]] = {}
    for name, value in primary.items():
        alt = other.get(name, math.nan)
        both_nan = math.isnan(value) and math.isnan(alt)
        if not both_nan and value != alt:
            out[name] = {protocol: value, other_name: alt}
    return out


def score_both_protocols(
    metric_names: list[str],
    extract_answer: Callable[..., tuple[str, str]],
    raw: str,
    target: list[str],
    metadata: dict[str, Any],
    tokens: dict[str, int],
    protocol: str,
) -> tuple[str, str, dict[str, float], list[str], dict[str, dict[str, float]]]:
    """The answer, the extraction problem, the metric values and failures under `protocol`, and
    where the other protocol scores differently: what `geoeval_scorer` does for one sample, for
    callers that score outside Inspect (the public scoring entry points, the meta-evaluation)."""
    answer, problem = extract_with(extract_answer, raw, protocol, metadata)
    inp = MetricInput(answer=answer, raw=raw, target=target, metadata=metadata, tokens=tokens, protocol=protocol)
    values, failures = compute_metrics(metric_names, inp)
    other = PROTOCOLS[1] if protocol == PROTOCOLS[0] else PROTOCOLS[0]
    other_answer, _ = extract_with(extract_answer, raw, other, metadata)
    other_values, _ = compute_metrics(
        metric_names,
        MetricInput(answer=other_answer, raw=raw, target=target, metadata=metadata, tokens=tokens, protocol=other),
    )
    disagreement = protocol_disagreement(values, other_values, protocol) if not failures else {}
    # a judge step that judged under both protocols left its own disagreement
    disagreement.update(metadata.get(PROTOCOL_DISAGREEMENT_KEY) or {})
    return answer, problem, values, failures, disagreement


@scorer(metrics={"*": [mean()]}, name="geoeval")
def geoeval_scorer(metric_names: list[str], extract_answer: Callable[..., tuple[str, str]], protocol: str = "robust"):
    """`extract_answer(raw[, protocol=...]) -> (answer, problem)`: the suite's parser of a model's
    answer; a non-empty `problem` (e.g. "no route in the answer") goes into the explanation.
    `protocol`: the run's `scoring.protocol`; the sample is scored under the other one too, and
    the metrics they disagree on are kept in the details (`PROTOCOL_DISAGREEMENT_KEY`)."""

    async def score(state: TaskState, target: Target) -> Score:
        raw = state.output.completion if state.output is not None else ""
        metadata = state.metadata or {}
        answer, problem, values, failures, disagreement = score_both_protocols(
            metric_names,
            extract_answer,
            raw or "",
            list(target.target),
            dict(metadata),
            evaluated_model_tokens(state),
            protocol,
        )
        errors = [e for e in [metadata.get(SAMPLE_ERROR_KEY), *failures] if e]
        notes = [problem] if problem else []
        details = dict(metadata.get(DETAILS_KEY) or {})
        if disagreement:
            details[PROTOCOL_DISAGREEMENT_KEY] = disagreement
        return Score(
            value=values,
            answer=answer,
            explanation="; ".join(notes + errors),
            metadata={
                "dims": metadata.get("dims", {}),
                "error": "; ".join(errors) or None,
                "details": details,
            },
        )

    return score


def score_answers(spec: RunSpec[Any, Any], answers: Sequence[AnswerToScore]) -> list[AnswerScore]:
    """The public scoring entry point: score `answers` (`records.AnswerToScore`) for the samples of
    the run config `spec` (a validated `RunSpec`) exactly as a run scores them, under
    `spec.scoring.protocol`; returns one `records.AnswerScore` per answer, in order. The suite
    builds its environment and samples as a run does (cached), and its `score_answers` reads each
    answer. An unknown sample id is a `GeoevalError` naming it. Stable across refactors: the
    meta-evaluation, `geoeval score <suite> --answers` and plugins use it."""

    suite = registry.get_suite(spec.suite.name)
    if not suite.has_score_answers:
        raise GeoevalError(f"suite '{suite.name}' has no scoring entry point (it defines no `score_answers`)")
    env = suite.build_env(spec)
    samples = {str(s.id): s for s in suite.build_samples(spec, env)}
    unknown = sorted({a.sample_id for a in answers} - set(samples))
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise GeoevalError(
            f"unknown sample id(s) for suite '{suite.name}' with this config: {shown} "
            f"(the config's samples are e.g. {', '.join(list(samples)[:3])})"
        )
    return suite.score_answers(spec, env, samples, list(answers))


def _final_text(answer: AnswerToScore) -> str:
    """The completion of an `AnswerToScore`: its answer, else the last assistant message's text."""
    if answer.answer or not answer.messages:
        return str(answer.answer)
    for message in reversed(answer.messages):
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))
    return ""


def score_final_answers(
    spec: RunSpec[Any, Any],
    samples: Mapping[str, Sample],
    answers: Sequence[AnswerToScore],
    extract_answer: Callable[..., tuple[str, str]],
) -> list[AnswerScore]:
    """`Suite.score_answers`' default: each answer's completion read by `extract_answer` and scored
    with `spec.metrics.metrics` under both protocols, as `geoeval_scorer` scores a run's sample
    (the trajectory is not read; a suite whose scores depend on it defines `score_answers`)."""
    out = []
    for item in answers:
        sample = samples[item.sample_id]
        target = sample.target if isinstance(sample.target, list) else [sample.target]
        answer, problem, values, failures, disagreement = score_both_protocols(
            list(spec.metrics.metrics),
            extract_answer,
            _final_text(item),
            [str(t) for t in target],
            dict(sample.metadata or {}),
            {},
            spec.scoring.protocol,
        )
        out.append(
            AnswerScore(
                sample_id=item.sample_id,
                scores=values,
                answer=answer,
                reading={"problem": problem} if problem else {},
                explanation="; ".join([problem, *failures] if problem else failures),
                protocol_disagreement=disagreement,
                epoch=item.epoch,
            )
        )
    return out


def _source_of(module_name: str) -> bytes:
    module = sys.modules.get(module_name)
    origin = getattr(module, "__file__", None)
    if origin is None:
        found = importlib.util.find_spec(module_name)
        origin = found.origin if found else None
    try:
        return Path(str(origin)).read_bytes()
    except OSError:
        return module_name.encode()


def scoring_code_hash(suite: Any, metric_modules: list[str]) -> str:
    """`code-<12 hex>`: a hash of the source of the modules that decide a suite's scores: the
    suite class's module, the modules its own methods are defined in, the modules of the metrics
    registered for the suite from the suite's own top-level package, and `scoring_modules`."""
    cls = type(suite)
    package = cls.__module__.split(".", 1)[0]
    modules = {cls.__module__, *getattr(suite, "scoring_modules", ())}
    for klass in cls.__mro__:
        if klass.__module__.split(".", 1)[0] == package:
            modules.update(
                getattr(v, "__module__", None) or klass.__module__ for v in vars(klass).values() if callable(v)
            )
    modules.update(m for m in metric_modules if m.split(".", 1)[0] == package)
    digest = hashlib.sha256()
    for name in sorted(m for m in modules if m):
        digest.update(name.encode() + b"\0" + _source_of(name) + b"\0")
    return f"code-{digest.hexdigest()[:12]}"


def score_tiers(suite: Any, spec: RunSpec[Any, Any], env: Any, samples: list[Any]) -> list[ScoredAnswer]:
    """`Suite.meta_eval_answers`' default: every sample's `suite.meta_eval_tiers`, scored through
    the suite's public scoring entry point (`suite.score_answers`)."""
    made = [(str(s.id), a) for s in samples for a in suite.meta_eval_tiers(spec, env, s)]
    by_id = {str(s.id): s for s in samples}
    scored = suite.score_answers(
        spec, env, by_id, [AnswerToScore(sample_id=i, answer=a.answer, messages=a.messages) for i, a in made]
    )
    return [
        ScoredAnswer(
            sample_id=i,
            tier=Tier(a.tier, a.level, frozenset(a.lowers) if a.lowers is not None else None, a.family, a.worst),
            answer=a.answer,
            scores=dict(result.scores),
        )
        for (i, a), result in zip(made, scored, strict=True)
    ]
