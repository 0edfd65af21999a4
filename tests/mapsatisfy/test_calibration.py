"""Judge calibration (B.2), hand-computed."""

from __future__ import annotations

import math

import pytest

from geoeval.suites.mapsatisfy.judging.calibration import (
    calibration,
    calibration_markdown,
    ensemble_scores,
    mean_absolute_error,
    within_tolerance_accuracy,
)

REF = [1.0, 0.5, 0.8, 0.0]
JUDGE_A = [1.0, 0.54, 0.7, 0.02]  # |diff| 0, 0.04, 0.10, 0.02
JUDGE_B = [0.9, 0.5, None, 0.0]  # |diff| 0.10, 0, -, 0 (case 3 unscored)


def test_within_tolerance_accuracy_counts_the_boundary_as_within():
    assert within_tolerance_accuracy(REF, JUDGE_A, 0.05) == 0.75
    assert within_tolerance_accuracy(REF, JUDGE_A, 0.02) == 0.5  # 0.02 away is within 0.02
    assert within_tolerance_accuracy(REF, JUDGE_B, 0.05) == pytest.approx(2 / 3)


def test_mae():
    assert mean_absolute_error(REF, JUDGE_A) == pytest.approx(0.16 / 4)
    assert mean_absolute_error(REF, JUDGE_B) == pytest.approx(0.1 / 3)
    assert math.isnan(mean_absolute_error([1.0], [None]))


def test_ensemble_is_the_judge_mean_and_none_when_a_judge_failed():
    assert ensemble_scores({"a": JUDGE_A, "b": JUDGE_B}) == pytest.approx([0.95, 0.52, None, 0.01])


def test_calibration_rows_per_judge_and_ensemble():
    table = calibration(REF, {"a": JUDGE_A, "b": JUDGE_B})
    assert set(table) == {"a", "b", "ensemble"}
    ens = table["ensemble"]  # |diff| 0.05, 0.02, 0.01 over 3 cases
    assert ens["n"] == 3
    assert ens["acc@0.05"] == 1.0
    assert ens["acc@0.02"] == pytest.approx(2 / 3)
    assert ens["mae"] == pytest.approx(0.08 / 3)
    assert "ensemble" not in calibration(REF, {"a": JUDGE_A})


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError):
        within_tolerance_accuracy(REF, JUDGE_A[:3], 0.05)
    with pytest.raises(ValueError):
        ensemble_scores({"a": [1.0], "b": [1.0, 0.0]})


def test_markdown_table():
    text = calibration_markdown(REF, {"a": JUDGE_A, "b": JUDGE_B}, metric="IISR")
    assert "Judge calibration (IISR)" in text
    assert "| a | 4 | 0.7500 | 0.5000 | 0.0400 |" in text
    assert "| ensemble | 3 | 1.0000 | 0.6667 | 0.0267 |" in text
