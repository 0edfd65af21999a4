"""Reports: exact table text, real PNGs, Parquet rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from geoeval.core.analysis.reports import (
    fraction_label,
    markdown_table,
    plot_sweep,
    summary_markdown,
    sweep_table,
    write_per_sample_parquet,
)
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.warehouse.schema import SCORE_COLUMNS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def r(sample_id, scores, *, level="", setting="", task="", model="m", error=None):
    return SampleResult(
        run_hash="run",
        sample_id=sample_id,
        model=model,
        scores=scores,
        error=error,
        dims=Dimensions(suite="maptab", level=level, setting=setting, task=task),
    )


def test_markdown_table_exact_text() -> None:
    rows = [
        {"model": "gpt", "ema": 0.5, "n": 10},
        {"model": "a|b", "ema": 1 / 3, "n": 2, "note": "line\nbreak"},
        {"model": "none", "ema": None, "n": 0},
    ]
    assert markdown_table(rows) == (
        "| model |   ema |   n | note       |\n"
        "| ----- | ----: | --: | ---------- |\n"
        "| gpt   | 0.500 |  10 |            |\n"
        "| a\\|b  | 0.333 |   2 | line break |\n"
        "| none  |       |   0 |            |"
    )


def test_markdown_table_columns_and_format() -> None:
    rows = [{"a": 1.23456, "b": "x", "c": [1, 2]}]
    assert markdown_table(rows, ["c", "a"], floatfmt=".1f") == ("| c    |   a |\n| ---- | --: |\n| 1, 2 | 1.2 |")
    assert markdown_table([], ["a", "b"]) == "| a   | b   |\n| --- | --- |"
    assert markdown_table([]) == ""


def test_summary_markdown_has_overall_then_setting_and_level_tables() -> None:
    results = [
        r("1", {"ema": 1.0, "ds": 1.0}, level="easy", setting="map", model="gpt"),
        r("2", {"ema": 0.0, "ds": 0.0}, level="hard", setting="map", model="gpt"),
        r("3", {"ema": 1.0, "ds": 3.0}, level="hard", setting="edge_tab", model="gpt"),
    ]
    text = summary_markdown(results, ["ema", "ds"], title="MapTab RP", sum_metrics=frozenset({"ds"}))
    # intervals by hand: ema 1, 0, 1 on independent samples; a bootstrap mean is 0 with
    # probability 1/27 (> 2.5%) and 1 with 8/27, so the 95% interval is [0, 1]; ds is a total:
    # the mean's interval [0, 3] times 3 samples
    assert text.startswith(
        "# MapTab RP\n\n3 samples; model: gpt. Metrics are means over samples, except ds "
        "(summed). Brackets: 95% bootstrap interval (clustered where samples share a map; none from a "
        "single cluster); n: samples.\n\nMetrics:\n\n"
        "- **ema**: Exact Match Accuracy (appendix C.1)\n"
        "- **ds**: Difficulty-aware Score (appendix C.1); summed over samples\n\n## Overall\n\n"
        "|   ema | ema 95% CI     |    ds | ds 95% CI      |   n |\n"
        "| ----: | -------------- | ----: | -------------- | --: |\n"
        "| 0.667 | [0.000, 1.000] | 4.000 | [0.000, 9.000] |   3 |\n"
    )
    assert (
        "## By setting and level\n\n"
        "| setting  | level |   ema | ema 95% CI |    ds | ds 95% CI |   n |\n"
        "| -------- | ----- | ----: | ---------- | ----: | --------- | --: |\n"
        "| edge_tab | hard  | 1.000 |            | 3.000 |           |   1 |\n"
        "| map      | easy  | 1.000 |            | 1.000 |           |   1 |\n"
        "| map      | hard  | 0.000 |            | 0.000 |           |   1 |\n"
    ) in text  # one sample: no interval
    assert "## By level" in text and "## By setting\n" in text
    assert "## By task" not in text  # no result has a task
    assert text.endswith("\n")


POINTS = [
    {"resolution": res, "setting": setting, "ema": ema, "pma": pma}
    for setting, values in {
        "map": [(1, 0.9, 0.95), (0.5, 0.7, 0.8), (0.03125, 0.1, 0.2)],
        "edge_tab": [(0.5, 0.6, 0.7), (1, 0.8, 0.9)],
    }.items()
    for res, ema, pma in values
]


def test_fraction_labels() -> None:
    assert [fraction_label(2.0**-k) for k in range(6)] == ["1", "1/2", "1/4", "1/8", "1/16", "1/32"]
    assert fraction_label(4) == "4"
    assert fraction_label(0.3) == "0.3"


def test_sweep_table_exact_text() -> None:
    assert sweep_table(POINTS, "resolution", ["ema", "pma"], by="setting") == (
        "| setting  | resolution |   ema |   pma |\n"
        "| -------- | ---------- | ----: | ----: |\n"
        "| map      | 1          | 0.900 | 0.950 |\n"
        "| map      | 1/2        | 0.700 | 0.800 |\n"
        "| map      | 1/32       | 0.100 | 0.200 |\n"
        "| edge_tab | 1          | 0.800 | 0.900 |\n"
        "| edge_tab | 1/2        | 0.600 | 0.700 |"
    )
    assert sweep_table([{"resolution": 0.25, "ema": 0.5}], "resolution", ["ema", "pma"]) == (
        "| resolution |   ema | pma |\n| ---------- | ----: | --- |\n| 1/4        | 0.500 |     |"
    )


def test_sweep_table_keeps_the_order_of_non_numeric_x() -> None:
    points = [{"job": "b-run", "ema": 0.5}, {"job": "a-run", "ema": 1.0}]
    assert sweep_table(points, "job", ["ema"]) == (
        "| job   |   ema |\n| ----- | ----: |\n| b-run | 0.500 |\n| a-run | 1.000 |"
    )


def test_plot_sweep_writes_a_png(tmp_path: Path) -> None:
    out = plot_sweep(
        POINTS, "resolution", ["ema", "pma"], tmp_path / "plots" / "sweep.png", by="setting",
        title="Resolution sweep",
    )  # fmt: skip
    assert out == tmp_path / "plots" / "sweep.png"
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000
    linear = plot_sweep(POINTS, "resolution", ["ema"], tmp_path / "linear.png", log2_x=False)
    assert linear.read_bytes().startswith(PNG_MAGIC)


def test_plot_sweep_refuses_a_log_axis_over_zero(tmp_path: Path) -> None:
    with pytest.raises(GeoevalError, match="log2_x=False"):
        plot_sweep([{"steps": 0, "ema": 1.0}], "steps", ["ema"], tmp_path / "p.png")
    with pytest.raises(GeoevalError, match="no 'steps'"):
        plot_sweep([{"ema": 1.0}], "steps", ["ema"], tmp_path / "p.png")
    with pytest.raises(GeoevalError, match="non-numeric 'steps'"):
        plot_sweep([{"steps": "many", "ema": 1.0}], "steps", ["ema"], tmp_path / "p.png")


def test_write_per_sample_parquet_has_one_row_per_score(tmp_path: Path) -> None:
    results = [
        r("2", {"pma": 0.5, "ema": 1.0}, level="easy"),
        r("1", {"ema": 0.0}, error="timeout"),
    ]
    table = pq.read_table(write_per_sample_parquet(results, tmp_path / "a" / "s.parquet"))
    assert table.column_names == list(SCORE_COLUMNS)
    rows = table.to_pylist()
    assert [(row["sample_id"], row["metric"], row["value"], row["error"]) for row in rows] == [
        ("1", "ema", None, "timeout"),  # an error has no value, never 0
        ("2", "ema", 1.0, None),
        ("2", "pma", 0.5, None),
    ]
    assert rows[1]["level"] == "easy" and rows[1]["extra"] == "{}"


def test_not_applicable_values_show_as_a_dash():
    from geoeval.core.analysis.reports import format_cell

    assert format_cell(float("nan")) == "–"
    assert format_cell(0.5) == "0.500"


def test_the_sweep_report_reads_the_suites_declarations(tmp_path):
    from geoeval.core.sweep.tables import write_sweep_reports

    points = [
        {
            "job": i,
            "overrides": {"suite.resolution": str(res), "suite.setting": "map"},
            "metrics": {"ema": 1.0 - i / 4, "pma": 0.5, "zeta": 0.1, "n_errors": 0.0},
            "n": 4,
        }
        for i, res in enumerate([1, 0.5, 0.25])
    ]
    declared = write_sweep_reports(
        points, tmp_path, headline_metrics=("pma", "missing"), log2_axes=("suite.resolution",)
    )
    assert declared.metrics == ["pma"]  # the declared headline, where every job has it
    assert "## pma" in declared.markdown and "## ema" not in declared.markdown
    assert (tmp_path / "sweep_plot.png").exists()
    undeclared = write_sweep_reports(points, tmp_path)  # a plugin suite that declares nothing
    assert undeclared.metrics == ["ema", "pma", "zeta"]  # the first overall metrics, never a count


def test_every_sweep_line_has_its_own_marker_dash_and_a_thinner_stroke_than_the_one_before() -> None:
    from geoeval.core.analysis.reports import _line_style

    styles = [_line_style(i, 5) for i in range(5)]
    assert len({(s["marker"], s["linestyle"]) for s in styles}) == 5
    widths = [s["linewidth"] for s in styles]
    sizes = [s["markersize"] for s in styles]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 5
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 5
    # later lines are drawn on top, so a thin line shows inside a thick one it coincides with
    assert [s["zorder"] for s in styles] == sorted(s["zorder"] for s in styles)


def test_a_job_charts_a_dimension_only_when_it_has_groups_to_compare(tmp_path):
    """Two levels get a bar chart; one setting does not (its one group of bars would repeat the
    summary's overall row)."""
    from types import SimpleNamespace

    from geoeval.core.analysis.job_reports import write_job_reports
    from tests.conftest import compose_spec

    spec = compose_spec(tmp_path, "model=table_baseline")
    results = [
        r(f"s{i}", {"ema": 1.0, "pma": 0.5, "ds": 2.0}, level=level, setting="map")
        for i, level in enumerate(["easy", "easy", "hard"])
    ]
    outcome = SimpleNamespace(out_dir=tmp_path / "out", spec=spec, run_hash="run1", results=results, artifacts=[])
    (tmp_path / "out").mkdir()
    names = {p.name for p in write_job_reports(outcome)}
    assert "metrics_by_level.png" in names
    assert "metrics_by_setting.png" not in names  # every sample has the same setting
    assert {"summary.md", "per_sample_scores.parquet"} <= names


def test_the_sweep_plot_draws_each_points_interval_and_sets_equal_lines_side_by_side(tmp_path, monkeypatch) -> None:
    """Two settings with equal scores at every resolution (the main sweep's tables at 1.00) were
    one line hiding the other, with no interval: each group's points now sit a little apart
    along x, each with its 95% interval as an error bar."""
    from matplotlib.axes import Axes

    drawn: dict[str, list] = {"lines": [], "bars": []}
    plot, errorbar = Axes.plot, Axes.errorbar

    def recording_plot(self, xs, ys, *args, **kwargs):
        drawn["lines"].append((kwargs.get("label"), list(xs), list(ys)))
        return plot(self, xs, ys, *args, **kwargs)

    def recording_errorbar(self, xs, ys, yerr=None, **kwargs):
        drawn["bars"].append((list(xs), [list(e) for e in yerr]))
        return errorbar(self, xs, ys, yerr=yerr, **kwargs)

    monkeypatch.setattr(Axes, "plot", recording_plot)
    monkeypatch.setattr(Axes, "errorbar", recording_errorbar)
    equal = [
        {"resolution": res, "setting": setting, "ema": 1.0, "ema/ci95_low": 0.8, "ema/ci95_high": 1.0}
        for setting in ("map", "edge_tab")
        for res in (1, 0.5)
    ]
    plot_sweep(equal, "resolution", ["ema"], tmp_path / "sweep.png", by="setting")
    (_, map_x, map_y), (_, edge_x, edge_y) = drawn["lines"]
    assert map_y == edge_y == [1.0, 1.0]
    assert all(a != b for a, b in zip(map_x, edge_x))  # side by side, not on top of each other
    assert all(abs(a / b - 1) < 0.2 for a, b in zip(map_x, edge_x))  # and still at their resolution
    assert [yerr for _, yerr in drawn["bars"]] == [
        [[pytest.approx(0.2)] * 2, [0.0, 0.0]]
    ] * 2  # 1.0 - 0.8 below, none above
