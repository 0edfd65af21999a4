"""The dialogue solver in-process on a small instance (no demo data): turns, the user's replies,
tool calls with their match types, and calls Inspect rejects before the sandbox sees them."""

from __future__ import annotations

import json

import pytest
from inspect_ai import eval as inspect_eval

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.suites.mapsatisfy.replay.store import RecordStore
from tests.conftest import scripted_mockllm
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
    from geoeval.core.config.validate import validate_config
    from geoeval.core.registry import get_suite

    (tmp_path / "bench.json").write_text(json.dumps([record()], ensure_ascii=False), encoding="utf-8")
    store = RecordStore()
    store.add("get_navigation", NAV_ARGS, "驾车路线;路线的耗时18分钟;路线的长度3.5公里", trace_id="t1")
    store.save_csv(tmp_path / "mock")

    def run(agent: str):
        spec = validate_config(
            {
                "env": {
                    "name": "mapsatisfy_demo",
                    "root": str(tmp_path),
                    "bench": "bench.json",
                    "mock_data": "mock",
                    "embedder": "hashing",
                },
                "suite": {"name": "mapsatisfy", "map_tools": ["search_poi", "get_navigation"]},
                "model": {"name": f"geoeval/{agent}"},
                "judge": {"models": ["rules"]},
                "metrics": {"name": "mapsatisfy", "metrics": ["ecr", "ts", "ifs", "eff"]},
                "runner": {"name": "local"},
                "tracking": {"enabled": False},
            }
        )
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
    assert scores["ecr"] == 0.0  # the answer names no charging station and nothing near 万象城


def test_the_oracle_replays_this_cases_recording(run_dialogue):
    rec = run_dialogue("oracle").metadata["mapsatisfy"]
    assert [(c["name"], c["match_type"]) for c in rec["tool_calls"]] == [
        ("search_poi", "no_record"),
        ("get_navigation", "exact"),
    ]
    # the reference answer: the route as recorded, then the parking and driving rubrics
    assert rec["answer"] == (
        "关于您的需求“去万象城附近的充电站”：驾车前往全程3.5公里，耗时约18分钟。"
        "请留意目的地附近的停车条件。按您常用的驾车方式出行。"
    )
    assert rec["turns"] == 1


# ---------------------------------------------------------------------------------------------
# The `tool_simulator` model role inside a real eval (sandbox stage 3), and record mode

WEATHER_ARGS = {"location": "拉萨", "date": "2026-05-27"}
SIMULATED_WEATHER = '{"live": {"weather": "小雨", "temperature": "12"}}'


def _asks_the_weather(messages, tools, ctx):
    """Calls get_weather (no recording in the store), then quotes what the tool returned."""
    tool_messages = [m for m in messages if m.role == "tool"]
    if not tool_messages:
        return PolicyReply(tool="get_weather", arguments=WEATHER_ARGS)
    return PolicyReply(content=f"天气：「{tool_messages[-1].text}」")


register_policy("test_asks_the_weather", "mapsatisfy", _asks_the_weather)


def _weather_spec(tmp_path, **suite):
    from geoeval.core.config.validate import validate_config

    (tmp_path / "bench.json").write_text(json.dumps([record()], ensure_ascii=False), encoding="utf-8")
    store = RecordStore()
    store.add("get_navigation", NAV_ARGS, "驾车路线;路线的耗时18分钟", trace_id="t1")
    store.save_csv(tmp_path / "mock")
    return validate_config(
        {
            "env": {
                "name": "mapsatisfy_demo",
                "root": str(tmp_path),
                "bench": "bench.json",
                "mock_data": "mock",
                "embedder": "hashing",
            },
            "suite": {"name": "mapsatisfy", "map_tools": ["get_weather", "get_navigation"], **suite},
            "model": {"name": "geoeval/test_asks_the_weather"},
            "judge": {"models": ["rules"]},
            "metrics": {"name": "mapsatisfy", "metrics": ["ts", "ifs"]},
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }
    )


def _run_weather(tmp_path, spec, roles):
    from geoeval.core.registry import get_suite

    suite = get_suite("mapsatisfy")
    env = suite.build_env(spec)
    task = suite.build_task(spec, env, suite.build_samples(spec, env))
    log = inspect_eval(task, model=spec.model.name, model_roles=roles, log_dir=str(tmp_path / "logs"), display="none")[
        0
    ]
    assert log.samples and log.samples[0].error is None
    return suite, env, log.samples[0]


def test_the_suite_puts_its_tool_simulator_in_the_task_model_roles(tmp_path):
    from geoeval.core.registry import get_suite

    suite = get_suite("mapsatisfy")
    for configured, expected in ((None, set()), ("mockllm/model", {"tool_simulator"})):
        spec = _weather_spec(tmp_path, tool_simulator=configured)
        env = suite.build_env(spec)
        task = suite.build_task(spec, env, suite.build_samples(spec, env))
        assert set(task.model_roles or {}) == expected


def test_the_tool_simulator_role_answers_an_unrecorded_call_in_the_eval(tmp_path):
    spec = _weather_spec(tmp_path)
    _, _, sample = _run_weather(
        tmp_path, spec, {"tool_simulator": scripted_mockllm(f"```json\n{SIMULATED_WEATHER}\n```")}
    )
    call = sample.metadata["mapsatisfy"]["tool_calls"][0]
    assert call["name"] == "get_weather" and call["match_type"] == "simulated"
    assert call["content"] == SIMULATED_WEATHER  # the fence stripped
    assert SIMULATED_WEATHER in sample.metadata["mapsatisfy"]["answer"]


def test_without_the_role_the_unrecorded_call_is_a_typed_no_record(tmp_path):
    spec = _weather_spec(tmp_path)
    _, _, sample = _run_weather(tmp_path, spec, None)
    call = sample.metadata["mapsatisfy"]["tool_calls"][0]
    assert call["match_type"] == "no_record" and json.loads(call["content"])["status"] == "no_record"


def test_record_mode_captures_simulated_responses_and_they_replay_exactly(tmp_path):
    from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store

    spec = _weather_spec(tmp_path, record_simulated=True)
    suite, env, _ = _run_weather(tmp_path, spec, {"tool_simulator": scripted_mockllm(SIMULATED_WEATHER)})
    paths = suite.after_run(spec, env, [], tmp_path / "out")
    recorded = tmp_path / "out" / "mapsatisfy_recorded"
    assert recorded / "get_weather.csv" in paths
    replay = ReplaySandbox(load_mock_store(recorded), embedder=HashingEmbedder())
    hit = replay.lookup("get_weather", WEATHER_ARGS)
    assert hit.match_type == "exact" and hit.content == SIMULATED_WEATHER
    # the recordings that were there are kept alongside
    assert replay.lookup("get_navigation", NAV_ARGS).match_type == "exact"
