"""MapTab's paper-style reports of one run, written by the suite's `after_run` (the harness logs
the returned files to MLflow).

QA (`write_qa_report`), laid out like the paper's tables with one row per scenario where the paper
has one per model:
* Table 8 layout: Acc per QA type (M-GP ... MM-SR), per scenario;
* Table 3 layout: Acc per capability (VP, TU, CA, GT, SL, NR, PP, GR), per scenario and over both,
  each the mean over the problems Table 1 maps to the capability (`acc/capability/<name>` of the
  run's metrics are the same numbers over both scenarios);
plus the same two as bar charts in one PNG. Accuracies are percentages, as the paper prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.api import group_table, markdown_table, save_figure
from geoeval.suites.maptab.qa.questions import CAPABILITIES, CAPABILITY_ABBREVIATIONS, QA_TYPES

if TYPE_CHECKING:
    from geoeval.api import SampleResult

QA_REPORT_MD = "maptab_qa_report.md"
QA_REPORT_PNG = "maptab_qa_report.png"
SCENARIO_NAMES = {"metromap": "Metromap", "travelmap": "Travelmap"}


def _percent(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def qa_tables(results: Sequence[SampleResult]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Table 8 rows, Table 3 rows) of the QA results: {"scenario", <type or capability>: Acc %,
    "n"}; a type or capability without samples is None."""
    qa = [r for r in results if r.dims.task_family == "qa" and "acc" in r.scores]
    scenarios = [s for s in SCENARIO_NAMES if any(r.dims.extra.get("scenario") == s for r in qa)]
    by_type = {(row["scenario"], row["task"]): row for row in group_table(qa, ["scenario", "task"], ["acc"])}
    by_cap = {
        (row["scenario"], row["capabilities"]): row for row in group_table(qa, ["scenario", "capabilities"], ["acc"])
    }
    overall_cap = {row["capabilities"]: row for row in group_table(qa, ["capabilities"], ["acc"])}
    type_rows, cap_rows = [], []
    for s in scenarios:
        row: dict[str, Any] = {"scenario": SCENARIO_NAMES[s]}
        row.update({t: _percent(by_type[(s, t)]["acc"]) if (s, t) in by_type else None for t in QA_TYPES})
        row["n"] = sum(by_type[(s, t)]["n"] for t in QA_TYPES if (s, t) in by_type)
        type_rows.append(row)
        cap: dict[str, Any] = {"scenario": SCENARIO_NAMES[s]}
        cap.update(
            {
                CAPABILITY_ABBREVIATIONS[c]: _percent(by_cap[(s, c)]["acc"]) if (s, c) in by_cap else None
                for c in CAPABILITIES
            }
        )
        cap_rows.append(cap)
    if len(scenarios) > 1:
        cap = {"scenario": "Both"}
        cap.update(
            {
                CAPABILITY_ABBREVIATIONS[c]: _percent(overall_cap[c]["acc"]) if c in overall_cap else None
                for c in CAPABILITIES
            }
        )
        cap_rows.append(cap)
    return type_rows, cap_rows


def protocol_section(results: Sequence[SampleResult], max_examples: int = 3) -> list[str]:
    """Markdown parts saying how many samples the two answer protocols (`scoring.protocol`) score
    differently, with a few examples: a reader sees when a score depends on how the answer is
    typeset (README "Answer protocol"). The core keeps each sample's disagreement in its details."""
    from geoeval.api import PROTOCOL_DISAGREEMENT_KEY

    scored = [r for r in results if r.status == "scored"]
    differ = [r for r in scored if r.details.get(PROTOCOL_DISAGREEMENT_KEY)]
    parts = [
        "## Answer protocols",
        f"{len(differ)} of {len(scored)} scored samples score differently under the robust and the paper "
        'answer protocol (`scoring.protocol`; README "Answer protocol").',
    ]
    rows = []
    for r in differ[:max_examples]:
        values = r.details[PROTOCOL_DISAGREEMENT_KEY]
        rows.append(
            {
                "sample": r.sample_id,
                "scores (robust / paper)": "; ".join(
                    f"{m} {v.get('robust', float('nan')):g} / {v.get('paper', float('nan')):g}"
                    for m, v in sorted(values.items())
                ),
                "answer": " ".join(r.answer.split())[:80],
            }
        )
    if rows:
        parts.append(markdown_table(rows, ["sample", "scores (robust / paper)", "answer"]))
    return parts


def write_qa_report(
    results: Sequence[SampleResult], out_dir: Path, *, plots: bool = True, notes: Sequence[str] = ()
) -> list[Path]:
    """The QA report files (Markdown, and the PNG with `plots`) in `out_dir`; none when the run has
    no QA results. `notes`: Markdown parts added at the end (the protocol section)."""
    type_rows, cap_rows = qa_tables(results)
    if not type_rows:
        return []
    models = sorted({r.model for r in results if r.model})
    legend = ", ".join(f"{a} = {c.replace('_', ' ')}" for c, a in CAPABILITY_ABBREVIATIONS.items())
    text = (
        "\n\n".join(
            [
                "# MapTab QA",
                f"Acc (%) of {', '.join(models) or 'the model'}; {sum(r['n'] for r in type_rows)} questions.",
                "## Acc per QA type (Table 8 layout)",
                markdown_table(type_rows, ["scenario", *QA_TYPES, "n"], floatfmt=".2f"),
                "## Acc per capability (Table 3 layout)",
                "Each capability's score is the mean Acc over the problems Table 1 maps to it. " + legend + ".",
                markdown_table(cap_rows, ["scenario", *CAPABILITY_ABBREVIATIONS.values()], floatfmt=".2f"),
                *notes,
            ]
        )
        + "\n"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / QA_REPORT_MD
    md.write_text(text, encoding="utf-8")
    if not plots:
        return [md]
    png = _plot(type_rows, cap_rows, out_dir / QA_REPORT_PNG, title=f"MapTab QA: {', '.join(models)}")
    return [md, png]


def _plot(type_rows: list[dict[str, Any]], cap_rows: list[dict[str, Any]], path: Path, *, title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 7.5), dpi=110)
    FigureCanvasAgg(figure)
    panels = (
        (type_rows, list(QA_TYPES), "Acc per QA type"),
        (cap_rows, list(CAPABILITY_ABBREVIATIONS.values()), "Acc per capability"),
    )
    for k, (rows, columns, heading) in enumerate(panels, start=1):
        axes = figure.add_subplot(2, 1, k)
        width = 0.8 / max(1, len(rows))
        for j, row in enumerate(rows):
            xs = [i + j * width for i in range(len(columns))]
            axes.bar(xs, [float(row.get(c) or 0.0) for c in columns], width=width, label=row["scenario"])
        axes.set_xticks([i + width * (len(rows) - 1) / 2 for i in range(len(columns))])
        axes.set_xticklabels(columns)
        axes.set_ylim(0, 105)
        axes.set_ylabel("Acc (%)")
        axes.set_title(heading)
        axes.grid(True, axis="y", alpha=0.3)
        axes.legend(loc="upper right", fontsize="small")
    figure.suptitle(title)
    return save_figure(figure, path, format="png")
