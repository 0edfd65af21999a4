"""Run reports of the MapSatisfy suite (`MapSatisfySuite.after_run`): the Table 1/2 layout, the
Figure 4 profile-tool call rate and the Figure 5 groupings, as Markdown and PNG files that the harness logs to MLflow.

Input is the core's `SampleResult`s (model, scores, dims). A metric value the formulas leave
undefined is NaN (README "Undefined values"); every mean here skips it and reports how many cases
it is over, as the authors' calculator skips such cases, instead of letting one NaN blank a cell.
Errored samples are left out (their scores are zeros by the core's convention, not measurements).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

TABLE_METRICS = ("ecr", "iisr", "ar", "ts", "ifs", "eff", "ses")  # the columns of Tables 1 and 2
GROUP_BY = {"domain": "Domain", "difficulty": "Difficulty", "implicit_factor_source": "Implicit-factor source"}


def _labels(result: Any, key: str) -> list[str]:
    """The group labels of one result: multi-label dimensions (`a;b`) count in every group."""
    if key == "difficulty":
        return [result.dims.level or "unlabelled"]
    raw = result.dims.extra.get(key, "")
    return [p for p in raw.split(";") if p] or ["unlabelled"]


def mean_skipping_nan(values: list[float]) -> tuple[float, int]:
    """(mean, n) over the defined values; (nan, 0) when none is defined."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return (sum(kept) / len(kept), len(kept)) if kept else (math.nan, 0)


def _usable(results: list[Any]) -> list[Any]:
    return [r for r in results if not r.error]


def model_table(results: list[Any], metrics: tuple[str, ...] = TABLE_METRICS) -> dict[tuple[str, str], dict[str, float]]:
    """(model, thinking) -> metric -> mean over cases (NaN skipped), plus `n` cases."""
    rows: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in _usable(results):
        rows[(r.model, r.dims.extra.get("thinking", "default"))].append(r)
    out = {}
    for key, group in sorted(rows.items()):
        out[key] = {m: mean_skipping_nan([g.scores.get(m, math.nan) for g in group])[0] for m in metrics}
        out[key]["n"] = float(len(group))
    return out


def grouped(results: list[Any], key: str, metrics: tuple[str, ...] = TABLE_METRICS) -> dict[tuple[str, str], dict[str, float]]:
    """(model, group label) -> metric -> mean (NaN skipped), plus `n`: the Figure 5 groupings."""
    rows: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in _usable(results):
        for label in _labels(r, key):
            rows[(r.model, label)].append(r)
    out = {}
    for k, group in sorted(rows.items()):
        out[k] = {m: mean_skipping_nan([g.scores.get(m, math.nan) for g in group])[0] for m in metrics}
        out[k]["n"] = float(len(group))
    return out


def _cell(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.4f}"


def tables_markdown(results: list[Any], metrics: tuple[str, ...] = TABLE_METRICS) -> str:
    """Table 1 (thinking off, or the model's default) and Table 2 (thinking on) when the run has
    them: one row per model, the seven metrics as columns."""
    table = model_table(results, metrics)
    head = "| model | n | " + " | ".join(m.upper() for m in metrics) + " |"
    rule = "| --- | ---: | " + " | ".join("---:" for _ in metrics) + " |"
    titles = {"off": "Table 1 layout: thinking off", "default": "Table 1 layout: thinking not set (model default)",
              "on": "Table 2 layout: thinking on"}
    lines = ["# MapSatisfy results", ""]
    for thinking in ("off", "default", "on"):
        rows = [(model, vals) for (model, t), vals in table.items() if t == thinking]
        if not rows:
            continue
        lines += [f"## {titles[thinking]}", "", head, rule]
        lines += [f"| {model} | {int(v['n'])} | " + " | ".join(_cell(v[m]) for m in metrics) + " |" for model, v in rows]
        lines.append("")
    return "\n".join(lines)


def profile_call_rates(results: list[Any]) -> dict[tuple[str, str], tuple[float, int]]:
    """Figure 4: (model, thinking) -> (share of cases in which a profile tool was called, n), over
    all cases and over the cases whose ground truth expects one (`profile_evidence`)."""
    rows: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _usable(results):
        if "profile_call" not in r.scores:
            continue
        thinking = r.dims.extra.get("thinking", "default")
        rows[(r.model, f"{thinking}, all cases")].append(r.scores["profile_call"])
        if "profile_evidence" in r.dims.capabilities:
            rows[(r.model, f"{thinking}, profile tool expected")].append(r.scores["profile_call"])
    return {k: mean_skipping_nan(v) for k, v in sorted(rows.items())}


def profile_call_markdown(results: list[Any]) -> str:
    rates = profile_call_rates(results)
    if not rates:
        return ""
    lines = ["## Profile-tool call rate (Figure 4 layout)", "", "| model | cases | rate | n |", "| --- | --- | ---: | ---: |"]
    lines += [f"| {model} | {which} | {_cell(rate)} | {n} |" for (model, which), (rate, n) in rates.items()]
    return "\n".join(lines) + "\n"


def groupings_markdown(results: list[Any], metrics: tuple[str, ...] = TABLE_METRICS) -> str:
    lines = ["# MapSatisfy results by group (Figure 5 layout)", ""]
    for key, title in GROUP_BY.items():
        lines += [f"## By {title.lower()}", "",
                  f"| model | {title.lower()} | n | " + " | ".join(m.upper() for m in metrics) + " |",
                  "| --- | --- | ---: | " + " | ".join("---:" for _ in metrics) + " |"]
        for (model, label), v in grouped(results, key, metrics).items():
            lines.append(f"| {model} | {label} | {int(v['n'])} | " + " | ".join(_cell(v[m]) for m in metrics) + " |")
        lines.append("")
    return "\n".join(lines)


def _plot(results: list[Any], key: str, path: Path, metrics: tuple[str, ...] = TABLE_METRICS) -> Path:
    """Grouped bars: one panel per model, groups on the x axis, one bar per metric."""
    import matplotlib

    matplotlib.use("Agg")  # no display: reports are written in workers and CI
    import matplotlib.pyplot as plt

    data = grouped(results, key, metrics)
    models = sorted({m for m, _ in data})
    fig, axes = plt.subplots(len(models), 1, figsize=(10, 3.2 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        labels = sorted(label for m, label in data if m == model)
        width = 0.8 / len(metrics)
        for j, metric in enumerate(metrics):
            heights = [0.0 if math.isnan(data[(model, lb)][metric]) else data[(model, lb)][metric] for lb in labels]
            ax.bar([i + j * width for i in range(len(labels))], heights, width, label=metric.upper())
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{model}: by {GROUP_BY[key].lower()}")
        ax.legend(ncol=len(metrics), fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_reports(results: list[Any], out_dir: str | Path) -> list[Path]:
    """`results.md` (Tables 1/2), `groups.md` (domain, difficulty, source) and one PNG per
    grouping. Nothing is written for a run without results."""
    usable = _usable(results)
    if not usable:
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.md", out / "groups.md"]
    paths[0].write_text(tables_markdown(usable) + "\n" + profile_call_markdown(usable), encoding="utf-8")
    paths[1].write_text(groupings_markdown(usable), encoding="utf-8")
    for key in ("domain", "difficulty"):
        paths.append(_plot(usable, key, out / f"by_{key}.png"))
    return paths
