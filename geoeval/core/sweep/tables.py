"""A sweep's report: the table a reader looks at after `python -m geoeval -m ...` and the plot.

The table (`sweep_table.md` in the sweep folder, printed at the end of the sweep and the parent
MLflow run's description) has, per headline metric, one grid of the swept axes (e.g. input setting
x resolution), each cell the point's mean with its 95% interval; the n per point; a legend of the
metrics; which points reused another point's samples rather than running again (a swept value
that does not change the samples, such as the resolution of an Edge_tab-only point); the note
that offline stand-ins produced the numbers where they did; and a table with one row per point,
named as its MLflow child run is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoeval.core.analysis.console import TERMINAL_WIDTH, fit_tables, table_width
from geoeval.core.analysis.reports import fraction_label, markdown_table, metric_legend, plot_sweep
from geoeval.core.sweep.points import job_labels

#: the run totals of `core.cost.pricing.run_costs` and the replay count: not metrics of the answers
COST_METRICS = frozenset(
    {"cost_usd", "saved_usd", "tokens_in", "tokens_out", "cache_hits", "replayed_calls", "model_calls", "n_replayed"}
)
#: counts a job reports beside its metrics
_COUNTS = frozenset(
    {"n_samples", "n_scored", "n_errors", "http_retries", "n_protocol_disagreements", "n_context_exceeded"}
)
#: the mark of a grid cell whose point reused another point's samples
REUSED_MARK = "*"
SWEEP_TABLE = "sweep_table.md"
SWEEP_PLOT = "sweep_plot.png"


@dataclass
class SweepReport:
    """What `write_sweep_reports` wrote and what the console and MLflow show of it."""

    markdown: str  # sweep_table.md
    terminal: str  # the console's version: the same sections, tables fitted to TERMINAL_WIDTH
    metrics: list[str]  # the headline metrics the grids show
    rows: list[dict[str, Any]]  # one per point (the table's last section; MLflow's table)
    artifacts: list[Path] = field(default_factory=list)  # the table, then the plot if drawn
    plot: Path | None = None


def _short(key: str) -> str:
    return key.lstrip("+~").rsplit(".", 1)[-1]


def _numeric(points: Sequence[dict], key: str) -> bool:
    try:
        [float(p["overrides"][key]) for p in points if key in p["overrides"]]
    except (TypeError, ValueError):
        return False
    return True


def _value_label(value: Any, numeric: bool) -> str:
    return fraction_label(float(value)) if numeric and value is not None else str(value)


def _number(value: float) -> str:
    """A mean or a bound in a grid cell: 2 decimals in [-10, 10], 1 beyond (DS totals)."""
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _cell(metrics: dict[str, Any], metric: str) -> str:
    """`0.81 [0.70,0.90]`: the mean and its 95% interval ("–" where the metric has no value)."""
    mean = metrics.get(metric)
    if not isinstance(mean, (int, float)) or math.isnan(mean):
        return "–"
    low, high = metrics.get(f"{metric}/ci95_low"), metrics.get(f"{metric}/ci95_high")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{_number(mean)} [{_number(low)},{_number(high)}]"
    return _number(mean)


def headline(points: Sequence[dict], declared: Sequence[str]) -> list[str]:
    """The suite's headline metrics that every point has, else the first three overall metrics."""
    names = [m for m in declared if all(m in p["metrics"] for p in points)]
    if names:
        return names
    skip = _COUNTS | COST_METRICS
    return sorted({m for p in points for m in p["metrics"] if "/" not in m and m not in skip})[:3]


def reused_from(points: Sequence[dict], labels: Sequence[str]) -> list[str | None]:
    """For each point, the label of the earlier point whose run (same run hash: same samples, same
    answers) it reused, else None."""
    first: dict[str, str] = {}
    out: list[str | None] = []
    for point, label in zip(points, labels):
        run = point.get("run_hash")
        out.append(first.get(run) if run else None)
        if run:
            first.setdefault(run, label)
    return out


def _grid(
    points: Sequence[dict], reused: Sequence[str | None], metric: str, row_keys: list[str], col_key: str | None
) -> str:
    """One metric over the swept axes: rows by the `row_keys` values, columns by `col_key`."""
    col_numeric = col_key is not None and _numeric(points, col_key)
    row_numeric = len(row_keys) == 1 and _numeric(points, row_keys[0])

    def row_of(point: dict) -> str:
        return ",".join(_value_label(point["overrides"].get(k), row_numeric) for k in row_keys) or metric

    def col_of(point: dict) -> str:
        return _value_label(point["overrides"].get(col_key), col_numeric) if col_key else "value"

    def ordered(values: list[str], keys: list[Any], numeric: bool) -> list[str]:
        if not numeric:
            return list(dict.fromkeys(values))
        # largest first: resolution 1, 1/2, ..., 1/32 as the papers print them
        pairs = dict(zip(values, keys))
        return sorted(dict.fromkeys(values), key=lambda v: -float(pairs[v]))

    rows = ordered(
        [row_of(p) for p in points], [p["overrides"].get(row_keys[0]) if row_keys else 0 for p in points], row_numeric
    )
    cols = ordered([col_of(p) for p in points], [p["overrides"].get(col_key) for p in points], col_numeric)
    cells: dict[tuple[str, str], str] = {}
    for point, source in zip(points, reused):
        mark = REUSED_MARK if source else ""
        cells[(row_of(point), col_of(point))] = _cell(point["metrics"], metric) + mark
    corner = ",".join(_short(k) for k in row_keys) or "metric"  # the columns' key is in the heading
    table_rows = [{corner: r, **{c: cells.get((r, c), "") for c in cols}} for r in rows]
    return markdown_table(table_rows, [corner, *cols])


def metric_grid(points: Sequence[dict], reused: Sequence[str | None], metric: str, swept: list[str]) -> tuple[str, str]:
    """The grid of `metric` and its heading, in the orientation that reads best: the first
    numeric swept key (resolution) across and the others down, turned the other way when that
    alone fits TERMINAL_WIDTH."""
    x_key = next((k for k in swept if _numeric(points, k)), swept[0] if swept else None)
    others = [k for k in swept if k != x_key]
    heading = f"## {metric}" + (f": {_short(x_key)} across" if x_key else "")
    grid = _grid(points, reused, metric, others, x_key)
    if table_width(grid) > TERMINAL_WIDTH and len(others) == 1 and x_key is not None:
        turned = _grid(points, reused, metric, [x_key], others[0])
        if table_width(turned) <= TERMINAL_WIDTH:
            return turned, f"## {metric}: {_short(others[0])} across"
    return grid, heading


def swept_keys(points: Sequence[dict]) -> list[str]:
    keys = list(dict.fromkeys(k for p in points for k in p["overrides"]))
    return [k for k in keys if len({p["overrides"].get(k) for p in points}) > 1]


def _samples_line(points: Sequence[dict]) -> str:
    sizes = sorted({int(p.get("n") or 0) for p in points})
    errors = sum(int((p.get("counts") or {}).get("n_errors", 0)) for p in points)
    text = f"n = {sizes[0]} samples per point" if len(sizes) == 1 else f"n = {sizes[0]} to {sizes[-1]} samples a point"
    if errors:
        text += f"; {errors} errored sample(s) have no scores (means are over the scored ones)"
    return text


def point_rows(
    points: Sequence[dict], labels: Sequence[str], reused: Sequence[str | None], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per point: its name (the MLflow child's), job, each metric with its interval, n,
    errors, cost, its run (hash) and which point's samples it reused."""
    rows = []
    for point, label, source in zip(points, labels, reused):
        row: dict[str, Any] = {"point": label, "job": point["job"]}
        for metric in metrics:
            row[metric] = point["metrics"].get(metric)
            low, high = point["metrics"].get(f"{metric}/ci95_low"), point["metrics"].get(f"{metric}/ci95_high")
            row[f"{metric} 95% CI"] = f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        row["n"] = point.get("n")
        row["errors"] = int((point.get("counts") or {}).get("n_errors", 0))
        row["cost_usd"] = point["metrics"].get("cost_usd")
        row["run"] = (point.get("run_hash") or "")[:12]
        row["reused"] = f"reused, not re-run: {source}" if source else ""
        rows.append(row)
    return rows


def write_sweep_reports(
    points: list[dict],
    sweep_dir: Path,
    *,
    headline_metrics: Sequence[str] = (),
    log2_axes: Sequence[str] = (),
    suites: Sequence[str] = (),
    title: str = "",
    note: str = "",
) -> SweepReport:
    """Write `sweep_table.md` (and `sweep_plot.png` when an axis is numeric) for the points of
    the jobs that ran (crashed ones left out), and return what the console and MLflow show."""
    points = sorted(points, key=lambda p: p["job"])
    labels = job_labels([[f"{k}={v}" for k, v in p["overrides"].items()] for p in points])
    reused = reused_from(points, labels)
    swept = swept_keys(points)
    metrics = headline(points, headline_metrics)
    axes = " x ".join(_short(k) for k in swept) or "one job"
    intro = (
        f"{len(points)} points over {axes}"
        + (f"; {sum(1 for r in reused if r)} reused another point's samples ({REUSED_MARK})" if any(reused) else "")
        + f". {_samples_line(points)}. Each cell: the mean [95% bootstrap interval, clustered where samples"
        " share a map]."
    )
    sections: list[tuple[str, str]] = [("", f"# Sweep{': ' + title if title else ''}\n\n{intro}")]
    for metric in metrics:
        grid, heading = metric_grid(points, reused, metric, swept)
        sections.append((heading, grid))
    legend = metric_legend(metrics, suites)
    if legend:
        sections.append(("", legend))
    if any(reused):
        lines = [
            f"- {label} reused the samples and answers of {source}" for label, source in zip(labels, reused) if source
        ]
        sections.append(
            (
                f"## Reused, not re-run ({REUSED_MARK})",
                "These points have the run of an earlier point (the swept value does not change their samples):"
                "\n\n" + "\n".join(lines),
            )
        )
    if note:
        sections.append(("", f"> {note}"))
    rows = point_rows(points, labels, reused, metrics)
    full_points = markdown_table(rows)
    markdown = "\n\n".join(f"{h}\n\n{b}" if h else b for h, b in [*sections, ("## Every point", full_points)]) + "\n"
    table_path = sweep_dir / SWEEP_TABLE
    table_path.write_text(markdown)
    terminal = "\n\n".join(
        f"{h}\n\n{fit_tables(b)}" if h else fit_tables(b) for h, b in sections
    )  # the per-point table stays in the file
    report = SweepReport(markdown=markdown, terminal=terminal, metrics=metrics, rows=rows, artifacts=[table_path])
    x_key = next((k for k in swept if _numeric(points, k)), None)
    if x_key is not None:
        by_keys = [k for k in swept if k != x_key]
        by_name = ",".join(_short(k) for k in by_keys) or None
        plot_rows = [
            {
                _short(x_key): float(p["overrides"][x_key]),
                **({by_name: ",".join(str(p["overrides"].get(k)) for k in by_keys)} if by_name else {}),
                **{m: p["metrics"].get(m) for m in metrics},
                # each point's 95% interval, drawn as its error bar
                **{f"{m}/{end}": p["metrics"].get(f"{m}/{end}") for m in metrics for end in ("ci95_low", "ci95_high")},
            }
            for p in points
        ]
        report.plot = Path(
            plot_sweep(
                plot_rows,
                x=_short(x_key),
                metrics=metrics,
                path=sweep_dir / SWEEP_PLOT,
                by=by_name,
                title=f"{' / '.join(metrics).upper()} vs {_short(x_key)}",
                log2_x=x_key in log2_axes,
            )
        )
        report.artifacts.append(report.plot)
    return report
