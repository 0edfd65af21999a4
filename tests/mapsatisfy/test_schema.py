"""The instance schema and loaders, on the authors' demo workbook and on small records."""

from __future__ import annotations

import json

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.mapsatisfy.schema import (
    MapSatisfyInstance,
    expected_tool_counts,
    instance_to_record,
    load_demo_bench,
    load_instances,
    parse_history,
    parse_instance,
    save_instances,
)
from tests.mapsatisfy.factories import record

C3_TASK = "d3238e6b28bf53f6e7bc30cb1536e2a8"  # the appendix C.3 example (charging station near MixC)
ESCAPED_HISTORY_TASK = "ed34703d53d0bc4654b67c466cf8b672"


# ---------------------------------------------------------------------------------------------
# The authors' demo


def test_demo_workbook_loads_all_ten_instances(demo_instances):
    assert len(demo_instances) == 10
    assert len({i.task_id for i in demo_instances}) == 10
    for inst in demo_instances:
        assert inst.query and inst.full_intent
        assert inst.ground_truth.explicit_intent
        assert inst.ground_truth.implicit_intent
        assert inst.expected_tools
        # every expected tool has its parameter rules in the demo
        assert set(inst.expected_tools) == set(inst.required_parameters)


def test_demo_tool_counts_match_spec(demo_instances):
    counts = expected_tool_counts(demo_instances)
    assert len(counts) == 11
    assert counts["search_poi"] == 7
    assert counts["get_navigation"] == 7
    assert counts["search_user_action_summary"] == 4
    assert counts["search_around_poi"] == 4
    assert sum(counts.values()) == 30  # 7 + 7 + 4 + 4 + 2 (search_user_profile) + 6 tools once


def test_demo_c3_instance_fields(demo_instances):
    inst = next(i for i in demo_instances if i.task_id == C3_TASK)
    ctx = inst.context
    assert ctx.time == "2026-05-07 22:10:32" and ctx.timestamp.hour == 22
    assert (ctx.lon, ctx.lat) == (121.53634, 29.90348)
    assert ctx.city == "浙江省/宁波市"
    assert len(ctx.history) == 8
    assert inst.max_allowed_clarifications == 3
    assert inst.expected_tools == ["search_poi", "search_around_poi", "get_navigation", "search_user_profile"]
    assert inst.required_parameters["search_poi"] == ["query"]
    assert inst.required_parameters["get_navigation"] == ["end_lat", "end_lon", "start_lat", "start_lon"]
    # the rules also describe optional parameters that `paramter` does not require
    rules = inst.tool_truth.parameter_rules["search_poi"].rules
    assert [r.param for r in rules] == ["query", "cur_adcode", "city_limit"]
    assert [f.evidence_confidence for f in inst.ground_truth.implicit_intent] == [1.2, 0.8179, 0.384]
    assert {f.constraint_type for f in inst.ground_truth.implicit_intent} == {"soft"}
    assert len(inst.factual_answer_rubric) == 3


def test_demo_history_escaped_twice_is_decoded(demo_instances):
    inst = next(i for i in demo_instances if i.task_id == ESCAPED_HISTORY_TASK)
    assert len(inst.context.history) == 30
    assert all(h.startswith("用户在") for h in inst.context.history)
    assert not any('\\"' in h for h in inst.context.history)


def test_demo_weights_exceed_one_and_hard_constraints_exist(demo_instances):
    factors = [f for i in demo_instances for f in i.ground_truth.implicit_intent]
    assert len(factors) == 41
    assert max(f.evidence_confidence for f in factors) == 1.2
    assert sum(f.constraint_type == "hard" for f in factors) == 12


def test_demo_round_trips_through_json_and_jsonl(demo_instances, tmp_path):
    for name in ("demo.json", "demo.jsonl"):
        path = save_instances(demo_instances, tmp_path / name)
        again = load_instances(path)
        assert again == demo_instances
    raw = json.loads((tmp_path / "demo.jsonl").read_text(encoding="utf-8").splitlines()[0])
    rules = raw["ground_truth"]["truth_trajectory"]["tool_calls"]["parameter_rules"]
    assert all("paramter" in r and "required" not in r for r in rules.values())  # the authors' spelling


# ---------------------------------------------------------------------------------------------
# Records


def test_parameter_spelling_variants_are_the_same():
    a = parse_instance(record())
    fixed = record()
    rules = fixed["ground_truth"]["truth_trajectory"]["tool_calls"]["parameter_rules"]
    rules["search_poi"] = {"parameter": ["query"], "rules": rules["search_poi"]["rules"]}
    b = parse_instance(fixed)
    assert (
        a.required_parameters
        == b.required_parameters
        == {"search_poi": ["query"], "get_navigation": ["start_lon", "start_lat", "end_lon", "end_lat"]}
    )


def test_cells_may_be_json_strings_as_in_the_workbook(tmp_path):
    r = record()
    r["context"] = json.dumps(
        {**r["context"], "history": json.dumps(r["context"]["history"], ensure_ascii=False)}, ensure_ascii=False
    )
    r["ground_truth"] = json.dumps(r["ground_truth"], ensure_ascii=False)
    path = tmp_path / "one.json"
    path.write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    (inst,) = load_instances(path)
    assert inst == parse_instance(record())


def test_history_forms():
    assert parse_history(None) == []
    assert parse_history("") == []
    assert parse_history(["a", "b"]) == ["a", "b"]
    assert parse_history('["a", "b"]') == ["a", "b"]
    assert parse_history('[\\"a\\", \\"b\\"]') == ["a", "b"]  # escaped once more
    assert parse_history(json.dumps(json.dumps(["a"]))) == ["a"]  # encoded twice
    with pytest.raises(ValueError):
        parse_history("not a list")


def test_optional_profile_and_metadata():
    inst = parse_instance(
        record(
            user_profile="用户画像：男，青年，有车",
            metadata={
                "domain": "search; navigation",
                "implicit_factor_source": ["preference", "context"],
                "time_slot": "evening",
                "day_type": "weekday",
                "city_tier": "new first-tier",
                "locality": "local",
                "difficulty": "L2",
                "sub_task": "filtered search；route planning",
            },
        )
    )
    assert inst.user_profile is not None and inst.user_profile.summary.startswith("用户画像")
    assert inst.metadata.domain == ["search", "navigation"]
    assert inst.metadata.sub_task == ["filtered search", "route planning"]
    assert inst.metadata.difficulty == "L2"
    plain = parse_instance(record())
    assert plain.user_profile is None and plain.metadata.domain == []
    assert "user_profile" not in instance_to_record(plain)


def test_unknown_keys_are_kept():
    r = record()
    r["ground_truth"]["implicit_intent"][0]["source"] = "preference"
    r["ground_truth"]["annotator"] = "expert-3"
    inst = parse_instance(r)
    assert inst.ground_truth.implicit_intent[0].source == "preference"
    assert instance_to_record(inst)["ground_truth"]["annotator"] == "expert-3"


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda r: r["ground_truth"]["implicit_intent"][1].update(constraint_type="medium"),
            "ground_truth.implicit_intent.1.constraint_type",
        ),
        (
            lambda r: r["ground_truth"]["implicit_intent"][0].update(evidence_confidence=-0.5),
            "ground_truth.implicit_intent.0.evidence_confidence",
        ),
        (lambda r: r["ground_truth"].pop("clarification_policy"), "ground_truth.clarification_policy"),
        (
            lambda r: r["ground_truth"]["truth_trajectory"]["tool_calls"]["parameter_rules"]["search_poi"].pop(
                "paramter"
            ),
            "ground_truth.truth_trajectory.tool_calls.parameter_rules.search_poi.paramter",
        ),
        (lambda r: r["context"].update(user_current_loc="29.9"), "context.user_current_loc"),
        (lambda r: r["context"].update(user_current_loc="121.5,291.0"), "context.user_current_loc"),
        (lambda r: r["context"].update(time="yesterday"), "context.time"),
        (lambda r: r.pop("query"), "query"),
    ],
)
def test_schema_errors_name_line_task_and_field(tmp_path, mutate, path):
    bad = record(task_id="bad-one")
    mutate(bad)
    file = tmp_path / "cases.jsonl"
    file.write_text(
        json.dumps(record(), ensure_ascii=False) + "\n" + json.dumps(bad, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with pytest.raises(GeoevalError) as info:
        load_instances(file)
    message = str(info.value)
    assert "line 2 (task_id bad-one)" in message
    assert path + ":" in message
    assert "line 1" not in message  # the valid record is not reported


def test_all_bad_records_are_reported_together(tmp_path):
    a, b = record(task_id="a"), record(task_id="b")
    a["ground_truth"]["clarification_policy"]["max_allowed"] = -1
    b["context"]["uid"] = None
    file = tmp_path / "cases.json"
    file.write_text(json.dumps([a, b, record(task_id="a2")], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(GeoevalError, match="2 schema problem") as info:
        load_instances(file)
    assert "item 0 (task_id a): ground_truth.clarification_policy.max_allowed" in str(info.value)
    assert "item 1 (task_id b): context.uid" in str(info.value)


def test_duplicate_task_ids_are_rejected(tmp_path):
    file = tmp_path / "cases.json"
    file.write_text(json.dumps([record(), record()], ensure_ascii=False), encoding="utf-8")
    with pytest.raises(GeoevalError, match="task_id duplicates item 0"):
        load_instances(file)


def test_invalid_json_cell_is_reported(tmp_path):
    r = record()
    r["ground_truth"] = "{not json"
    file = tmp_path / "cases.jsonl"
    file.write_text(json.dumps(r, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(GeoevalError, match=r"line 1 \(task_id t1\): column 'ground_truth' is not valid JSON"):
        load_instances(file)


def test_workbook_written_like_the_authors_loads(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "ParsedData"
    ws.append(["task_id", "query", "context", "full_intent", "ground_truth"])
    r = record()
    ws.append(
        [
            r["task_id"],
            r["query"],
            json.dumps(r["context"], ensure_ascii=False),
            r["full_intent"],
            json.dumps(r["ground_truth"], ensure_ascii=False),
        ]
    )
    ws.append([None, None, None, None, None])  # trailing empty row, as spreadsheets leave them
    wb.save(tmp_path / "bench.xlsx")
    (inst,) = load_demo_bench(tmp_path / "bench.xlsx")
    assert inst == parse_instance(record())


def test_workbook_without_a_required_column_says_which(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.active.append(["task_id", "query", "context", "full_intent"])
    wb.save(tmp_path / "bench.xlsx")
    with pytest.raises(GeoevalError, match=r"missing column\(s\) \['ground_truth'\]"):
        load_demo_bench(tmp_path / "bench.xlsx")


def test_unsupported_or_missing_files(tmp_path):
    with pytest.raises(GeoevalError, match="unsupported instance file type"):
        (tmp_path / "cases.csv").write_text("x")
        load_instances(tmp_path / "cases.csv")
    with pytest.raises(GeoevalError, match="no such file"):
        load_instances(tmp_path / "absent.jsonl")
    with pytest.raises(GeoevalError, match="not a readable .xlsx"):
        (tmp_path / "fake.xlsx").write_text("not a zip")
        load_demo_bench(tmp_path / "fake.xlsx")


def test_instance_shortcuts_dedupe_expected_tools():
    r = record()
    r["ground_truth"]["truth_trajectory"]["tool_calls"]["expected_tools"] = [
        "search_poi",
        "get_navigation",
        "search_poi",
    ]
    inst = MapSatisfyInstance.model_validate(r)
    assert inst.expected_tools == ["search_poi", "get_navigation"]
    assert expected_tool_counts([inst])["search_poi"] == 1
