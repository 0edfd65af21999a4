"""The answer protocols (scoring/reading.py, scoring/numbers.py, scoring/purity.py): the robust
protocol reads hand-written answers in other surface forms as the reference, applies the
one-answer rule, reads the reasons for RP; the paper protocol reads as geoeval always has."""

from __future__ import annotations

import asyncio
import json

import pytest

from geoeval.suites.lifeplanner.answer_families import in_words
from geoeval.suites.lifeplanner.prompts import system_prompt, user_prompt
from geoeval.suites.lifeplanner.scorers import evaluate_sample, metric_values
from geoeval.suites.lifeplanner.scoring.answers import load_answer
from geoeval.suites.lifeplanner.scoring.numbers import chinese_number, english_number, quantity
from geoeval.suites.lifeplanner.scoring.reading import read_submission
from geoeval.suites.lifeplanner.tools import places as place_tools

from .helpers import run_policy
from .test_scoring import ALL, replaying, rules_only

QUALITY = ["a", "piou", "rd_distance", "rd_time", "oc", "sc", "pr", "ig", "te", "rp"]


def scores(city, city_path, case, answer, protocol="robust", steps=None):
    messages, _ = run_policy(
        replaying(case, answer=answer, steps=steps), case, city, system_prompt(case.task), user_prompt(case.question)
    )
    record = asyncio.run(evaluate_sample(case.to_dict(), messages, str(city_path), rules_only(), protocol=protocol))
    values, _ = metric_values(case.to_dict(), record, ALL)
    return {m: values[m] for m in QUALITY}, record


def same(a, b):
    return all((a[m] != a[m] and b[m] != b[m]) or a[m] == b[m] for m in QUALITY)


def case_of(cases, task, level, kind=None):
    return next(
        c for c in cases if c.task == task and c.level == level and (kind is None or c.context.get("kind") == kind)
    )


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    ("text", "dimension", "value"),
    [
        ("3,616 metres", "distance", 3616),
        ("3.6 km", "distance", 3600),
        ("about 14 minutes 34 seconds", "time", 874),
        ("1 hr 2 mins", "time", 3720),
        ("nine hundred and twelve seconds", "time", 912),
        ("一千二百米", "distance", 1200),
        ("约五分钟", "time", 300),
        ("RMB 45", None, 45),
        ("８６", None, 86),  # full-width digits
    ],
)
def test_quantities_are_read_with_their_units(text, dimension, value):
    assert quantity(text, dimension) == value


@pytest.mark.parametrize("text", ["700 or 800 m", "10-15 min", "between 3 and 4 km", "far", "2 km 300 m"])
def test_several_numbers_or_none_are_not_one_quantity(text):
    assert quantity(text, "distance") is None


@pytest.mark.parametrize("n", [0, 7, 13, 40, 99, 130, 1005, 3616, 20015])
def test_numbers_the_meta_evaluation_writes_in_words_are_read_back(n):
    assert english_number(in_words(n)) == n
    assert quantity(f"{in_words(n)} metres", "distance") == n


def test_number_words():
    assert english_number("two thousand and five") == 2005
    assert english_number("one point five") == 1.5
    assert english_number("blue") is None
    assert chinese_number("三万零五十") == 30050
    assert chinese_number("两点五") == 2.5


# ------------------------------------------------------------------ surface forms score as the reference


def test_a_route_written_by_hand_scores_as_the_reference(city, city_path, cases):
    case = case_of(cases, "routing", "l0")
    ref = case.answer
    d, t = ref["total_distance_m"], ref["total_time_s"]
    vehicle = {"driving": "Car", "walking": "Walk", "cycling": "Bicycle"}[ref["vehicle"]]
    mode = {"time": "Quickest", "distance": "Shortest distance"}[ref["mode"]]
    text = (
        "Sure! I checked the route with the routing tool.\n\n"
        "```\n{\n"
        f'  "Start": {{"Name": "{ref["start"]["name"]}", "Place ID": "{ref["start"]["place_id"]}"}},\n'
        f'  "End": {{"name": "{ref["end"]["name"]}", "placeId": "{ref["end"]["place_id"]}"}},\n'
        f'  "Vehicle": "{vehicle}", "Mode": "{mode}",\n'
        f'  "Total distance": "{d:,} m", "Total time": "{t // 60} min {t % 60} s"\n'
        "}\n```\nSafe travels!"
    )
    robust, record = scores(city, city_path, case, text)
    reference, _ = scores(city, city_path, case, ref)
    assert same(robust, reference), (robust, reference, record.notes)
    assert robust["a"] == robust["rd_distance"] == 1.0
    assert any("vehicle synonym" in r for r in record.reading)
    paper, _ = scores(city, city_path, case, text, protocol="paper")
    assert paper["a"] == 0.0  # the paper protocol reads JSON only


def test_a_verdict_in_words_scores_as_the_reference(city, city_path, cases):
    case = case_of(cases, "place", "l1", "open_verdict")
    verdict = case.answer["answer"]
    text = "Yes — it is open at that time." if verdict else "No, it's closed by then."
    got, _ = scores(city, city_path, case, {"answer": text, "reason": case.answer["reason"], "ref": case.answer["ref"]})
    reference, _ = scores(city, city_path, case, case.answer)
    assert same(got, reference), (got, reference)


def test_a_place_named_in_prose_with_an_alternative_rejected_is_one_answer(city, city_path, cases):
    case = case_of(cases, "place", "l1", "compare")
    winner = case.answer["answer"]
    loser = next(
        place_tools.place_detail(city, c).payload["name"]
        for c in case.context["candidates"]
        if c not in case.reference_places
    )
    answer = dict(case.answer, answer=f"I'd go to **{winner.upper()}** rather than {loser}.")
    got, record = scores(city, city_path, case, answer)
    assert got["a"] == got["pr"] == 1.0, record.notes
    hedged = dict(case.answer, answer=f"Either {winner} or {loser}.")
    got, record = scores(city, city_path, case, hedged)
    assert got["a"] == got["pr"] == 0.0 and "several places" in record.schema_error


# ------------------------------------------------------------------ the one-answer rule


def test_two_plans_score_as_the_worse_and_a_self_correction_as_no_answer(city, city_path, cases):
    case = case_of(cases, "nearby", "l1")
    ref_json = json.dumps(case.answer)
    wrong = json.loads(ref_json)
    other = next(p for p in city.place_ids if p not in case.reference_places)
    wrong["answer"][0].update(place_id=other, name=place_tools.place_detail(city, other).payload["name"])
    reference, _ = scores(city, city_path, case, case.answer)
    worse, _ = scores(city, city_path, case, wrong)
    both, record = scores(city, city_path, case, f"My pick:\n{json.dumps(wrong)}\nOr perhaps:\n{ref_json}")
    assert same(both, {m: min(reference[m], worse[m]) for m in QUALITY}), (both, worse)
    assert len(record.candidates) == 2
    corrected, record = scores(city, city_path, case, f"{ref_json}\nWait, scratch that: try the next one instead.")
    assert corrected["piou"] == corrected["pr"] == corrected["rp"] == 0.0 and "corrects itself" in record.schema_error
    # an explanation after the answer is not a correction
    explained, _ = scores(city, city_path, case, f"{ref_json}\nIt is the only one open then that fits the budget.")
    assert same(explained, reference)


def test_a_route_explained_leg_by_leg_is_still_one_answer(city, city_path, cases):
    case = next(c for c in cases if c.task == "trip")
    names = [o["name"] for o in case.answer["optimal_order"]]
    legs = "\n".join(f'- leg {k + 1}: {a} -> {b} {{"leg": {k + 1}}}' for k, (a, b) in enumerate(zip(names, names[1:])))
    text = f"{json.dumps(case.answer)}\nHow to go:\n{legs}\nEnjoy the day!"
    got, record = scores(city, city_path, case, text)
    reference, _ = scores(city, city_path, case, case.answer)
    assert same(got, reference) and not record.candidates, record.notes


def test_a_verdict_contradicted_by_its_reason_is_not_the_answer(city, city_path, cases):
    case = case_of(cases, "place", "l1", "open_verdict")
    flipped = dict(case.answer, reason="Sorry, it is closed then." if case.answer["answer"] else "Yes, it is open.")
    got, record = scores(city, city_path, case, flipped)
    assert got["a"] == got["sc"] == got["pr"] == got["rp"] == 0.0, record.notes


def test_a_withdrawn_recommendation_is_not_the_answer(city, city_path, cases):
    case = case_of(cases, "nearby", "l0")
    answer = json.loads(json.dumps(case.answer))
    answer["answer"][0]["reason"] = "I would not recommend this one, it shut down last year."
    got, _ = scores(city, city_path, case, answer)
    assert got["piou"] == got["a"] == 0.0


# ------------------------------------------------------------------ RP reads the reasons


def test_invented_facts_in_reasons_lower_rp_and_true_ones_do_not(city, city_path, cases):
    case = case_of(cases, "nearby", "l0")
    pid = case.answer["answer"][0]["place_id"]
    rec = place_tools.place_detail(city, pid).payload
    true_claim = json.loads(json.dumps(case.answer))
    true_claim["answer"][0]["reason"] += f" It is rated {rec['rating']}."
    got, _ = scores(city, city_path, case, true_claim)
    assert got["rp"] == 1.0
    false_claim = json.loads(json.dumps(case.answer))
    false_claim["answer"][0]["reason"] += (
        f" Rated {min(5.0, rec['rating'] + 0.4):.1f} stars, with valet parking and Wi-Fi."
    )
    got, _ = scores(city, city_path, case, false_claim)
    assert got["rp"] < 1.0
    assert scores(city, city_path, case, false_claim, protocol="paper")[0]["rp"] == 1.0  # the paper never read them


def test_an_answer_with_nothing_checkable_has_rp_zero(city, city_path, cases):
    case = case_of(cases, "place", "l0", "tag")
    got, _ = scores(city, city_path, case, {"answer": case.answer["answer"]})
    assert got["a"] == 1.0 and got["rp"] == 0.0


# ------------------------------------------------------------------ the protocols agree on the paper's format


def test_the_reference_in_the_papers_format_scores_the_same_under_both_protocols(city, city_path, cases):
    for case in cases[::3]:
        robust, _ = scores(city, city_path, case, case.answer)
        paper, _ = scores(city, city_path, case, case.answer, protocol="paper")
        assert same(robust, paper), (case.id, robust, paper)
        assert all(v == 1.0 for v in robust.values() if v == v), (case.id, robust)


def test_the_paper_reading_is_the_schema_reading(city, cases):
    for case in cases[:11]:
        for raw in (case.answer, json.dumps(case.answer), "```json\n" + json.dumps(case.answer) + "\n```", "nope"):
            assert read_submission(city, case.task, raw, "paper").candidates == [load_answer(raw)]


# ------------------------------------------------------------------ the public scoring entry point


def test_score_answers_scores_a_trajectory_as_the_meta_evaluation_does(tmp_path):
    from geoeval.core import registry
    from geoeval.core.errors import GeoevalError
    from geoeval.core.records import AnswerToScore
    from geoeval.core.scoring import score_answers
    from geoeval.suites.lifeplanner import meta_eval as ME
    from geoeval.suites.lifeplanner.tools.city import open_city
    from tests.conftest import compose_spec

    spec = compose_spec(
        tmp_path,
        "suite=lifeplanner",
        "env=lifeplanner_synthetic",
        "metrics=lifeplanner",
        "judge=rules",
        "env.n_places=200",
        "env.n_notes=1000",
        "suite.n_cases=11",
    )
    suite = registry.get_suite("lifeplanner")
    env = suite.build_env(spec)
    sample = next(s for s in suite.build_samples(spec, env) if s.metadata["case"]["task"] == "trip")
    case = sample.metadata["case"]
    trajectory = ME.reference_messages(open_city(env.db_path), case)
    hand_written = "Here you go:\n" + json.dumps(case["answer"]).replace('"driving"', '"by car"')
    answers = [
        AnswerToScore(str(sample.id), hand_written, [m.model_dump() for m in trajectory]),
        AnswerToScore(str(sample.id), json.dumps(case["answer"]), None),  # no tool called
    ]
    with_tools, without_tools = score_answers(spec, answers)
    expected = ME.score_messages(case, ME._submitted(trajectory, case["answer"]), env.db_path, rules_only(), 0.9)
    assert {m: with_tools.scores[m] for m in ME.METRICS} == expected
    assert with_tools.scores["pr"] == 1.0 and with_tools.reading["protocol"] == "robust"
    assert any("JSON read from the prose" in r for r in with_tools.reading["rules"])
    assert with_tools.protocol_disagreement["pr"] == {"robust": 1.0, "paper": 0.0}
    assert without_tools.scores["a"] == 1.0 and without_tools.scores["ig"] == 0.0 and without_tools.scores["rp"] < 1.0
    with pytest.raises(GeoevalError, match="not Inspect chat messages"):
        score_answers(spec, [AnswerToScore(str(sample.id), "{}", [{"role": "robot", "content": 3}])])


# ------------------------------------------------------------------ model judges


def test_a_model_judge_sees_the_answer_as_read_and_is_asked_once_per_distinct_reading(city, city_path, cases):
    from inspect_ai.model import ModelOutput, get_model

    from geoeval.core.config.schema import JudgeSpec
    from geoeval.judges.ensemble import JudgeEnsemble
    from geoeval.suites.lifeplanner.scorers import evaluate_both
    from geoeval.suites.lifeplanner.scoring.judging import rules_judge

    prompts: list[str] = []

    def factory(name, config):
        model = get_model(
            "mockllm/model", config=config, custom_outputs=[ModelOutput.from_content("mockllm/model", "SCORE: 0.5")]
        )
        generate = model.generate

        async def recording(prompt, *args, **kwargs):
            prompts.append(prompt)
            return await generate(prompt, *args, **kwargs)

        model.generate = recording
        return model

    case = case_of(cases, "nearby", "l2")
    ensemble = JudgeEnsemble(JudgeSpec(models=["rules", "mockllm/judge"]), rules=rules_judge, model_factory=factory)
    messages, _ = run_policy(replaying(case), case, city, system_prompt(case.task), user_prompt(case.question))
    records = asyncio.run(evaluate_both(case.to_dict(), messages, str(city_path), ensemble))
    assert len(prompts) == 2  # SC and RP, once: the paper-format answer reads the same under both protocols
    assert records["paper"].sc_judges == records["robust"].sc_judges == {"rules": 1.0, "mockllm/judge": 0.5}
    prompts.clear()
    pretty = "Final answer:\n" + json.dumps(case.answer).replace('"place_id"', '"Place ID"')
    messages, _ = run_policy(
        replaying(case, answer=pretty), case, city, system_prompt(case.task), user_prompt(case.question)
    )
    records = asyncio.run(evaluate_both(case.to_dict(), messages, str(city_path), ensemble))
    assert len(prompts) == 2 and all('"place_id"' in p and "Place ID" not in p for p in prompts)  # robust only
    assert records["paper"].schema_error and records["robust"].sc_judges["mockllm/judge"] == 0.5


def test_a_nearby_answer_in_prose_and_totals_keyed_by_their_unit(city, city_path, cases):
    case = case_of(cases, "nearby", "l0")
    lines = "\n".join(f"{k + 1}. **{item['name']}**: {item['reason']}" for k, item in enumerate(case.answer["answer"]))
    got, record = scores(city, city_path, case, f"I found these:\n{lines}\nHope that helps.")
    assert got["piou"] == got["a"] == got["pr"] == 1.0 and "places read from the prose" in record.reading
    route = case_of(cases, "routing", "l0")
    answer = {k: v for k, v in route.answer.items() if not k.startswith("total_")}
    answer["Total distance (km)"] = route.answer["total_distance_m"] / 1000
    answer["total_time_min"] = route.answer["total_time_s"] / 60
    got, record = scores(city, city_path, route, answer)
    assert got["rd_distance"] == got["rd_time"] == 1.0, record.notes


def test_opening_hours_with_abbreviated_days_are_the_hours(city, city_path, cases):
    case = case_of(cases, "place", "l0", "opentime_week")
    hours = case.answer["answer"]  # e.g. "Monday-Sunday 18:00-02:00"
    short = hours.replace("Monday", "Mon").replace("Sunday", "Sun").replace("-", " to ", 1)
    got, _ = scores(city, city_path, case, dict(case.answer, answer=short))
    assert got["a"] == 1.0 and got["rp"] == 1.0, short
    assert scores(city, city_path, case, dict(case.answer, answer=short), protocol="paper")[0]["a"] == 0.0


def test_robust_reading_of_json_nested_beyond_the_parser_is_fast_and_reads_nothing():
    """A model's answer of 5,000 nested brackets (the hostile `deep_json` reply): the robust reader
    skips the too-deep value whole (it re-parsed at every bracket until a 990-deep value got
    through, which recursed downstream)."""
    from geoeval.core.reading.document import parse

    assert [s for s in parse("[" * 5000 + "]" * 5000).segments if s.kind == "json"] == []
    (found,) = [s for s in parse('prose {"answer": true} more').segments if s.kind == "json"]
    assert (found.value, found.prefix, found.suffix) == ({"answer": True}, "prose", "more")
