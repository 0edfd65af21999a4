"""Scoring a finished sample: reading the trajectory and the submitted answer from the messages,
the answer schema, the Table 11 metrics on a reference-replaying agent (all 1) and on broken
answers (each metric falls where it should), and SC/RP through the judge ensemble."""

from __future__ import annotations

import asyncio
import copy
import json
import math

import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.tool import ToolCall, ToolCallError

from geoeval.agents.policies import PolicyReply
from geoeval.core import registry
from geoeval.core.config.schema import JudgeSpec
from geoeval.judges.ensemble import JudgeEnsemble
from geoeval.suites.lifeplanner import metrics as M
from geoeval.suites.lifeplanner.prompts import system_prompt, user_prompt
from geoeval.suites.lifeplanner.scorers import SampleRecord, evaluate_sample, metric_values
from geoeval.suites.lifeplanner.scoring.answers import AnswerSchemaError, parse_answer
from geoeval.suites.lifeplanner.scoring.judging import rules_judge
from geoeval.suites.lifeplanner.scoring.trajectory import trajectory_from_messages

from .helpers import run_policy

ALL = ["pr", "a", "piou", "rd_distance", "rd_time", "oc", "sc", "ig", "te", "rp", "input_tokens", "output_tokens"]


def replaying(case, answer=None, steps=None):
    """A policy that walks `steps` (default τ*) and submits `answer` (default the reference)."""
    steps = case.tau_star if steps is None else steps
    answer = case.answer if answer is None else answer

    def policy(messages, tools, args):
        made = [c for m in messages if m.role == "assistant" for c in m.tool_calls or []]
        if len(made) < len(steps):
            return PolicyReply(tool=steps[len(made)]["tool"], arguments=dict(steps[len(made)]["arguments"]))
        return PolicyReply(tool="submit_answer", arguments={"result": answer})

    return policy


def rules_only():
    return JudgeEnsemble(JudgeSpec(models=["rules"]), rules=rules_judge)


def score(city, city_path, case, policy, ensemble=None, tokens=None):
    """Run `policy` on the case and score it as the task does: evaluate_sample (the judging
    step), then the registered metric functions through the core's compute_metrics."""
    messages, _ = run_policy(policy, case, city, system_prompt(case.task), user_prompt(case.question))
    record = asyncio.run(
        evaluate_sample(
            case.to_dict(),
            messages,
            str(city_path),
            ensemble or rules_only(),
            tokens=tokens or {"input": 10, "output": 3},
        )
    )
    values, notes = metric_values(case.to_dict(), record, ALL)
    return values, notes, record


def first(cases, type_):
    return next(c for c in cases if c.type == type_)


# ------------------------------------------------------------------ trajectory


def test_trajectory_reads_calls_failures_refusals_and_the_submission():
    def call(i, fn, **args):
        return ToolCall(id=f"c{i}", function=fn, arguments=args)

    msgs = [
        ChatMessageAssistant(
            content="", tool_calls=[call(1, "place_search", query_name="x"), call(2, "search_notes", keyword="y")]
        ),
        ChatMessageTool(
            content=json.dumps(
                {
                    "total_matched": 30,
                    "returned": 20,
                    "results": [{"place_id": "B0AAAAAAAA", "name": "A", "place_type": "T|S", "rating": 4.1, "cost": 9}],
                }
            ),
            tool_call_id="c1",
            function="place_search",
        ),
        ChatMessageTool(
            content=json.dumps({"total_matched": 0, "returned": 0, "results": []}),
            tool_call_id="c2",
            function="search_notes",
        ),
        ChatMessageAssistant(content="", tool_calls=[call(3, "place_detail", place_id=7)]),
        ChatMessageTool(
            content="bad",
            tool_call_id="c3",
            function="place_detail",
            error=ToolCallError("parsing", "place_id must be a string"),
        ),
        ChatMessageAssistant(content="", tool_calls=[call(4, "note_detail", note_id="n1")]),
        ChatMessageTool(
            content=json.dumps({"note_id": "n1", "title": "t", "desc": "d", "comments": []}),
            tool_call_id="c4",
            function="note_detail",
        ),
        ChatMessageAssistant(content="", tool_calls=[call(5, "routing", start_place_id="a", end_place_id="b")]),
        ChatMessageTool(content="budget", tool_call_id="c5", function="routing", error=ToolCallError("limit", "x")),
        ChatMessageAssistant(content="", tool_calls=[call(6, "submit_answer", result={"answer": 1})]),
        ChatMessageTool(content="Answer submitted.", tool_call_id="c6", function="submit_answer"),
    ]
    t = trajectory_from_messages(msgs)
    assert [c.failure_class for c in t.calls] == ["truncated", "empty", "parameter_error", "ok"]
    assert t.n_calls == 4 and t.refused == 1 and t.submit_calls == 1
    # TE counts the calls issued, the refused one included: |τ*| = 3 over |τ| = 5, not 3 / 4
    case = {"task": "place", "level": "l0", "tau_star": [{}] * 3, "evidence": []}
    record = SampleRecord(
        db_path="", alpha=0.9, schema_error="not read here", tool_calls=t.n_calls, refused_calls=t.refused
    )
    assert metric_values(case, record, ["te"])[0]["te"] == pytest.approx(3 / 5)
    assert t.submitted == {"answer": 1}
    assert {"place:B0AAAAAAAA", "place:B0AAAAAAAA:rating", "note:n1", "note_listed:n1"} <= t.observed
    assert "place:B0AAAAAAAA:distance_m" not in t.observed


# ------------------------------------------------------------------ answer schema


def test_parse_answer_accepts_the_schema_and_names_what_is_missing():
    p = parse_answer(
        "trip",
        "l1",
        json.dumps(
            {
                "start": {"name": "S", "place_id": "s"},
                "end": {"place_id": "e"},
                "optimal_order": [
                    {"place_id": "e", "visit_order": 3},
                    {"place_id": "s", "visit_order": 1},
                    {"place_id": "w", "visit_order": 2},
                ],
                "waypoints": [{"place_id": "w", "ref": {"note_id": "n1,n2", "attribute_key": "tag:x"}}],
                "vehicle": "Driving",
                "mode": "time",
                "total_distance_m": "100",
                "total_time_s": 20,
            }
        ),
    )
    assert p.order == ["s", "w", "e"] and p.vehicle == "driving" and p.total_distance_m == 100.0
    assert p.note_ids == ["n1", "n2"] and p.attribute_keys == ["tag:x"] and p.names == {"s": "S"}
    assert parse_answer("place", "l0", "Monday-Sunday 10:00-22:00").value == "Monday-Sunday 10:00-22:00"
    assert parse_answer("nearby", "l0", {"answer": {"place_id": "x"}}).places == ["x"]
    for task, level, bad, why in [
        ("place", "l1", {"reason": "r"}, "answer"),
        ("place", "l0", None, "no answer"),
        ("nearby", "l0", {"answer": []}, "list of places"),
        ("nearby", "l1", {"answer": [{"name": "x"}]}, "place_id"),
        (
            "routing",
            "l0",
            {
                "start": {"place_id": "a"},
                "end": {"place_id": "b"},
                "vehicle": "driving",
                "mode": "time",
                "total_distance_m": 5,
            },
            "total_time_s",
        ),
        (
            "routing",
            "l1",
            {
                "start": {"place_id": "a"},
                "end": {"place_id": "b"},
                "vehicle": "driving",
                "mode": "time",
                "total_distance_m": 5,
                "total_time_s": 1,
            },
            "optimal_order",
        ),
        ("trip", "l2", "not json at all", "object"),
        (
            "routing",
            "l0",
            {
                "start": "a",
                "end": "b",
                "vehicle": "walking",
                "mode": "time",
                "total_distance_m": "far",
                "total_time_s": 1,
            },
            "number",
        ),
    ]:
        with pytest.raises(AnswerSchemaError, match=why):
            parse_answer(task, level, bad)


# ------------------------------------------------------------------ metrics


def test_metrics_are_registered_for_the_suite():
    names = registry.metric_names("lifeplanner")
    assert set(ALL) <= names
    for m in ALL:
        assert registry.get_metric(m, "lifeplanner").suites == ("lifeplanner",)


def test_replaying_the_reference_scores_every_applicable_metric_one(city, city_path, cases):
    for case in cases:
        values, notes, _ = score(city, city_path, case, replaying(case))
        app = M.applicable(case.task, case.level)
        assert {m for m, v in values.items() if not math.isnan(v)} == set(ALL) & app, case.id  # Table 11
        for m, v in values.items():
            if m in app and m not in ("input_tokens", "output_tokens"):
                assert v == 1.0, (case.id, m, notes)
        assert values["input_tokens"] == 10 and values["output_tokens"] == 3
        assert notes == [], case.id


def test_a_wrong_place_fails_the_case(city, city_path, cases, db):
    case = first(cases, "nearby_L1")
    other = db.execute(
        "SELECT id, name FROM places WHERE id <> ? ORDER BY id LIMIT 1", [case.reference_places[0]]
    ).fetchone()
    wrong = copy.deepcopy(case.answer)
    wrong["answer"][0].update(place_id=other[0], name=other[1])
    steps = case.tau_star + [{"tool": "place_detail", "arguments": {"place_id": other[0]}}]
    values, _, _ = score(city, city_path, case, replaying(case, wrong, steps))
    assert values["piou"] == 0.0 and values["pr"] == 0.0
    assert values["sc"] < 1.0  # the rules judge checks the wrong place's attributes in the database
    assert values["te"] == pytest.approx(len(case.tau_star) / len(steps))


def test_wrong_order_and_fabricated_totals(city, city_path, cases):
    case = next(c for c in cases if c.task == "trip" and c.context.get("scenario") == "B")
    wrong = copy.deepcopy(case.answer)
    free = case.context["unconstrained_order"]
    wrong["optimal_order"] = [{"place_id": p, "visit_order": k + 1} for k, p in enumerate(free)]
    values, _, _ = score(city, city_path, case, replaying(case, wrong))
    assert values["oc"] < 1.0 and values["piou"] == 1.0 and values["pr"] == 0.0
    assert values["sc"] < 1.0  # Scenario B: the free optimum breaks a constraint
    assert values["rp"] < 1.0  # the reference totals are not the sum of the free order's legs
    made_up = copy.deepcopy(case.answer)
    made_up["total_distance_m"] = case.answer["total_distance_m"] * 1.5
    values, _, _ = score(city, city_path, case, replaying(case, made_up))
    assert values["rd_distance"] == pytest.approx(0.5) and values["rd_time"] == 1.0
    assert values["rp"] < 1.0 and values["pr"] == 0.0


def test_skipping_the_evidence_lowers_grounding_and_purity(city, city_path, cases):
    case = next(c for c in cases if c.level == "l2" and any(e.startswith("note:") for e in c.evidence))
    steps = [s for s in case.tau_star if s["tool"] != "note_detail"]
    values, _, _ = score(city, city_path, case, replaying(case, steps=steps))
    assert values["ig"] < 1.0
    assert values["te"] == 1.0  # fewer calls than τ* is not penalised by TE
    assert values["pr"] == 1.0  # the outcome is right; only the process skipped evidence


def test_an_answer_off_the_schema_scores_zero_and_says_why(city, city_path, cases):
    case = first(cases, "routing_L1")
    values, notes, _ = score(city, city_path, case, replaying(case, {"route": "A to B"}))
    for m in ("pr", "a", "piou", "rd_distance", "rd_time", "oc", "sc", "rp"):
        assert values[m] == 0.0, m
    assert values["ig"] == 1.0 and values["te"] == 1.0  # the trajectory is still what it was
    assert any("schema" in n and "start" in n for n in notes)


def test_no_submission_is_a_schema_failure(city, city_path, cases):
    case = first(cases, "place_L0")

    def silent(messages, tools, args):
        return PolicyReply(content="I think it opens at ten.")

    values, notes, _ = score(city, city_path, case, silent)
    assert values["pr"] == 0.0 and values["a"] == 0.0 and values["te"] == 0.0
    assert any("no answer" in n for n in notes)


def _scripted(replies):
    outputs = [ModelOutput.from_content("mockllm/model", r) for r in replies]
    for o in outputs:
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)

    def factory(name, config):
        return get_model("mockllm/model", config=config, custom_outputs=list(outputs), memoize=False)

    return factory


def test_sc_and_rp_are_the_mean_of_the_judge_ensemble(city, city_path, cases):
    case = first(cases, "nearby_L2")
    ensemble = JudgeEnsemble(
        JudgeSpec(models=["rules", "mockllm/judge"]), rules=rules_judge, model_factory=_scripted(["SCORE: 0.5"])
    )  # each request gets a fresh judge
    values, _, record = score(city, city_path, case, replaying(case), ensemble)
    assert record.sc_judges == {"rules": 1.0, "mockllm/judge": 0.5}
    assert values["sc"] == pytest.approx(0.75) and values["pr"] == 0.0  # 0.75 is not > alpha = 0.9
    assert record.rp_judges == {"rules": 1.0, "mockllm/judge": 0.5}
    assert values["rp"] == pytest.approx(0.75)


def test_a_case_whose_judges_all_fail_is_an_error_with_no_values(city, city_path, cases):
    case = first(cases, "trip_L2")

    def broken(request):
        raise RuntimeError("judge offline")

    values, notes, record = score(
        city, city_path, case, replaying(case), JudgeEnsemble(JudgeSpec(models=["rules"]), rules=broken)
    )
    assert math.isnan(values["sc"]) and math.isnan(values["pr"]) and math.isnan(values["rp"])
    assert values["a"] == 1.0 and values["oc"] == 1.0
    assert any("SC judges failed" in n and "judge offline" in n for n in notes)
    # the sample becomes an error (counted in n_errors), and every (failed) vote is kept
    assert record.judge_error and "judge offline" in record.judge_error
    assert record.judge_votes["sc"]["votes"] == {"rules": [None]}
