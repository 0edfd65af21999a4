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
