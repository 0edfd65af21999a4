"""The judge ensemble: votes combine by median (majority for 0/1), judges by mean."""

from __future__ import annotations

import asyncio

import pytest
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from geoeval.core.config.schema import JudgeSpec
from geoeval.judges.ensemble import JudgeEnsemble, JudgeRequest, combine_votes, parse_score


def scripted(replies: list[str]):
    """A factory of mockllm judges that reply with `replies` in turn (usage set: no tokenizer download)."""
    outputs = [ModelOutput.from_content("mockllm/model", r) for r in replies]
    for o in outputs:
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)

    def factory(name, config):
        return get_model("mockllm/model", config=config, custom_outputs=list(outputs), memoize=False)

    return factory


def test_parse_score():
    assert parse_score("SCORE: 0.8 because ...") == 0.8
    assert parse_score("score = 1") == 1.0
    assert parse_score("SCORE: .25") == 0.25
    assert parse_score("I think it is fine") is None
    assert parse_score("SCORE: 7") is None


def test_votes_majority_and_mean_of_judges():
    assert combine_votes([1.0, 0.0, 1.0]) == 1.0  # majority of three binary votes
    assert combine_votes([0.0, 0.0, 1.0]) == 0.0
    spec = JudgeSpec(models=["rules", "mockllm/judge"], votes=3)
    ens = JudgeEnsemble(spec, rules=lambda req: 0.5, model_factory=scripted(["SCORE: 1", "SCORE: 0", "SCORE: 1"]))
    verdict = asyncio.run(ens.score(JudgeRequest(rubric="r", answer="a")))
    assert verdict.per_judge == {"rules": 0.5, "mockllm/judge": 1.0}
    assert verdict.score == pytest.approx(0.75)
    assert len(verdict.raw["mockllm/judge"]) == 3


def test_an_unreadable_reply_is_no_vote_and_its_raw_text_is_kept():
    spec = JudgeSpec(models=["mockllm/judge"], votes=3)
    ens = JudgeEnsemble(spec, model_factory=scripted(["SCORE: 1", "no idea", "SCORE: 0.5"]))
    verdict = asyncio.run(ens.score(JudgeRequest(rubric="r", answer="a")))
    # the median of the two readable votes, not of (1, 0, 0.5): an unreadable reply is not a 0
    assert verdict.score == 0.75
    assert verdict.votes["mockllm/judge"] == [1.0, None, 0.5]
    assert verdict.raw["mockllm/judge"] == ["SCORE: 1", "no idea", "SCORE: 0.5"]
    assert verdict.errors["mockllm/judge"] == ["reply has no readable `SCORE: x` in [0, 1]"]


def test_a_failed_judge_is_left_out_of_the_mean_and_named():
    spec = JudgeSpec(models=["rules", "mockllm/judge"], votes=1)
    ens = JudgeEnsemble(spec, rules=lambda req: 0.25, model_factory=scripted(["unreadable"]))
    verdict = asyncio.run(ens.score(JudgeRequest(rubric="r", answer="a")))
    assert verdict.score == 0.25 and verdict.per_judge == {"rules": 0.25}
    assert verdict.failed == ["mockllm/judge"]


def test_every_judge_failing_raises_with_the_votes():
    from geoeval.judges.ensemble import JudgesFailed

    def broken(name, config):
        class Model:
            async def generate(self, prompt, **kwargs):
                raise ConnectionError("judge endpoint down")

        return Model()

    ens = JudgeEnsemble(JudgeSpec(models=["mockllm/judge"], votes=2), model_factory=broken)
    with pytest.raises(JudgesFailed, match="every judge failed.*judge endpoint down") as info:
        asyncio.run(ens.score(JudgeRequest(rubric="r", answer="a")))
    assert info.value.verdict.votes == {"mockllm/judge": [None, None]}


def test_rules_judge_required_when_configured():
    with pytest.raises(ValueError):
        asyncio.run(JudgeEnsemble(JudgeSpec(models=["rules"])).score(JudgeRequest(rubric="r", answer="a")))


def test_majority_aggregation_takes_the_most_frequent_vote():
    from geoeval.judges.ensemble import majority_vote

    assert majority_vote([0.8, 0.2, 0.2]) == 0.2  # the median would say 0.2 too; the mean 0.4
    assert majority_vote([1.0, 0.5, 0.5, 0.0]) == 0.5
    assert majority_vote([1.0, 0.0]) == 0.5  # a tie: the mean of the tied values
    with pytest.raises(ValueError):
        majority_vote([])
    spec = JudgeSpec(models=["mockllm/judge"], votes=5)
    replies = ["SCORE: 0.2", "SCORE: 0.2", "SCORE: 0.6", "SCORE: 0.7", "SCORE: 0.9"]
    request = JudgeRequest(rubric="r", answer="a")
    median = JudgeEnsemble(spec, model_factory=scripted(replies))  # the default, LifePlanner's
    assert asyncio.run(median.score(request)).score == 0.6
    majority = JudgeEnsemble(spec, model_factory=scripted(replies), aggregation="majority")
    assert asyncio.run(majority.score(request)).score == 0.2
    with pytest.raises(ValueError):
        JudgeEnsemble(spec, aggregation="mode")
