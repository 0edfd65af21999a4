"""Aggregation: pure functions from per-sample results to split metrics and summary rows.

Two views of the same numbers:

- `aggregate` gives the flat dict that tracking logs to MLflow: `<metric>`, `<metric>/<level>`,
  `<metric>/<task>/<level>`, `<metric>/task/<task>`, `<metric>/setting/<setting>` and
  `<metric>/capability/<name>`.
- `group_table` gives rows for a summary table grouped by any dimension (a `Dimensions` field, a
  `SampleResult` field such as `model`, or a key of `Dimensions.extra`).

How a metric is reduced: by the mean over the samples that carry it, except the metrics in
`sum_metrics` (from the config's `metrics.sum_metrics`), which are summed (MapTab's DS is a total
score, as in the authors' evaluator).
A sample that errored carries NaN on every metric, so means are over the scored samples; the
errors are never hidden: `group_table` adds an `n_errors` column whenever any result errored, and
the job logs `n_samples`, `n_scored` and `n_errors` (`records.error_counts`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions, SampleResult

#: Metrics summed rather than averaged unless a caller says otherwise: none. Which metrics are
#: totals is the metric set's to declare (`metrics.sum_metrics`, e.g. MapTab's DS), never the core's.
DEFAULT_SUM_METRICS: frozenset[str] = frozenset()

#: Difficulty levels in the order the papers print them; other values sort after, by name.
LEVEL_ORDER: tuple[str, ...] = ("easy", "medium", "hard")

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. ]")
_DIMENSION_FIELDS = tuple(name for name in Dimensions.model_fields if name != "extra")
_RESULT_FIELDS = ("model", "run_hash", "epoch")
#: The names under which `by` splits a sample into one group per capability it lists.
CAPABILITY_NAMES = ("capabilities", "capability")


def metric_key_part(value: str) -> str:
    """`value` made safe as one segment of an MLflow metric name: every character other than an
    ASCII letter, digit, `_`, `-`, `.` or space becomes `_`, so "map+edge_tab" -> "map_edge_tab"
    and "a/b" -> "a_b" (a slash inside a value would read as another level of the key)."""
    return _UNSAFE.sub("_", value)


def reduce_values(values: Sequence[float], *, summed: bool) -> float:
    """The sum (`summed`) or the mean of `values` (exact float summation); NaN when empty and
    averaged. NaN values mean "not applicable to this sample" (e.g. MapSatisfy's Eff when no
    clarification is allowed) and are left out, as the papers skip such cases."""
    values = [v for v in values if not math.isnan(v)]
    total = math.fsum(values)
    if summed:
        return total
    return total / len(values) if values else math.nan


def aggregate(
    results: Sequence[SampleResult],
    *,
    sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS,
    report_dimensions: Sequence[str] = (),
) -> dict[str, float]:
    """Every metric overall and split by level, task x level, task, setting and capability, and
    by each of the suite's declared `report_dimensions` (keys of `Dimensions.extra`, e.g.
    MapTab's `scenario`).

    Keys (sorted): `<metric>`, `<metric>/<level>`, `<metric>/<task>/<level>`,
    `<metric>/task/<task>`, `<metric>/setting/<setting>`, `<metric>/capability/<name>`,
    `<metric>/<dimension>/<value>` (e.g. `ema/scenario/metromap`). Empty
    dimension values make no key (a result without a level adds nothing to `<metric>/<level>`,
    one without a task or level nothing to `<metric>/<task>/<level>`). Metric names and dimension
    values pass through `metric_key_part`. A capability split averages (or sums) over the samples
    whose capabilities include it. Two different groups that would produce the same key (say the
    settings "a+b" and "a_b", or a task named "setting" whose level is also a setting's name) are
    a `ValueError`: one number cannot stand for both.
    """
    # key -> (the raw group it stands for, the values in it); the raw group catches collisions
    groups: dict[str, tuple[tuple[str, ...], list[float]]] = {}

    def add(key_parts: tuple[str, ...], raw: tuple[str, ...], value: float) -> None:
        key = "/".join(key_parts)
        owner, values = groups.setdefault(key, (raw, []))
        if owner != raw:
            raise ValueError(
                f"aggregate key {key!r} stands for both {owner} and {raw}: rename one of these dimension values"
            )
        values.append(value)

    for result in results:
        dims = result.dims
        for metric, value in result.scores.items():
            m = metric_key_part(metric)
            add((m,), ("overall", metric), value)
            if dims.level:
                add((m, metric_key_part(dims.level)), ("level", metric, dims.level), value)
            if dims.task and dims.level:
                add(
                    (m, metric_key_part(dims.task), metric_key_part(dims.level)),
                    ("task x level", metric, dims.task, dims.level),
                    value,
                )
            if dims.task:
                add((m, "task", metric_key_part(dims.task)), ("task", metric, dims.task), value)
            if dims.setting:
                add(
                    (m, "setting", metric_key_part(dims.setting)),
                    ("setting", metric, dims.setting),
                    value,
                )
            for dimension in report_dimensions:
                value_of = dims.extra.get(dimension)
                if value_of:
                    add(
                        (m, metric_key_part(dimension), metric_key_part(value_of)), (dimension, metric, value_of), value
                    )
            # a capability listed twice on one sample still counts the sample once
            for capability in dict.fromkeys(c for c in dims.capabilities if c):
                add(
                    (m, "capability", metric_key_part(capability)),
                    ("capability", metric, capability),
                    value,
                )

    # a group whose every value is skipped (NaN) gets no key: MLflow shows "no value", not NaN
    return {
        key: reduce_values(values, summed=raw[1] in sum_metrics)
        for key, (raw, values) in sorted(groups.items())
        if any(not math.isnan(v) for v in values)
    }


def dimension_value(result: SampleResult, name: str) -> str | None:
    """The value of dimension `name` for `result`, as a string: a `Dimensions` field, a
    `SampleResult` field (model, run_hash, epoch) or a key of `Dimensions.extra`; None when the
    result has no such dimension. (Capabilities are a list: see `group_table`.)"""
    if name in _DIMENSION_FIELDS:
        return str(getattr(result.dims, name))
    if name in _RESULT_FIELDS:
        return str(getattr(result, name))
    return result.dims.extra.get(name)


def _sort_key(value: str) -> tuple[int, str]:
    return (LEVEL_ORDER.index(value), "") if value in LEVEL_ORDER else (len(LEVEL_ORDER), value)


def group_table(
    results: Sequence[SampleResult],
    by: Sequence[str],
    metrics: Sequence[str],
    *,
    sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS,
) -> list[dict[str, Any]]:
    """Summary rows, one per group of `by` values: {<by>...: value, <metric>...: mean or sum,
    "n": samples in the group}.

    `by` names `Dimensions` fields, `SampleResult` fields (model, run_hash, epoch) or keys of
    `Dimensions.extra` (a result without that key groups under ""). `capabilities` (or
    `capability`) splits a sample into one group per capability it lists ("" when none). With
    `by=[]` there is one row over everything. A metric no sample of a group carries is None in
    that row. Rows are sorted by their `by` values (levels easy, medium, hard first). A `by` name
    that no result knows is a `GeoevalError` naming the dimensions there are.
    """
    by = list(by)
    _check_dimensions(results, by)
    show_errors = any(r.status == "error" for r in results)
    groups: dict[tuple[str, ...], list[SampleResult]] = {}
    for result in results:
        for key in group_keys(result, by):
            groups.setdefault(key, []).append(result)
    rows: list[dict[str, Any]] = []
    for key in sorted(groups, key=lambda k: tuple(_sort_key(v) for v in k)):
        members = groups[key]
        row: dict[str, Any] = dict(zip(by, key))
        for metric in metrics:
            values = [r.scores[metric] for r in members if metric in r.scores and not math.isnan(r.scores[metric])]
            # no value at all (every member errored, or the metric does not apply) is None, not 0
            row[metric] = reduce_values(values, summed=metric in sum_metrics) if values else None
        row["n"] = len(members)
        if show_errors:
            row["n_errors"] = sum(1 for r in members if r.status == "error")
        rows.append(row)
    return rows


def group_keys(result: SampleResult, by: Sequence[str]) -> list[tuple[str, ...]]:
    """The groups `result` belongs to: one, or one per capability when `by` splits on them."""
    keys: list[tuple[str, ...]] = [()]
    for name in by:
        if name in CAPABILITY_NAMES:
            values = list(dict.fromkeys(result.dims.capabilities)) or [""]
        else:
            value = dimension_value(result, name)
            values = [value if value is not None else ""]
        keys = [key + (value,) for key in keys for value in values]
    return keys


def known_dimensions(results: Iterable[SampleResult]) -> list[str]:
    """The names `group_table` accepts for these results: fields, then the extra keys seen."""
    extra_keys = sorted({key for result in results for key in result.dims.extra})
    return [*_DIMENSION_FIELDS, *_RESULT_FIELDS, *extra_keys]


def _check_dimensions(results: Sequence[SampleResult], by: list[str]) -> None:
    known = set(_DIMENSION_FIELDS) | set(_RESULT_FIELDS) | set(CAPABILITY_NAMES)
    unknown = [name for name in by if name not in known]
    if not unknown or not results:
        return
    extra_keys = {key for result in results for key in result.dims.extra}
    missing = [name for name in unknown if name not in extra_keys]
    if missing:
        raise GeoevalError(
            f"unknown dimension {', '.join(map(repr, missing))}: group by one of {', '.join(known_dimensions(results))}"
        )
