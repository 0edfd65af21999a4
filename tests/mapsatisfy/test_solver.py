"""The dialogue solver in-process on a small instance (no demo data): turns, the user's replies,
tool calls with their match types, and calls Inspect rejects before the sandbox sees them."""

from __future__ import annotations

import json

import pytest
from inspect_ai import eval as inspect_eval

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.suites.mapsatisfy.sandbox import RecordStore
from tests.mapsatisfy.factories import record

NAV_ARGS = {"start_lon": 121.5, "start_lat": 29.9, "end_lon": 121.6, "end_lat": 29.8}


def _scripted(messages, tools, ctx):
    """Turn 1 asks the travel mode; then a rejected call (a number where an object is not allowed
    for `query`), a recorded navigation call, and a grounded answer."""
    assistant = [m for m in messages if m.role == "assistant"]
    if not assistant:
        return PolicyReply(content="请问您的出行方式是？")
    made = sum(len(m.tool_calls or []) for m in assistant)
    if made == 0:
        return PolicyReply(tool="search_poi", arguments={"query": {"not": "a string"}})
    if made == 1:
        return PolicyReply(tool="get_navigation", arguments=NAV_ARGS)
    return PolicyReply(content="驾车约「路线的耗时18分钟」。")


register_policy("test_scripted_dialogue", "mapsatisfy", _scripted)


@pytest.fixture
def run_dialogue(tmp_path):
    from geoeval.core.config import validate_config
    from geoeval.core.registry import get_suite

    (tmp_path / "bench.json").write_text(json.dumps([record()], ensure_ascii=False), encoding="utf-8")
    store = RecordStore()
    store.add("get_navigation", NAV_ARGS, "驾车路线;路线的耗时18分钟;路线的长度3.5公里", trace_id="t1")
    store.save_csv(tmp_path / "mock")

    def run(agent: str):
        spec = validate_config({
            "env": {"name": "mapsatisfy_demo", "root": str(tmp_path), "bench": "bench.json", "mock_data": "mock",
                    "embedder": "hashing"},
            "suite": {"name": "mapsatisfy", "map_tools": ["search_poi", "get_navigation"]},
            "model": {"name": f"geoeval/{agent}"}, "judge": {"models": ["rules"]},
            "metrics": {"name": "mapsatisfy", "metrics": ["ecr", "ts", "ifs", "eff"]},
            "runner": {"name": "local"}, "tracking": {"enabled": False},
        })
        suite = get_suite("mapsatisfy")
        env = suite.build_env(spec)
        task = suite.build_task(spec, env, suite.build_samples(spec, env))
        log = inspect_eval(task, model=spec.model.name, log_dir=str(tmp_path / "logs"), display="none")[0]
        assert log.samples and log.samples[0].error is None
        return log.samples[0]

    return run


def test_the_dialogue_is_recorded_turn_by_turn(run_dialogue):
    sample = run_dialogue("test_scripted_dialogue")
    rec = sample.metadata["mapsatisfy"]
    assert rec["turns"] == 2 and rec["finished"]
    assert [turn[0] for turn in rec["dialogue"]] == ["user", "assistant", "user", "assistant", "user"]
    assert rec["dialogue"][2][1] == "驾车。"  # the factory's full intent answers the asked slot
    by_name = {c["name"]: c for c in rec["tool_calls"]}
    assert by_name["get_navigation"]["match_type"] == "exact" and by_name["get_navigation"]["error"] is None
    rejected = by_name["search_poi"]
    assert rejected["error"] and rejected["rejected_arguments"] == {"query": {"not": "a string"}}
    assert rejected["arguments"] == {}  # refused arguments carry no parameter
    scores = sample.scores["geoeval"].value
    assert scores["eff"] == pytest.approx(3 / 5)  # max_allowed 3, two assistant turns
    assert scores["ts"] == 0.5  # get_navigation correct; search_poi's only call was refused
    assert scores["ifs"] == 1.0  # the quoted claim is in the recorded response
    assert scores["ecr"] == 0.0  # an expected tool failed: no explicit factor is credited


def test_the_oracle_replays_this_cases_recording(run_dialogue):
    rec = run_dialogue("oracle").metadata["mapsatisfy"]
    assert [(c["name"], c["match_type"]) for c in rec["tool_calls"]] == [("search_poi", "no_record"),
                                                                         ("get_navigation", "exact")]
    assert rec["answer"] == "根据查询结果：「驾车路线」；「路线的耗时18分钟」；「路线的长度3.5公里」。"
    assert rec["turns"] == 1
