"""The eight per-case metrics against hand-computed values, edge cases included."""

from __future__ import annotations

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall

from geoeval.suites.mapsatisfy.metrics import (
    METRIC_NAMES,
    FactCheck,
    ar,
    assistant_turns,
    case_scores,
    cei,
    ecr,
    eff,
    ifs,
    iisr,
    row_faithful,
    ses,
    tool_selection,
    ts,
)
from geoeval.suites.mapsatisfy.schema import parse_instance
from tests.mapsatisfy.factories import record

# ---------------------------------------------------------------------------------------------
# ECR, IISR, AR


def test_ecr():
    assert ecr([True, False, True]) == pytest.approx(2 / 3)
    assert ecr([1, 1, 1, 0]) == 0.75
    assert ecr([]) == 1.0  # no explicit factors
    assert ecr([True, None]) is None  # an unparseable judge reply fails only this metric
    with pytest.raises(ValueError):
        ecr([1.5])


def test_iisr_weights_the_factors():
    # the C.3 instance's weights, first and third factor satisfied:
    # (1.2 + 0.384) / (1.2 + 0.8179 + 0.384) = 1.584 / 2.4019 = 0.659478
    assert iisr([1.2, 0.8179, 0.384], [1, 0, 1]) == pytest.approx(0.659478, abs=1e-6)
    # hard and soft in one weighted sum: instance 44cc... has weights 1.2 1.1 1.2 (hard) and
    # 1.1 1.2 1.1 1.2 (soft); only the hard ones met: 3.5 / 8.1 = 0.432099
    assert iisr([1.2, 1.1, 1.2, 1.1, 1.2, 1.1, 1.2], [1, 1, 1, 0, 0, 0, 0]) == pytest.approx(0.432099, abs=1e-6)
    # graded c_i: (2 * 0.5 + 1 * 1) / 3
    assert iisr([2.0, 1.0], [0.5, True]) == pytest.approx(2 / 3)


def test_iisr_edge_cases():
    assert iisr([], []) == 1.0  # no implicit factors
    assert iisr([1.0, 0.5], [1, None]) is None
    assert iisr([0.0, 0.0], [1, 0]) is None  # no weight anywhere: undefined
    assert iisr([0.0, 2.0], [0, 1]) == 1.0  # a zero-weight factor does not count
    with pytest.raises(ValueError, match="2 weights but 1 verdicts"):
        iisr([1.0, 1.0], [1])
    with pytest.raises(ValueError, match=">= 0"):
        iisr([-1.0], [1])


def test_ar():
    assert ar(2 / 3, 0.5) == pytest.approx(1 / 3)
    assert ar(1.0, 1.0) == 1.0
    assert ar(None, 0.5) is None and ar(0.5, None) is None


# ---------------------------------------------------------------------------------------------
# TS

GOLD = ["search_poi", "get_navigation", "search_user_profile"]
REQUIRED = {
    "search_poi": ["query", "cur_adcode"],
    "get_navigation": ["start_lon", "start_lat", "end_lon", "end_lat"],
    "search_user_profile": ["uid"],
}


def test_ts_counts_correct_incorrect_extra_missed():
    calls = [
        ("search_poi", {"query": "宁波万象城"}),  # misses cur_adcode ...
        ("search_poi", {"query": "宁波万象城", "cur_adcode": "宁波"}),  # ... but this call has both
        ("get_navigation", {"start_lon": 121.5, "start_lat": 29.9, "end_lon": 121.55, "end_lat": None}),
        ("get_weather", {"location": "宁波"}),
        ("get_weather", {"location": "宁波市"}),  # called twice, one extra name
    ]
    sel = tool_selection(calls, GOLD, REQUIRED)
    assert sel.correct == ("search_poi",)
    assert sel.incorrect == ("get_navigation",)  # end_lat is null: not carried
    assert sel.extra == ("get_weather",)
    assert sel.missed == ("search_user_profile",)
    assert sel.score == 0.25  # 1 / (1 + 1 + 1 + 1)
    assert ts(calls, GOLD, REQUIRED) == 0.25


def test_ts_all_right_and_the_call_shapes_accepted():
    calls = [
        {"name": "search_poi", "arguments": {"query": "x", "cur_adcode": "330200"}},
        ToolCall(
            id="1",
            function="get_navigation",
            arguments={"start_lon": 1, "start_lat": 2, "end_lon": 3, "end_lat": 4, "mode": "驾车"},
        ),
        ("search_user_profile", {"uid": "u1"}),
    ]
    assert ts(calls, GOLD, REQUIRED) == 1.0


def test_ts_edge_cases():
    assert ts([], [], {}) == 1.0  # nothing expected, nothing called
    assert ts([("get_weather", {})], [], {}) == 0.0  # nothing expected, one extra
    assert ts([], ["search_poi"], REQUIRED) == 0.0  # all missed
    assert ts([("search_poi", {})], ["search_poi"], None) == 1.0  # a gold tool without rules needs nothing
    assert ts([("search_poi", {"query": " ", "cur_adcode": "x"})], ["search_poi"], REQUIRED) == 0.0  # blank
    # gold names are deduplicated: 1 correct out of 1, not 2
    assert ts([("search_poi", {"query": "a", "cur_adcode": "b"})], ["search_poi", "search_poi"], REQUIRED) == 1.0
    with pytest.raises(ValueError, match="needs a name"):
        ts([{"arguments": {}}], GOLD, REQUIRED)


def test_ts_parameter_aliases():
    calls = [("search_user_profile", {"adiu": "u1"})]
    assert ts(calls, ["search_user_profile"], REQUIRED) == 0.0
    assert ts(calls, ["search_user_profile"], REQUIRED, {"search_user_profile": {"adiu": "uid"}}) == 1.0


# ---------------------------------------------------------------------------------------------
# IFS


def test_ifs_rows():
    rows = [
        [True, True],  # every claimed fact grounded: faithful
        [FactCheck(claimed=False, grounded=False), True],  # the unclaimed fact is ignored: faithful
        [False, True],  # one claimed fact ungrounded: unfaithful
        [],  # the answer claims nothing under this row: faithful
    ]
    assert ifs(rows) == 0.75  # 3 / 4
    assert ifs([]) == 1.0  # no rubric rows


def test_ifs_missing_verdicts():
    assert row_faithful([FactCheck(True, None), False]) is False  # decided by the ungrounded fact
    assert row_faithful([FactCheck(True, None), True]) is None
    assert ifs([[True], [FactCheck(True, None)]]) is None
    assert ifs([[True], None]) is None
    assert ifs([[True], [FactCheck(True, None), False]]) == 0.5
    with pytest.raises(ValueError):
        ifs([[2]])


# ---------------------------------------------------------------------------------------------
# Eff, SES, CEI


def test_eff():
    assert eff(3, 1) == 0.75  # 3 / (3 + 1)
    assert eff(3, 0) == 0.75  # S_actual is at least 1
    assert eff(2, 4) == pytest.approx(1 / 3)  # 2 / (2 + 4)
    assert eff(5, 5) == 0.5
    assert eff(0, 1) is None  # max_allowed = 0: the case is skipped
    with pytest.raises(ValueError):
        eff(-1, 1)


def test_ses_and_cei():
    assert ses(0.5, 0.75) == 0.375
    assert ses(0.5, None) is None and ses(None, 0.75) is None
    assert cei(0.375, 15_000) == pytest.approx(25.0)  # 0.375 / 15000 * 1e6
    assert cei(None, 15_000) is None
    assert cei(0.375, 0) is None


def test_assistant_turns_count_what_the_user_sees():
    messages = [
        ChatMessageUser(content="去万象城附近的充电站"),
        ChatMessageAssistant(
            content="", tool_calls=[ToolCall(id="1", function="search_poi", arguments={"query": "万象城"})]
        ),
        ChatMessageTool(content="{}", tool_call_id="1", function="search_poi"),
        ChatMessageAssistant(content="您要停车场里的充电站吗？"),
        ChatMessageUser(content="是的"),
        {"role": "assistant", "content": "推荐特来电……", "tool_calls": []},
    ]
    assert assistant_turns(messages) == 2
    assert assistant_turns([]) == 0


# ---------------------------------------------------------------------------------------------
# One case


def test_case_scores_hand_computed():
    inst = parse_instance(record())  # 2 explicit, weights 1.2 / 0.384, max_allowed 3, 1 rubric row
    scores = case_scores(
        inst,
        explicit_met=[True, False],
        implicit_satisfied=[1, 0],
        tool_calls=[("search_poi", {"query": "宁波万象城"}), ("get_weather", {"location": "宁波"})],
        fact_rows=[[True]],
        turns=2,
        total_tokens=20_000,
    )
    assert tuple(scores) == METRIC_NAMES
    assert scores["ecr"] == 0.5
    assert scores["iisr"] == pytest.approx(1.2 / 1.584)  # 0.757576
    assert scores["ar"] == pytest.approx(0.378788, abs=1e-6)
    # search_poi correct; get_navigation missed; get_weather extra: 1 / 3
    assert scores["ts"] == pytest.approx(1 / 3)
    assert scores["ifs"] == 1.0
    assert scores["eff"] == 0.6  # 3 / (3 + 2)
    assert scores["ses"] == pytest.approx(0.227273, abs=1e-6)
    assert scores["cei"] == pytest.approx(11.363636, abs=1e-6)  # 0.227273 / 20000 * 1e6


def test_case_scores_apply_the_sandbox_aliases_and_check_lengths():
    r = record()
    tc = r["ground_truth"]["truth_trajectory"]["tool_calls"]
    tc["expected_tools"] = ["search_user_profile"]
    tc["parameter_rules"] = {"search_user_profile": {"paramter": ["uid"], "rules": []}}
    r["ground_truth"]["clarification_policy"]["max_allowed"] = 0
    inst = parse_instance(r)
    scores = case_scores(
        inst,
        explicit_met=[1, 1],
        implicit_satisfied=[1, 1],
        tool_calls=[("search_user_profile", {"adiu": "u1"})],
        fact_rows=[[]],
        turns=1,
        total_tokens=100,
    )
    assert scores["ts"] == 1.0
    assert scores["ar"] == 1.0
    assert scores["eff"] is None and scores["ses"] is None and scores["cei"] is None
    with pytest.raises(ValueError, match="explicit_met has 1 entries for 2 rubric items"):
        case_scores(
            inst, explicit_met=[1], implicit_satisfied=[1, 1], tool_calls=[], fact_rows=[[]], turns=1, total_tokens=1
        )
