"""Judge calibration against human reference scores (appendix B.2).

For each case i with a human reference score r_i and a judge's score r̂_i (one metric, e.g. ECR or
IISR of that case):

    Acc_ε = (1/N) Σ 1[|r̂_i - r_i| ≤ ε]     (ε = 0.05 and 0.02 in the paper)
    MAE   = (1/N) Σ |r̂_i - r_i|

The ensemble's score of a case is the mean of the judges' scores (as `ensemble.combine` averages
judges). A case a judge could not score (None / NaN, the retry-then-None of model_judge.py) is left out
of that judge's figures and of the ensemble's; N is reported per row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeGuard, cast

EPSILONS = (0.05, 0.02)
# |difference| is compared with a tolerance: 0.15 - 0.10 is 0.04999999999999999 in floats, and
# 0.35 - 0.30 is 0.04999999999999993; a score exactly ε away is within ε (the paper's ≤).
_FLOAT_SLACK = 1e-9


def _defined(x: float | None) -> TypeGuard[float]:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _pairs(reference: Sequence[float], judged: Sequence[float | None]) -> list[tuple[float, float]]:
    if len(reference) != len(judged):
        raise ValueError(f"{len(reference)} reference scores but {len(judged)} judged scores")
    return [(float(r), float(j)) for r, j in zip(reference, judged) if _defined(j) and _defined(r)]


def within_tolerance_accuracy(reference: Sequence[float], judged: Sequence[float | None], epsilon: float) -> float:
    """Acc_ε over the cases the judge scored; NaN when it scored none."""
    pairs = _pairs(reference, judged)
    if not pairs:
        return math.nan
    return sum(abs(j - r) <= epsilon + _FLOAT_SLACK for r, j in pairs) / len(pairs)


def mean_absolute_error(reference: Sequence[float], judged: Sequence[float | None]) -> float:
    pairs = _pairs(reference, judged)
    if not pairs:
        return math.nan
    return sum(abs(j - r) for r, j in pairs) / len(pairs)


def ensemble_scores(per_judge: Mapping[str, Sequence[float | None]]) -> list[float | None]:
    """The mean of the judges per case; None when any judge could not score the case (as
    `ensemble.combine` makes an item None when one judge's is None)."""
    columns = list(per_judge.values())
    if not columns:
        return []
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("every judge must score the same cases")
    out: list[float | None] = []
    for i in range(n):
        values = [c[i] for c in columns]
        # all defined in the else branch
        out.append(
            None
            if not all(_defined(v) for v in values)
            else sum(float(v) for v in cast("list[float]", values)) / len(values)
        )
    return out


def calibration(
    reference: Sequence[float], per_judge: Mapping[str, Sequence[float | None]], epsilons: Sequence[float] = EPSILONS
) -> dict[str, dict[str, float]]:
    """judge (and `ensemble` when there are several) -> {acc@ε..., mae, n}."""
    rows = dict(per_judge)
    if len(rows) > 1:
        rows["ensemble"] = ensemble_scores(per_judge)
    out = {}
    for name, judged in rows.items():
        row = {f"acc@{eps:g}": within_tolerance_accuracy(reference, judged, eps) for eps in epsilons}
        row["mae"] = mean_absolute_error(reference, judged)
        row["n"] = float(len(_pairs(reference, judged)))
        out[name] = row
    return out


def calibration_markdown(
    reference: Sequence[float],
    per_judge: Mapping[str, Sequence[float | None]],
    metric: str = "",
    epsilons: Sequence[float] = EPSILONS,
) -> str:
    """The B.2 table (Table B2 layout) for one metric."""
    table = calibration(reference, per_judge, epsilons)
    title = f"Judge calibration{f' ({metric})' if metric else ''}: agreement with human reference scores"
    head = "| judge | n | " + " | ".join(f"Acc (ε={e:g})" for e in epsilons) + " | MAE |"
    rule = "| --- | ---: | " + " | ".join("---:" for _ in epsilons) + " | ---: |"
    lines = [f"## {title}", "", head, rule]
    for name, row in table.items():
        cells = [("-" if math.isnan(row[f"acc@{e:g}"]) else f"{row[f'acc@{e:g}']:.4f}") for e in epsilons]
        mae = "-" if math.isnan(row["mae"]) else f"{row['mae']:.4f}"
        lines.append(f"| {name} | {int(row['n'])} | " + " | ".join(cells) + f" | {mae} |")
    return "\n".join(lines) + "\n"
