"""LifePlanner reports (Tables 2 and 3, Figures 5 and 6) on hand-built results."""

from __future__ import annotations

import math

import pytest

from geoeval.core.records import Dimensions, SampleResult
from geoeval.suites.lifeplanner.reports import (
    exceedance,
    exceedance_curves,
    failure_split,
    failure_table,
    level_means,
    pass_rates,
    pr_table,
    protocol_section,
    write_reports,
)

NAN = math.nan


def result(sid, task, level, model="m1", **scores):
    return SampleResult(
        run_hash="r",
        sample_id=sid,
        model=model,
        scores=scores,
        dims=Dimensions(suite="lifeplanner", task_family=task, task=f"{task}_{level}", level=level),
    )


RESULTS = [
    result("p0a", "place", "l0", pr=1.0, a=1.0, sc=NAN, te=1.0, input_tokens=1000, output_tokens=200),
    result("p0b", "place", "l0", pr=0.0, a=0.0, sc=NAN, te=0.5, input_tokens=3000, output_tokens=0),
    result("t1", "trip", "l1", pr=1.0, a=1.0, sc=1.0, te=0.25, oc=1.0, input_tokens=10000, output_tokens=0),
    result("t2", "trip", "l2", pr=0.0, a=1.0, sc=0.5, te=0.5, oc=0.0, input_tokens=0, output_tokens=0),
    result("r2", "routing", "l2", model="m2", pr=1.0, a=1.0, sc=0.95, te=1.0, oc=1.0),
]


def test_pass_rates_per_model_task_and_level():
    rates = pass_rates(RESULTS)
    assert set(rates) == {"m1", "m2"}
    assert rates["m1"][("place", "l0")] == 0.5
    assert rates["m1"][("trip", "l1")] == 1.0 and rates["m1"][("trip", "l2")] == 0.0
    assert rates["m1"][("routing", "l2")] is None
    assert rates["m2"][("routing", "l2")] == 1.0


def test_pr_table_has_table_2_layout():
    lines = pr_table(RESULTS).splitlines()
    assert lines[0].startswith("| model | Place L0 | Place L1 | Place L2 | Nearby L0")
    assert lines[0].endswith("| Trip L1 | Trip L2 | Avg. |")
    # m1: place L0 50.0, trip L1 100, trip L2 0, the rest "-"; average over its 4 cases = 50.0
    assert lines[2] == "| m1 | 50.0 | - | - | - | - | - | - | - | - | 100.0 | 0.0 | 50.0 |"
    assert lines[3].startswith("| m2 |") and lines[3].endswith("| 100.0 | - | - | 100.0 |")


def test_level_means_skip_metrics_that_do_not_apply():
    means = level_means(RESULTS)
    assert means["sc"]["l0"] is None  # NaN everywhere at L0: Table 3's "-"
    assert means["sc"]["l2"] == pytest.approx(0.725)
    assert means["te"]["l0"] == 0.75
    assert means["input_tokens"]["l0"] == 2000


def test_exceedance_counts_values_at_or_above_each_threshold():
    assert exceedance([0.0, 0.5, 0.9, 1.0], [0.0, 0.5, 0.91, 1.0]) == [1.0, 0.75, 0.25, 0.25]
    with pytest.raises(ValueError):
        exceedance([], [0.5])
    curves = exceedance_curves(RESULTS, ["sc"], ts=[0.0, 0.9, 1.0])
    assert set(curves["sc"]) == {"l1", "l2"}  # SC never applies at L0
    assert curves["sc"]["l2"] == [1.0, 0.5, 0.0]


def test_failure_split_is_a_share_of_calls_per_level():
    split = failure_split(
        [
            ("l0", {"ok": 3, "parameter_error": 1}),
            ("l0", {"ok": 2, "truncated": 1, "empty": 1}),
            ("l2", {"ok": 0, "empty": 2}),
        ]
    )
    assert split["l0"] == {"calls": 8.0, "parameter_error": 0.125, "truncated": 0.125, "empty": 0.125}
    assert split["l2"]["empty"] == 1.0
    assert split["all"]["calls"] == 10.0 and split["all"]["empty"] == 0.3
    assert "l1" not in split
    assert "| L0 | 8 | 12.5 | 12.5 | 12.5 |" in failure_table(split)


def test_write_reports_writes_markdown_and_pngs(tmp_path):
    paths = write_reports(RESULTS, tmp_path, [("l0", {"ok": 1, "empty": 1})])
    names = sorted(p.name for p in paths)
    assert names == ["exceedance.png", "lifeplanner_report.md", "tool_failures.png"]
    for p in paths:
        assert p.stat().st_size > 0
    md = (tmp_path / "lifeplanner_report.md").read_text()
    assert "Table 2" in md and "Table 3" in md and "Figure 5" in md and "Figure 6" in md
    assert (tmp_path / "exceedance.png").read_bytes()[:4] == b"\x89PNG"


def test_the_report_counts_and_shows_the_samples_the_protocols_score_differently(tmp_path):
    differ = result("t9", "trip", "l1", pr=1.0, a=1.0)
    differ.details = {
        "protocol_disagreement": {"pr": {"robust": 1.0, "paper": 0.0}, "a": {"robust": 1.0, "paper": 0.0}},
        "reading": ["vehicle synonym 'car' read as 'driving'"],
    }
    section = protocol_section([*RESULTS, differ])
    assert section.startswith("1 of 6 samples score differently")
    assert "| t9 | a: 1.00 / 0.00, pr: 1.00 / 0.00 | vehicle synonym 'car' read as 'driving' |" in section
    assert protocol_section(RESULTS).startswith("0 of 5 samples")
    write_reports([*RESULTS, differ], tmp_path, plots=False)
    assert "1 of 6 samples score differently" in (tmp_path / "lifeplanner_report.md").read_text()
