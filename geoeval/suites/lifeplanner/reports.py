"""LifePlanner reports (Markdown + PNG), written by the suite's `after_run` and logged by the
harness: Table 2 (PR@α in % per task × level, one row per model), Table 3 (every metric's mean
per level), Figure 5 (exceedance curves: the share of cases scoring ≥ t) and Figure 6 (tool-call
failures split into parameter errors, truncation and empty results).

The table and curve functions are pure over `SampleResult`s; the failure split reads each
sample's `failure_classes` from its stored details, and the answer-protocol section the samples
the robust and paper protocols score differently (`protocol_disagreement` in the details, with
the reading rules that fired), so a reader sees when a score depends on how answers are read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.api import save_figure
from geoeval.suites.lifeplanner.metrics import COMBINATIONS, LEVELS

if TYPE_CHECKING:
    from geoeval.api import SampleResult

# Table 3's rows, in its order (process, then outcome metrics, then tokens)
LEVEL_TABLE_ROWS: tuple[tuple[str, str], ...] = (
    ("ig", "Information Grounding"),
    ("te", "Tool Efficiency"),
    ("rp", "Reasoning Purity"),
    ("a", "Attribute Accuracy"),
    ("piou", "Place-set IoU"),
    ("rd_distance", "Routing Deviation (distance)"),
    ("rd_time", "Routing Deviation (time)"),
    ("oc", "Order Consistency"),
    ("sc", "Semantic Constraint"),
    ("pr", "Pass Rate"),
)
EXCEEDANCE_METRICS = ("sc", "rp", "ig", "te")
FAILURE_CLASSES = ("parameter_error", "truncated", "empty")
_TASK_TITLES = {"place": "Place", "nearby": "Nearby", "routing": "Routing", "trip": "Trip"}


def _value(r: Any, metric: str) -> float | None:
    v = r.scores.get(metric)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _cell(v: float | None, scale: float = 100.0, digits: int = 1) -> str:
    return "-" if v is None else f"{scale * v:.{digits}f}"


def _combo(r: Any) -> tuple[str, str]:
    return r.dims.task_family, r.dims.level


def pass_rates(results: Sequence[SampleResult]) -> dict[str, dict[tuple[str, str], float | None]]:
    """PR per model and (task, level), as a share in [0, 1] (None: no case)."""
    by: dict[str, dict[tuple[str, str], list[float | None]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by[r.model][_combo(r)].append(_value(r, "pr"))
    return {m: {c: _mean(by[m].get(c, [])) for c in COMBINATIONS} for m in sorted(by)}


def pr_table(results: Sequence[SampleResult]) -> str:
    """Table 2: PR@α in % per task × level and the mean over cases, one row per model."""
    head = "| model | " + " | ".join(f"{_TASK_TITLES[t]} {lvl.upper()}" for t, lvl in COMBINATIONS) + " | Avg. |"
    sep = "| --- | " + " | ".join("---:" for _ in COMBINATIONS) + " | ---: |"
    rows = []
    for model, rates in pass_rates(results).items():
        avg = _mean(_value(r, "pr") for r in results if r.model == model)
        rows.append(f"| {model} | " + " | ".join(_cell(rates[c]) for c in COMBINATIONS) + f" | {_cell(avg)} |")
    return "\n".join([head, sep, *rows]) + "\n"


def level_means(results: Sequence[SampleResult]) -> dict[str, dict[str, float | None]]:
    """Every metric's mean per level over the cases where it applies (None: applies to none)."""
    out: dict[str, dict[str, float | None]] = {}
    for metric in [m for m, _ in LEVEL_TABLE_ROWS] + ["input_tokens", "output_tokens"]:
        out[metric] = {lvl: _mean(_value(r, metric) for r in results if r.dims.level == lvl) for lvl in LEVELS}
    return out


def level_table(results: Sequence[SampleResult]) -> str:
    """Table 3: the mean of each metric in % per level ("-": does not apply), and tokens in k."""
    means = level_means(results)
    lines = ["| metric | L0 | L1 | L2 |", "| --- | ---: | ---: | ---: |"]
    for metric, title in LEVEL_TABLE_ROWS:
        lines.append(f"| {title} | " + " | ".join(_cell(means[metric][lvl]) for lvl in LEVELS) + " |")
    tokens = {
        lvl: (
            None
            if (input_tokens := means["input_tokens"][lvl]) is None
            else input_tokens + (means["output_tokens"][lvl] or 0.0)
        )
        for lvl in LEVELS
    }
    lines.append("| Token Usage (k) | " + " | ".join(_cell(tokens[lvl], 1e-3) for lvl in LEVELS) + " |")
    for metric in JUDGED_METRICS:
        cells = [judged_cell(results, metric, lvl) for lvl in LEVELS]
        lines.append(f"| {metric.upper()} judged / total | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: Metrics that need a judge: reports show how many cases were judged beside their means.
JUDGED_METRICS = ("sc", "rp", "pr")


def judged_counts(results: Sequence[SampleResult], metric: str, level: str) -> tuple[int, int]:
    """(cases with a value of `metric`, those plus the errored cases) at `level`: an errored case
    (e.g. every judge failed) has no value but counts in the total, so a mean over fewer judged
    cases is never mistaken for a mean over all of them."""
    at_level = [r for r in results if r.dims.level == level]
    judged = sum(1 for r in at_level if r.status != "error" and _value(r, metric) is not None)
    errored = sum(1 for r in at_level if r.status == "error")
    return judged, judged + errored


def judged_cell(results: Sequence[SampleResult], metric: str, level: str) -> str:
    judged, total = judged_counts(results, metric, level)
    return "-" if total == 0 else f"{judged}/{total}"


def exceedance(values: Sequence[float], thresholds: Sequence[float]) -> list[float]:
    """Figure 5: for each threshold t, the share of values ≥ t (empty values: no curve)."""
    if not values:
        raise ValueError("no values")
    return [sum(v >= t for v in values) / len(values) for t in thresholds]


def thresholds(n: int = 101) -> list[float]:
    return [round(i / (n - 1), 10) for i in range(n)]


def exceedance_curves(
    results: Sequence[SampleResult], metrics: Sequence[str] = EXCEEDANCE_METRICS, ts: Sequence[float] | None = None
) -> dict[str, dict[str, list[float]]]:
    """metric -> level -> the exceedance curve over `ts` (levels where the metric never applies
    are left out)."""
    ts = list(ts) if ts is not None else thresholds()
    out: dict[str, dict[str, list[float]]] = {}
    for metric in metrics:
        for lvl in LEVELS:
            vals = [v for r in results if r.dims.level == lvl and (v := _value(r, metric)) is not None]
            if vals:
                out.setdefault(metric, {})[lvl] = exceedance(vals, ts)
    return out


def failure_split(counts: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, float]]:
    """Figure 6: per level (and "all"), each failure class's share of all tool calls, from
    (level, {class: count}) per sample. Also the number of calls (`calls`)."""
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for level, classes in counts:
        for key in (level, "all"):
            for cls, n in classes.items():
                totals[key][cls] += int(n)
    out = {}
    for key in [*LEVELS, "all"]:
        if key not in totals:
            continue
        calls = sum(totals[key].values())
        out[key] = {
            "calls": float(calls),
            **{cls: (totals[key][cls] / calls if calls else 0.0) for cls in FAILURE_CLASSES},
        }
    return out


def failure_table(split: Mapping[str, Mapping[str, float]]) -> str:
    lines = [
        "| level | calls | parameter errors (%) | truncated (%) | empty (%) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key, row in split.items():
        lines.append(
            f"| {key.upper() if key != 'all' else 'all'} | {int(row['calls'])} | "
            + " | ".join(_cell(row[c]) for c in FAILURE_CLASSES)
            + " |"
        )
    return "\n".join(lines) + "\n"


def failure_counts_from_results(results: Sequence[SampleResult]) -> list[tuple[str, dict[str, int]]]:
    """(level, failure classes) per sample from the results' stored details (the judging step
    keeps them there, so Figure 6 needs no log, wherever the sample ran)."""
    return [
        (r.dims.level, dict(r.details["failure_classes"]))
        for r in sorted(results, key=lambda r: (r.sample_id, r.epoch))
        if "failure_classes" in (r.details or {})
    ]


def _plot_exceedance(curves: Mapping[str, Mapping[str, list[float]]], ts: Sequence[float], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # no display: reports are written in workers and CI
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, max(1, len(curves)), figsize=(4 * max(1, len(curves)), 3.2), squeeze=False)
    for ax, (metric, by_level) in zip(axes[0], curves.items()):
        for lvl, ys in by_level.items():
            ax.step(ts, ys, where="post", label=lvl.upper())
        ax.set_title(metric.upper())
        ax.set_xlabel("threshold t")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("share of cases ≥ t")
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def _plot_failures(split: Mapping[str, Mapping[str, float]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(split)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    width = 0.8 / len(FAILURE_CLASSES)
    for i, cls in enumerate(FAILURE_CLASSES):
        ax.bar([k + i * width for k in range(len(keys))], [100 * split[k][cls] for k in keys], width, label=cls)
    ax.set_xticks([k + width for k in range(len(keys))], [k.upper() if k != "all" else "all" for k in keys])
    ax.set_ylabel("% of tool calls")
    ax.legend(fontsize=8)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


MAX_PROTOCOL_EXAMPLES = 5


def protocol_section(results: Sequence[SampleResult]) -> str:
    """How many samples the two answer protocols score differently, and examples: the metrics
    that differ with both values, and the robust reader's rules that fired."""
    differ = [r for r in results if (r.details or {}).get("protocol_disagreement")]
    lines = [
        f"{len(differ)} of {len(results)} samples score differently under the robust and the paper "
        "protocol (the run's scores use the run's `scoring.protocol`)."
    ]
    if not differ:
        return lines[0]
    lines += ["", "| sample | metric: robust / paper | reading |", "| --- | --- | --- |"]
    for r in differ[:MAX_PROTOCOL_EXAMPLES]:
        diff = r.details["protocol_disagreement"]
        cells = ", ".join(
            f"{m}: {_cell(v.get('robust'), 1, 2)} / {_cell(v.get('paper'), 1, 2)}" for m, v in sorted(diff.items())
        )
        rules = "; ".join(r.details.get("reading") or []) or "-"
        lines.append(f"| {r.sample_id} | {cells} | {rules.replace('|', '/')[:300]} |")
    return "\n".join(lines)


def write_reports(
    results: Sequence[SampleResult],
    out_dir: Path,
    failure_counts: Sequence[tuple[str, Mapping[str, int]]] | None = None,
    *,
    plots: bool = True,
) -> list[Path]:
    """Write `lifeplanner_report.md` and, with `plots`, `exceedance.png` and (with failure counts)
    `tool_failures.png`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not results:
        return []
    ts = thresholds()
    curves = exceedance_curves(results, ts=ts)
    parts = [
        "# LifePlanner report\n",
        "## PR@α in % per task and level (Table 2)\n",
        pr_table(results),
        "\n## Mean per level in % (Table 3)\n",
        level_table(results),
    ]
    paths = []
    if curves:
        parts += [
            "\n## Exceedance (Figure 5): share of cases with the metric ≥ t\n",
            "| metric | level | t=0.5 | t=0.8 | t=0.9 | t=1.0 |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for metric, by_level in curves.items():
            for lvl, ys in by_level.items():
                parts.append(
                    f"| {metric} | {lvl.upper()} | "
                    + " | ".join(f"{100 * ys[ts.index(t)]:.1f}" for t in (0.5, 0.8, 0.9, 1.0))
                    + " |"
                )
        if plots:
            parts.append("\n![exceedance](exceedance.png)\n")
            paths.append(_plot_exceedance(curves, ts, out_dir / "exceedance.png"))
    parts += ["\n## Answer protocol: robust vs paper\n", protocol_section(results)]
    if failure_counts:
        split = failure_split(failure_counts)
        parts += ["\n## Tool-call failures (Figure 6)\n", failure_table(split)]
        if plots:
            parts.append("\n![failures](tool_failures.png)\n")
            paths.append(_plot_failures(split, out_dir / "tool_failures.png"))
    md = out_dir / "lifeplanner_report.md"
    md.write_text("\n".join(parts))
    return [md, *paths]
