"""The answer protocols of the `rules` judge (issue 22; README "Answer protocol"): the robust
protocol reads what an answer asserts about the recommended record however it is typeset, and
gives a hedge, a self-correction, a negated recommendation, an echo of the request or a keyword
list no more credit than its worst candidate; the paper protocol is the SCORING_VERSION 3 judge.
The answers are written as a user would write them, in Chinese and English."""

from __future__ import annotations

import json
import re

import pytest

from geoeval.suites.mapsatisfy.judging.rules_judge import rules_verdicts
from geoeval.suites.mapsatisfy.judging.typesetting import cn_number, normalise
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory
from geoeval.suites.mapsatisfy.metrics import ecr, ifs, iisr
from geoeval.suites.mapsatisfy.schema import parse_instance
from tests.mapsatisfy.factories import record

STATION = "万象城地下停车场充电站"
OTHER = "鼓楼步行街美食城"
POIS = {
    "pois": [
        {"name": STATION, "address": "宁波万象城B2层停车场", "distance": "120"},
        {"name": OTHER, "address": "中山西路88号", "distance": "2300"},
    ]
}
CALLS = [
    {
        "name": "search_around_poi",
        "arguments": {"query": "充电站", "x": 121.55, "y": 29.89},
        "content": json.dumps(POIS, ensure_ascii=False),
        "match_type": "exact",
        "error": None,
    },
    {
        "name": "get_navigation",
        "arguments": {"start_lon": 121.5, "start_lat": 29.9, "end_lon": 121.55, "end_lat": 29.89},
        "content": "驾车路线;路线的耗时18分钟;路线的长度3.5公里;路线的花费0元;详细的行程信息:姚江东路,大闸北路",
        "match_type": "exact",
        "error": None,
    },
]
PLAIN = f"推荐「{STATION}」，在停车场内，驾车全程3.5公里，约18分钟。"


def _scores(answer: str, protocol: str = "robust") -> tuple[float, float, float]:
    instance = parse_instance(record())
    v = rules_verdicts(instance, Trajectory(answer, list(CALLS), ["去万象城附近的充电站"]), protocol=protocol)
    weights = [f.evidence_confidence for f in instance.ground_truth.implicit_intent]
    return ecr(v.explicit_met), iisr(weights, v.implicit_satisfied), ifs(v.fact_rows)


def _ar(scores: tuple[float, float, float]) -> float:
    return scores[0] * scores[1]


def test_the_plain_answer_meets_everything_under_both_protocols():
    assert _scores(PLAIN) == _scores(PLAIN, "paper") == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "answer",
    [
        f"**推荐**：\n- **{STATION}**（停车场内）\n- 驾车：全程 3.5 公里，约 18 分钟",
        f"推荐「{STATION}」，在停车场内，驾车全程３．５公里，约１８分钟。",
        f"推荐「{STATION}」，在停车场内，驾车全程三点五公里，约十八分钟。",
        f"I recommend {STATION} (inside the car park). Driving: 3.5 km, about eighteen minutes.",
        f"```\n推荐「{STATION}」\n```\n停车场内，驾车约18 min，全程3.5km。",
        PLAIN + "以上是我的推荐：这家充电站就在停车场里，开过去最省事。",
        PLAIN + f"不推荐「{OTHER}」，它太远，也不是充电站。",  # an alternative named to reject it
        f"推荐「{STATION}」，在停车场内。路线：驾车先走姚江东路，再走大闸北路，全程3.5公里，约18分钟。",  # leg by leg
    ],
    ids=["markdown", "full_width", "numbers_in_words", "english", "fence_and_units", "explained", "reject", "legs"],
)
def test_the_right_answer_written_another_way_scores_as_the_plain_one(answer):
    assert _scores(answer) == (1.0, 1.0, 1.0)


def test_the_paper_protocol_misreads_typesetting():
    # the kinds of answer the two protocols read differently (README, "Answer protocol")
    assert _scores(f"推荐「{STATION}」，在停车场内，驾车全程三点五公里，约十八分钟。", "paper")[2] == 1.0
    full_width = _scores(f"推荐「{STATION}」，在停车场内，驾车全程３．５公里，约１８分钟。", "paper")
    assert full_width != (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "answer",
    [
        f"不推荐「{STATION}」，它已经不营业了。驾车全程3.5公里，约18分钟，停车场内。",
        f"「{STATION}」已关闭，请勿前往。驾车全程3.5公里，约18分钟。",
        f"Do not go to {STATION}, it is closed. Driving 3.5 km, 18 minutes.",
        PLAIN + f"更正：请改去「{OTHER}」。",
        PLAIN + f"Actually, go to {OTHER} instead.",
        f"可能是「{OTHER}」，也可能是「{STATION}」，驾车全程3.5公里，约18分钟，停车场内。",
        f"您说“去万象城附近的充电站”，好的。推荐「{OTHER}」，驾车全程3.5公里，约18分钟，停车场内。",
    ],
    ids=["negated", "closed", "english_negated", "corrected", "english_corrected", "hedged", "echoed"],
)
def test_gaming_answers_lose_the_recommendation_under_the_robust_protocol(answer):
    robust, paper = _scores(answer), _scores(answer, "paper")
    assert robust[0] < 1.0, robust
    assert paper[0] == 1.0  # the paper protocol (the v3 judge) credits them: what issue 22 reported


def test_a_keyword_list_earns_nothing_a_name_only_answer_is_partly_right():
    data = record()
    data["ground_truth"]["implicit_intent"].append(
        {
            "rubric_instruction": "考虑带孩子同行",
            "constraint_type": "soft",
            "evidence_confidence": 1.0,
            "evidence": "亲子",
        }
    )
    instance = parse_instance(data)

    def kids(answer: str, protocol: str = "robust") -> float | None:
        v = rules_verdicts(instance, Trajectory(answer, list(CALLS), ["去万象城附近的充电站"]), protocol=protocol)
        return v.implicit_satisfied[2]

    stuffed = f"「{STATION}」。驾车 孩子 停车 营业 人均 路线 距离 价格"
    assert kids(stuffed, "paper") == 1.0 and kids(stuffed) == 0.0  # the list asserts nothing
    assert kids(PLAIN + "适合带孩子一起去。") == 1.0  # said in a sentence, it is read
    name_only = _scores(f"推荐「{STATION}」。")
    assert _ar(_scores("")) <= _ar(name_only) < _ar(_scores(PLAIN))


def test_a_place_named_in_the_recommendations_address_is_not_a_second_recommendation():
    # the tool output also lists the district as a place of its own; the address names it
    district = {"name": "江北区", "address": "宁波市江北区", "distance": "900"}
    calls = [dict(CALLS[0], content=json.dumps({"pois": [*POIS["pois"], district]}, ensure_ascii=False)), CALLS[1]]
    instance = parse_instance(record())
    answer = f"推荐「{STATION}」，地址：江北区万象城B2层停车场，驾车全程3.5公里，约18分钟。"
    v = rules_verdicts(instance, Trajectory(answer, calls, ["去万象城附近的充电站"]))
    assert v.raw["rules"]["candidates"] == [STATION]
    assert ecr(v.explicit_met) == 1.0


def test_a_passage_about_a_place_set_aside_asserts_nothing():
    # the facts are said only of the place weighed and dropped; the answer names the other one
    weighed = (
        "I'll compare the options.\n\n"
        f"- First I considered 「{OTHER}」。在停车场内，驾车全程3.5公里，约18分钟。 It does not fit as well.\n"
        f"- Then I checked 「{STATION}」.\n\n"
        f"Therefore my answer is: 推荐「{STATION}」。"
    )
    assert _scores(weighed)[1] < _scores(PLAIN)[1]
    assert _scores(weighed)[1] == _scores(f"推荐「{STATION}」。")[1]  # as much as the name alone


def test_an_invented_fact_anywhere_costs_faithfulness_negated_or_not():
    assert _scores(PLAIN + "不推荐「翠微阁服务区」，已经不营业。")[2] == 0.0


def test_numbers_in_words():
    assert [cn_number(x) for x in ("一点七", "二十五", "一百九十", "十八", "两", "三点零")] == [
        "1.7",
        "25",
        "190",
        "18",
        "2",
        "3.0",
    ]
    assert normalise("约五分钟，一点七公里，半小时，一个半小时，two hundred meters") == (
        "约5分钟,1.7公里,30分钟,1.5小时,200米"  # NFKC: the full-width comma is a comma
    )
    assert normalise("去三元里广场", protected=["三元里广场"]) == "去三元里广场"  # a name is not a price


# ---------------------------------------------------------------------------------------------
# the public scoring entry point and the meta-evaluation's families, on generated instances


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from geoeval.core.registry import get_suite
    from tests.conftest import compose_spec

    tmp = tmp_path_factory.mktemp("protocol")
    overrides = ["env.n=12", "env.embedder=hashing", f"env.out_dir={tmp / 'gen'}", "judge=rules", "model=oracle"]
    specs = {
        p: compose_spec(
            tmp,
            "suite=mapsatisfy",
            "env=mapsatisfy_generated",
            "metrics=mapsatisfy",
            *overrides,
            f"scoring.protocol={p}",
        )
        for p in ("robust", "paper")
    }
    suite = get_suite("mapsatisfy")
    env = suite.build_env(specs["robust"])
    return suite, specs, env, suite.build_samples(specs["robust"], env)


def _messages(instance, calls, answer):
    """The oracle's trajectory as Inspect chat messages (dicts), as `geoeval score --answers` takes them."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    messages = [ChatMessageUser(content=instance.query)]
    for i, call in enumerate(calls):
        messages.append(
            ChatMessageAssistant(
                content="", tool_calls=[ToolCall(id=f"c{i}", function=call["name"], arguments=call["arguments"])]
            )
        )
        messages.append(ChatMessageTool(content=call["content"], tool_call_id=f"c{i}", function=call["name"]))
    messages.append(ChatMessageAssistant(content=answer))
    return [m.model_dump() for m in messages]


def test_score_answers_with_a_trajectory_scores_as_a_run_and_reports_the_protocols(generated):
    from geoeval.core.records import AnswerToScore
    from geoeval.core.scoring import score_answers
    from geoeval.suites.mapsatisfy.generate.reference import reference_answer
    from geoeval.suites.mapsatisfy.meta_eval import replay

    suite, specs, env, samples = generated
    sample = samples[0]
    instance = parse_instance(sample.metadata["instance"])
    calls = replay(instance, sample.metadata["oracle_plan"], env.sandbox())
    reference = reference_answer(instance, calls)
    record_name = re.findall(r"为您推荐「([^」]+)」", reference)[0]
    negated = reference.replace(f"为您推荐「{record_name}」", f"不推荐「{record_name}」（已经不营业）", 1)
    answers = [
        AnswerToScore(str(sample.id), reference, _messages(instance, calls, reference)),
        AnswerToScore(str(sample.id), negated, _messages(instance, calls, negated)),
        AnswerToScore(str(sample.id), reference),  # no trajectory: as if no tool was called
    ]
    right, gamed, no_tools = score_answers(specs["robust"], answers)
    assert {m: right.scores[m] for m in ("ecr", "iisr", "ifs", "ts")} == {
        "ecr": 1.0,
        "iisr": 1.0,
        "ifs": 1.0,
        "ts": 1.0,
    }
    assert right.protocol_disagreement == {}
    assert right.reading["judges"]["rules"]["candidates"] == [record_name]
    assert gamed.scores["ecr"] < 1.0 and "negation" in gamed.reading["judges"]["rules"]["fired"]
    assert gamed.protocol_disagreement["ecr"] == {"robust": gamed.scores["ecr"], "paper": 1.0}
    assert no_tools.scores["ts"] == 0.0 and no_tools.scores["ifs"] == 0.0
    paper = score_answers(specs["paper"], answers[1:2])[0]
    assert paper.scores["ecr"] == 1.0 and paper.protocol_disagreement["ecr"]["robust"] == gamed.scores["ecr"]


def test_the_families_pass_under_the_robust_protocol_and_the_gaming_family_fails_under_the_paper_one(generated):
    from geoeval.core.analysis.meta_eval import ordering_report

    suite, specs, env, samples = generated
    robust = ordering_report(suite.meta_eval_answers(specs["robust"], env, samples), suite.meta_eval_targets)
    paper = ordering_report(suite.meta_eval_answers(specs["paper"], env, samples), suite.meta_eval_targets)
    for metric, row in robust.items():
        assert row["met"], (metric, row["by_family"], row["examples"][:2])
        assert {"surface", "gaming", "partial", "trajectory"} <= set(row["by_family"]) or metric in ("ts", "eff")
    assert paper["ar"]["by_family"]["gaming"]["accuracy"] < 0.95
    assert paper["ecr"]["by_family"]["surface"]["accuracy"] < 0.95
