"""Judge calibration (appendix B.2) on hand-computed numbers."""

from __future__ import annotations

import pytest

from geoeval.suites.lifeplanner.scoring.calibration import (
    calibration_table,
    ensemble_scores,
    hardest_cases,
    mean_absolute_error,
    rank_judges,
    select_ensemble,
    within_tolerance_accuracy,
)

HUMAN = {"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.8}
JUDGES = {
    # differences from HUMAN: .04, 0, .1, .02 (exactly ε = 0.02 counts as within)
    "j1": {"a": 0.96, "b": 0.5, "c": 0.1, "d": 0.78},
    # 0, .05 (exactly ε = 0.05), 0, .1
    "j2": {"a": 1.0, "b": 0.45, "c": 0.0, "d": 0.7},
    # .5, 0, .5, 0
    "j3": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.8},
}


def test_within_tolerance_accuracy_and_mae_by_hand():
    assert within_tolerance_accuracy(JUDGES["j1"], HUMAN, 0.05) == 0.75
    assert within_tolerance_accuracy(JUDGES["j1"], HUMAN, 0.02) == 0.5
    assert within_tolerance_accuracy(JUDGES["j2"], HUMAN, 0.05) == 0.75
    assert within_tolerance_accuracy(JUDGES["j2"], HUMAN, 0.02) == 0.5
    assert within_tolerance_accuracy(JUDGES["j3"], HUMAN, 0.05) == 0.5
    assert mean_absolute_error(JUDGES["j1"], HUMAN) == pytest.approx(0.04)
    assert mean_absolute_error(JUDGES["j2"], HUMAN) == pytest.approx(0.0375)
    assert mean_absolute_error(JUDGES["j3"], HUMAN) == pytest.approx(0.25)


def test_ranking_breaks_accuracy_ties_by_mae():
    assert [a.name for a in rank_judges(JUDGES, HUMAN)] == ["j2", "j1", "j3"]


def test_the_ensemble_is_the_mean_of_the_best_judges():
    chosen, ens = select_ensemble(JUDGES, HUMAN, size=2)
    assert chosen == ["j2", "j1"]
    # means: .98, .475, .05, .74 -> differences .02, .025, .05, .06
    assert ens.within[0.05] == 0.75 and ens.within[0.02] == 0.25
    assert ens.mae == pytest.approx(0.03875)
    assert ensemble_scores(JUDGES, ["j1", "j3"], ["a"]) == {"a": pytest.approx(0.73)}


def test_the_calibration_subset_is_the_most_disputed_cases():
    prelim = {"x": [0, 1], "y": [0.5, 0.5], "z": [0, 0.5], "w": [1, 0]}  # variances .25, 0, .0625, .25
    assert hardest_cases(prelim, k=2) == ["w", "x"]
    assert hardest_cases(prelim, k=3) == ["w", "x", "z"]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="no judge score"):
        mean_absolute_error({"a": 1.0}, HUMAN)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        mean_absolute_error({**JUDGES["j1"], "a": 1.5}, HUMAN)
    with pytest.raises(ValueError, match="size"):
        select_ensemble(JUDGES, HUMAN, size=4)
    with pytest.raises(ValueError, match="unknown judge"):
        ensemble_scores(JUDGES, ["j9"], ["a"])


def test_markdown_table():
    rows = rank_judges(JUDGES, HUMAN)
    md = calibration_table(rows).splitlines()
    assert md[0] == "| judge | n | acc@ε=0.05 (%) | acc@ε=0.02 (%) | MAE |"
    assert md[2:] == [
        "| j2 | 4 | 75.0 | 50.0 | 0.038 |",
        "| j1 | 4 | 75.0 | 50.0 | 0.040 |",
        "| j3 | 4 | 50.0 | 50.0 | 0.250 |",
    ]
