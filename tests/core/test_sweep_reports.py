"""The sweep table a reader gets: a grid of the swept axes per headline metric, each cell a mean
with its 95% interval, n, the legend, points that reused another's samples marked, the offline
note, one row per point; and tables fitted to a 120-column console."""

from __future__ import annotations

from geoeval.core.analysis.console import TERMINAL_WIDTH, fit_tables, table_width
from geoeval.core.sweep.tables import metric_grid, reused_from, write_sweep_reports

RESOLUTIONS = ["1", "0.5", "0.25"]
SETTINGS = ["map", "edge_tab"]


def _points() -> list[dict]:
    """3 resolutions x 2 settings; the edge_tab points share one run (resolution does not change
    an edge-table sample)."""
    points = []
    for job, (setting, res) in enumerate((s, r) for s in SETTINGS for r in RESOLUTIONS):
        ema = float(res) if setting == "map" else 1.0
        points.append(
            {
                "job": job,
                "overrides": {"suite.resolution": res, "suite.setting": setting, "+experiment": "x"},
                "metrics": {
                    "ema": ema,
                    "ema/ci95_low": ema / 2,
                    "ema/ci95_high": min(1.0, ema + 0.1),
                    "pma": ema,
                    "cost_usd": 0.0,
                },
                "counts": {"n_errors": 0},
                "n": 24,
                "run_hash": "edge" if setting == "edge_tab" else f"map{res}",
            }
        )
    return points


def test_each_headline_metric_is_a_grid_of_settings_by_resolution_with_intervals(tmp_path):
    report = write_sweep_reports(_points(), tmp_path, headline_metrics=("ema",), suites=("maptab",), note="Offline!")
    grid = report.markdown.split("## ema: resolution across\n\n")[1].split("\n\n")[0].splitlines()
    assert grid[0].replace(" ", "") == "|setting|1|1/2|1/4|"  # resolution 1 first
    assert len(grid) == 2 + len(SETTINGS)  # header, rule, one row per setting
    map_row = next(line for line in grid if line.startswith("| map "))
    assert "0.25 [0.12,0.35]" in map_row and "1.00 [0.50,1.00]" in map_row
    assert "n = 24 samples per point" in report.markdown
    assert "95% bootstrap interval" in report.markdown
    assert "- **ema**: Exact Match Accuracy" in report.markdown  # the legend
    assert "> Offline!" in report.markdown


def test_points_that_share_a_run_are_marked_reused_and_every_point_has_a_row(tmp_path):
    points = _points()
    report = write_sweep_reports(points, tmp_path, headline_metrics=("ema",))
    assert [row["point"] for row in report.rows] == [
        f"resolution={r} setting={s}" for s in SETTINGS for r in RESOLUTIONS
    ]  # the MLflow child runs' names
    reused = [row["reused"] for row in report.rows]
    assert reused[:4] == ["", "", "", ""]
    assert reused[4:] == ["reused, not re-run: resolution=1 setting=edge_tab"] * 2
    edge_row = next(line for line in report.markdown.split("## ema")[1].splitlines() if line.startswith("| edge_tab"))
    assert edge_row.count("*") == 2  # the two reused cells, not the one that ran
    assert "## Reused, not re-run (*)" in report.markdown
    every_point = report.markdown.split("## Every point")[1]
    assert sum(1 for line in every_point.splitlines() if line.startswith("| resolution=")) == len(points)
    assert "## Every point" not in report.terminal  # the console gets the grids, the file every row


def test_reused_from_names_the_first_point_of_a_run():
    points = [{"run_hash": "a"}, {"run_hash": "b"}, {"run_hash": "a"}, {"run_hash": None}]
    assert reused_from(points, ["p0", "p1", "p2", "p3"]) == [None, None, "p0", None]


def test_a_grid_too_wide_for_the_console_is_turned_when_that_fits():
    settings = ["map", "edge_tab", "map_edge_tab", "map_edge_tab_vertex_tab", "map_mix_tab"]
    resolutions = ["1", "0.5", "0.25", "0.125", "0.0625", "0.03125"]
    points = [
        {
            "job": i,
            "overrides": {"suite.resolution": r, "suite.setting": s},
            "metrics": {"ema": 0.5, "ema/ci95_low": 0.25, "ema/ci95_high": 0.75},
        }
        for i, (s, r) in enumerate((s, r) for s in settings for r in resolutions)
    ]
    reused = [
        "resolution=1 setting=edge_tab" if p["overrides"]["suite.setting"] == "edge_tab" else None for p in points
    ]
    reused[resolutions.index("1") + len(resolutions)] = None  # the edge_tab point that ran
    grid, heading = metric_grid(points, reused, "ema", ["suite.resolution", "suite.setting"])
    assert table_width(grid) <= TERMINAL_WIDTH
    assert heading == "## ema: setting across" and grid.startswith("| resolution ")  # resolutions down
    assert grid.count("*") == len(resolutions) - 1


def test_fit_tables_splits_a_wide_table_into_blocks_that_repeat_the_label_columns():
    metrics = [f"metric_{i}" for i in range(6)]
    header = "| task | level | " + " | ".join(f"{m} | {m} 95% CI" for m in metrics) + " |"
    rule = "| ---- | ----- | " + " | ".join("--------: | ---------------" for _ in metrics) + " |"
    row = "| t1   | l0    | " + " | ".join("    0.500 | [0.250, 0.750]" for _ in metrics) + " |"
    text = f"# Title\n\n{header}\n{rule}\n{row}\n\n" + "prose " * 40
    fitted = fit_tables(text)
    lines = fitted.splitlines()
    assert max(len(line) for line in lines) <= TERMINAL_WIDTH
    assert lines[0] == "# Title" and lines[-1].startswith("prose")
    headers = [line for line in lines if line.startswith("| task")]
    assert len(headers) >= 2  # split, every block labelled by task and level
    assert all("| level |" in h for h in headers)
    for h in headers:  # a metric and its interval in the same block
        cells = [c.strip() for c in h.strip("|").split("|")]
        assert all(f"{c} 95% CI" in cells for c in cells if c.startswith("metric_") and "CI" not in c)
    assert sum(h.count("95% CI") for h in headers) == len(metrics)  # no column lost
    rules = [line for line in lines if line.startswith("| ----")]
    assert all(set(line) <= {"|", "-", ":", " "} for line in rules)
    assert fit_tables("| a | b |\n| - | - |") == "| a | b |\n| - | - |"  # a narrow table is left alone
