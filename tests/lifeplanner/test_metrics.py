"""Section 3.2 metrics on hand-computed values, and Table 11's applicability."""

from __future__ import annotations

import math

import pytest

from geoeval.suites.lifeplanner import metrics as M
from geoeval.suites.lifeplanner.metrics import (
    APPLICABLE,
    Requirement,
    attribute_accuracy,
    case_scores,
    discordant_pairs,
    information_grounding,
    normalize_task_level,
    order_consistency,
    parse_case_type,
    pass_rate,
    place_set_iou,
    reasoning_purity,
    routing_deviation,
    satisfies,
    semantic_constraint,
    token_usage,
    tool_efficiency,
)

# ------------------------------------------------------------------ A (eq. 1)

SHANCAI = {
    "place_id": "B0SHANCAI1",
    "rating": 4.2,
    "cost": 21,
    "distance_m": 121,
    "opentime_week": "Monday-Sunday 10:00-21:00",
    "place_type": "Food & Beverages|Chinese Restaurant",
    "tag": "Dish: Hot dry noodles; Service: Delivery",
}


def test_attribute_accuracy_nearby_l0_example():
    # Figure 1: "within 500m of Building 126, rating >= 4.0, cost <= 100 CNY" -> Shancai Noodle (4.2, 21, 121 m)
    reqs = [Requirement("distance_m", "<=", 500), Requirement("rating", ">=", 4.0), Requirement("cost", "<=", 100)]
    assert attribute_accuracy([SHANCAI], reqs) == 1.0
    assert attribute_accuracy([SHANCAI, {**SHANCAI, "rating": 3.9}], reqs) == 0.0  # one place fails: 0
    assert attribute_accuracy([{**SHANCAI, "cost": None}], reqs) == 0.0  # unknown cost fails
    assert attribute_accuracy([], reqs) == 0.0  # no answer
    assert attribute_accuracy([SHANCAI], []) == 1.0


def test_attribute_accuracy_boundaries_and_ops():
    assert satisfies({"rating": 4.0}, Requirement("rating", ">=", 4.0))
    assert not satisfies({"rating": 4.0}, Requirement("rating", ">", 4.0))
    assert satisfies({"cost": 100}, Requirement("cost", "<=", 100.0))
    assert not satisfies({"cost": "cheap"}, Requirement("cost", "<=", 100))
    assert satisfies(SHANCAI, Requirement("tag", "contains", "hot DRY noodles"))
    assert satisfies(SHANCAI, Requirement("tag", "not_contains", "Corgi"))
    assert satisfies({"tags": ["Corgi", "Shiba Inu"]}, Requirement("tags", "contains", "corgi"))
    assert satisfies(SHANCAI, Requirement("place_type", "in", ["Food & Beverages|Chinese Restaurant", "x"]))
    # opening hours: open at 20:40 on a Monday, closed at 21:00
    assert satisfies(SHANCAI, Requirement("opentime_week", "open_at", ("Monday", "20:40")))
    assert not satisfies(SHANCAI, Requirement("opentime_week", "open_at", ("Monday", "21:00")))
    assert satisfies(SHANCAI, Requirement("opentime_week", "closed_at", (0, "21:00")))
    assert not satisfies({"opentime_week": "garbled"}, Requirement("opentime_week", "open_at", (0, "12:00")))
    with pytest.raises(ValueError):
        Requirement("rating", "~=", 4)


def test_attribute_accuracy_place_perception_values_and_verdicts():
    # "What are the opening hours for Songbencang Yakiniku?" -> "Monday-Sunday 11:00-22:30"
    req = [Requirement("value", "==", "Monday-Sunday 11:00-22:30")]
    assert attribute_accuracy([{"value": "monday-sunday  11:00-22:30"}], req) == 1.0
    assert attribute_accuracy([{"value": "Monday-Sunday 11:00-22:00"}], req) == 0.0
    # "Is Boyi Optical an authorized Zeiss store?" -> True
    verdict = [Requirement("value", "==", True)]
    assert attribute_accuracy([{"value": "True"}], verdict) == 1.0
    assert attribute_accuracy([{"value": "yes"}], verdict) == 1.0
    assert attribute_accuracy([{"value": False}], verdict) == 0.0
    assert attribute_accuracy([{"value": 1}], verdict) == 0.0  # a number is not a verdict
    assert attribute_accuracy([{"value": 26.0}], [Requirement("value", "==", 26)]) == 1.0


# ------------------------------------------------------------------ PIoU (eq. 2)


def test_place_set_iou():
    assert place_set_iou(["a", "b", "c"], ["b", "c", "d"]) == pytest.approx(2 / 4)
    assert place_set_iou(["a"], ["a"]) == 1.0
    assert place_set_iou(["a", "a", "b"], ["a", "b"]) == 1.0  # sets: duplicates do not count
    assert place_set_iou(["x"], ["a", "b"]) == 0.0
    assert place_set_iou([], ["a"]) == 0.0
    assert place_set_iou([], []) == 1.0


# ------------------------------------------------------------------ RD (eq. 3)


def test_routing_deviation():
    # Figure 8: reference 8618 m / 726 s
    assert routing_deviation(8618, 8618, 1.0) == 1.0
    assert routing_deviation(9000, 8618, 1.0) == pytest.approx(1 - 382 / 8618)
    assert routing_deviation(8000, 8618, 0.5) == pytest.approx(0.5 * (1 - 618 / 8618))
    assert routing_deviation(800, 726, 2 / 3) == pytest.approx(2 / 3 * (1 - 74 / 726))
    assert routing_deviation(2000, 726, 1.0) == 0.0  # more than twice off: clipped at 0
    assert routing_deviation(None, 726, 1.0) == 0.0
    assert routing_deviation("n/a", 726, 1.0) == 0.0
    assert routing_deviation("726", 726, 1.0) == 1.0
    assert routing_deviation(-5, 726, 1.0) == 0.0
    assert routing_deviation(0, 0, 0.75) == 0.75
    assert routing_deviation(3, 0, 0.75) == 0.0


# ------------------------------------------------------------------ OC (eq. 4)


def test_order_consistency_hand_computed():
    ref = ["S", "A", "B", "C", "E"]
    piou = 1.0
    assert order_consistency(ref, ref, piou) == 1.0
    # one adjacent swap among 5: D = 1, C(5,2) = 10
    assert order_consistency(["S", "B", "A", "C", "E"], ref, piou) == pytest.approx(0.9)
    # fully reversed: D = C(n,2) -> 0
    assert order_consistency(list(reversed(ref)), ref, piou) == 0.0
    # Figure 7 (right): Xinjiang -> Hurom -> GANSO instead of Xinjiang -> GANSO -> Hurom
    fig7_ref = ["Start", "Xinjiang", "GANSO", "Hurom", "Jiesifeier"]
    fig7 = ["Start", "Xinjiang", "Hurom", "GANSO", "Jiesifeier"]
    assert order_consistency(fig7, fig7_ref, 1.0) == pytest.approx(1 - 1 / 10)
    # a wrong waypoint: s = [S, B, A, E] (X dropped), n = 4, D = 1 (B before A), PIoU = 4/6
    pred = ["S", "B", "X", "A", "E"]
    p = place_set_iou(pred, ref)
    assert p == pytest.approx(4 / 6)
    assert order_consistency(pred, ref, p) == pytest.approx(4 / 6 * (1 - 1 / 6))
    # n < 2 -> 0
    assert order_consistency(["A"], ref, 0.2) == 0.0
    assert order_consistency(["X", "Y"], ref, 0.0) == 0.0
    # repeated visits count once, at the first visit
    assert order_consistency(["S", "A", "S", "B"], ["S", "A", "B"], 1.0) == 1.0


def test_discordant_pairs():
    assert discordant_pairs(["c", "b", "a"], ["a", "b", "c"]) == 3
    assert discordant_pairs(["a", "c", "b", "d"], ["a", "b", "c", "d"]) == 1
    assert discordant_pairs(["b", "c", "d", "a"], ["a", "b", "c", "d"]) == 3


# ------------------------------------------------------------------ SC, RP


def test_semantic_constraint_and_reasoning_purity_are_judge_means():
    assert semantic_constraint([1.0, 0.8, 0.9]) == pytest.approx(0.9)
    assert reasoning_purity([0.5, 1.0]) == pytest.approx(0.75)
    with pytest.raises(ValueError):
        semantic_constraint([])
    with pytest.raises(ValueError):
        reasoning_purity([1.2, 0.5])


# ------------------------------------------------------------------ PR@α


def test_pass_rate_threshold_is_strict_and_other_metrics_must_be_one():
    app = APPLICABLE[("trip", "l2")]
    ok = {"a": 1.0, "piou": 1.0, "rd_distance": 1.0, "rd_time": 1.0, "oc": 1.0, "sc": 0.95}
    assert pass_rate(ok, app) == 1.0
    assert pass_rate({**ok, "sc": 0.9}, app) == 0.0  # SC must exceed α
    assert pass_rate({**ok, "sc": 0.9}, app, alpha=0.8) == 1.0
    assert pass_rate({**ok, "rd_time": 0.999}, app) == 0.0
    assert pass_rate({**ok, "oc": 0.9}, app) == 0.0
    # process metrics do not gate PR
    assert pass_rate({**ok, "ig": 0.2, "te": 0.1, "rp": 0.3}, app) == 1.0
    with pytest.raises(ValueError):
        pass_rate({k: v for k, v in ok.items() if k != "oc"}, app)


def test_pass_rate_without_sc_at_l0():
    app = APPLICABLE[("nearby", "l0")]
    assert "sc" not in app
    assert pass_rate({"a": 1.0, "piou": 1.0}, app) == 1.0
    assert pass_rate({"a": 1.0, "piou": 0.5}, app) == 0.0
    assert pass_rate({"a": 1.0}, APPLICABLE[("place", "l0")]) == 1.0


# ------------------------------------------------------------------ IG, TE, tokens


def test_information_grounding_is_coverage_of_required_evidence():
    required = ["note:5de25964", "note:68fee6b5", "B0FFMBUXIP:opentime_week"]
    # extra observations neither help nor hurt: coverage of τ*, not precision
    observed = ["note:5de25964", "B0FFMBUXIP:opentime_week", "note:other", "B0OTHER:rating"]
    assert information_grounding(observed, required) == pytest.approx(2 / 3)
    assert information_grounding(required, required) == 1.0
    assert information_grounding([], required) == 0.0
    assert information_grounding(["anything"], []) == 1.0


def test_tool_efficiency():
    assert tool_efficiency(5, 10) == 0.5
    assert tool_efficiency(5, 5) == 1.0
    assert tool_efficiency(5, 3) == 1.0  # fewer calls than the reference: capped at 1
    assert tool_efficiency(4, 30) == pytest.approx(4 / 30)
    assert tool_efficiency(3, 0) == 0.0  # answered without the calls it needed
    assert tool_efficiency(0, 0) == 1.0
    with pytest.raises(ValueError):
        tool_efficiency(-1, 2)


def test_token_usage():
    assert token_usage(24600, 1200) == {"input_tokens": 24600.0, "output_tokens": 1200.0}
    with pytest.raises(ValueError):
        token_usage(-1, 0)


# ------------------------------------------------------------------ Table 11


def test_eleven_combinations_in_table_4_order():
    assert list(APPLICABLE) == [
        ("place", "l0"),
        ("place", "l1"),
        ("place", "l2"),
        ("nearby", "l0"),
        ("nearby", "l1"),
        ("nearby", "l2"),
        ("routing", "l0"),
        ("routing", "l1"),
        ("routing", "l2"),
        ("trip", "l1"),
        ("trip", "l2"),
    ]
    assert len(M.COMBINATIONS) == 11


def test_applicability_follows_table_3_and_table_6():
    for (task, level), metrics in APPLICABLE.items():
        assert metrics <= set(M.METRICS)
        assert {"pr", "ig", "te", "rp", "input_tokens", "output_tokens", "a"} <= metrics
        # Table 3: OC and SC are not applicable at L0
        assert ("oc" in metrics) == (task in ("routing", "trip") and level != "l0")
        assert ("sc" in metrics) == (level != "l0")
        # RD needs total_distance_m / total_time_s in the answer (Table 6: Routing and Trip)
        assert ("rd_distance" in metrics) == ("rd_time" in metrics) == (task in ("routing", "trip"))
        # PIoU needs place_id in the answer (Table 6: not in Place Perception answers)
        assert ("piou" in metrics) == (task != "place")


def test_task_level_names():
    assert normalize_task_level("Trip_Design", "L2") == ("trip", "l2")
    assert normalize_task_level("place_perception", 0) == ("place", "l0")
    assert parse_case_type("routing_L1") == ("routing", "l1")
    assert parse_case_type("nearby_discovery_L0") == ("nearby", "l0")
    with pytest.raises(ValueError):
        normalize_task_level("trip", "l0")  # Trip starts at L1
    with pytest.raises(ValueError):
        parse_case_type("routingL9")
    assert M.applicable("Routing", "L0") == APPLICABLE[("routing", "l0")]


def test_case_scores_keeps_applicable_metrics_and_adds_pr():
    values = {
        "a": 1.0,
        "piou": 1.0,
        "rd_distance": 1.0,
        "rd_time": 1.0,
        "oc": 0.5,
        "sc": 0.95,
        "ig": 0.5,
        "te": 0.4,
        "rp": 1.0,
        "input_tokens": 100.0,
        "output_tokens": 10.0,
    }
    out = case_scores("nearby", "l1", values)
    assert set(out) == APPLICABLE[("nearby", "l1")]
    assert out["pr"] == 1.0  # oc is not applicable to Nearby, so its 0.5 does not count
    assert case_scores("routing", "l1", values)["pr"] == 0.0
    with pytest.raises(ValueError):
        case_scores("routing", "l1", {k: v for k, v in values.items() if k != "rd_time"})
    assert math.isclose(case_scores("place", "l0", values)["a"], 1.0)
