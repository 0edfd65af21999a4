"""The replay sandbox: normalisation, the authors' recorded calls as a store, the exact and
vector stages, typed no_record and error responses, record mode, and the Inspect tools."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.mapsatisfy.replay.arguments import argument_key, canonical_text, normalize_arguments
from geoeval.suites.mapsatisfy.replay.catalogue import ARGUMENT_ALIASES, TOOL_SPECS
from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
from geoeval.suites.mapsatisfy.replay.inspect_adapter import inspect_tools
from geoeval.suites.mapsatisfy.replay.matcher import COORDINATE_TOLERANCE, LABEL_PARAMS, anchor_signature, open_text
from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox
from geoeval.suites.mapsatisfy.replay.store import RecordStore, load_mock_store
from tests.conftest import scripted_mockllm

FISH_TASK = "7159818a4b37fdd8e5d5849c2a0b3d1f"  # fishing-tackle shop near East Lake, Wuhan


def run(coro):
    return asyncio.run(coro)


# ---------------------------------------------------------------------------------------------
# Normalisation


def test_normalisation_ignores_key_order_whitespace_and_number_formatting():
    a = {
        "start_lon": "121.536342",
        "start_lat": 29.903485,
        "end_name": "奥迪汽车充电站（宁波华润万象城）",
        "mode": ["驾车"],
        "via_points": None,
        "avoid_road_names": "",
    }
    b = {
        "mode": " 驾车 ",
        "end_name": "奥迪汽车充电站(宁波华润万象城)",
        "start_lat": "29.9034850",
        "start_lon": 121.53634200000001,
    }
    assert argument_key("get_navigation", a) == argument_key("get_navigation", b)
    assert canonical_text(normalize_arguments("get_navigation", a)) == (
        '{"end_name":"奥迪汽车充电站(宁波华润万象城)","mode":"驾车","start_lat":29.903485,"start_lon":121.536342}'
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"range": "5000"}, {"range": 5000}),
        ({"range": 5000.0}, {"range": 5000}),
        ({"x": "114.46834138888889"}, {"x": 114.468341}),
        ({"city_limit": "True"}, {"city_limit": True}),
        ({"sort_rule": "null", "query": "  渔具  店 "}, {"query": "渔具 店"}),
        ({"line_nums": "11号线, 12号线"}, {"line_nums": "11号线,12号线"}),
        # a list passed as JSON text; a one-element list of an object stays a list
        ({"pois": '[{"x":"113.39","y":"23.04"}]'}, {"pois": [{"x": 113.39, "y": 23.04}]}),
        (
            {"pois": [{"x": 113.3, "y": 23.0}, {"x": 113.4, "y": 23.1}]},
            {"pois": [{"x": 113.3, "y": 23.0}, {"x": 113.4, "y": 23.1}]},
        ),
        ({"mode": '["公交","骑行"]'}, {"mode": ["公交", "骑行"]}),
        ({"uid": "12e4"}, {"uid": "12e4"}),  # ids with an exponent-like form stay text
        ({"rating_range": [], "hotel_price_range": {}}, {}),
    ],
)
def test_normalised_values(given, expected):
    assert normalize_arguments("any_tool", given) == expected


def test_parameter_aliases_of_the_authors_recorder():
    assert normalize_arguments("search_user_profile", {"adiu": "u1"}) == {"uid": "u1"}
    # the canonical name wins whichever comes first
    assert normalize_arguments("search_user_profile", {"adiu": "old", "uid": "u1"}) == {"uid": "u1"}
    assert normalize_arguments("search_user_profile", {"uid": "u1", "adiu": "old"}) == {"uid": "u1"}
    assert normalize_arguments("fuel_payment", {"oilgun": "3", "poi_id": "B1"}) == {"oil_gun": 3, "poi_id": "B1"}
    assert normalize_arguments("get_weather", {"adiu": "u1"}) == {"adiu": "u1"}  # only where the authors use it


def test_anchor_signature_separates_numbers_from_the_rest():
    shape, numbers = anchor_signature(
        "optimize_visit_order",
        normalize_arguments(
            "optimize_visit_order",
            {
                "start_lat": "23.12705",
                "start_lon": "113.24693",
                "start_name": "陈家祠",
                "mode": "fixed_end",
                "via_points": "113.237495,23.114821;113.244707,23.106802",
                "via_names": "永庆坊,沙面岛",
            },
        ),
    )
    assert shape == '{"mode":"fixed_end","start_lat":#,"start_lon":#,"via_points":"#,#;#,#"}'
    assert numbers == (23.12705, 113.24693, 113.237495, 23.114821, 113.244707, 23.106802)
    assert open_text("search_around_poi", {"query": "渔具店", "x": 1.0}) == "渔具店"
    assert open_text("get_navigation", {"end_name": "x"}) == ""


# ---------------------------------------------------------------------------------------------
# The authors' recorded calls


def test_mock_data_loads_as_a_store(mock_store):
    assert len(mock_store) == 1191
    assert len(mock_store.tools) == 18  # ainative_kuake_search.csv is empty
    assert "ainative_kuake_search" not in mock_store.tools
    assert len(mock_store.records("get_navigation")) == 706
    assert len(mock_store.records("search_around_poi")) == 273
    first = mock_store.records("search_around_poi")[0]
    assert first.trace_id == FISH_TASK and first.source == "search_around_poi.csv:2"
    assert first.arguments["query"] == "渔具店"
    assert json.loads(first.result)["pois"][0]["name"] == "渔具"
    # every recorded call is well formed for the catalogue (the checks accept the authors' calls)
    sandbox = ReplaySandbox(mock_store, vector=False)
    assert all(sandbox.check_call(t, r.arguments) is None for t in mock_store.tools for r in mock_store.records(t))


def test_every_recorded_call_is_an_exact_hit(mock_store):
    sandbox = ReplaySandbox(mock_store, vector=False)  # no embedder needed for stage 1
    unique = 0
    for tool in mock_store.tools:
        for r in mock_store.records(tool):
            response = sandbox.lookup(tool, r.arguments, trace_id=r.trace_id)
            assert response.match_type == "exact" and response.score == 1.0
            same_key = mock_store.exact(tool, r.key)
            assert response.content in {s.result for s in same_key}
            assert response.matched_trace_id == r.trace_id
            if len(same_key) == 1:
                unique += 1
                assert response.content == r.result
            else:  # equal arguments recorded more than once: the case's first recording answers
                assert response.content == next(s.result for s in same_key if s.trace_id == r.trace_id)
    assert unique == 1096  # of 1,140 distinct (tool, arguments) keys


def test_reformatted_recorded_call_is_still_exact(mock_store):
    sandbox = ReplaySandbox(mock_store, vector=False)
    record = mock_store.records("search_around_poi")[0]
    reformatted = {
        "y": 30.522153055555556,
        "x": 114.46834138888889,
        "query": " 渔具店",
        "range": 5000,
        "sort_rule": "distance",
        "rating_range": "null",
    }
    response = sandbox.lookup("search_around_poi", reformatted)
    assert response.match_type == "exact"
    assert response.content == record.result
    assert response.key == record.key


def test_user_id_under_either_name_hits_the_profile(mock_store):
    sandbox = ReplaySandbox(mock_store, vector=False)
    by_uid = sandbox.lookup("search_user_profile", {"uid": FISH_TASK})
    by_adiu = sandbox.lookup("search_user_profile", {"adiu": FISH_TASK})
    assert by_uid.match_type == by_adiu.match_type == "exact"
    assert by_uid.content == by_adiu.content and by_uid.content.startswith("用户画像")


# ---------------------------------------------------------------------------------------------
# The vector stage


def _unique_anchor_records(store, tool):
    """Recorded calls no other recorded call of the tool could be mistaken for: no other distinct
    anchor signature lies within twice the tolerance."""
    signatures = {}
    for r in store.records(tool):
        shape, numbers = anchor_signature(tool, json.loads(r.key))
        signatures.setdefault((shape, numbers), []).append(r)
    unique = []
    for (shape, numbers), records in signatures.items():
        others = [n for (s, n) in signatures if s == shape and n != numbers]
        near = [
            n for n in others if max((abs(a - b) for a, b in zip(n, numbers)), default=0) <= 2 * COORDINATE_TOLERANCE
        ]
        if not near and len({r.key for r in records}) == 1:
            unique.append(records[0])
    return unique


def test_perturbed_navigation_calls_resolve_to_their_record(mock_store):
    """Coordinates moved within the tolerance and display names dropped or changed: the vector
    stage returns the recorded route (no open text: the embedder is not consulted)."""
    sandbox = ReplaySandbox(mock_store, embedder=HashingEmbedder())
    records = _unique_anchor_records(mock_store, "get_navigation")
    assert len(records) == 382  # of 530 distinct routes (labels ignored)
    for r in records:
        args = normalize_arguments("get_navigation", r.arguments)
        perturbed = {k: v for k, v in args.items() if k not in LABEL_PARAMS}
        perturbed["end_name"] = "目的地"
        perturbed["start_lat"] = round(args["start_lat"] + 3e-4, 6)
        perturbed["end_lon"] = str(round(args["end_lon"] - 2e-4, 6))
        response = sandbox.lookup("get_navigation", perturbed)
        assert response.match_type == "vector", r.source
        assert response.score == 1.0
        assert argument_key("get_navigation", response.matched_arguments) == r.key
        assert response.content == r.result


def test_navigation_beyond_the_tolerance_or_in_another_mode_is_no_record(mock_store):
    sandbox = ReplaySandbox(mock_store, embedder=HashingEmbedder())
    r = _unique_anchor_records(mock_store, "get_navigation")[0]
    args = normalize_arguments("get_navigation", r.arguments)
    far = dict(args, start_lat=round(args["start_lat"] + 10 * COORDINATE_TOLERANCE, 6))
    other_mode = dict(args, mode="步行" if args.get("mode") != "步行" else "驾车")
    for call in (far, other_mode):
        response = sandbox.lookup("get_navigation", call)
        assert response.match_type == "no_record" and response.score is None
        assert json.loads(response.content)["status"] == "no_record"


@pytest.mark.slow
def test_synonym_query_resolves_to_its_record_with_e5(mock_store, e5, e5_sandbox):
    sandbox = e5_sandbox
    fish = [r for r in mock_store.records("search_around_poi") if r.arguments.get("query") == "渔具店"]
    assert len(fish) == 13
    for r in fish:
        args = normalize_arguments("search_around_poi", r.arguments)
        call = dict(args, query="钓具店", x=round(args["x"] + 1e-4, 6))  # tackle shop, 10 m away
        response = sandbox.lookup("search_around_poi", call, trace_id=r.trace_id)
        assert response.match_type == "vector", r.source
        assert e5.threshold <= response.score < 1.0
        assert argument_key("search_around_poi", response.matched_arguments) == r.key
        assert response.content == r.result


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "field", "recorded", "variant", "matches"),
    [
        ("search_poi_along_route", "keywords", "加气站", "LNG加气站", True),
        ("search_poi_along_route", "keywords", "加气站", "加油站", False),  # gas (CNG) vs petrol
        ("search_around_poi", "query", "充电站", "汽车充电站", True),
        ("search_around_poi", "query", "充电站", "渔具店", False),
        ("route_station_info", "line_nums", "11号线,12号线", "11号线、12号线", True),
        ("route_station_info", "line_nums", "11号线,12号线", "27路", False),
    ],
)
def test_open_text_decides_with_e5(mock_store, e5, e5_sandbox, tool, field, recorded, variant, matches):
    sandbox = e5_sandbox
    r = next(r for r in mock_store.records(tool) if normalize_arguments(tool, r.arguments).get(field) == recorded)
    call = dict(normalize_arguments(tool, r.arguments), **{field: variant})
    response = sandbox.lookup(tool, call, trace_id=r.trace_id)
    if matches:
        assert response.match_type == "vector"
        assert normalize_arguments(tool, response.matched_arguments)[field] == recorded
    else:
        assert response.match_type == "no_record"
        assert response.score is not None and response.score < e5.threshold


def test_the_injected_embedder_and_threshold_are_used(mock_store):
    r = mock_store.records("search_around_poi")[0]
    call = dict(normalize_arguments("search_around_poi", r.arguments), query="渔具")
    # character overlap of 渔具 and 渔具店 is 0.707 under the hashing embedder
    assert (
        ReplaySandbox(mock_store, embedder=HashingEmbedder(), threshold=0.7)
        .lookup("search_around_poi", call)
        .match_type
        == "vector"
    )
    strict = ReplaySandbox(mock_store, embedder=HashingEmbedder(), threshold=0.75).lookup("search_around_poi", call)
    assert strict.match_type == "no_record" and strict.score == pytest.approx(0.7071, abs=1e-3)
    off = ReplaySandbox(mock_store, embedder=HashingEmbedder(), vector=False).lookup("search_around_poi", call)
    assert off.match_type == "no_record" and off.score is None


def test_open_text_on_one_side_only_is_no_match():
    """A keyword search is not answered by a recorded search without keyword, nor the reverse
    (the demo has both kinds of search_around_poi calls)."""
    store = RecordStore()
    store.add("search_around_poi", {"x": 113.3, "y": 23.08, "range": 1500}, "everything nearby")
    store.add("search_around_poi", {"x": 113.4, "y": 23.08, "range": 1500, "query": "充电站"}, "chargers")
    sandbox = ReplaySandbox(store, embedder=HashingEmbedder(), threshold=0.0)
    with_keyword = sandbox.lookup("search_around_poi", {"x": 113.3, "y": 23.08, "range": 1500, "query": "充电站"})
    without = sandbox.lookup("search_around_poi", {"x": 113.4, "y": 23.08, "range": 1500})
    for response in (with_keyword, without):
        assert response.match_type == "vector" and response.score == 0.0  # threshold 0 lets it through
    strict = ReplaySandbox(store, embedder=HashingEmbedder(), threshold=0.01)
    assert (
        strict.lookup("search_around_poi", {"x": 113.3, "y": 23.08, "range": 1500, "query": "充电站"}).match_type
        == "no_record"
    )
    assert strict.lookup("search_around_poi", {"x": 113.4, "y": 23.08, "range": 1500}).match_type == "no_record"


def test_calls_of_another_case_are_not_served_by_vector(mock_store):
    """Leave one case's records out: its calls find no record with agreeing anchors."""
    tool = "search_around_poi"
    others = RecordStore(r for r in mock_store.records(tool) if r.trace_id != FISH_TASK)
    sandbox = ReplaySandbox(others, embedder=HashingEmbedder(), threshold=0.0)
    own = [r for r in mock_store.records(tool) if r.trace_id == FISH_TASK]
    assert own
    for r in own:
        assert sandbox.lookup(tool, r.arguments).match_type == "no_record"


def test_index_extends_with_records_added_later():
    store = RecordStore()
    store.add("get_weather", {"location": "唐山", "date": "2026-05-26"}, "sunny")
    sandbox = ReplaySandbox(store, embedder=HashingEmbedder(), threshold=0.6)
    assert sandbox.lookup("get_weather", {"location": "唐山市", "date": "2026-05-26"}).content == "sunny"
    store.add("get_weather", {"location": "天津", "date": "2026-05-26"}, "rain")
    response = sandbox.lookup("get_weather", {"location": "天津市", "date": "2026-05-26"})
    assert (response.match_type, response.content) == ("vector", "rain")


# ---------------------------------------------------------------------------------------------
# Errors and no_record


def test_unknown_tool_bad_arguments_and_unrecorded_tools(mock_store):
    sandbox = ReplaySandbox(mock_store, embedder=HashingEmbedder())
    unknown = sandbox.lookup("book_a_unicorn", {"x": 1})
    assert unknown.match_type == "no_record" and unknown.error.startswith("unknown tool 'book_a_unicorn'")
    assert json.loads(unknown.content)["status"] == "error"
    bad_param = sandbox.lookup("get_weather", {"location": "唐山", "colour": "red"})
    assert bad_param.error == (
        "unknown parameter(s) ['colour'] for 'get_weather'; its parameters are ['location', 'date', 'whole']"
    )
    missing = sandbox.lookup("get_navigation", {"start_lon": 121.5, "start_lat": 29.9, "end_lon": None})
    assert missing.error == "missing required parameter(s) ['end_lon', 'end_lat'] for 'get_navigation'"
    not_object = sandbox.lookup("get_weather", ["唐山"])  # type: ignore[arg-type]
    assert "must be an object" in not_object.error
    # search_poi is in the catalogue but the demo recorded no call of it
    unrecorded = sandbox.lookup("search_poi", {"query": "宁波万象城"})
    assert unrecorded.match_type == "no_record" and unrecorded.error is None
    assert json.loads(unrecorded.content) == {
        "status": "no_record",
        "tool": "search_poi",
        "message": "no recorded calls of this tool",
    }
    # a recorded tool, arguments nobody recorded
    nowhere = sandbox.lookup("get_weather", {"location": "拉萨", "date": "2030-01-01"})
    assert nowhere.match_type == "no_record" and nowhere.error is None


def test_equal_arguments_recorded_by_two_cases_prefer_the_current_case():
    store = RecordStore()
    store.add("get_weather", {"location": "唐山"}, "from t1", trace_id="t1")
    store.add("get_weather", {"location": "唐山 "}, "from t2", trace_id="t2")
    store.add("get_weather", {"location": "天津"}, "tianjin t1", trace_id="t1")
    sandbox = ReplaySandbox(store, embedder=HashingEmbedder(), threshold=0.6)
    assert sandbox.lookup("get_weather", {"location": "唐山"}, trace_id="t2").content == "from t2"
    assert sandbox.lookup("get_weather", {"location": "唐山"}, trace_id="t9").content == "from t1"
    assert sandbox.lookup("get_weather", {"location": "唐山"}).content == "from t1"
    vector = sandbox.lookup("get_weather", {"location": "唐山市"}, trace_id="t2")
    assert (vector.match_type, vector.content, vector.matched_trace_id) == ("vector", "from t2", "t2")


def test_a_tool_outside_the_catalogue_is_served_from_the_store():
    store = RecordStore()
    store.add("parking_lot_status", {"poi_id": "B1"}, '{"free": 12}')
    sandbox = ReplaySandbox(store, vector=False)
    assert sandbox.lookup("parking_lot_status", {"poi_id": "B1"}).content == '{"free": 12}'


# ---------------------------------------------------------------------------------------------
# Record mode and the simulator


def test_simulated_responses_are_recorded_and_replayed(tmp_path):
    store = RecordStore()
    store.add("get_weather", {"location": "唐山", "date": "2026-05-26"}, '{"live": {"weather": "晴"}}', trace_id="t0")
    simulator = scripted_mockllm('```json\n{"live": {"weather": "小雨"}}\n```')
    sandbox = ReplaySandbox(store, embedder=HashingEmbedder(), tool_simulator=simulator, record=True)
    call = {"location": "拉萨", "date": "2026-05-27"}
    first = run(sandbox.call("get_weather", call, trace_id="t1"))
    assert first.match_type == "simulated" and first.score is None
    assert first.content == '{"live": {"weather": "小雨"}}'  # the code fence is stripped
    again = run(sandbox.call("get_weather", {"date": "2026-05-27", "location": " 拉萨 "}))
    assert again.match_type == "exact" and again.content == first.content  # no second model call
    assert [r.origin for r in store.records("get_weather")] == ["recorded", "simulated"]
    # round trip through the authors' CSV layout
    sandbox.store.save_csv(tmp_path)
    header = (tmp_path / "get_weather.csv").read_text(encoding="utf-8-sig").splitlines()[0]
    assert header == "trace_id,tool_name,arguments,result"
    reloaded = ReplaySandbox(load_mock_store(tmp_path), vector=False)
    replay = run(reloaded.call("get_weather", call))
    assert (replay.match_type, replay.content, replay.matched_trace_id) == ("exact", first.content, "t1")


def test_simulator_prompt_shows_the_tool_the_call_and_recorded_examples(mock_store):
    sandbox = ReplaySandbox(mock_store, embedder=HashingEmbedder())
    prompt = sandbox.simulator_prompt("get_weather", {"location": "拉萨", "date": "2026-05-27"})
    assert "`get_weather`" in prompt and "Live weather and forecast" in prompt
    assert '"location": "拉萨"' in prompt
    assert prompt.count("Response: ") == 2
    assert '"city":"唐山市"' in prompt or '"city": "唐山市"' in prompt  # the first recorded response


def test_without_record_mode_simulated_responses_are_not_stored():
    store = RecordStore()
    sandbox = ReplaySandbox(store, embedder=HashingEmbedder(), tool_simulator=scripted_mockllm("{}", "{}"))
    assert run(sandbox.call("get_weather", {"location": "拉萨"})).match_type == "simulated"
    assert len(store) == 0
    no_sim = ReplaySandbox(store, embedder=HashingEmbedder())
    assert run(no_sim.call("get_weather", {"location": "拉萨"})).match_type == "no_record"


def test_record_mode_captures_a_live_backend(tmp_path):
    calls = []

    async def live(tool, arguments):
        calls.append((tool, arguments))
        return json.dumps({"tool": tool, "n": len(calls)})

    sandbox = ReplaySandbox(RecordStore(), embedder=HashingEmbedder(), live=live, record=True)
    first = run(sandbox.call("get_rgeo", {"x": "117.260325", "y": 23.639127}, trace_id="t9"))
    assert first.match_type == "live" and json.loads(first.content) == {"tool": "get_rgeo", "n": 1}
    second = run(sandbox.call("get_rgeo", {"y": "23.639127", "x": 117.26032500000001}))
    assert second.match_type == "exact" and second.content == first.content
    assert len(calls) == 1
    bad = run(sandbox.call("get_rgeo", {"x": 1}))
    assert bad.error and len(calls) == 1  # a malformed call never reaches the live service
    sandbox.store.save_csv(tmp_path)
    reloaded = ReplaySandbox(load_mock_store(tmp_path), vector=False)
    assert reloaded.lookup("get_rgeo", {"x": 117.260325, "y": 23.639127}).content == first.content


def test_store_loading_errors(tmp_path):
    with pytest.raises(GeoevalError, match="not a directory"):
        load_mock_store(tmp_path / "absent")
    (tmp_path / "get_weather.csv").write_text(
        "trace_id,tool_name,arguments,result\nt,get_weather,{bad,x\n", encoding="utf-8"
    )
    with pytest.raises(GeoevalError, match=r"get_weather.csv:2: arguments are not valid JSON"):
        load_mock_store(tmp_path)
    (tmp_path / "get_weather.csv").write_text("trace_id,tool_name,args\n", encoding="utf-8")
    with pytest.raises(GeoevalError, match=r"missing column\(s\) \['arguments', 'result'\]"):
        load_mock_store(tmp_path)


# ---------------------------------------------------------------------------------------------
# The catalogue and the Inspect tools


def test_catalogue_has_the_authors_tools_and_parameters():
    assert len(TOOL_SPECS) == 22
    nav = TOOL_SPECS["get_navigation"]
    for p in (
        "start_lon",
        "start_lat",
        "end_lon",
        "end_lat",
        "start_name",
        "end_name",
        "start_poiid",
        "end_poiid",
        "via_points",
        "via_name",
        "preferred_road_names",
        "avoid_road_names",
        "mode",
    ):
        assert p in nav.param_names
    assert TOOL_SPECS["search_poi"].param_names == (
        "query",
        "cur_adcode",
        "types",
        "city_limit",
        "page_size",
        "page_num",
    )
    assert TOOL_SPECS["scenic_ticket_transaction"].param_names == (
        "sightName",
        "dateTime",
        "personNum",
        "ticketType",
        "ticketSession",
    )
    assert TOOL_SPECS["search_user_action_summary"].required == ("uid",)


def test_demo_parameter_rules_name_catalogue_parameters(demo_instances):
    for inst in demo_instances:
        for tool, rules in inst.tool_truth.parameter_rules.items():
            assert tool in TOOL_SPECS
            assert set(rules.required) <= set(TOOL_SPECS[tool].param_names), (inst.task_id, tool)


def test_inspect_tools_serve_the_sandbox(mock_store):
    seen = []
    sandbox = ReplaySandbox(mock_store, vector=False)
    defs = inspect_tools(sandbox, trace_id=FISH_TASK, on_response=seen.append)
    assert sorted(d.name for d in defs) == sorted(TOOL_SPECS)
    profile = next(d for d in defs if d.name == "search_user_profile")
    assert profile.parameters.required == ["uid"]
    text = run(profile.as_tool()(uid=FISH_TASK))
    assert text.startswith("用户画像")
    assert seen[-1].match_type == "exact" and seen[-1].matched_trace_id == FISH_TASK
    nav = next(d for d in inspect_tools(sandbox, ["get_navigation"]))
    assert nav.parameters.properties["start_lat"].type == ["number", "string"]  # required
    assert nav.parameters.properties["end_poiid"].type == ["string", "null"]  # optional
    assert nav.parameters.properties["mode"].items.type == "string"  # providers want array items
    with pytest.raises(GeoevalError, match="unknown MapSatisfy tool"):
        inspect_tools(sandbox, ["teleport"])


def test_recorded_calls_satisfy_the_declared_schemas(mock_store):
    """Inspect validates a model's tool arguments against these schemas: every call the authors
    recorded (parameter aliases applied) must pass, so that no agent is refused what they allowed."""
    from jsonschema import Draft7Validator  # what Inspect validates tool input with

    def validate_tool_input(arguments, parameters):
        errors = list(Draft7Validator(parameters.model_dump(exclude_none=True)).iter_errors(arguments))
        return "; ".join(e.message for e in errors) or None

    schemas = {d.name: d.parameters for d in inspect_tools(ReplaySandbox(mock_store, vector=False))}
    checked = 0
    for tool in mock_store.tools:
        aliases = ARGUMENT_ALIASES.get(tool, {})
        for r in mock_store.records(tool):
            arguments = {aliases.get(k, k): v for k, v in r.arguments.items()}
            assert validate_tool_input(arguments, schemas[tool]) is None, (r.source, arguments)
            checked += 1
    assert checked == 1191
    assert validate_tool_input({"location": 3}, schemas["get_weather"]) is not None  # the check bites


# ---------------------------------------------------------------------------------------------
# Embedders


def test_hashing_embedder_is_deterministic_and_pinned():
    emb = HashingEmbedder(dim=64)
    v = emb.embed(["ab", "ab", ""])
    assert v.shape == (3, 64)
    assert np.array_equal(v[0], v[1]) and not v[2].any()
    # pinned buckets: a salted hash (Python's hash()) would move them from run to run
    assert np.nonzero(v[0])[0].tolist() == PINNED_AB_BUCKETS
    full = HashingEmbedder()
    a, b = full.embed(["充电站", "充电桩"])
    assert float(a @ b) == pytest.approx(0.5)  # 3 of 6 n-grams shared: 充, 电, 充电


PINNED_AB_BUCKETS = [0, 4, 14]  # 'a', 'b', 'ab' under blake2b, dim 64


def test_e5_embeds_chinese_meaningfully(e5):
    vectors = e5.embed(["充电站", "充电桩", "渔具店"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) >= e5.threshold  # charging station ~ charging pile
    assert float(vectors[0] @ vectors[2]) < e5.threshold  # charging station vs fishing shop
    assert np.array_equal(e5.embed(["充电站"])[0], vectors[0])  # batch and single agree
    assert e5.embed([]).shape == (0, 384)
