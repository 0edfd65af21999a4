"""The offline agents' building blocks, the C.2 prompts and the suite's samples."""

from __future__ import annotations

import json
import math

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, ToolInfo

from geoeval.suites.mapsatisfy import agents as A
from geoeval.suites.mapsatisfy.replay.store import RecordStore
from geoeval.suites.mapsatisfy.schema import parse_instance
from geoeval.suites.mapsatisfy.suite import agent_prompt, build_sample, capabilities_of, oracle_plan
from tests.mapsatisfy.factories import record


def test_snippets_are_verbatim_json_values_not_keys():
    content = json.dumps(
        {"pois": [{"name": "万象城充电站", "distance": 1200, "tip": "要预约吗？"}]}, ensure_ascii=False
    )
    got = A.snippets(content)
    assert got == ["万象城充电站", "1200"]  # keys dropped; a piece reading as a question dropped
    assert all(s in content for s in got)


def test_snippets_read_inside_inspects_truncation_notice():
    wrapped = "Here is a truncated version of the output.\n<START_TOOL_OUTPUT>路线的耗时18分钟;路线的长度3.5公里<END_TOOL_OUTPUT>"
    assert A.snippets(wrapped) == ["路线的耗时18分钟", "路线的长度3.5公里"]


def test_answer_quotes_only_served_responses():
    messages = [
        ChatMessageTool(content='{"status": "no_record", "tool": "search_poi", "message": "x"}', function="search_poi"),
        ChatMessageTool(content="路线的耗时18分钟", function="get_navigation"),
    ]
    assert A.answer_from_tools(messages) == "根据查询结果：「路线的耗时18分钟」。"
    assert A.answer_from_tools(messages[:1]) == A._NO_RESULT


def test_clarify_baseline_asks_one_question_per_missing_slot_then_searches():
    assert A.missing_slots("今晚驾车去万象城") == ["preference"]
    tools = [ToolInfo(name="search_poi", description="")]
    system = ChatMessageSystem(content='context {"uid": "u1", "city": "浙江省/宁波市"}')
    messages = [system, ChatMessageUser(content="去万象城附近的充电站")]
    first = A._clarify_baseline(messages, tools, {})
    assert first.content == A.CLARIFY_QUESTIONS["time"] and first.tool is None
    messages += [ChatMessageAssistant(content=first.content), ChatMessageUser(content="今晚八点前到。")]
    assert A._clarify_baseline(messages, tools, {}).content == A.CLARIFY_QUESTIONS["travel_mode"]
    messages += [
        ChatMessageAssistant(content="q2"),
        ChatMessageUser(content="a2"),
        ChatMessageAssistant(content="q3"),
        ChatMessageUser(content="a3"),
    ]
    call = A._clarify_baseline(messages, tools, {})
    assert call.tool == "search_poi" and call.arguments["cur_adcode"] == "宁波市"
    messages += [
        ChatMessageAssistant(content="", tool_calls=[ToolCall(id="1", function="search_poi", arguments={})]),
        ChatMessageTool(content='{"name": "万象城充电站"}', function="search_poi"),
    ]
    assert A._clarify_baseline(messages, tools, {}).content == "根据查询结果：「万象城充电站」。"


def _store_with(trace_id: str) -> RecordStore:
    store = RecordStore()
    store.add(
        "get_navigation",
        {"start_lon": "121.5", "start_lat": "29.9", "end_lon": None, "end_lat": "29.8"},
        "incomplete",
        trace_id=trace_id,
    )  # misses end_lon: not usable
    store.add(
        "get_navigation",
        {"start_lon": "121.5", "start_lat": "29.9", "end_lon": "121.6", "end_lat": "29.8"},
        "ok",
        trace_id=trace_id,
    )
    store.add(
        "get_navigation",
        {"start_lon": "1", "start_lat": "2", "end_lon": "3", "end_lat": "4"},
        "other case",
        trace_id="another",
    )
    return store


def test_oracle_plan_replays_this_cases_recorded_call_else_builds_one():
    inst = parse_instance(record())
    plan = oracle_plan(inst, _store_with("t1"))
    assert [s["tool"] for s in plan] == ["search_poi", "get_navigation"]
    assert plan[0]["arguments"] == {"query": inst.query}  # no recording of search_poi: from the query
    assert plan[1]["arguments"]["end_lon"] == "121.6"


def test_oracle_plan_renames_the_recorders_aliases():
    data = record()
    tt = data["ground_truth"]["truth_trajectory"]["tool_calls"]
    tt["expected_tools"] = ["search_user_profile"]
    tt["parameter_rules"] = {"search_user_profile": {"paramter": ["uid"], "rules": []}}
    store = RecordStore()
    store.add("search_user_profile", {"adiu": "u1"}, "画像", trace_id="t1")
    assert oracle_plan(parse_instance(data), store) == [{"tool": "search_user_profile", "arguments": {"uid": "u1"}}]


@pytest.mark.parametrize("setting", ["normal", "profile"])
def test_agent_prompts_are_filled(setting):
    data = record(user_profile={"summary": "驾车为主的车主"})
    text = agent_prompt(parse_instance(data), setting, ["search_poi", "get_navigation"])
    assert "去万象城附近的充电站" in text and '"city": "浙江省/宁波市"' in text and "- search_poi:" in text
    assert ("驾车为主的车主" in text) == (setting == "profile")
    assert "{" + "query}" not in text and "{" + "tools_brief}" not in text


def test_sample_dimensions_carry_the_metadata():
    data = record(
        metadata={
            "domain": "search; navigation",
            "sub_task": "charging",
            "difficulty": "L2",
            "implicit_factor_source": "preference",
        }
    )
    sample = build_sample(parse_instance(data), "profile", ["search_poi"], RecordStore(), "off")
    dims = sample.metadata["dims"]
    assert dims["suite"] == "mapsatisfy" and dims["setting"] == "profile" and dims["level"] == "l2"
    assert dims["task"] == "charging" and dims["extra"]["domain"] == "search;navigation"
    assert dims["extra"]["thinking"] == "off"
    assert "preference_reasoning" in dims["capabilities"] and "clarification" in dims["capabilities"]
    assert capabilities_of(parse_instance(record()))[0] == "tool_use"


def test_metric_values_from_a_recorded_dialogue():
    from geoeval.core.registry import get_metric
    from geoeval.core.scoring import MetricInput
    from geoeval.suites.mapsatisfy.judging.verdicts import Verdicts
    from geoeval.suites.mapsatisfy.metrics import FactCheck

    inst = record()
    verdicts = Verdicts([1.0, 0.0], [1.0, 0.0], [[FactCheck(True, True)]])
    calls = [{"name": "search_poi", "arguments": {"query": "x"}}]
    meta = {
        "suite": "mapsatisfy",
        "instance": inst,
        "mapsatisfy": {"verdicts": verdicts.to_record(), "tool_calls": calls, "turns": 2, "tokens": 1000},
    }
    inp = MetricInput(answer="", raw="", target=[], metadata=meta)
    value = {n: get_metric(n, "mapsatisfy").fn(inp) for n in ("ecr", "iisr", "ts", "ifs", "eff", "ses", "cei")}
    assert value["ecr"] == 0.5
    assert value["iisr"] == pytest.approx(1.2 / 1.584)
    assert value["ts"] == 0.5  # search_poi correct, get_navigation missed
    assert value["ifs"] == 1.0 and value["eff"] == pytest.approx(3 / 5)
    assert value["cei"] == pytest.approx(value["ses"] / 1000 * 1e6)
    meta["instance"] = record()
    meta["instance"]["ground_truth"]["clarification_policy"]["max_allowed"] = 0
    assert math.isnan(get_metric("eff", "mapsatisfy").fn(inp))  # skipped case: no value, not 0


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"reasoning_effort": "none"}, "off"),
        ({"reasoning_effort": "high"}, "on"),
        ({"reasoning_tokens": 2048}, "on"),
        ({}, "default"),
    ],
)
def test_thinking_is_read_from_the_models_generate_config(config, expected):
    from types import SimpleNamespace

    from geoeval.core.config.schema import ModelSpec
    from geoeval.suites.mapsatisfy.suite import thinking_of

    spec = SimpleNamespace(model=ModelSpec(name="openai/gpt-4o", config=config))
    assert thinking_of(spec) == expected
