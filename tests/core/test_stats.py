"""Intervals, paired tests and clusters, against values worked out by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from geoeval.core.analysis import stats
from geoeval.core.analysis.aggregate import group_table
from geoeval.core.analysis.stats import (
    cluster_of,
    cluster_standard_error,
    is_binary,
    mcnemar_exact,
    mean_interval,
    paired_comparison,
    sign_flip_test,
    summary_with_intervals,
    wilson_interval,
)
from geoeval.core.records import Dimensions, SampleResult

NAN = math.nan


# -- McNemar -----------------------------------------------------------------------------------


def test_mcnemar_exact_by_hand() -> None:
    # b=8, c=2: n=10, P(X <= 2) = (1 + 10 + 45) / 1024 = 56/1024; two-sided = 112/1024
    assert mcnemar_exact(8, 2) == 0.109375
    assert mcnemar_exact(2, 8) == 0.109375
    # b=0, c=6: 2 * (1/64)
    assert mcnemar_exact(0, 6) == 0.03125
    # ties and no discordant pairs say nothing
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_beyond_exact_integer_range_matches_the_exact_tail() -> None:
    b, c = 1150, 1000  # n = 2150: summed in log space
    n = b + c
    exact = float(2 * Fraction(sum(math.comb(n, i) for i in range(c + 1)), 2**n))
    assert mcnemar_exact(b, c) == pytest.approx(exact, rel=1e-9)


# -- one set of values ------------------------------------------------------------------------


def test_wilson_interval_by_hand() -> None:
    # p = 0.8, n = 10, z = 1.959964: centre 0.71674, half-width 0.22658
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    # no successes: [0, z^2 / (n + z^2)] = [0, 3.8415 / 13.8415]
    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.27753, abs=1e-5)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_standard_error_plain_and_clustered_by_hand() -> None:
    # s^2 = 5/3 over n = 4: SE = sqrt(5/12)
    assert cluster_standard_error([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 12))
    # two clusters with residual totals +1 and -1: SE^2 = 2/1 * (1 + 1) / 4^2 = 1/4
    assert cluster_standard_error([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(0.5)
    assert math.isnan(cluster_standard_error([1, 0], ["a", "a"]))


def test_bootstrap_of_two_values_spans_both() -> None:
    # resampling {0, 1}: means 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4 -> 2.5% = 0, 97.5% = 1
    estimate = mean_interval([0.0, 1.0])
    assert (estimate.value, estimate.low, estimate.high) == (0.5, 0.0, 1.0)
    assert (estimate.n, estimate.n_clusters, estimate.method) == (2, 2, "bootstrap")
    assert estimate.se == pytest.approx(0.5)


def test_clusters_are_resampled_whole() -> None:
    values = [1, 1, 1, 0, 0, 0]
    # six independent samples: the mean of 6 draws is Binomial(6, 1/2)/6; P(0) = 1/64 < 2.5% <
    # P(<= 1) = 7/64, so the percentiles are 1/6 and 5/6
    independent = mean_interval(values)
    assert (independent.low, independent.high) == (pytest.approx(1 / 6), pytest.approx(5 / 6))
    # two clusters of three: only 0, 1/2 and 1 can come out, as for two values
    clustered = mean_interval(values, ["m1"] * 3 + ["m2"] * 3)
    assert (clustered.low, clustered.high, clustered.n, clustered.n_clusters) == (0.0, 1.0, 6, 2)


def test_nan_values_are_skipped_and_n_counts_only_values() -> None:
    estimate = mean_interval([1.0, NAN, 0.0, NAN])
    assert (estimate.value, estimate.n) == (0.5, 2)
    empty = mean_interval([NAN, NAN])
    assert empty.n == 0 and math.isnan(empty.value) and math.isnan(empty.low)
    single_cluster = mean_interval([1.0, 0.0], ["a", "a"])
    assert single_cluster.value == 0.5 and math.isnan(single_cluster.low) and math.isnan(single_cluster.high)


def test_bootstrap_is_seeded() -> None:
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.8]
    assert mean_interval(values, seed=3) == mean_interval(values, seed=3)
    assert mean_interval(values, n_boot=500).low <= 0.5 <= mean_interval(values, n_boot=500).high


def test_is_binary() -> None:
    assert is_binary([0.0, 1.0, NAN, 1.0])
    assert not is_binary([0.0, 0.5])
    assert not is_binary([NAN])


# -- paired tests ------------------------------------------------------------------------------


def test_sign_flip_exact_by_hand() -> None:
    # +-1 +-2 +-3: sums 6 4 2 0 0 -2 -4 -6; |sum| >= 6 in 2 of 8 patterns
    assert sign_flip_test([1, 2, 3]) == (0.25, "sign_flip_exact")
    # differences that cancel, or none at all
    assert sign_flip_test([1, -1]) == (1.0, "sign_flip_exact")
    assert sign_flip_test([0, 0, NAN]) == (1.0, "sign_flip_exact")
    # clusters flip together: totals (2, 2) -> sums 4 0 0 -4 -> p = 2/4
    assert sign_flip_test([1, 1, 2], ["a", "a", "b"]) == (0.5, "sign_flip_exact")


def test_sign_flip_monte_carlo_beyond_the_exact_limit() -> None:
    # 20 clusters all +1: only 2 of 2^20 patterns reach |20|, so almost no random pattern does
    p, name = sign_flip_test([1.0] * 20, n_perm=2000)
    assert name == "sign_flip_monte_carlo"
    assert p == pytest.approx(1 / 2001, abs=2 / 2001)


def test_paired_binary_independent_uses_mcnemar() -> None:
    a = [1] * 8 + [0] * 2 + [1, 1]
    b = [0] * 8 + [1] * 2 + [1, 1]
    result = paired_comparison(a, b)
    assert (result.test, result.p_value, result.only_a, result.only_b) == ("mcnemar_exact", 0.109375, 8, 2)
    assert (result.n, result.mean_a, result.mean_b) == (12, pytest.approx(10 / 12), pytest.approx(4 / 12))
    assert result.difference == pytest.approx(-0.5)
    assert result.low < -0.5 < result.high < 0


def test_paired_continuous_uses_sign_flip_and_pairs_skip_nan() -> None:
    result = paired_comparison([0.1, 0.2, 0.3, NAN], [1.1, 2.2, 3.3, 0.5])
    assert (result.n, result.test, result.p_value) == (3, "sign_flip_exact", 0.25)
    assert result.difference == pytest.approx(2.0)
    # differences 0 and 1: the paired bootstrap spans [0, 1]
    two = paired_comparison([0.0, 0.0], [0.0, 1.0])
    assert (two.low, two.high) == (0.0, 1.0)


def test_paired_binary_in_clusters_uses_the_clustered_sign_flip() -> None:
    result = paired_comparison([1, 1, 0, 0], [0, 0, 0, 1], ["m1", "m1", "m2", "m2"])
    # cluster totals of b - a: -2 and +1 -> sums -1 -3 3 1 -> |sum| >= 1 always
    assert (result.test, result.p_value, result.n_clusters, result.only_a) == ("sign_flip_exact", 1.0, 2, None)


def test_paired_comparison_with_nothing_in_common() -> None:
    result = paired_comparison([NAN], [1.0])
    assert result.n == 0 and result.test == "none" and math.isnan(result.p_value)


# -- clusters ----------------------------------------------------------------------------------


def _result(
    sample_id: str,
    suite: str = "maptab",
    epoch: int = 1,
    level: str = "easy",
    scores: dict[str, float] | None = None,
    status: str = "scored",
    **extra: str,
) -> SampleResult:
    return SampleResult(
        run_hash="r",
        sample_id=sample_id,
        epoch=epoch,
        status=status,
        scores=scores if scores is not None else {"ema": 1.0},
        dims=Dimensions(suite=suite, level=level, extra=extra),
    )


def test_cluster_rule() -> None:
    assert cluster_of(_result("q1", map="cleveland")) == "map:cleveland"
    assert cluster_of(_result("q1", map="cleveland", cluster="line-3")) == "cluster:line-3"
    assert cluster_of(_result("q1", map="cleveland"), "sample") == "sample:q1"
    assert cluster_of(_result("q1", map="cleveland"), "level") == "level:easy"
    assert cluster_of(_result("q1")) == "sample:q1"  # a MapTab sample without a map
    assert cluster_of(_result("c7", suite="lifeplanner", epoch=2)) == "sample:c7"  # epochs together
    assert cluster_of(_result("c7", suite="lifeplanner"), "city") == "sample:c7"


def test_register_cluster_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stats.SUITE_CLUSTER_KEYS, "lifeplanner", "city")
    assert cluster_of(_result("c1", suite="lifeplanner", city="wuhan")) == "city:wuhan"
    stats.register_cluster_key("mapsatisfy", "domain")
    try:
        assert cluster_of(_result("t1", suite="mapsatisfy", domain="dining")) == "domain:dining"
    finally:
        del stats.SUITE_CLUSTER_KEYS["mapsatisfy"]


# -- summary rows ------------------------------------------------------------------------------


def test_summary_with_intervals_extends_group_table() -> None:
    results = [
        _result("a", level="easy", scores={"ema": 1.0, "ds": 2.0}, map="m1"),
        _result("b", level="easy", scores={"ema": 0.0, "ds": 0.0}, map="m2"),
        _result("c", level="hard", scores={"ema": 1.0, "ds": 4.0}, map="m3"),
        _result("d", level="hard", scores={"ema": 0.0, "ds": 0.0}, map="m3", status="error"),
    ]
    rows = summary_with_intervals(results, ["ema", "ds"], ["level"], sum_metrics=frozenset({"ds"}))
    plain = group_table(results, ["level"], ["ema", "ds"], sum_metrics=frozenset({"ds"}))
    assert [{k: row[k] for k in plain[i]} for i, row in enumerate(rows)] == plain
    easy, hard = rows
    # easy: ema values {1, 0} on two maps -> [0, 1]; ds is a total: 2 values, mean CI [0, 2] x 2
    assert (easy["ema"], easy["ema_ci_low"], easy["ema_ci_high"], easy["ema_n"]) == (0.5, 0.0, 1.0, 2)
    assert (easy["ds"], easy["ds_ci_low"], easy["ds_ci_high"]) == (2.0, 0.0, 4.0)
    # hard: one scored sample (the other errored): n 1, no interval from a single cluster
    assert (hard["ema"], hard["ema_n"], hard["n"], hard["n_errors"]) == (1.0, 1, 2, 1)
    assert math.isnan(hard["ema_ci_low"]) and math.isnan(hard["ema_ci_high"])


def test_summary_with_intervals_without_values_gives_none() -> None:
    rows = summary_with_intervals([_result("a", scores={"ema": 1.0, "eff": NAN})], ["eff"])
    assert rows[0]["eff"] is None and rows[0]["eff_ci_low"] is None and rows[0]["eff_n"] == 0


def test_sign_flip_on_independent_binary_pairs_is_mcnemar() -> None:
    for b, c in ((8, 2), (0, 6), (5, 5), (3, 9)):
        differences = [-1.0] * b + [1.0] * c + [0.0] * 4
        assert sign_flip_test(differences)[0] == pytest.approx(mcnemar_exact(b, c))


def test_interval_metrics_are_the_overall_rows_numbers_named_for_mlflow():
    from geoeval.core.analysis.stats import interval_metrics, summary_with_intervals
    from geoeval.core.records import Dimensions, SampleResult

    results = [
        SampleResult(
            run_hash="r",
            sample_id=str(i),
            scores={"ema": float(i % 2), "ds": float(i)},
            dims=Dimensions(suite="maptab"),
        )
        for i in range(6)
    ]
    out = interval_metrics(results, ["ema", "ds", "pma"], sum_metrics=frozenset({"ds"}))
    (row,) = summary_with_intervals(results, ["ema", "ds"], [], sum_metrics=frozenset({"ds"}))
    assert (
        out["ema/n"] == 6.0 and out["ema/ci95_low"] == row["ema_ci_low"] and out["ema/ci95_high"] == row["ema_ci_high"]
    )
    assert out["ds/ci95_high"] == row["ds_ci_high"] > 6  # a total's interval is n times the mean's
    assert not any(key.startswith("pma") for key in out)  # no value, no key
