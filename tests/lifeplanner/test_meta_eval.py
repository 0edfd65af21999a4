"""Meta-evaluation (issue 11): LifePlanner's metrics order answers of known quality correctly,
scored through the suite's real judging step and metric functions (rules judge offline)."""

from __future__ import annotations

import math

import pytest

from geoeval.core.analysis.answer_families import READING_FAMILIES
from geoeval.core.analysis.meta_eval import ordering_report, tier_means
from geoeval.suites.lifeplanner import meta_eval as ME

from .test_scoring import rules_only


@pytest.fixture(scope="module")
def answers(city, city_path, cases):
    out = []
    for case in cases:
        out += ME.answers_for_case(city, case.to_dict(), str(city_path), rules_only(), 0.9)
    return out


def test_every_metric_orders_the_tiers_at_its_target(answers):
    report = ordering_report(answers, ME.TARGETS)
    assert set(report) == set(ME.METRICS)
    for metric, row in report.items():
        assert row["met"], (metric, row["accuracy"], row["examples"][:2])
        assert row["pairs"] > 0, metric
    # every defect tier is exercised and lowers what it claims
    tiers = {a.tier.name for a in answers}
    assert {
        "reference",
        "defect:wrong_place",
        "defect:wrong_order",
        "defect:missed_constraint",
        "defect:invented_attribute",
        "empty",
        "refusal",
        "invented",
    } <= tiers


def test_the_reference_scores_one_and_worthless_answers_score_low(answers):
    means = tier_means(answers)
    assert all(v == 1.0 for v in means["reference"].values()), means["reference"]
    for worthless in ("empty", "refusal", "invented"):
        assert means[worthless]["pr"] == 0.0 and means[worthless]["ig"] == 0.0, worthless
    assert means["invented"]["rp"] < 0.5


def test_defects_lower_every_metric_they_claim(answers):
    """`affects` is exact, not aspirational: every metric a defect names drops below the reference
    on every case where the metric applies (a hedge is bounded by its worst candidate instead,
    `Tier.worst`, which is such a defect)."""
    by_sample = {}
    for a in answers:
        by_sample.setdefault(a.sample_id, {})[a.tier.name] = a
    for a in answers:
        if a.tier.level != 1 or a.tier.worst:
            continue
        ref = by_sample[a.sample_id]["reference"]
        for m in a.tier.affects:
            if not math.isnan(a.scores[m]):
                assert a.scores[m] < ref.scores[m], (a.sample_id, a.tier.name, m)


def test_the_suite_declares_targets_and_builds_answers_from_its_samples(tmp_path):
    from geoeval.core import registry
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
    suite = registry.get_suite(spec.suite.name)
    assert suite.meta_eval_targets["sc"] == 0.9 and suite.meta_eval_targets["a"] == 1.0
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)
    report = ordering_report(suite.meta_eval_answers(spec, env, samples), suite.meta_eval_targets)
    assert all(row["met"] for row in report.values()), {m: r["accuracy"] for m, r in report.items()}


def test_the_answer_families_order_at_their_targets(answers):
    """Surface forms score as the reference, gaming, partial and trajectory answers below it, and
    the core's reading families keep their order, on 95% of the pairs of every family and metric
    (the robust protocol, the default)."""
    report = ordering_report(answers, ME.TARGETS)
    families = {a.tier.family for a in answers}
    assert {*ME.FAMILIES, *READING_FAMILIES} <= families
    for metric, row in report.items():
        for family in (*ME.FAMILIES, *READING_FAMILIES):
            got = row["by_family"].get(family)
            if got is not None:
                assert got["accuracy"] >= 0.95, (metric, family, got, row["examples"][:2])
    assert report["a"]["by_family"]["surface"]["pairs"] > 0 and report["rp"]["by_family"]["gaming"]["pairs"] > 0


def test_the_paper_protocol_misreads_the_surface_family(city, city_path, cases):
    """What the robust protocol fixes: under the paper protocol, the right answer in prose or with
    units loses its outcome metrics (the families' "before")."""
    out = []
    for case in cases[::6]:
        out += ME.answers_for_case(city, case.to_dict(), str(city_path), rules_only(), 0.9, "paper")
    report = ordering_report(out, ME.TARGETS)
    assert report["a"]["by_family"]["surface"]["accuracy"] < 0.5
    assert report["a"]["by_family"]["tiers"]["accuracy"] == 1.0
