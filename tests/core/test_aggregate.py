"""Aggregation against values computed by hand."""

from __future__ import annotations

import math

import pytest

from geoeval.core.analysis.aggregate import aggregate, group_table, metric_key_part
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions, SampleResult

#: MapTab's metric set declares DS a total (conf/metrics/maptab_rp.yaml); the core sums nothing by default
DS = frozenset({"ds"})


def r(sample_id, scores, *, level="", task="", setting="", caps=(), extra=None, error=None,
      model="m") -> SampleResult:  # fmt: skip
    return SampleResult(
        run_hash="run",
        sample_id=sample_id,
        model=model,
        scores=scores,
        error=error,
        dims=Dimensions(
            suite="maptab",
            task=task,
            level=level,
            setting=setting,
            capabilities=tuple(caps),
            extra=extra or {},
        ),
    )


# Four samples. By hand:
#   ema: 1, 0, 1 and r4 errored (NaN, skipped)      -> mean 2/3
#   ds:  1, 0, 3, 0                                -> sum 4
#   pma: only r1 (0.5) and r3 (1.0)                 -> mean 0.75
RESULTS = [
    r("r1", {"ema": 1.0, "ds": 1.0, "pma": 0.5}, level="easy", task="A", setting="map",
      caps=("x",)),
    r("r2", {"ema": 0.0, "ds": 0.0}, level="easy", task="B", setting="map+edge_tab",
      caps=("x", "y")),
    r("r3", {"ema": 1.0, "ds": 3.0, "pma": 1.0}, level="hard", task="A", setting="map",
      caps=("y",)),
    r("r4", {"ema": 0.0, "ds": 0.0}, level="hard", error="model timed out"),
]  # fmt: skip


def test_aggregate_matches_hand_computed_values() -> None:
    expected = {
        "ema": 2 / 3,
        "ema/easy": 0.5,  # r1 1, r2 0
        "ema/hard": 1.0,  # r3 1; r4 errored and has no value
        "ema/A/easy": 1.0,
        "ema/B/easy": 0.0,
        "ema/A/hard": 1.0,  # r4 has no task, so no task x level key for it
        "ema/task/A": 1.0,
        "ema/task/B": 0.0,
        "ema/setting/map": 1.0,
        "ema/setting/map_edge_tab": 0.0,  # "+" sanitised
        "ema/capability/x": 0.5,  # r1, r2
        "ema/capability/y": 0.5,  # r2, r3
        "ds": 4.0,
        "ds/easy": 1.0,
        "ds/hard": 3.0,
        "ds/A/easy": 1.0,
        "ds/B/easy": 0.0,
        "ds/A/hard": 3.0,
        "ds/task/A": 4.0,
        "ds/task/B": 0.0,
        "ds/setting/map": 4.0,
        "ds/setting/map_edge_tab": 0.0,
        "ds/capability/x": 1.0,
        "ds/capability/y": 3.0,
        "pma": 0.75,
        "pma/easy": 0.5,
        "pma/hard": 1.0,
        "pma/A/easy": 0.5,
        "pma/A/hard": 1.0,
        "pma/task/A": 0.75,
        "pma/setting/map": 0.75,
        "pma/capability/x": 0.5,
        "pma/capability/y": 1.0,
    }
    got = aggregate(RESULTS, sum_metrics=DS)
    assert got == expected
    assert list(got) == sorted(got)  # deterministic order


def test_sum_metrics_can_be_chosen() -> None:
    got = aggregate(RESULTS, sum_metrics=frozenset({"ema"}))
    assert got["ema"] == 2.0 and got["ema/hard"] == 1.0
    assert got["ds"] == 4 / 3  # ds is now averaged over the scored: (1 + 0 + 3) / 3


def test_every_key_is_a_valid_mlflow_metric_name() -> None:
    odd = [
        r("a", {"ema": 1.0, "acc@1": 0.5}, level="Easy!", task="ä/b", setting="map+edge tab",
          caps=("geo:reason",)),
    ]  # fmt: skip
    got = aggregate(odd)
    for key in got:
        assert all(c.isascii() and (c.isalnum() or c in "_-. /") for c in key), key
    assert "ema/setting/map_edge tab" in got
    assert "ema/__b/Easy_" in got  # "ä/b" -> "__b": the slash cannot add a key level
    assert "acc_1/capability/geo_reason" in got
    assert metric_key_part("map+edge_tab+vertex_tab") == "map_edge_tab_vertex_tab"


def test_two_groups_that_sanitise_to_one_key_are_refused() -> None:
    with pytest.raises(ValueError, match="map_edge"):
        aggregate([r("a", {"ema": 1.0}, setting="map+edge"), r("b", {"ema": 0.0}, setting="map_edge")])


def test_empty_dimensions_make_no_keys_and_no_results_make_nothing() -> None:
    assert aggregate([r("a", {"ema": 0.25}), r("b", {"ema": 0.75})]) == {"ema": 0.5}
    assert aggregate([]) == {}


def test_a_capability_listed_twice_counts_its_sample_once() -> None:
    got = aggregate([r("a", {"ds": 2.0}, caps=("x", "x"))], sum_metrics=DS)
    assert got["ds/capability/x"] == 2.0


def test_group_table_by_setting_and_level() -> None:
    rows = group_table(RESULTS, ["setting", "level"], ["ema", "ds", "pma"], sum_metrics=DS)
    assert rows == [
        # r4 errored: no value in any metric, and counted in n_errors (shown once any result errored)
        {"setting": "", "level": "hard", "ema": None, "ds": None, "pma": None, "n": 1, "n_errors": 1},
        {"setting": "map", "level": "easy", "ema": 1.0, "ds": 1.0, "pma": 0.5, "n": 1, "n_errors": 0},
        {"setting": "map", "level": "hard", "ema": 1.0, "ds": 3.0, "pma": 1.0, "n": 1, "n_errors": 0},
        {"setting": "map+edge_tab", "level": "easy", "ema": 0.0, "ds": 0.0, "pma": None, "n": 1, "n_errors": 0},
    ]


def test_group_table_orders_levels_as_the_papers_do() -> None:
    levels = ["hard", "easy", "medium", "extreme", "easy"]
    results = [r(str(i), {"ema": 1.0}, level=level) for i, level in enumerate(levels)]
    assert [(row["level"], row["n"]) for row in group_table(results, ["level"], ["ema"])] == [
        ("easy", 2),
        ("medium", 1),
        ("hard", 1),
        ("extreme", 1),
    ]


def test_group_table_by_extra_key_model_and_capabilities() -> None:
    results = [
        r("a", {"ema": 1.0, "ds": 2.0}, extra={"query_level": "q1"}, caps=("x", "y"), model="m1"),
        r("b", {"ema": 0.0, "ds": 1.0}, extra={"query_level": "q1"}, caps=("y",), model="m2"),
        r("c", {"ema": 0.5, "ds": 4.0}, extra={"query_level": "q2"}, model="m1"),
        r("d", {"ema": 0.25, "ds": 8.0}, model="m1"),  # no query_level: groups under ""
    ]
    assert group_table(results, ["query_level"], ["ema", "ds"], sum_metrics=DS) == [
        {"query_level": "", "ema": 0.25, "ds": 8.0, "n": 1},
        {"query_level": "q1", "ema": 0.5, "ds": 3.0, "n": 2},
        {"query_level": "q2", "ema": 0.5, "ds": 4.0, "n": 1},
    ]
    assert group_table(results, ["model"], ["ema"]) == [
        {"model": "m1", "ema": 1.75 / 3, "n": 3},
        {"model": "m2", "ema": 0.0, "n": 1},
    ]
    assert group_table(results, ["capabilities"], ["ds"], sum_metrics=DS) == [
        {"capabilities": "", "ds": 12.0, "n": 2},
        {"capabilities": "x", "ds": 2.0, "n": 1},
        {"capabilities": "y", "ds": 3.0, "n": 2},
    ]


def test_group_table_with_no_dimensions_is_one_overall_row() -> None:
    assert group_table(RESULTS, [], ["ema", "ds", "pma", "missing"], sum_metrics=DS) == [
        {"ema": 2 / 3, "ds": 4.0, "pma": 0.75, "missing": None, "n": 4, "n_errors": 1}
    ]
    assert group_table([], ["level"], ["ema"]) == []


def test_group_table_names_the_dimensions_there_are_when_one_is_unknown() -> None:
    with pytest.raises(GeoevalError, match=r"unknown dimension 'levle'.*level.*query_level"):
        group_table([r("a", {"ema": 1.0}, extra={"query_level": "q1"})], ["levle"], ["ema"])


def test_mean_uses_exact_summation() -> None:
    results = [r(str(i), {"ema": 0.1}) for i in range(10)]
    assert aggregate(results)["ema"] == 0.1
    assert not math.isnan(group_table(results, [], ["ema"])[0]["ema"])


def test_nan_scores_are_skipped_not_averaged():
    from geoeval.core.analysis.aggregate import aggregate
    from geoeval.core.records import Dimensions, SampleResult

    def r(sid, eff, level):
        return SampleResult(
            run_hash="h", sample_id=sid, scores={"eff": eff, "ar": 1.0}, dims=Dimensions(suite="s", level=level)
        )

    out = aggregate([r("a", 0.5, "l0"), r("b", float("nan"), "l0"), r("c", float("nan"), "l1")])
    assert out["eff"] == 0.5  # mean over the applicable sample only
    assert out["eff/l0"] == 0.5
    assert "eff/l1" not in out  # nothing applicable at l1
    assert out["ar"] == 1.0 and out["ar/l1"] == 1.0


def test_declared_report_dimensions_split_every_metric() -> None:
    results = [
        r("1", {"ema": 1.0, "ds": 2.0}, extra={"scenario": "metromap"}),
        r("2", {"ema": 0.0, "ds": 0.0}, extra={"scenario": "metromap"}),
        r("3", {"ema": 1.0, "ds": 3.0}, extra={"scenario": "travelmap"}),
        r("4", {"ema": 1.0, "ds": 1.0}),
    ]  # no scenario: in no scenario split
    out = aggregate(results, sum_metrics=frozenset({"ds"}), report_dimensions=("scenario",))
    assert out["ema/scenario/metromap"] == 0.5 and out["ema/scenario/travelmap"] == 1.0
    assert out["ds/scenario/metromap"] == 2.0  # DS is a total
    assert not any("scenario" in key for key in aggregate(results))  # only when declared
