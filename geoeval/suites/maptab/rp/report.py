"""MapTab's paper-style RP report of one run (`after_run`; the harness logs the files to MLflow):
Markdown tables per scenario (Table 2 / 7 layout by category, the same split by map and by query
difficulty, the G.2 difficulty matrix, the Table 4 FR / PR / NR and T / P / C / R table, the
Table 5 error types) and one
PNG with the difficulty matrices as heat maps and the FR / PR / NR EMA as bars. Definitions:
`analysis.py`. EMA, PMA and the understanding accuracies are percentages; DS is a total, as in
the authors' evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from geoeval.api import markdown_table, save_figure
from geoeval.suites.maptab.rp.analysis import (
    LEVELS,
    REPEAT_CLASSES,
    SCENARIO_NAMES,
    RPAnalysis,
    category_table,
    difficulty_matrix,
    error_table,
    level_table,
    repetition_table,
)

RP_REPORT_MD = "maptab_rp_report.md"
RP_REPORT_PNG = "maptab_rp_report.png"


def _level_columns() -> list[str]:
    return ["category", *[f"{lv} {m}" for lv in LEVELS for m in ("EMA", "PMA", "DS")]]


def write_rp_report(
    analyses: Sequence[RPAnalysis],
    out_dir: Path,
    models: Sequence[str] = (),
    *,
    plots: bool = True,
    notes: Sequence[str] = (),
) -> list[Path]:
    """The RP report files in `out_dir` (the PNG only with `plots`); none when there is nothing to
    report. `notes`: Markdown parts added at the end (the protocol section)."""
    analyses = list(analyses)
    if not analyses:
        return []
    who = ", ".join(models) or "the model"
    parts = ["# MapTab route planning", f"{who}; {len(analyses)} queries. EMA, PMA in %, DS a total."]
    scenarios = [s for s in SCENARIO_NAMES if any(a.scenario == s for a in analyses)]
    for s in scenarios:
        name = SCENARIO_NAMES[s]
        parts += [
            f"## {name}",
            "### EMA / PMA / DS per category (Table 2 layout)",
            markdown_table(category_table(analyses, s), ["category", "EMA", "PMA", "DS", "n"], floatfmt=".2f"),
        ]
        for attribute, heading in (("map_level", "map"), ("query_level", "query")):
            rows = level_table(analyses, s, attribute)
            if rows:
                parts += [
                    f"### Per category x {heading} difficulty",
                    markdown_table(rows, _level_columns(), floatfmt=".2f"),
                ]
        parts += [
            "### Difficulty matrix (G.2): EMA (%) by map difficulty x query difficulty",
            markdown_table(difficulty_matrix(analyses, s), floatfmt=".2f"),
        ]
        rep = repetition_table(analyses, s)
        if rep:
            parts += [
                "### Route repetition and criteria understanding (Table 4 layout)",
                "FR: the only fewest-station path is optimal; PR: one of several fewest-station paths "
                "is; NR: none is. T/P/C/R: share of criteria queries whose answered route has the "
                "optimum's Total_Time / Total_Price / Average_Comfort Level / Average_Reliability.",
                markdown_table(
                    rep,
                    [
                        "criteria",
                        *[f"{k} {m}" for k in REPEAT_CLASSES for m in ("EMA", "PMA")],
                        "All EMA",
                        "All PMA",
                        "T",
                        "P",
                        "C",
                        "R",
                        "n FR/PR/NR",
                    ],
                    floatfmt=".2f",
                ),
            ]
        errors = error_table(analyses, s)
        if errors:
            parts += [
                "### Error types of wrong answers (Table 5 layout)",
                "Computed from the graph; an answer can carry several types (definitions: geoeval/suites/maptab/rp/analysis.py).",
                markdown_table(errors, ["error type", "count", "error (%)", "overall (%)"], floatfmt=".2f"),
            ]
    parts += list(notes)
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / RP_REPORT_MD
    md.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    if not plots:
        return [md]
    png = _plot(analyses, scenarios, out_dir / RP_REPORT_PNG, title=f"MapTab RP: {who}")
    return [md, png]


def _plot(analyses: list[RPAnalysis], scenarios: list[str], path: Path, *, title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5.5 * len(scenarios), 9), dpi=110)
    FigureCanvasAgg(figure)
    for k, s in enumerate(scenarios):
        axes = figure.add_subplot(2, len(scenarios), k + 1)
        matrix = difficulty_matrix(analyses, s)
        values = [[(row[q] if row[q] is not None else float("nan")) for q in LEVELS] for row in matrix]
        image = axes.imshow(values, vmin=0, vmax=100, cmap="viridis")
        for i, row in enumerate(matrix):
            for j, q in enumerate(LEVELS):
                text = "-" if row[q] is None else f"{row[q]:.1f}\nn={row[f'n {q}']}"
                axes.text(j, i, text, ha="center", va="center", color="white", fontsize=8)
        axes.set_xticks(range(3), LEVELS)
        axes.set_yticks(range(3), LEVELS)
        axes.set_xlabel("query difficulty")
        axes.set_ylabel("map difficulty")
        axes.set_title(f"{SCENARIO_NAMES[s]}: EMA (%)")
        figure.colorbar(image, ax=axes, fraction=0.046)
        bars = figure.add_subplot(2, len(scenarios), len(scenarios) + k + 1)
        rows = repetition_table(analyses, s)
        average: dict[str, Any] = rows[-1] if rows else {}
        heights = [float(average.get(f"{c} EMA") or 0.0) for c in REPEAT_CLASSES]
        bars.bar(list(REPEAT_CLASSES), heights, color=["#4C72B0", "#DD8452", "#C44E52"])
        bars.set_ylim(0, 105)
        bars.set_ylabel("EMA (%)")
        bars.set_title(
            f"{SCENARIO_NAMES[s]}: criteria queries by route repetition ({average.get('n FR/PR/NR', '0/0/0')})",
            fontsize=9,
        )
        bars.grid(True, axis="y", alpha=0.3)
    figure.suptitle(title)
    return save_figure(figure, path, format="png")
