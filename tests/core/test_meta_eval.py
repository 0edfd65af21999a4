"""The meta-evaluation's pair counting, on hand-built answers with hand-computed accuracies."""

from __future__ import annotations

import math

from geoeval.core.analysis.meta_eval import DEFECT, REFERENCE, WORTHLESS, ordering_report, tier_means
from geoeval.core.records import ScoredAnswer, Tier

REF = Tier("reference", REFERENCE)
WRONG = Tier("defect:wrong_station", DEFECT, frozenset({"ema"}))
EMPTY = Tier("empty", WORTHLESS)


def _answers(ref: dict, wrong: dict, empty: dict, sample: str = "s1") -> list[ScoredAnswer]:
    return [
        ScoredAnswer(sample, REF, "A-B-C", ref),
        ScoredAnswer(sample, WRONG, "A-X-C", wrong),
        ScoredAnswer(sample, EMPTY, "", empty),
    ]


def test_perfect_ordering_counts_each_known_pair():
    report = ordering_report(
        _answers({"ema": 1.0, "valid": 1.0}, {"ema": 0.0, "valid": 1.0}, {"ema": 0.0, "valid": 0.0})
    )
    # ema: ref>wrong (strict, affected), ref>empty (strict), wrong>=empty -> 3 pairs, all right
    assert report["ema"]["pairs"] == 3 and report["ema"]["correct"] == 3 and report["ema"]["met"]
    # valid is not affected by the wrong station: ref-vs-wrong is not a pair; ref>empty, wrong>=empty
    assert report["valid"]["pairs"] == 2 and report["valid"]["accuracy"] == 1.0


def test_a_tie_on_a_strict_pair_is_a_violation_and_misses_the_target():
    report = ordering_report(_answers({"ema": 1.0}, {"ema": 1.0}, {"ema": 0.0}))
    assert report["ema"]["violations"] == 1
    assert math.isclose(report["ema"]["accuracy"], 2 / 3)
    assert not report["ema"]["met"]
    (example,) = report["ema"]["examples"]
    assert (example["better"], example["worse"]) == ("reference", "defect:wrong_station")


def test_a_defect_scoring_below_a_worthless_answer_is_a_violation():
    report = ordering_report(_answers({"ema": 1.0}, {"ema": 0.0}, {"ema": 0.5}))
    # ref>wrong ok, ref>empty ok, wrong>=empty violated
    assert report["ema"]["correct"] == 2 and report["ema"]["violations"] == 1


def test_nan_scores_are_not_applicable_not_pairs_and_targets_are_per_metric():
    nan = float("nan")
    answers = _answers({"ema": 1.0, "judge": 0.9}, {"ema": 0.0, "judge": 0.2}, {"ema": nan, "judge": 0.1})
    answers += _answers({"ema": 1.0, "judge": 0.5}, {"ema": 0.0, "judge": 0.6}, {"ema": 0.0, "judge": 0.0}, "s2")
    report = ordering_report(answers, {"judge": 0.6})
    assert report["ema"]["n_not_applicable"] == 2 and report["ema"]["pairs"] == 4
    # judge affects all tiers? WRONG affects only ema, so judge pairs per sample: ref>empty, wrong>=empty
    assert report["judge"]["pairs"] == 4 and report["judge"]["correct"] == 4
    assert report["judge"]["target"] == 0.6 and report["ema"]["target"] == 1.0


def test_tier_means_skip_nan():
    nan = float("nan")
    means = tier_means(
        _answers({"ema": 1.0}, {"ema": 0.0}, {"ema": nan}) + _answers({"ema": 0.0}, {"ema": 0.0}, {"ema": 0.0}, "s2")
    )
    assert means["reference"]["ema"] == 0.5 and means["empty"]["ema"] == 0.0


SURFACE = Tier("surface:bold_names", REFERENCE, family="surface")
HEDGE = Tier("gaming:two_candidates", DEFECT, frozenset({"ema"}), family="gaming")


def test_families_a_surface_variant_must_equal_the_reference_and_each_family_meets_its_target():
    answers = [
        ScoredAnswer("s1", REF, "A-B-C", {"ema": 1.0}),
        ScoredAnswer("s1", SURFACE, "**A**-**B**-**C**", {"ema": 0.0}),  # misread: must tie the reference
        ScoredAnswer("s1", HEDGE, "A-X-C or A-B-C", {"ema": 0.0}),
        ScoredAnswer("s1", EMPTY, "", {"ema": 0.0}),
    ]
    report = ordering_report(answers, {"gaming:ema": 0.5})
    families = report["ema"]["by_family"]
    # surface: ref == variant (violated); variant > empty is no pair: a right answer that earns 0
    # orders nothing below it (counted apart), and the equality pair has caught the misreading
    assert (families["surface"]["pairs"], families["surface"]["correct"]) == (1, 0)
    # gaming: ref > hedge (right), hedge >= empty (right)
    assert (families["gaming"]["pairs"], families["gaming"]["correct"]) == (2, 2)
    assert families["gaming"]["target"] == 0.5 and families["tiers"]["target"] == 1.0
    assert not report["ema"]["met"]  # one family (surface) misses
    fixed = [a if a.tier is not SURFACE else ScoredAnswer("s1", SURFACE, a.answer, {"ema": 1.0}) for a in answers]
    assert ordering_report(fixed)["ema"]["met"]


def test_a_reference_that_scores_zero_orders_nothing_and_is_counted_apart():
    report = ordering_report(_answers({"ema": 0.0}, {"ema": 0.0}, {"ema": 0.0}))
    # ref>wrong and ref>empty cannot hold when the reference earns nothing: counted, not violated
    assert report["ema"]["n_reference_zero"] == 2
    assert report["ema"]["pairs"] == 1 and report["ema"]["correct"] == 1  # wrong >= empty


BOUNDED_HEDGE = Tier("hedge:either", DEFECT, frozenset({"ema", "ar"}), family="hedge", worst="defect:wrong_station")


def test_a_hedge_is_bounded_by_its_worst_candidate():
    """A hedge between the reference and a wrong answer (`Tier.worst`) scores no higher than the
    wrong answer alone, and strictly below the reference only where the wrong answer is."""
    answers = [
        ScoredAnswer("s1", REF, "right", {"ema": 1.0, "ar": 0.8}),
        ScoredAnswer("s1", WRONG, "wrong", {"ema": 0.0, "ar": 0.8}),  # the wrong one ties on ar
        ScoredAnswer("s1", BOUNDED_HEDGE, "right or wrong", {"ema": 0.0, "ar": 0.8}),
    ]
    report = ordering_report(answers)
    hedge_pairs = report["ema"]["by_family"]["hedge"]
    # ema: wrong >= hedge (at least), reference > hedge (the wrong one is below the reference)
    assert hedge_pairs == {"pairs": 2, "correct": 2, "accuracy": 1.0, "target": 1.0, "met": True}
    # ar: only wrong >= hedge; the reference-hedge pair is not one (the wrong one ties the reference)
    assert report["ar"]["by_family"]["hedge"]["pairs"] == 1 and report["ar"]["by_family"]["hedge"]["met"]
    # a hedge that scores above its worst candidate is a violation
    answers[2] = ScoredAnswer("s1", BOUNDED_HEDGE, "right or wrong", {"ema": 1.0, "ar": 0.8})
    report = ordering_report(answers)
    assert report["ema"]["by_family"]["hedge"]["correct"] == 0 and not report["ema"]["met"]


def test_the_reading_families_are_built_from_a_pair_with_their_levels():
    import random

    from geoeval.core.analysis.answer_families import (
        READING_FAMILIES,
        WRONG_ALONE,
        AnswerPair,
        reading_family_answers,
        reading_family_targets,
    )

    pair = AnswerPair(
        "RIGHT", "WRONG", frozenset({"ema"}), "Which one?", {"json": '{"a": "RIGHT"}'}, {"json": '{"a": "WRONG"}'}
    )
    built = reading_family_answers(pair, random.Random(0))
    families = {tier.family for tier, _ in built if tier.name != WRONG_ALONE}
    assert families == set(READING_FAMILIES)
    for tier, text in built:
        if tier.name == WRONG_ALONE:
            assert text == "WRONG" and tier.level == DEFECT
        elif tier.level == REFERENCE:
            assert "RIGHT" in text and tier.affects is None and tier.worst is None, tier
        else:
            assert tier.worst == WRONG_ALONE and tier.affects == {"ema"} and "WRONG" in text, tier
    assert {tier.name for tier, _ in built} >= {"format:json", "format:json_options", "echo:question_first"}
    # the same seed, the same answers
    assert reading_family_answers(pair, random.Random(0)) == built
    # without a wrong answer only the level-0 variants are built
    assert all(
        t.level == REFERENCE for t, _ in reading_family_answers(AnswerPair("R", None, frozenset()), random.Random(0))
    )
    assert reading_family_targets({"ema": 1.0, "sc": 0.9}, ["ema", "sc"])["hedge:sc"] == 0.95
    assert reading_family_targets({"ema": 1.0, "sc": 0.9}, ["ema", "sc"])["hedge:ema"] == 1.0
