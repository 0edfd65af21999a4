"""Judge calibration against human reference scores (appendix B.2).

The paper picks its SC/RP judge ensemble by scoring a hard calibration subset (the 100 cases
whose preliminary judge scores vary most) by hand, then comparing every candidate judge with
the human scores. This module is that comparison as pure functions: within-tolerance accuracy
(|judge - human| <= ε, at ε = 0.05 and 0.02) and mean absolute error, per judge and for the
ensemble (the mean of its judges' scores, as SC and RP are computed), and the choice of the
ensemble as the best-agreeing judges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TOLERANCES = (0.05, 0.02)
# scores are decimals such as 0.85 vs 0.9: without slack, float rounding would put an exact
# 0.05 difference outside the tolerance
_FLOAT_SLACK = 1e-9


@dataclass(frozen=True)
class Agreement:
    """How one judge (or the ensemble) agrees with the human scores on `n` cases."""

    name: str
    n: int
    within: dict[float, float]  # ε -> share of cases with |judge - human| <= ε
    mae: float

    def sort_key(self) -> tuple:
        # closest agreement first: tight tolerance breaks ties of the loose one, then MAE
        return tuple(-self.within[e] for e in sorted(self.within, reverse=True)) + (self.mae, self.name)


def _paired(scores: Mapping[str, float], human: Mapping[str, float]) -> list[tuple[float, float]]:
    if not human:
        raise ValueError("no human reference scores")
    missing = sorted(set(human) - set(scores))
    if missing:
        raise ValueError(f"no judge score for {len(missing)} calibration case(s), e.g. {missing[0]}")
    pairs = [(float(scores[c]), float(human[c])) for c in sorted(human)]
    for s, h in pairs:
        if not (0.0 <= s <= 1.0 and 0.0 <= h <= 1.0):
            raise ValueError(f"scores must be in [0, 1], got judge {s}, human {h}")
    return pairs


def within_tolerance_accuracy(scores: Mapping[str, float], human: Mapping[str, float], eps: float) -> float:
    """Share of the human-scored cases where the judge is within `eps` of the human score."""
    if eps < 0:
        raise ValueError("eps must be >= 0")
    pairs = _paired(scores, human)
    return sum(abs(s - h) <= eps + _FLOAT_SLACK for s, h in pairs) / len(pairs)


def mean_absolute_error(scores: Mapping[str, float], human: Mapping[str, float]) -> float:
    pairs = _paired(scores, human)
    return sum(abs(s - h) for s, h in pairs) / len(pairs)


def ensemble_scores(
    judge_scores: Mapping[str, Mapping[str, float]], judges: Sequence[str], cases: Sequence[str]
) -> dict[str, float]:
    """The ensemble's score per case: the mean of its judges (how SC and RP combine judges)."""
    if not judges:
        raise ValueError("an ensemble needs at least one judge")
    unknown = [j for j in judges if j not in judge_scores]
    if unknown:
        raise ValueError(f"unknown judge(s): {', '.join(unknown)}")
    out = {}
    for c in cases:
        missing = [j for j in judges if c not in judge_scores[j]]
        if missing:
            raise ValueError(f"judge {missing[0]} has no score for case {c}")
        out[c] = sum(float(judge_scores[j][c]) for j in judges) / len(judges)
    return out


def agreement(
    name: str, scores: Mapping[str, float], human: Mapping[str, float], tolerances: Sequence[float] = TOLERANCES
) -> Agreement:
    return Agreement(
        name=name,
        n=len(human),
        within={e: within_tolerance_accuracy(scores, human, e) for e in tolerances},
        mae=mean_absolute_error(scores, human),
    )


def rank_judges(
    judge_scores: Mapping[str, Mapping[str, float]],
    human: Mapping[str, float],
    tolerances: Sequence[float] = TOLERANCES,
) -> list[Agreement]:
    """Every candidate judge's agreement with the human scores, closest first."""
    return sorted((agreement(j, s, human, tolerances) for j, s in judge_scores.items()), key=Agreement.sort_key)


def select_ensemble(
    judge_scores: Mapping[str, Mapping[str, float]],
    human: Mapping[str, float],
    size: int = 3,
    tolerances: Sequence[float] = TOLERANCES,
) -> tuple[list[str], Agreement]:
    """The `size` judges with the closest individual agreement (appendix B.2 picks three), and
    the agreement of their mean."""
    if not 1 <= size <= len(judge_scores):
        raise ValueError(f"size must be between 1 and the number of judges ({len(judge_scores)}), got {size}")
    chosen = [a.name for a in rank_judges(judge_scores, human, tolerances)[:size]]
    mean = ensemble_scores(judge_scores, chosen, sorted(human))
    return chosen, agreement("ensemble (" + ", ".join(chosen) + ")", mean, human, tolerances)


def hardest_cases(preliminary: Mapping[str, Sequence[float]], k: int = 100) -> list[str]:
    """The calibration subset: the `k` cases whose preliminary judge scores vary most (population
    variance; ties by case id, so the subset is reproducible)."""

    def variance(xs: Sequence[float]) -> float:
        if not xs:
            raise ValueError("a case without preliminary scores")
        m = sum(xs) / len(xs)
        return sum((x - m) ** 2 for x in xs) / len(xs)

    return [c for _, c in sorted((-variance(v), c) for c, v in preliminary.items())[:k]]


def calibration_table(rows: Sequence[Agreement]) -> str:
    """Markdown: one row per judge (and the ensemble), accuracy in % at each ε, and MAE."""
    if not rows:
        raise ValueError("nothing to tabulate")
    eps = list(rows[0].within)
    head = "| judge | n | " + " | ".join(f"acc@ε={e:g} (%)" for e in eps) + " | MAE |"
    sep = "| --- | ---: | " + " | ".join("---:" for _ in eps) + " | ---: |"
    body = [
        f"| {r.name} | {r.n} | " + " | ".join(f"{100 * r.within[e]:.1f}" for e in eps) + f" | {r.mae:.3f} |"
        for r in rows
    ]
    return "\n".join([head, sep, *body]) + "\n"
