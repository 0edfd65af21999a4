"""The A.2 weight model, hand-computed."""

from __future__ import annotations

import pytest

from geoeval.suites.mapsatisfy.judging import weights as W


def test_behaviour_strength_is_the_supporting_share():
    assert W.behaviour_strength(3, 12) == 0.25
    assert W.behaviour_strength(0, 5) == 0.0
    with pytest.raises(ValueError):
        W.behaviour_strength(1, 0)
    with pytest.raises(ValueError):
        W.behaviour_strength(6, 5)


def test_profile_strength_uses_the_ratio_or_the_relevance_default():
    assert W.profile_strength(0.852) == 0.852
    assert W.profile_strength(None, "strong") == 1.0
    assert W.profile_strength(None, "weak") == 0.3
    with pytest.raises(ValueError):
        W.profile_strength(1.2)


def test_recency_routine_habit_is_discounted():
    assert W.recency(routine=True) == 0.8
    assert W.recency(routine=False) == 1.0


@pytest.mark.parametrize(
    ("recent", "earlier", "rate", "m"),
    [
        (9, 6, 0.5, 1.2),  # +50 %: rising (the boundary counts)
        (3, 6, -0.5, 0.8),  # -50 %: fading
        (7, 6, 1 / 6, 1.0),  # +17 %: stable
        (4, 0, 4.0, 1.2),  # a new habit: earlier window counts as one observation
        (0, 0, 0.0, 1.0),
    ],
)
def test_window_change_rate_and_momentum(recent, earlier, rate, m):
    assert W.window_change_rate(recent, earlier) == pytest.approx(rate)
    assert W.momentum(W.window_change_rate(recent, earlier)) == m


def test_share_change_rate_against_the_profile_baseline():
    assert W.share_change_rate(0.6, 0.4) == pytest.approx(0.5)
    assert W.share_change_rate(0.2, 0.4) == pytest.approx(-0.5)
    assert W.share_change_rate(0.0, 0.0) == 0.0


def test_current_need_levels():
    assert [W.current_need(x) for x in ("continued", "direct", "weak", "conflict")] == [1.2, 1.0, 0.6, 0.3]
    with pytest.raises(ValueError):
        W.current_need("maybe")  # type: ignore[arg-type]


def test_evidence_weight_multiplies_and_treats_a_missing_side_as_neutral():
    pref = W.user_preference(0.75, 0.8, 1.2)  # S 0.75, routine, rising
    assert pref == pytest.approx(0.72)
    assert W.evidence_weight(pref, 1.2) == 0.864  # both sides: 0.72 * 1.2
    assert W.evidence_weight(pref, None) == 0.72  # profile / history only: CurrentNeed = 1
    assert W.evidence_weight(None, 0.6) == 0.6  # current session only: userpref = 1
    with pytest.raises(ValueError):
        W.evidence_weight(None, None)
