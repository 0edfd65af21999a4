"""after_run reports: the Table 1/2 layout and the Figure 5 groupings, hand-computed."""

from __future__ import annotations

import math

import pytest

from geoeval.core.records import Dimensions, SampleResult
from geoeval.suites.mapsatisfy.reports import (
    grouped,
    model_table,
    profile_call_markdown,
    profile_call_rates,
    tables_markdown,
    write_reports,
)


def _result(sid, model, thinking, domain, level, source, caps=(), **scores):
    base = {"ecr": 1.0, "iisr": 1.0, "ar": 1.0, "ts": 1.0, "ifs": 1.0, "eff": 1.0, "ses": 1.0}
    return SampleResult(
        run_hash="h",
        sample_id=sid,
        model=model,
        scores={**base, **scores},
        dims=Dimensions(
            suite="mapsatisfy",
            level=level,
            capabilities=tuple(caps),
            extra={"thinking": thinking, "domain": domain, "implicit_factor_source": source},
        ),
    )


RESULTS = [
    _result("a", "m1", "off", "search", "l1", "context", ecr=0.5, eff=math.nan),
    _result("b", "m1", "off", "navigation", "l2", "context;preference", ecr=1.0, eff=0.4),
    _result("c", "m1", "on", "search", "l1", "preference", ecr=0.0),
    _result("d", "m2", "off", "search", "l3", "spatio_temporal", ecr=0.25),
]


def test_table_means_per_model_and_thinking_skip_undefined_values():
    t = model_table(RESULTS)
    assert set(t) == {("m1", "off"), ("m1", "on"), ("m2", "off")}
    assert t[("m1", "off")]["ecr"] == 0.75 and t[("m1", "off")]["n"] == 2
    assert t[("m1", "off")]["eff"] == 0.4  # the NaN of case a is skipped, not averaged
    assert t[("m1", "on")]["ecr"] == 0.0


def test_errored_samples_are_left_out():
    bad = RESULTS[0].model_copy(update={"error": "boom", "scores": {**RESULTS[0].scores, "ecr": 0.0}})
    assert model_table([bad, RESULTS[1]])[("m1", "off")]["ecr"] == 1.0


def test_groupings_count_multi_label_sources_in_each_group():
    by_source = grouped(RESULTS, "implicit_factor_source")
    assert by_source[("m1", "context")]["n"] == 2 and by_source[("m1", "context")]["ecr"] == 0.75
    assert by_source[("m1", "preference")]["ecr"] == 0.5  # cases b (1.0) and c (0.0)
    by_domain = grouped(RESULTS, "domain")
    assert by_domain[("m1", "search")]["ecr"] == 0.25
    assert grouped(RESULTS, "difficulty")[("m2", "l3")]["ecr"] == 0.25


def test_markdown_has_table_1_and_table_2_when_thinking_varies():
    text = tables_markdown(RESULTS)
    assert "Table 1 layout: thinking off" in text and "Table 2 layout: thinking on" in text
    assert "| m1 | 2 | 0.7500 | 1.0000 | 1.0000 | 1.0000 | 1.0000 | 0.4000 | 1.0000 |" in text
    assert "Table 2" not in tables_markdown(RESULTS[:2])


def test_write_reports_markdown_and_png(tmp_path):
    paths = write_reports(RESULTS, tmp_path)
    assert [p.name for p in paths] == ["results.md", "groups.md", "by_domain.png", "by_difficulty.png"]
    for p in paths[2:]:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## By implicit-factor source" in paths[1].read_text(encoding="utf-8")
    assert write_reports([], tmp_path / "none") == []


@pytest.mark.parametrize("value", [math.nan])
def test_a_metric_undefined_everywhere_shows_a_dash(value):
    text = tables_markdown([_result("x", "m", "off", "search", "l1", "context", eff=value)])
    assert "| - |" in text


def test_profile_call_rate_over_all_cases_and_where_a_profile_tool_is_expected():
    results = [
        _result("a", "m", "off", "search", "l1", "preference", caps=("profile_evidence",), profile_call=1.0),
        _result("b", "m", "off", "search", "l1", "preference", caps=("profile_evidence",), profile_call=0.0),
        _result("c", "m", "off", "search", "l1", "context", profile_call=0.0),
        _result("d", "m", "off", "search", "l1", "context", profile_call=1.0),
    ]
    rates = profile_call_rates(results)
    assert rates[("m", "off, all cases")] == (0.5, 4)
    assert rates[("m", "off, profile tool expected")] == (0.5, 2)
    assert rates[("m", "off, all cases")] == profile_call_rates(results[::-1])[("m", "off, all cases")]
    assert profile_call_rates(results[2:]) == {("m", "off, all cases"): (0.5, 2)}
    assert "| m | off, profile tool expected | 0.5000 | 2 |" in profile_call_markdown(results)
    assert profile_call_markdown(RESULTS) == ""  # no profile_call scores: no section
