"""Meta-evaluation: do a suite's scores order answers of known quality correctly?

For every sample a suite constructs answers in quality levels (`Tier`): the reference (level 0),
the reference with one known defect (level 1: a wrong station, a missed constraint, an invented
fact ...) and worthless answers (level 2: empty, a refusal, a fluent answer naming entities that
do not exist). Each answer is scored through the suite's real scorers and judges
(`suite.meta_eval_answers(spec, env, samples) -> list[ScoredAnswer]`). Per metric, this module
counts the pairs of one sample's answers whose order is known and the pairs the metric orders
correctly:

- reference vs a defect that the defect's tier says it lowers (`Tier.affects`; None = every
  metric): the reference must score strictly higher; a defect that is a hedge with a known worst
  candidate (`Tier.worst`: the wrong answer it offers beside the right one) must score no higher
  than that candidate, and strictly below the reference only where the candidate does;
- reference vs a worthless answer: strictly higher;
- a defect vs a worthless answer: at least as high (a one-defect answer is never worse than none);
- the reference vs another level-0 answer (the `surface` family: the right answer written another
  way): equal, up to 1e-9 (what an answer says is read, not how it is typeset).

Each pair belongs to the family (`Tier.family`) of the answer that is not the reference (between
two others, of the one that is not a plain tier), and the report gives the ordering accuracy per metric overall and per
family; a target (`suite.meta_eval_targets`, keyed by metric or by "family:metric") must be met by
every family.

Pairs where either score is NaN (the metric does not apply, e.g. a criteria metric on a
fewest-stations query) are left out and counted as `n_not_applicable`; strict pairs whose
right answer (the reference or a surface form of it) scores 0 (nothing can order below it: e.g. a rubric line no recording grounds) are left
out and counted as `n_reference_zero`, shown beside the accuracy so that a scorer which gives the
reference 0 is seen (the tier means show it too).
The ordering accuracy is correct / pairs; a suite declares per-metric targets
(`suite.meta_eval_targets`, default 1.0 for deterministic metrics).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import install_offline_token_estimate
from geoeval.core.records import ScoredAnswer

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec

REFERENCE = 0
DEFECT = 1
WORTHLESS = 2
DEFAULT_TARGET = 1.0
MAX_EXAMPLES = 5


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


#: the relation a pair must satisfy: strictly higher, at least as high, equal
STRICT, AT_LEAST, EQUAL = "strict", "at_least", "equal"
EQUAL_TOLERANCE = 1e-9


def _holds(relation: str, a: float, b: float) -> bool:
    if relation == STRICT:
        return a > b
    if relation == EQUAL:
        return abs(a - b) <= EQUAL_TOLERANCE
    return a >= b


def _pair_family(hi: ScoredAnswer, lo: ScoredAnswer) -> str:
    """The family a pair measures: that of the answer that is not the reference; between two
    others (a defect against a worthless answer), the one that is not a plain tier."""
    if hi.tier.name == "reference":
        return lo.tier.family
    return hi.tier.family if hi.tier.family != "tiers" else lo.tier.family


def _worst_candidate(answers: list[ScoredAnswer], answer: ScoredAnswer) -> ScoredAnswer | None:
    """The answer of the same sample that is `answer`'s worst candidate (`Tier.worst`), if any."""
    if answer.tier.worst is None:
        return None
    return next((a for a in answers if a.tier.name == answer.tier.worst), None)


def _below(worse: ScoredAnswer, better: ScoredAnswer, metric: str) -> bool:
    a, b = worse.scores.get(metric), better.scores.get(metric)
    return a is not None and b is not None and not _nan(a) and not _nan(b) and a < b


def _expected_pairs(answers: list[ScoredAnswer], metric: str) -> Iterable[tuple[ScoredAnswer, ScoredAnswer, str]]:
    """(better, worse, relation) for every pair of one sample's answers whose order on `metric` is known."""
    for hi in answers:
        for lo in answers:
            if hi.tier.level == lo.tier.level == REFERENCE and hi.tier.name == "reference" and lo is not hi:
                if lo.tier.name != "reference" and lo.tier.lowers(metric):
                    yield hi, lo, EQUAL
                continue
            if hi.tier.level >= lo.tier.level:
                continue
            if hi.tier.level == REFERENCE and hi.tier.name != "reference" and lo.tier.level == DEFECT:
                continue  # a surface variant ties the reference, which the defects are measured against
            if hi.tier.level == REFERENCE and lo.tier.level == DEFECT:
                if not lo.tier.lowers(metric):
                    continue
                worst = _worst_candidate(answers, lo)
                if worst is None:
                    yield hi, lo, STRICT
                    continue
                # no more than its worst candidate; below the reference only where that one is
                yield worst, lo, AT_LEAST
                if _below(worst, hi, metric):
                    yield hi, lo, STRICT
            elif hi.tier.level == REFERENCE:
                yield hi, lo, STRICT
            elif lo.tier.level == WORTHLESS:
                yield hi, lo, AT_LEAST


def ordering_report(answers: list[ScoredAnswer], targets: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Per metric: pairs, correct, violations, accuracy, target, met, and up to MAX_EXAMPLES
    violations (sample, the two tiers, their scores and answers)."""
    targets = targets or {}
    by_sample: dict[str, list[ScoredAnswer]] = {}
    for answer in answers:
        by_sample.setdefault(answer.sample_id, []).append(answer)
    metrics = sorted({m for answer in answers for m in answer.scores})
    report: dict[str, Any] = {}
    for metric in metrics:
        pairs = correct = not_applicable = reference_zero = 0
        examples: list[dict[str, Any]] = []
        by_tier: dict[str, list[int]] = {}
        by_family: dict[str, list[int]] = {}
        for sample_id, group in by_sample.items():
            for hi, lo, relation in _expected_pairs(group, metric):
                a, b = hi.scores.get(metric), lo.scores.get(metric)
                if a is None or b is None or _nan(a) or _nan(b):  # missing or NaN: the metric does not apply
                    not_applicable += 1
                    continue
                if relation == STRICT and hi.tier.level == REFERENCE and a <= 0.0:
                    # the right answer (the reference, or a surface form of it, which must tie it)
                    # earns nothing here (a rubric line no recording grounds): nothing can score
                    # below it, so the pair measures the data, not the reader
                    reference_zero += 1
                    continue
                pairs += 1
                ok = _holds(relation, a, b)
                tally = by_tier.setdefault(lo.tier.name, [0, 0])
                family_tally = by_family.setdefault(_pair_family(hi, lo), [0, 0])
                tally[1] += 1
                family_tally[1] += 1
                if ok:
                    correct += 1
                    tally[0] += 1
                    family_tally[0] += 1
                elif len(examples) < MAX_EXAMPLES:
                    examples.append(
                        {
                            "sample": sample_id,
                            "better": hi.tier.name,
                            "worse": lo.tier.name,
                            "better_score": a,
                            "worse_score": b,
                            "relation": relation,
                            "family": _pair_family(hi, lo),
                            "better_answer": hi.answer[:400],
                            "worse_answer": lo.answer[:400],
                        }
                    )
        target = float(targets.get(metric, DEFAULT_TARGET))
        accuracy = correct / pairs if pairs else float("nan")
        families = {}
        for family, (ok_pairs, n_pairs) in sorted(by_family.items()):
            family_target = float(targets.get(f"{family}:{metric}", target))
            family_accuracy = ok_pairs / n_pairs
            families[family] = {
                "pairs": n_pairs,
                "correct": ok_pairs,
                "accuracy": family_accuracy,
                "target": family_target,
                "met": family_accuracy >= family_target - 1e-12,
            }
        report[metric] = {
            "pairs": pairs,
            "correct": correct,
            "violations": pairs - correct,
            "n_not_applicable": not_applicable,
            "n_reference_zero": reference_zero,
            "accuracy": accuracy,
            "target": target,
            "met": bool(pairs) and all(f["met"] for f in families.values()),
            "by_family": families,
            "by_worse_tier": {k: {"correct": v[0], "pairs": v[1]} for k, v in sorted(by_tier.items())},
            "examples": examples,
        }
    return report


def tier_means(answers: list[ScoredAnswer]) -> dict[str, dict[str, float]]:
    """Mean score per tier and metric (NaN skipped): the table a person reads first."""
    sums: dict[str, dict[str, list[float]]] = {}
    for a in answers:
        for m, v in a.scores.items():
            if not _nan(v):
                sums.setdefault(a.tier.name, {}).setdefault(m, []).append(float(v))
    return {t: {m: sum(v) / len(v) for m, v in ms.items()} for t, ms in sums.items()}


def reference_on_same_samples(answers: list[ScoredAnswer]) -> dict[str, dict[str, dict[str, float]]]:
    """Per tier and metric, the tier's mean next to the reference's mean over the same samples.
    A tier built for some samples only (a markdown form where the answer has fields, a defect
    that needs a second station) is compared with the reference on those samples: an unpaired
    mean would compare different samples (on MapSatisfy's demo, 0.371 against 0.299 although
    the two score alike on every sample they share)."""
    reference: dict[tuple[str, str], float] = {}
    for a in answers:
        if a.tier.name == "reference":
            for m, v in a.scores.items():
                if not _nan(v):
                    reference[(a.sample_id, m)] = float(v)
    sums: dict[str, dict[str, list[float]]] = {}
    for a in answers:
        if a.tier.name == "reference":
            continue
        for m, v in a.scores.items():
            ref = reference.get((a.sample_id, m))
            if not _nan(v) and ref is not None:
                pair = sums.setdefault(a.tier.name, {}).setdefault(m, [0.0, 0.0, 0.0])
                pair[0] += float(v)
                pair[1] += ref
                pair[2] += 1
    return {
        t: {m: {"tier": s[0] / s[2], "reference": s[1] / s[2], "n": s[2]} for m, s in ms.items()}
        for t, ms in sums.items()
    }


#: how many chunks a meta-evaluation's samples are scored in, with one progress line after each
PROGRESS_CHUNKS = 20


def run_meta_eval(
    spec: RunSpec, suite: SuiteSpec, progress: Callable[[str], None] | None = None
) -> tuple[list[ScoredAnswer], dict[str, Any]]:
    """Build the suite's environment and samples for `spec`, construct and score the tiered
    answers, and return them with the per-metric ordering report. With `progress`, the samples
    are scored in chunks (a sample's answers depend on that sample alone) and `progress` gets
    one line per chunk: samples done, answers scored, time so far."""
    if not suite.has_meta_eval:
        raise GeoevalError(f"suite '{suite.name}' has no meta-evaluation (it defines no `meta_eval_answers`)")

    install_offline_token_estimate()  # model judges (e.g. Inspect's mockllm) estimate tokens offline too
    started = time.monotonic()
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)
    if spec.limit:
        samples = samples[: spec.limit]
    if progress is None:
        answers = suite.meta_eval_answers(spec, env, samples)
    else:
        progress(f"{len(samples)} samples ready ({time.monotonic() - started:.0f} s); scoring their answers")
        answers = []
        size = max(1, math.ceil(len(samples) / PROGRESS_CHUNKS))
        for start in range(0, len(samples), size):
            answers += suite.meta_eval_answers(spec, env, samples[start : start + size])
            done = min(start + size, len(samples))
            progress(
                f"{done}/{len(samples)} samples, {len(answers)} answers scored ({time.monotonic() - started:.0f} s)"
            )
    return answers, ordering_report(answers, suite.meta_eval_targets)
