"""Run reports of the MapSatisfy suite (`MapSatisfySuite.after_run`): the Table 1/2 layout, the
Figure 4 profile-tool call rate and the Figure 5 groupings, as Markdown and PNG files that the harness logs to MLflow.

Input is the core's `SampleResult`s (model, scores, dims). A metric value the formulas leave
undefined is NaN (README "Undefined values"); every mean here skips it and reports how many cases
it is over, as the authors' calculator skips such cases, instead of letting one NaN blank a cell.
Errored samples are left out (their scores are zeros by the core's convention, not measurements).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.api import save_figure

if TYPE_CHECKING:
    from geoeval.api import SampleResult

TABLE_METRICS = ("ecr", "iisr", "ar", "ts", "ifs", "eff", "ses")  # the columns of Tables 1 and 2
GROUP_BY = {"domain": "Domain", "difficulty": "Difficulty", "implicit_factor_source": "Implicit-factor source"}


def _labels(result: SampleResult, key: str) -> list[str]:
    """The group labels of one result: multi-label dimensions (`a;b`) count in every group."""
    if key == "difficulty":
        return [result.dims.level or "unlabelled"]
    raw = result.dims.extra.get(key, "")
    return [p for p in raw.split(";") if p] or ["unlabelled"]


def mean_skipping_nan(values: list[float]) -> tuple[float, int]:
    """(mean, n) over the defined values; (nan, 0) when none is defined."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return (sum(kept) / len(kept), len(kept)) if kept else (math.nan, 0)


def _usable(results: list[SampleResult]) -> list[SampleResult]:
    return [r for r in results if not r.error]


def model_table(
    results: list[SampleResult], metrics: tuple[str, ...] = TABLE_METRICS
) -> dict[tuple[str, str], dict[str, float]]:
    """(model, thinking) -> metric -> mean over cases (NaN skipped), plus `n` cases."""
    rows: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in _usable(results):
        rows[(r.model, r.dims.extra.get("thinking", "default"))].append(r)
    out = {}
    for key, group in sorted(rows.items()):
        out[key] = {m: mean_skipping_nan([g.scores.get(m, math.nan) for g in group])[0] for m in metrics}
        out[key]["n"] = float(len(group))
    return out


def grouped(
    results: list[SampleResult], key: str, metrics: tuple[str, ...] = TABLE_METRICS
) -> dict[tuple[str, str], dict[str, float]]:
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


def tables_markdown(results: list[SampleResult], metrics: tuple[str, ...] = TABLE_METRICS) -> str:
    """Table 1 (thinking off, or the model's default) and Table 2 (thinking on) when the run has
    them: one row per model, the seven metrics as columns."""
    table = model_table(results, metrics)
    head = "| model | n | " + " | ".join(m.upper() for m in metrics) + " |"
    rule = "| --- | ---: | " + " | ".join("---:" for _ in metrics) + " |"
    titles = {
        "off": "Table 1 layout: thinking off",
        "default": "Table 1 layout: thinking not set (model default)",
        "on": "Table 2 layout: thinking on",
    }
    lines = ["# MapSatisfy results", ""]
    for thinking in ("off", "default", "on"):
        rows = [(model, vals) for (model, t), vals in table.items() if t == thinking]
        if not rows:
            continue
        lines += [f"## {titles[thinking]}", "", head, rule]
        lines += [
            f"| {model} | {int(v['n'])} | " + " | ".join(_cell(v[m]) for m in metrics) + " |" for model, v in rows
        ]
        lines.append("")
    return "\n".join(lines)


def profile_call_rates(results: list[SampleResult]) -> dict[tuple[str, str], tuple[float, int]]:
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


def profile_call_markdown(results: list[SampleResult]) -> str:
    rates = profile_call_rates(results)
    if not rates:
        return ""
    lines = [
        "## Profile-tool call rate (Figure 4 layout)",
        "",
        "| model | cases | rate | n |",
        "| --- | --- | ---: | ---: |",
    ]
    lines += [f"| {model} | {which} | {_cell(rate)} | {n} |" for (model, which), (rate, n) in rates.items()]
    return "\n".join(lines) + "\n"


PROTOCOL_EXAMPLES = 5


def protocol_markdown(results: list[SampleResult], examples: int = PROTOCOL_EXAMPLES) -> str:
    """How many cases the two answer protocols (`scoring.protocol`: robust, paper) score
    differently, per metric, with the first `examples` cases (their answer and both values): a
    reader sees when a model's score depends on how its answers are typeset (README, "Answer
    protocol")."""
    from geoeval.api import PROTOCOL_DISAGREEMENT_KEY

    differing = [r for r in results if (r.details or {}).get(PROTOCOL_DISAGREEMENT_KEY)]
    lines = [
        "## Answer protocols (robust / paper)",
        "",
        f"{len(differing)} of {len(results)} cases score differently under the other protocol.",
        "",
    ]
    per_metric: dict[str, int] = {}
    for r in differing:
        for metric in r.details[PROTOCOL_DISAGREEMENT_KEY]:
            per_metric[metric] = per_metric.get(metric, 0) + 1
    if per_metric:
        lines += ["| metric | cases |", "| --- | ---: |"]
        lines += [f"| {m} | {n} |" for m, n in sorted(per_metric.items())]
        lines += ["", "| case | metric | robust | paper | answer |", "| --- | --- | ---: | ---: | --- |"]
        for r in differing[:examples]:
            answer = " ".join(r.answer.split())[:120].replace("|", "/")
            for metric, values in sorted(r.details[PROTOCOL_DISAGREEMENT_KEY].items()):
                lines.append(
                    f"| {r.sample_id[:8]} | {metric} | {_cell(values.get('robust', float('nan')))} | "
                    f"{_cell(values.get('paper', float('nan')))} | {answer} |"
                )
    return "\n".join(lines) + "\n"


def groupings_markdown(results: list[SampleResult], metrics: tuple[str, ...] = TABLE_METRICS) -> str:
    lines = ["# MapSatisfy results by group (Figure 5 layout)", ""]
    for key, title in GROUP_BY.items():
        lines += [
            f"## By {title.lower()}",
            "",
            f"| model | {title.lower()} | n | " + " | ".join(m.upper() for m in metrics) + " |",
            "| --- | --- | ---: | " + " | ".join("---:" for _ in metrics) + " |",
        ]
        for (model, label), v in grouped(results, key, metrics).items():
            lines.append(f"| {model} | {label} | {int(v['n'])} | " + " | ".join(_cell(v[m]) for m in metrics) + " |")
        lines.append("")
    return "\n".join(lines)


def _plot(results: list[SampleResult], key: str, path: Path, metrics: tuple[str, ...] = TABLE_METRICS) -> Path:
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
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def write_reports(results: list[SampleResult], out_dir: str | Path, *, plots: bool = True) -> list[Path]:
    """`results.md` (Tables 1/2), `groups.md` (domain, difficulty, source) and, with `plots`, one
    PNG per grouping. Nothing is written for a run without results."""
    usable = _usable(results)
    if not usable:
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.md", out / "groups.md"]
    paths[0].write_text(
        tables_markdown(usable) + "\n" + profile_call_markdown(usable) + "\n" + protocol_markdown(usable),
        encoding="utf-8",
    )
    paths[1].write_text(groupings_markdown(usable), encoding="utf-8")
    for key in ("domain", "difficulty") if plots else ():
        paths.append(_plot(usable, key, out / f"by_{key}.png"))
    return paths


# ---------------------------------------------------------------------------------------------
# Tables 1/2 across runs: the warehouse joins what `after_run` (one run, one model) cannot

THINKING_COLUMNS = ("off", "default", "on")  # "default": the run set no reasoning config


def leaderboard_frame(db_path: str | Path, *, experiment: str | None = None) -> Any:
    """Mean of each metric per (setting, model, thinking) over every MapSatisfy run in the
    warehouse (or only those of `experiment`), with `n` the cases behind it. NaN values are skipped
    (undefined, as in `model_table`) and errored samples left out. Runs of one model in the same
    setting and thinking mode are pooled: select them with `experiment` when they differ otherwise."""

    import pandas as pd

    from geoeval.api import Warehouse

    with Warehouse(db_path, read_only=True) as wh:
        runs = [
            r["run_hash"] for r in wh.runs(suite="mapsatisfy") if experiment is None or r["experiment"] == experiment
        ]
        frame = wh.scores_frame(runs) if runs else pd.DataFrame()
    columns = ["setting", "model", "thinking", "metric", "value", "n"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    frame = frame[frame["error"].isna() | (frame["error"] == "")]
    frame = frame.assign(
        thinking=[json.loads(e or "{}").get("thinking", "default") for e in frame["extra"]],
        setting=frame["setting"].fillna("").replace("", "normal"),
    )
    frame = frame[frame["metric"].isin(TABLE_METRICS)]
    grouped_frame = frame.groupby(["setting", "model", "thinking", "metric"])["value"]
    out = grouped_frame.mean().to_frame("value")  # pandas' mean skips NaN
    out["n"] = frame.groupby(["setting", "model", "thinking", "metric"])["sample_id"].nunique()
    return out.reset_index()[columns]


def leaderboard_markdown(table: Any) -> str:
    """One table per setting (normal = Table 1/2's main sandbox, profile = B.4): one row per model,
    for each metric a column per thinking mode present (off, then default, then on)."""
    lines = ["# MapSatisfy leaderboard (Table 1/2 layout)", ""]
    if table.empty:
        return "\n".join(lines + ["No MapSatisfy runs in the warehouse.", ""])
    for setting in sorted(table["setting"].unique(), key=lambda s: (s != "normal", s)):
        part = table[table["setting"] == setting]
        modes = [t for t in THINKING_COLUMNS if t in set(part["thinking"])]
        cells = {(r.model, r.thinking, r.metric): r.value for r in part.itertuples()}
        cases = part.groupby(["model", "thinking"])["n"].max().to_dict()
        head = ["model"] + [f"n ({t})" for t in modes] + [f"{m.upper()} ({t})" for m in TABLE_METRICS for t in modes]
        lines += [
            f"## Setting: {setting}",
            "",
            "| " + " | ".join(head) + " |",
            "| --- | " + " | ".join("---:" for _ in head[1:]) + " |",
        ]
        for model in sorted(part["model"].unique()):
            row = [model] + [str(int(cases[(model, t)])) if (model, t) in cases else "-" for t in modes]
            row += [_cell(cells.get((model, t, m), math.nan)) for m in TABLE_METRICS for t in modes]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def _table_png(markdown: str, path: Path) -> Path:
    """The Markdown tables drawn as images (one panel per setting), for MLflow and slides."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks: list[tuple[str, list[list[str]]]] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            blocks.append((line[3:], []))
        elif line.startswith("|") and blocks and not line.startswith("| ---"):
            blocks[-1][1].append([c.strip() for c in line.strip("|").split("|")])
    blocks = [b for b in blocks if len(b[1]) > 1] or [("no runs", [["-"], ["-"]])]
    fig, axes = plt.subplots(
        len(blocks),
        1,
        figsize=(max(8, 1.1 * len(blocks[0][1][0])), 0.6 + 0.8 * len(blocks) + 0.3 * sum(len(r) for _, r in blocks)),
        squeeze=False,
    )
    for ax, (title, rows) in zip(axes[:, 0], blocks):
        ax.axis("off")
        ax.set_title(title)
        table = ax.table(cellText=rows[1:], colLabels=rows[0], loc="center")
        table.auto_set_font_size(False)
        table.set_fontsize(7)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def leaderboard_table(db_path: str | Path, out_dir: str | Path, *, experiment: str | None = None) -> list[Path]:
    """Reads the warehouse at `db_path` and writes `leaderboard.md` and `leaderboard.png` to
    `out_dir`: every MapSatisfy run (or those of `experiment`), one row per model, thinking off/on
    columns, one table per setting. Returns the two paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    markdown = leaderboard_markdown(leaderboard_frame(db_path, experiment=experiment))
    md_path = out / "leaderboard.md"
    md_path.write_text(markdown, encoding="utf-8")
    return [md_path, _table_png(markdown, out / "leaderboard.png")]
