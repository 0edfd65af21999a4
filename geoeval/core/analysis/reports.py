"""Reports: Markdown tables like the papers', sweep plots, and per-sample Parquet files.

Everything here reads results or aggregated rows and writes text or files; nothing computes a
metric (that is `aggregate`'s job), so a table and the MLflow metrics of a run always agree.
Plots use matplotlib's Agg canvas directly (no pyplot, no global figure state), so they work on a
headless machine and from several threads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from geoeval.core.analysis.aggregate import DEFAULT_SUM_METRICS
from geoeval.core.errors import GeoevalError
from geoeval.core.records import SampleResult, error_counts
from geoeval.core.text import clean_text, clean_value
from geoeval.core.warehouse.schema import SCORE_ARROW_SCHEMA

# -- tables -----------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_cell(value: Any, floatfmt: str = ".3f") -> str:
    """One table cell as text: None -> "", NaN (metric not applicable) -> "–", floats with
    `floatfmt`, lists joined by ", ", and "|" and line breaks escaped so that the cell cannot
    break a pipe table."""
    if value is None:
        text = ""
    elif isinstance(value, float) and math.isnan(value):
        text = "–"
    elif isinstance(value, float):
        text = format(value, floatfmt)
    elif isinstance(value, (list, tuple)):
        text = ", ".join(format_cell(item, floatfmt) for item in value)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, floatfmt: str = ".3f") -> str:
    """A GitHub pipe table of `rows` (no trailing newline).

    `columns` picks and orders the columns; by default every key, in order of first appearance.
    A missing key is an empty cell. Columns whose values are all numbers are right-aligned. With
    no columns at all the table is the empty string.
    """
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    columns = list(columns)
    if not columns:
        return ""
    cells = [[format_cell(row.get(column), floatfmt) for column in columns] for row in rows]
    header = [format_cell(column) for column in columns]
    widths = [max([3, len(header[i]), *(len(line[i]) for line in cells)]) for i in range(len(columns))]
    numeric = [
        any(row.get(column) is not None for row in rows)
        and all(_is_number(row.get(column)) for row in rows if row.get(column) is not None)
        for column in columns
    ]

    def line(values: list[str]) -> str:
        padded = [
            value.rjust(width) if right else value.ljust(width) for value, width, right in zip(values, widths, numeric)
        ]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "| "
        + " | ".join("-" * (width - 1) + ":" if right else "-" * width for width, right in zip(widths, numeric))
        + " |"
    )
    return "\n".join([line(header), rule, *(line(values) for values in cells)])


def summary_markdown(
    results: Sequence[SampleResult],
    metrics: Sequence[str],
    *,
    title: str,
    sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS,
    floatfmt: str = ".3f",
    report_dimensions: Sequence[str] = (),
) -> str:
    """A Markdown report of one run or suite, laid out like the papers' tables.

    A title, a line saying how many samples (and which models) and which metrics are sums, the
    overall metrics, then tables by setting and level, by setting, by level, and by task and level
    (each only where the results have those dimensions), then one table per declared
    `report_dimensions` key that takes more than one value (metrics in `sum_metrics` are summed,
    the others averaged over the samples that carry them).
    """
    metrics = list(metrics)
    models = sorted({r.model for r in results if r.model})
    counts = error_counts(list(results))
    intro = f"{len(results)} samples"
    if counts["n_errors"]:
        intro = (
            f"{len(results)} samples: {int(counts['n_scored'])} scored, **{int(counts['n_errors'])} errors** "
            "(errors have no scores: means are over the scored samples)"
        )
    if models:
        intro += f"; model{'s' if len(models) > 1 else ''}: {', '.join(models)}"
    summed = [m for m in metrics if m in sum_metrics]
    intro += ". Metrics are means over samples"
    intro += f", except {', '.join(summed)} (summed)." if summed else "."
    intro += (
        " Brackets: 95% bootstrap interval (clustered where samples share a map; none from a single"
        " cluster); n: samples."
    )
    sections = [f"# {title}", intro]
    legend = metric_legend(metrics, sorted({r.dims.suite for r in results}))
    if legend:
        sections.append(legend)
    sections += ["## Overall", _table_with_intervals(results, [], metrics, sum_metrics, floatfmt)]

    def present(dimension: str) -> bool:
        return any(getattr(r.dims, dimension) for r in results)

    splits: list[tuple[str, list[str]]] = []
    if present("setting") and present("level"):
        splits.append(("By setting and level", ["setting", "level"]))
    if present("setting"):
        splits.append(("By setting", ["setting"]))
    if present("level"):
        splits.append(("By level", ["level"]))
    if present("task") and present("level"):
        splits.append(("By task and level", ["task", "level"]))
    elif present("task"):
        splits.append(("By task", ["task"]))
    for dimension in report_dimensions:  # the suite's own splits, e.g. MapTab's scenario
        if len({r.dims.extra.get(dimension) for r in results} - {None, ""}) > 1:
            splits.append((f"By {dimension}", [dimension]))
    for heading, by in splits:
        sections += [f"## {heading}", _table_with_intervals(results, by, metrics, sum_metrics, floatfmt)]
    return "\n\n".join(sections) + "\n"


def metric_legend(metrics: Sequence[str], suites: Sequence[str]) -> str:
    """One line per metric: its name and what it measures (the registered metric's description,
    which cites the paper's definition), so a table never leaves a column unexplained."""
    from geoeval.core.registry import get_metric

    lines = []
    for metric in metrics:
        description = ""
        for suite in [*suites, None]:
            try:
                description = get_metric(metric, suite).description
                break
            except (GeoevalError, KeyError):  # KeyError: not registered once every plugin is loaded
                continue
        lines.append(f"- **{metric}**: {description.splitlines()[0] if description else '(no description)'}")
    return "Metrics:\n\n" + "\n".join(lines) if lines else ""


def _table_with_intervals(
    results: Sequence[SampleResult], by: list[str], metrics: list[str], sum_metrics: frozenset[str], floatfmt: str
) -> str:
    """A summary table whose every metric has its 95% interval beside it, `[low, high]`."""
    from geoeval.core.analysis.stats import summary_with_intervals

    rows = summary_with_intervals(results, metrics, by, sum_metrics=sum_metrics)
    columns = [*by]
    for row in rows:
        for metric in metrics:
            low, high = row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
            shown = low is not None and high is not None and not (math.isnan(low) or math.isnan(high))
            row[f"{metric} 95% CI"] = f"[{low:{floatfmt}}, {high:{floatfmt}}]" if shown else ""
    for metric in metrics:
        columns += [metric, f"{metric} 95% CI"]
    columns += ["n"] + (["n_errors"] if any("n_errors" in row for row in rows) else [])
    return markdown_table(rows, columns, floatfmt)


# -- sweeps -----------------------------------------------------------------------------------


def fraction_label(value: float) -> str:
    """A sweep value as the papers print it: powers of two as "1", "2", "1/2", ..., "1/32";
    anything else with `g` formatting."""
    if value > 0 and math.log2(value).is_integer():
        fraction = Fraction(value)
        return str(fraction.numerator) if fraction.denominator == 1 else str(fraction)
    return format(value, "g")


def _x_value(point: dict[str, Any], x: str) -> float:
    if x not in point:
        raise GeoevalError(f"sweep point {point!r} has no {x!r}: give every point an {x!r} value")
    try:
        return float(point[x])
    except (TypeError, ValueError):
        raise GeoevalError(f"sweep point {point!r} has a non-numeric {x!r} ({point[x]!r}): plot a numeric x") from None


def _is_numeric_x(points: Sequence[dict[str, Any]], x: str) -> bool:
    def numeric(value: Any) -> bool:
        try:
            float(value)
        except (TypeError, ValueError):
            return False
        return not isinstance(value, bool)

    return all(numeric(point.get(x)) for point in points)


def _sweep_groups(points: Sequence[dict[str, Any]], by: str | None) -> dict[str, list[dict]]:
    """Points by their `by` value, in order of first appearance (one group "" without `by`)."""
    groups: dict[str, list[dict]] = {}
    for point in points:
        groups.setdefault(str(point.get(by, "")) if by else "", []).append(point)
    return groups


def sweep_table(
    points: Sequence[dict[str, Any]],
    x: str,
    metrics: Sequence[str],
    by: str | None = None,
    floatfmt: str = ".3f",
) -> str:
    """A Markdown table of a sweep: one row per point, columns [by], x, metrics.

    Rows keep the `by` groups in order of first appearance and, within a group, go from the
    largest x to the smallest (resolution 1, 1/2, ..., 1/32, as the papers print them); x is
    written with `fraction_label`. When some x is not a number (e.g. a job name) the points keep
    their order and x is written as given. A metric a point lacks is an empty cell.
    """
    numeric_x = _is_numeric_x(points, x)
    rows = []
    for group, members in _sweep_groups(points, by).items():
        if numeric_x:
            members = sorted(members, key=lambda p: -_x_value(p, x))
        for point in members:
            row: dict[str, Any] = {by: group} if by else {}
            if numeric_x:
                row[x] = fraction_label(_x_value(point, x))
            else:
                row[x] = point.get(x)
            row.update({metric: point.get(metric) for metric in metrics})
            rows.append(row)
    columns = [*([by] if by else []), x, *metrics]
    return markdown_table(rows, columns, floatfmt)


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", ":", "-.")


def _line_style(index: int, n_lines: int) -> dict[str, Any]:
    """Line `index` of `n_lines`: its own marker and dash, and drawn thinner and smaller than the
    lines before it, so that a line lying exactly on another (e.g. two settings with equal
    scores) still shows around it instead of hiding under it."""
    shrink = index / max(n_lines - 1, 1)
    return {
        "marker": _MARKERS[index % len(_MARKERS)],
        "linestyle": _LINESTYLES[index % len(_LINESTYLES)],
        "markersize": 10 - 5 * shrink,
        "linewidth": 3.2 - 2.0 * shrink,
        "alpha": 0.85,
        "markerfacecolor": "none" if index % 2 else None,
        "zorder": 2 + index,
    }


def _dodge(index: int, n_groups: int, xs: Sequence[float], log2_x: bool) -> Any:
    """Where group `index` draws its points: each x moved by a small step per group (a factor on
    a log2 axis, a fraction of the smallest gap otherwise), centred on the true x."""
    offset = index - (n_groups - 1) / 2
    if log2_x:
        return lambda value: value * 2 ** (0.07 * offset)
    gaps = [b - a for a, b in zip(xs, xs[1:]) if b > a]
    step = 0.04 * (min(gaps) if gaps else 1.0)
    return lambda value: value + step * offset


def plot_sweep(
    points: Sequence[dict[str, Any]],
    x: str,
    metrics: Sequence[str],
    path: str | Path,
    *,
    by: str | None = None,
    title: str | None = None,
    log2_x: bool = True,
) -> Path:
    """Plot a sweep as a PNG at `path` (parent folders created) and return the path.

    One panel per metric; in each, one line per `by` group (labelled by the group's value),
    each point with its 95% interval as an error bar where the point has one
    (`<metric>/ci95_low`, `<metric>/ci95_high`). The groups' points are set a little apart along
    x (their ticks stay at the values), so that lines with equal scores (two settings at 1.00)
    and their intervals lie side by side instead of one hiding the other. With `log2_x` the x
    axis is log2 with a tick at every x value, labelled by `fraction_label` ("1", "1/2", ...,
    "1/32"); x values must then be positive.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    xs = sorted({_x_value(point, x) for point in points})
    if log2_x and any(value <= 0 for value in xs):
        raise GeoevalError(f"a log2 axis needs positive {x!r} values, got {fraction_label(min(xs))}: pass log2_x=False")
    # one panel per metric, one line per group: curves of different metrics never overlap
    figure = Figure(figsize=(5.2 * len(metrics), 4.4), dpi=120)
    FigureCanvasAgg(figure)
    groups = _sweep_groups(points, by)
    for k, metric in enumerate(metrics):
        axes = figure.add_subplot(1, len(metrics), k + 1)
        for g, (group, members) in enumerate(groups.items()):
            ordered = [p for p in sorted(members, key=lambda p: _x_value(p, x)) if p.get(metric) is not None]
            if not ordered:
                continue
            shift = _dodge(g, len(groups), xs, log2_x)
            xs_g = [shift(_x_value(p, x)) for p in ordered]
            ys = [float(p[metric]) for p in ordered]
            label = str(group).split("=", 1)[-1] if by else metric
            style = _line_style(g, len(groups))
            (drawn,) = axes.plot(xs_g, ys, label=label, **style)
            bounds = [(p.get(f"{metric}/ci95_low"), p.get(f"{metric}/ci95_high")) for p in ordered]
            if any(low is not None and high is not None for low, high in bounds):
                below = [y - float(low) if low is not None else 0.0 for y, (low, _) in zip(ys, bounds)]
                above = [float(high) - y if high is not None else 0.0 for y, (_, high) in zip(ys, bounds)]
                axes.errorbar(
                    xs_g,
                    ys,
                    yerr=[below, above],
                    fmt="none",
                    ecolor=drawn.get_color(),
                    elinewidth=1.2,
                    capsize=3,
                    alpha=0.8,
                    zorder=style["zorder"],
                )
        if log2_x:
            axes.set_xscale("log", base=2)
            axes.xaxis.set_minor_locator(NullLocator())
        if xs:
            axes.set_xticks(xs)
            axes.set_xticklabels([fraction_label(value) for value in xs])
        axes.set_xlabel(x)
        axes.set_ylabel(metric)
        axes.set_title(metric.upper())
        axes.grid(True, alpha=0.3)
        if by and k == len(metrics) - 1 and axes.get_legend_handles_labels()[0]:
            axes.legend(title=str(by), fontsize="small")
    if title:
        figure.suptitle(title)
    return save_figure(figure, path, format="png")


def plot_bars(
    rows: Sequence[dict[str, Any]],
    category: str,
    metrics: Sequence[str],
    path: str | Path,
    *,
    title: str | None = None,
) -> Path:
    """Grouped bar chart as a PNG: one group per row (labelled by `rows[i][category]`), one bar
    per metric. For a job's per-setting or per-level table (mean metrics in [0, 1])."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(6.4, 1.2 * len(rows) + 2), 4.2), dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(metrics))
    for j, metric in enumerate(metrics):
        xs = [i + j * width for i in range(len(rows))]
        axes.bar(xs, [float(r.get(metric) or 0.0) for r in rows], width=width, label=metric)
    axes.set_xticks([i + width * (len(metrics) - 1) / 2 for i in range(len(rows))])
    axes.set_xticklabels([str(r.get(category, "")) for r in rows], rotation=20, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("score")
    if title:
        axes.set_title(title)
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend()
    return save_figure(figure, path, format="png")


def save_figure(figure: Any, path: str | Path, **savefig_kwargs: Any) -> Path:
    """Lay a matplotlib figure out (`tight_layout`) and write it to `path` (its folder created).
    The layout is computed once: `tight_layout()` leaves a placeholder layout engine on the
    figure, and with any engine set `savefig` draws the whole figure once more before the drawing
    it writes (~12 ms of a ~65 ms chart; the pixels are the same)."""
    figure.tight_layout()
    figure.set_layout_engine(None)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, **savefig_kwargs)
    return out


# -- files ------------------------------------------------------------------------------------


def write_per_sample_parquet(results: Sequence[SampleResult], path: str | Path) -> Path:
    """Write one row per (sample, epoch, metric) of `results` to Parquet, with the columns and
    types of `Warehouse.export_parquet` (`SCORE_ARROW_SCHEMA`); parent folders are created.
    Rows are ordered by run_hash, sample_id, epoch, metric. Returns the path."""
    columns: dict[str, list[Any]] = {name: [] for name in SCORE_ARROW_SCHEMA.names}
    ordered = sorted(results, key=lambda r: (r.run_hash, r.sample_id, r.epoch))
    for result in ordered:
        dims = result.dims
        for metric in sorted(result.scores):
            row = {
                "run_hash": result.run_hash,
                "sample_id": result.sample_id,
                "epoch": result.epoch,
                "model": clean_text(result.model),
                "metric": metric,
                "value": None if math.isnan(result.scores[metric]) else result.scores[metric],
                **clean_value(dims.columns()),
                "error": None if result.error is None else clean_text(result.error),
                "status": result.status,
            }
            for name, value in row.items():
                columns[name].append(value)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(columns, schema=SCORE_ARROW_SCHEMA), out)
    return out
