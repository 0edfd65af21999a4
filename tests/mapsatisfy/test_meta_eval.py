"""Meta-evaluation of MapSatisfy: answers of known quality (meta_eval.py), scored by the suite's
real judges, are ordered correctly; and on the authors' demo case d3238e6b the rules judge scores
refusals, empty and invented answers low and a correct answer with a polite closing high."""

from __future__ import annotations

import math

import pytest

from geoeval.core.analysis.answer_families import READING_FAMILIES, WRONG_ALONE
from geoeval.core.analysis.meta_eval import ordering_report, tier_means
from geoeval.core.registry import get_suite
from geoeval.suites.mapsatisfy.judging.ensemble import judge_dialogue
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory, Verdicts
from geoeval.suites.mapsatisfy.meta_eval import FAMILIES, TIERS, given_of, replay, sample_answers
from geoeval.suites.mapsatisfy.scorers import scores_from_record
from tests.conftest import compose_spec

DEMO_CASE = "d3238e6b28bf53f6e7bc30cb1536e2a8"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("meta")
    spec = compose_spec(
        tmp,
        "suite=mapsatisfy",
        "env=mapsatisfy_generated",
        "env.n=18",
        "env.embedder=hashing",
        f"env.out_dir={tmp / 'gen'}",
        "judge=rules",
        "metrics=mapsatisfy",
        "model=oracle",
    )
    suite = get_suite(spec.suite.name)
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)
    return suite, spec, env, samples, suite.meta_eval_answers(spec, env, samples)


def test_every_metric_orders_the_tiers_at_its_target(generated):
    suite, _spec, _env, samples, answers = generated
    report = ordering_report(answers, suite.meta_eval_targets)
    assert set(report) == {"ecr", "iisr", "ar", "ts", "ifs", "eff", "ses", "cei"}
    for metric, row in report.items():
        assert row["pairs"] > 0 and row["met"], (metric, row["accuracy"], row["examples"])
    assert {a.tier.name for a in answers if a.tier.family == "tiers"} == {
        t.name for t in TIERS.values() if t.family == "tiers"
    } | {WRONG_ALONE}
    assert {a.tier.family for a in answers} == {"tiers", *FAMILIES, *READING_FAMILIES}
    assert {a.tier.name for a in answers if a.tier.family not in READING_FAMILIES} <= {
        t.name for t in TIERS.values()
    } | {WRONG_ALONE}
    assert len({a.sample_id for a in answers}) == len(samples)
    assert suite.meta_eval_targets["ecr"] == 0.9 and suite.meta_eval_targets["ts"] == 1.0


def test_the_reference_scores_top_and_the_worthless_tiers_zero(generated):
    means = tier_means(generated[4])
    assert {m: means["reference"][m] for m in ("ecr", "iisr", "ts", "ifs")} == {
        m: 1.0 for m in ("ecr", "iisr", "ts", "ifs")
    }
    for tier in ("empty", "refusal", "invented"):
        assert {m: means[tier][m] for m in ("ecr", "iisr", "ifs")} == {"ecr": 0.0, "iisr": 0.0, "ifs": 0.0}, tier
    assert means["defect:invented_fact"]["ifs"] == 0.0 and means["defect:invented_fact"]["ecr"] == 1.0
    assert means["defect:needless_clarification"]["eff"] < means["reference"]["eff"]


def test_metrics_the_construction_cannot_change_are_not_applicable(generated):
    for a in generated[4]:
        if a.tier.name == "reference":
            assert not math.isnan(a.scores["ts"]) and not math.isnan(a.scores["eff"])
        else:
            own_calls = a.tier.name == "defect:missed_tool" or a.tier.family == "trajectory"
            assert math.isnan(a.scores["ts"]) == (not own_calls), a.tier.name
            assert math.isnan(a.scores["eff"]) == (a.tier.name != "defect:needless_clarification"), a.tier.name


def test_a_judge_that_reads_only_the_trajectory_fails_the_meta_evaluation(generated):
    # the old `rules` judge's failure: every factor met once the tools were called and the answer
    # is not a question, whatever the answer says
    _suite, _spec, env, samples, _answers = generated
    from geoeval.suites.mapsatisfy.schema import parse_instance

    async def trajectory_judge(instance, trajectory):
        gt = instance.ground_truth
        return Verdicts(
            [1.0] * len(gt.explicit_intent),
            [1.0] * len(gt.implicit_intent),
            [[] for _ in instance.factual_answer_rubric],
        )

    instance = parse_instance(samples[0].metadata["instance"])
    calls = replay(instance, samples[0].metadata["oracle_plan"], env.sandbox())
    report = ordering_report(sample_answers(instance, calls, given_of(instance, "normal"), trajectory_judge))
    assert not report["ecr"]["met"] and not report["ifs"]["met"]


# ---------------------------------------------------------------------------------------------
# the authors' demo case d3238e6b (../shared/peers; skipped cleanly without it)


@pytest.fixture
def demo_case(peers):
    from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store
    from geoeval.suites.mapsatisfy.schema import load_demo_bench
    from geoeval.suites.mapsatisfy.suite import oracle_plan

    root = peers / "mapsatisfy"
    if not (root / "demo_bench.xlsx").is_file():
        pytest.skip("../shared/peers/mapsatisfy is not present")
    [instance] = [i for i in load_demo_bench(root / "demo_bench.xlsx") if i.task_id == DEMO_CASE]
    store = load_mock_store(root / "mock_data")
    calls = replay(instance, oracle_plan(instance, store), ReplaySandbox(store, embedder=HashingEmbedder()))
    return instance, calls


def _score(instance, calls, answer, protocol="robust"):
    import asyncio

    record = {"answer": answer, "tool_calls": calls, "given": given_of(instance, "normal"), "turns": 1, "tokens": 1000}
    trajectory = Trajectory.from_record(record)
    verdicts = asyncio.run(judge_dialogue(instance, trajectory, ["rules"], votes=3, protocol=protocol))
    record["verdicts"] = verdicts.to_record()
    scores = scores_from_record(instance, record)
    return {m: scores[m] for m in ("ecr", "iisr", "ifs")}


CORRECT = (
    "宁波万象城附近的充电站中，推荐「汽车充电站(开鑫宁波万星汇大厦站)」，位于万星汇大厦地下停车场，距离约190米；"
    "如更偏好特来电，也可以选「特来电汽车充电站(交运特来电1872花园坊东区充电站)」。驾车前往全程3.5公里，约18分钟。"
)


@pytest.mark.conformance
def test_demo_case_worthless_answers_score_zero(demo_case):
    instance, calls = demo_case
    for answer in (
        "",
        "抱歉，我无法帮您找到万象城附近的充电站。",
        "好的，已为您规划好前往万象城附近充电站的驾车路线，祝您一路顺利！",
        "为您推荐「星河湾超级充电站(万象城北区店)」，位于万象城地下停车场，距离约260米，驾车前往约12分钟。",
    ):
        assert _score(instance, calls, answer) == {"ecr": 0.0, "iisr": 0.0, "ifs": 0.0}, answer


#: one recommendation, every fact from the outputs: the search's first station (its name bears 万象城),
#: the route the navigation call computed to it
SINGLE = (
    "推荐「奥迪汽车充电站(宁波华润万象城)」，在宁波万象城B2层的地下停车场内，距离约61米，24小时营业。"
    "驾车前往全程3.5公里，约18分钟。"
)


@pytest.mark.conformance
def test_demo_case_correct_answer_scores_high_with_a_polite_closing_question(demo_case):
    instance, calls = demo_case
    for tail in ("", "如需帮您发起导航，请告诉我。", "您更想去停车场内的站还是特来电的站？都可以告诉我。"):
        # the paper protocol reads the words: the echoed 万象城 and the second station's 特来电 count
        assert _score(instance, calls, CORRECT + tail, "paper") == {"ecr": 1.0, "iisr": 1.0, "ifs": 1.0}, tail
        single = _score(instance, calls, SINGLE + tail)
        assert single["ecr"] == 1.0 and single["ifs"] == 1.0, tail
    # robust: two stations offered are credited as the worse one; 万象城 said only in the user's words
    # is not said of the recommended station, which does not bear it
    hedged = _score(instance, calls, CORRECT)
    assert hedged["ecr"] < 1.0 and hedged["ifs"] == 1.0


@pytest.mark.conformance
def test_demo_case_tiers_are_ordered(demo_case):
    instance, calls = demo_case

    def judge(inst, trajectory):
        return judge_dialogue(inst, trajectory, ["rules"], votes=3)

    report = ordering_report(sample_answers(instance, calls, given_of(instance, "normal"), judge))
    for metric in ("ecr", "iisr", "ifs", "ar", "ses"):
        assert report[metric]["met"], (metric, report[metric]["examples"])
