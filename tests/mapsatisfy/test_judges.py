"""The judges: the offline `rules` judge reads the answer (its documented rules), and model
judges' three-vote majority at temperature 1.0 with retry-then-None on unparseable replies."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

from geoeval.suites.mapsatisfy.judging.answer_facts import claims_of, evidence_of
from geoeval.suites.mapsatisfy.judging.ensemble import combine, judge_dialogue
from geoeval.suites.mapsatisfy.judging.model_judge import evidence_text, majority, parse_verdict
from geoeval.suites.mapsatisfy.judging.rules_judge import rules_verdicts
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory, Verdicts
from geoeval.suites.mapsatisfy.metrics import FactCheck, ifs, tool_selection
from geoeval.suites.mapsatisfy.schema import parse_instance
from tests.mapsatisfy.factories import record

NAV = "驾车路线;预计的到达时间22:40;路线的耗时18分钟;路线的长度3.5公里"
GOOD_CALLS = [
    {
        "name": "search_poi",
        "arguments": {"query": "万象城 充电站"},
        "content": '{"name": "万象城充电站"}',
        "match_type": "simulated",
        "error": None,
    },
    {
        "name": "get_navigation",
        "arguments": {"start_lon": 121.5, "start_lat": 29.9, "end_lon": 121.6, "end_lat": 29.8},
        "content": NAV,
        "match_type": "exact",
        "error": None,
    },
]


def _instance(**overrides):
    return parse_instance(record(**overrides))


def _trajectory(answer, calls=GOOD_CALLS, given=("去万象城附近的充电站",), profile=False):
    return Trajectory(answer=answer, tool_calls=list(calls), given=list(given), profile_in_prompt=profile)


def _scores(v):
    from geoeval.suites.mapsatisfy.metrics import ecr, iisr

    inst = _instance()
    return (
        ecr(v.explicit_met),
        iisr([f.evidence_confidence for f in inst.ground_truth.implicit_intent], v.implicit_satisfied),
        ifs(v.fact_rows),
    )


GOOD = "推荐「万象城充电站」，位于停车场内，驾车约18分钟，全程3.5公里。"


def test_claims_are_quotes_names_numbers_with_units_and_times():
    ev = evidence_of(GOOD_CALLS, ["去万象城附近的充电站"])
    claims = claims_of("去「万象城充电站」，约3.5公里，18分钟，22:40到达星河充电站。第1个", ev)
    got = {(c.kind, c.text, c.grounded) for c in claims}
    assert got == {
        ("quote", "万象城充电站", True),
        ("number", "3.5", True),
        ("number", "18", True),
        ("clock", "22:40", True),
        ("name", "星河充电站", False),
    }  # "第1个" has no unit: no claim


def test_a_number_is_grounded_across_a_unit_change_at_its_precision():
    ev = evidence_of(
        [{"name": "get_navigation", "content": '{"distance_m": 3250, "duration_min": 90}', "match_type": "exact"}], []
    )
    grounded = {c.text: c.grounded for c in claims_of("全程3.3公里，约1.5小时，或3公里，不是4.1公里", ev)}
    assert grounded == {"3.3": True, "1.5": True, "3": True, "4.1": False}


def test_a_correct_grounded_answer_meets_everything():
    v = rules_verdicts(_instance(), _trajectory(GOOD))
    assert v.explicit_met == [1.0, 1.0] and v.implicit_satisfied == [1.0, 1.0]
    assert _scores(v) == (1.0, 1.0, 1.0)


def test_a_polite_closing_question_or_a_still_does_not_zero_a_correct_answer():
    for tail in ("如需导航或查看其他充电站，请告诉我。", "需要我帮您导航吗？", "驾车过去还是很方便的。"):
        assert _scores(rules_verdicts(_instance(), _trajectory(GOOD + tail))) == (1.0, 1.0, 1.0), tail


def test_refusals_empty_answers_and_answers_without_claims_meet_nothing():
    for answer in (
        "",
        "抱歉，我无法帮您找到万象城附近的充电站。",
        "好的，已为您规划好去万象城附近充电站的驾车路线，祝您一路顺风！",
        "请问您想什么时候出发？",
    ):
        assert _scores(rules_verdicts(_instance(), _trajectory(answer))) == (0.0, 0.0, 0.0), answer


def test_an_invented_station_meets_nothing():
    v = rules_verdicts(_instance(), _trajectory("推荐「星河充电站」，位于停车场内，驾车约18分钟，全程3.5公里。"))
    assert _scores(v) == (0.0, 0.0, 0.0)
    v = rules_verdicts(_instance(), _trajectory("推荐万象城北区星河充电站，位于停车场内，驾车约18分钟。"))  # unquoted
    assert _scores(v) == (0.0, 0.0, 0.0)
    assert [n for n in v.raw["rules"]["invented"]] == ["北区星河充电站"]  # 万象城 is read as a place of its own


def test_an_invented_fact_in_a_correct_answer_costs_faithfulness_only():
    e, i, f = _scores(rules_verdicts(_instance(), _trajectory(GOOD + "途中还可在「翠微阁服务区」休息。")))
    assert (e, i, f) == (1.0, 1.0, 0.0)
    assert (
        _scores(rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，驾车约25分钟，位于停车场内。")))[2]
        == 0.0
    )


def test_a_number_inside_another_is_not_grounded_by_it():
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，大约8分钟"))  # "18分钟" does not state 8
    assert ifs(v.fact_rows) == 0.0


def test_no_record_responses_ground_nothing():
    calls = [dict(GOOD_CALLS[0], match_type="no_record"), GOOD_CALLS[1]]
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」。", calls))
    assert ifs(v.fact_rows) == 0.0 and v.explicit_met == [0.0, 0.0]


def test_the_answer_decides_the_factors_and_ts_judges_the_calls():
    # get_navigation lacks required parameters: TS counts it incorrect, the answer is still correct
    calls = [GOOD_CALLS[0], dict(GOOD_CALLS[1], arguments={"start_lon": 121.5, "start_lat": 29.9})]
    inst = _instance()
    v = rules_verdicts(inst, _trajectory(GOOD, calls))
    assert v.explicit_met == [1.0, 1.0]
    assert (
        tool_selection(
            [(c["name"], c["arguments"]) for c in calls], inst.expected_tools, inst.required_parameters
        ).score
        == 0.5
    )


def test_an_implicit_factor_is_judged_on_what_the_answer_proposes():
    # the hard driving rubric: a transit plan breaks it, whatever was fetched
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，位于停车场内，坐地铁约18分钟。"))
    assert v.implicit_satisfied == [1.0, 0.0]
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，驾车约18分钟。"))  # parking not addressed
    assert v.implicit_satisfied == [0.0, 1.0]


def test_a_price_cap_and_an_opening_time_are_checked_against_the_named_entity():
    data = record()
    data["ground_truth"]["implicit_intent"] = [
        {"rubric_instruction": "推荐人均不超过60元的地点", "constraint_type": "soft", "evidence_confidence": 1.0},
        {"rubric_instruction": "推荐的地点在21:30之后仍营业", "constraint_type": "hard", "evidence_confidence": 1.0},
    ]
    inst = parse_instance(data)
    pois = {
        "pois": [
            {"name": "甲充电站", "avg_price": 50, "open_hours": "10:00-22:00"},
            {"name": "乙充电站", "avg_price": 80, "open_hours": "10:00-21:00"},
        ]
    }
    calls = [dict(GOOD_CALLS[0], content=json.dumps(pois, ensure_ascii=False)), GOOD_CALLS[1]]
    assert rules_verdicts(
        inst, _trajectory("万象城附近推荐「甲充电站」，驾车约18分钟。", calls)
    ).implicit_satisfied == [1.0, 1.0]
    assert rules_verdicts(
        inst, _trajectory("万象城附近推荐「乙充电站」，驾车约18分钟。", calls)
    ).implicit_satisfied == [0.0, 0.0]


def test_model_judges_see_whole_tool_responses_or_a_counted_cut():
    long = "x" * 5000 + "END"
    calls = [dict(GOOD_CALLS[1], content=long)]
    text, stats = evidence_text(calls)
    assert "END" in text and stats == {"responses": 1, "truncated": 0, "chars_cut": 0}
    text, stats = evidence_text([*calls, dict(GOOD_CALLS[0])], budget=2000)
    assert "END" not in text and "characters cut" in text
    assert stats["truncated"] == 1 and stats["chars_cut"] == len(long) - 1000


def test_model_judges_default_to_the_papers_temperature_and_record_the_evidence_budget():
    seen = {}
    judge = ScriptedJudge(["VERDICT: YES"] * 9)

    def factory(name, config):
        seen["temperature"] = config.temperature
        return judge

    v = asyncio.run(
        judge_dialogue(_one_item_instance(), _trajectory("ok"), ["m/judge"], votes=3, model_factory=factory)
    )
    assert seen["temperature"] == 1.0  # section 4.2
    assert v.raw["evidence"] == {"responses": 2, "truncated": 0, "chars_cut": 0}


def test_parse_and_majority():
    assert parse_verdict("VERDICT: yes — fine") == 1.0 and parse_verdict("VERDICT：NO") == 0.0
    assert parse_verdict("I think so") is None
    assert majority([1.0, 0.0, 1.0]) == 1.0 and majority([0.0, 0.0, 1.0]) == 0.0
    assert majority([None, None, None]) is None
    assert majority([1.0, None, 0.0]) == 0.5  # a tie (a vote failed): undecided, graded halfway


class ScriptedJudge:
    """A model whose replies come from a list, in order."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = 0

    async def generate(self, prompt):
        self.calls += 1
        return SimpleNamespace(completion=self.replies.pop(0) if self.replies else "no verdict")


def _one_item_instance():
    data = record()
    data["ground_truth"]["explicit_intent"] = ["目标是充电站"]
    data["ground_truth"]["implicit_intent"] = data["ground_truth"]["implicit_intent"][:1]
    return parse_instance(data)


def test_model_judge_votes_three_times_and_takes_the_majority():
    judge = ScriptedJudge(
        [
            "VERDICT: YES",
            "VERDICT: NO",
            "VERDICT: YES",  # explicit
            "VERDICT: NO",
            "VERDICT: NO",
            "VERDICT: YES",  # implicit
            "VERDICT: YES",
            "VERDICT: YES",
            "VERDICT: YES",
        ]
    )  # grounding row
    v = asyncio.run(
        judge_dialogue(
            _one_item_instance(), _trajectory("ok"), ["m/judge"], votes=3, model_factory=lambda name, config: judge
        )
    )
    assert judge.calls == 9
    assert v.explicit_met == [1.0] and v.implicit_satisfied == [0.0] and ifs(v.fact_rows) == 1.0


def test_unparseable_replies_are_retried_then_make_only_that_item_none():
    # explicit: every vote and its retry unparseable -> None; implicit: first reply retried once
    judge = ScriptedJudge(
        [
            "?",
            "?",
            "?",
            "?",
            "?",
            "?",
            "hmm",
            "VERDICT: YES",
            "VERDICT: YES",
            "VERDICT: YES",
            "VERDICT: YES",
            "VERDICT: YES",
            "VERDICT: YES",
        ]
    )
    v = asyncio.run(
        judge_dialogue(
            _one_item_instance(), _trajectory("ok"), ["m/judge"], votes=3, model_factory=lambda name, config: judge
        )
    )
    assert v.explicit_met == [None]
    assert v.implicit_satisfied == [1.0]
    assert ifs(v.fact_rows) == 1.0


def test_judges_are_averaged_and_a_failed_one_is_left_out():
    a = Verdicts([1.0], [1.0], [[FactCheck(True, True)]])
    b = Verdicts([0.0], [None], [[FactCheck(True, False)]])
    c = combine([a, b])
    # b failed on the implicit item: the item is a's verdict, not "no value" (no shrunken denominator)
    assert c.explicit_met == [0.5] and c.implicit_satisfied == [1.0]
    assert combine([Verdicts([None], [None], [None]), Verdicts([None], [None], [None])]).implicit_satisfied == [None]
    assert ifs(c.fact_rows) == 1.0  # one of two judges finds the row faithful: mean 0.5 >= 1/2


def test_verdicts_round_trip_through_a_record():
    v = Verdicts([1.0, None], [0.5], [[FactCheck(True, False)], None])
    back = Verdicts.from_record(v.to_record())
    assert back.explicit_met == [1.0, None] and back.fact_rows[0] == [FactCheck(True, False)]
    assert back.fact_rows[1] is None


def test_rules_judge_needs_no_model():
    def factory(*args, **kwargs):
        raise AssertionError("the rules judge asked a model")

    v = asyncio.run(judge_dialogue(_instance(), _trajectory(GOOD), ["rules"], votes=3, model_factory=factory))
    assert v.explicit_met == [1.0, 1.0]


def test_a_case_whose_judges_all_failed_is_flagged_not_valued():
    from geoeval.suites.mapsatisfy.judging.verdicts import Verdicts
    from geoeval.suites.mapsatisfy.metrics import FactCheck

    assert Verdicts([None, None], [None], [None]).all_failed()
    assert not Verdicts([None, 1.0], [None], [None]).all_failed()  # one verdict: partly judged
    assert not Verdicts([], [], []).all_failed()  # nothing to judge is not a failure
    assert not Verdicts([None], [None], [[FactCheck(True, True)]]).all_failed()


class DeadJudge:
    """A model judge whose every call fails after its retries (a dead endpoint)."""

    async def generate(self, prompt):
        raise ConnectionError("endpoint unreachable")


def test_a_model_judge_that_fails_is_left_out_and_named_and_alone_makes_the_case_an_error():
    instance = _one_item_instance()
    rules_only = asyncio.run(judge_dialogue(instance, _trajectory("ok"), ["rules"], votes=1))
    both = asyncio.run(
        judge_dialogue(
            instance, _trajectory("ok"), ["rules", "m/dead"], votes=3, model_factory=lambda name, config: DeadJudge()
        )
    )
    # the rules judge decides alone: the same verdicts as without the dead judge, which is named
    assert (both.explicit_met, both.implicit_satisfied) == (rules_only.explicit_met, rules_only.implicit_satisfied)
    assert "ConnectionError: endpoint unreachable" in both.raw["m/dead:error"]
    alone = asyncio.run(
        judge_dialogue(instance, _trajectory("ok"), ["m/dead"], votes=3, model_factory=lambda name, config: DeadJudge())
    )
    assert alone.all_failed()  # no judge decided anything: the sample is a counted error, never a 0


def test_common_terms_come_in_the_rubric_order_whatever_the_hash_seed():
    """The terms a rubric shares with the evidence keep the rubric's order: the oracle's answer
    lists them, and a set's order (which moves with PYTHONHASHSEED) made two runs differ."""
    import os
    import subprocess
    import sys

    code = (
        "from geoeval.suites.mapsatisfy.judging.rules_judge import _common_substrings;"
        "print(_common_substrings('喜欢奶茶也喜欢茶饮和咖啡甜点', '咖啡甜点 茶饮 奶茶'))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
        ).stdout.strip()
        for seed in range(6)
    }
    assert outputs == {"['奶茶', '茶饮', '咖啡甜点']"}
