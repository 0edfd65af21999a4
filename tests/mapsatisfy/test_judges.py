"""The judges: the offline `rules` judge's documented rules, and model judges' three-vote
majority with retry-then-None on unparseable replies."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from geoeval.suites.mapsatisfy.judges import (
    Trajectory,
    Verdicts,
    answer_claims,
    combine,
    judge_dialogue,
    majority,
    parse_verdict,
    rules_verdicts,
)
from geoeval.suites.mapsatisfy.metrics import FactCheck, ifs
from geoeval.suites.mapsatisfy.schema import parse_instance
from tests.mapsatisfy.factories import record

NAV = "驾车路线;预计的到达时间22:40;路线的耗时18分钟;路线的长度3.5公里"
GOOD_CALLS = [
    {"name": "search_poi", "arguments": {"query": "万象城 充电站"}, "content": '{"name": "万象城充电站"}',
     "match_type": "simulated", "error": None},
    {"name": "get_navigation", "arguments": {"start_lon": 121.5, "start_lat": 29.9, "end_lon": 121.6, "end_lat": 29.8},
     "content": NAV, "match_type": "exact", "error": None},
]


def _instance(**overrides):
    return parse_instance(record(**overrides))


def _trajectory(answer, calls=GOOD_CALLS, given=("去万象城附近的充电站",), profile=False):
    return Trajectory(answer=answer, tool_calls=list(calls), given=list(given), profile_in_prompt=profile)


def test_claims_are_quotes_and_numbers_outside_them():
    assert answer_claims("去「万象城充电站」，约3.5公里，18分钟") == ["万象城充电站", "3.5", "18"]


def test_grounded_answer_with_the_expected_tools_meets_everything():
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，驾车约18分钟，3.5公里。"))
    assert v.explicit_met == [1.0, 1.0]
    assert v.implicit_satisfied == [1.0, 1.0]
    assert ifs(v.fact_rows) == 1.0


def test_a_number_no_source_states_is_ungrounded():
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」，驾车约25分钟。"))
    assert ifs(v.fact_rows) == 0.0


def test_a_number_inside_another_is_not_grounded_by_it():
    v = rules_verdicts(_instance(), _trajectory("大约8分钟"))  # "18分钟" does not state 8
    assert ifs(v.fact_rows) == 0.0


def test_no_record_responses_ground_nothing():
    calls = [dict(GOOD_CALLS[0], match_type="no_record"), GOOD_CALLS[1]]
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」。", calls))
    assert ifs(v.fact_rows) == 0.0


def test_a_missing_required_parameter_fails_explicit_and_implicit():
    calls = [GOOD_CALLS[0], dict(GOOD_CALLS[1], arguments={"start_lon": 121.5, "start_lat": 29.9})]
    v = rules_verdicts(_instance(), _trajectory("推荐「万象城充电站」。", calls))
    assert v.explicit_met == [0.0, 0.0] and v.implicit_satisfied == [0.0, 0.0]


def test_a_question_is_not_a_delivered_answer():
    v = rules_verdicts(_instance(), _trajectory("请问您想什么时候出发？"))
    assert v.explicit_met == [0.0, 0.0]


def test_profile_evidence_needs_a_profile_tool_when_the_truth_expects_one():
    data = record()
    tt = data["ground_truth"]["truth_trajectory"]["tool_calls"]
    tt["expected_tools"].append("search_user_profile")
    tt["parameter_rules"]["search_user_profile"] = {"paramter": ["uid"], "rules": []}
    data["ground_truth"]["implicit_intent"][1]["evidence"] = "画像：驾车偏好 85%"
    inst = parse_instance(data)
    profile_call = {"name": "search_user_profile", "arguments": {"uid": "u1"}, "content": "驾车为主",
                    "match_type": "no_record", "error": None}
    v = rules_verdicts(inst, _trajectory("推荐「万象城充电站」。", [*GOOD_CALLS, profile_call]))
    assert v.implicit_satisfied == [1.0, 0.0]  # only the factor citing the profile fails
    v = rules_verdicts(inst, _trajectory("推荐「万象城充电站」。", [*GOOD_CALLS, profile_call], profile=True))
    assert v.implicit_satisfied == [1.0, 1.0]  # the profile setting gave it in the prompt


def test_parse_and_majority():
    assert parse_verdict("VERDICT: yes — fine") == 1.0 and parse_verdict("VERDICT：NO") == 0.0
    assert parse_verdict("I think so") is None
    assert majority([1.0, 0.0, 1.0]) == 1.0 and majority([0.0, 0.0, 1.0]) == 0.0
    assert majority([None, None, None]) is None


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
    judge = ScriptedJudge(["VERDICT: YES", "VERDICT: NO", "VERDICT: YES",  # explicit
                           "VERDICT: NO", "VERDICT: NO", "VERDICT: YES",  # implicit
                           "VERDICT: YES", "VERDICT: YES", "VERDICT: YES"])  # grounding row
    v = asyncio.run(judge_dialogue(_one_item_instance(), _trajectory("ok"), ["m/judge"], votes=3,
                                   model_factory=lambda name, config: judge))
    assert judge.calls == 9
    assert v.explicit_met == [1.0] and v.implicit_satisfied == [0.0] and ifs(v.fact_rows) == 1.0


def test_unparseable_replies_are_retried_then_make_only_that_item_none():
    # explicit: every vote and its retry unparseable -> None; implicit: first reply retried once
    judge = ScriptedJudge(["?", "?", "?", "?", "?", "?",
                           "hmm", "VERDICT: YES", "VERDICT: YES", "VERDICT: YES",
                           "VERDICT: YES", "VERDICT: YES", "VERDICT: YES"])
    v = asyncio.run(judge_dialogue(_one_item_instance(), _trajectory("ok"), ["m/judge"], votes=3,
                                   model_factory=lambda name, config: judge))
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

    v = asyncio.run(judge_dialogue(_instance(), _trajectory("推荐「万象城充电站」。"), ["rules"], votes=3,
                                   model_factory=factory))
    assert v.explicit_met == [1.0, 1.0]


def test_a_case_whose_judges_all_failed_is_flagged_not_valued():
    from geoeval.suites.mapsatisfy.judges import FactCheck, Verdicts

    assert Verdicts([None, None], [None], [None]).all_failed()
    assert not Verdicts([None, 1.0], [None], [None]).all_failed()  # one verdict: partly judged
    assert not Verdicts([], [], []).all_failed()  # nothing to judge is not a failure
    assert not Verdicts([None], [None], [[FactCheck(True, True)]]).all_failed()
