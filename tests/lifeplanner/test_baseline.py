"""The heuristic baseline: it works only through the tools, never sees the reference, and scores
clearly below the oracle, falling from L0 to L2."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from geoeval.suites.lifeplanner.baseline import agent as baseline
from geoeval.suites.lifeplanner.baseline.agent import heuristic_baseline
from geoeval.suites.lifeplanner.paraphrase import paraphrase, paraphrase_cases
from geoeval.suites.lifeplanner.phrasing import accept_rewrite
from geoeval.suites.lifeplanner.prompts import system_prompt, user_prompt
from geoeval.suites.lifeplanner.scorers import evaluate_sample, metric_values
from geoeval.suites.lifeplanner.scoring.trajectory import trajectory_from_messages

from .helpers import run_policy
from .test_scoring import rules_only


def _runs(city, city_path, cases, questions):
    out = []
    ensemble = rules_only()
    for case, question in zip(cases, questions):
        messages, submitted = run_policy(
            heuristic_baseline, case, city, system_prompt(case.task), user_prompt(question)
        )
        record = asyncio.run(evaluate_sample(case.to_dict(), messages, str(city_path), ensemble))
        values, _ = metric_values(case.to_dict(), record, ["pr", "sc", "te", "ig"])
        out.append((case, submitted, values, record, trajectory_from_messages(messages)))
    return out


@pytest.fixture(scope="module")
def baseline_runs(city, city_path, cases):
    return _runs(city, city_path, cases, [c.question for c in cases])


@pytest.fixture(scope="module")
def paraphrased_runs(city, city_path, cases):
    questions, changed = paraphrase_cases(cases)
    assert changed >= len(cases) // 2  # most questions are reworded
    return _runs(city, city_path, cases, questions)


def _pass_rate(runs, level=None):
    got = [v["pr"] for c, _, v, _, _ in runs if level is None or c.level == level]
    return sum(got) / len(got)


def test_the_baseline_falls_from_l0_to_l2_and_stays_below_the_oracle(baseline_runs):
    l0, l1, l2 = (_pass_rate(baseline_runs, lv) for lv in ("l0", "l1", "l2"))
    assert l0 >= 0.8  # single lookups are within reach of keyword search and attribute reads
    assert l0 >= l1 >= l2
    assert l0 - l2 >= 0.4  # implicit preferences defeat keyword matching
    assert _pass_rate(baseline_runs) <= 0.9  # the oracle passes every case


def test_the_baseline_submits_a_schema_valid_answer_for_almost_every_case(baseline_runs):
    failures = [c.id for c, _, _, record, _ in baseline_runs if record.schema_error]
    assert len(failures) <= len(baseline_runs) // 10, failures


def test_the_baseline_really_uses_the_tools_within_budget(baseline_runs):
    for case, _, _, _, traj in baseline_runs:
        assert 1 <= traj.n_calls <= 30, case.id
        assert traj.submit_calls == 1 and traj.refused == 0, case.id
    trips = [(c, traj) for c, _, _, _, traj in baseline_runs if c.task == "trip"]
    for case, traj in trips:  # permutation routing: every pair of stops is routed
        n = len(case.reference_order)
        routed = sum(call.tool == "routing" for call in traj.calls)
        assert routed >= n * (n - 1) // 2 - 1, case.id


def test_closing_time_rules_are_applied(baseline_runs):
    timed = [(c, v) for c, _, v, _, _ in baseline_runs if c.context.get("constraint") == "time"]
    assert timed and all(v["sc"] == 1.0 for _, v in timed)


def test_the_baseline_cannot_see_the_reference(city, cases):
    assert "sample_state" not in inspect.getsource(baseline)  # only the oracle may read the sample
    case = next(c for c in cases if c.type == "nearby_L0")
    tampered = type(case).from_dict({**case.to_dict(), "answer": {"answer": []}, "tau_star": []})
    a = run_policy(heuristic_baseline, case, city, system_prompt(case.task), user_prompt(case.question))[1]
    b = run_policy(heuristic_baseline, tampered, city, system_prompt(case.task), user_prompt(case.question))[1]
    assert a == b and a["answer"]


def test_the_baseline_knows_nothing_of_the_generator(city, cases):
    """Issue 11: no import of the engine's vocabulary or templates; it reads questions with
    general English cues and learns types and names from the tools."""
    source = inspect.getsource(baseline)
    for module in ("lexicon", "cases", "phrasing", "paraphrase"):
        assert f"lifeplanner.{module}" not in source and f"import {module}" not in source, module
    for word in ("TYPE_NOUNS", "PREFERENCES", "DISLIKES", "PERSONAS", "MODE_WORDS"):
        assert word not in source, word


def test_paraphrases_keep_every_protected_token(cases):
    for c in cases:
        assert accept_rewrite(c.question, paraphrase(c.question)), c.id


def test_paraphrased_questions_keep_the_baseline_shape(baseline_runs, paraphrased_runs):
    """PR on reworded questions beside the templated ones: the fall from L0 to L2 is not an
    artefact of the templates (the baseline knows none)."""
    for runs in (baseline_runs, paraphrased_runs):
        l0, l1, l2 = (_pass_rate(runs, lv) for lv in ("l0", "l1", "l2"))
        assert l0 >= 0.8 and l0 >= l1 > l2 and l0 - l2 >= 0.3
    for lv in ("l0", "l1", "l2"):  # rewording costs a template-free agent little
        assert abs(_pass_rate(baseline_runs, lv) - _pass_rate(paraphrased_runs, lv)) <= 0.15, lv
