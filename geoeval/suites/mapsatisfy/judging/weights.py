"""The evidence-supported weight w_i of an implicit decision factor (appendix A.2), as pure functions.

    w_i = userpref(z_i) * CurrentNeed(z_i),     userpref(z_i) = S_i * R_i * M_i

with the rule that a missing side is neutral (1.0): only profile / history evidence gives
CurrentNeed = 1.0, only current-session evidence gives userpref = 1.0.

The paper's text prints the rules but its equations and Tables A1 / A2 did not survive extraction
(`../shared/seeds/002_*.txt` has the captions only). What is from the text: S_i = n_i / N_i for
behaviour evidence; a profile's preference ratio used as S_i directly; 1.0 / 0.3 for a basic
profile attribute of strong / weak relevance; R_i = 0.8 for a routine habit, 1.0 for recent or
non-routine evidence; momentum from the supporting counts of a recent and an earlier window (or
the recent share against the profile's long-term share). What geoeval chose where the tables are
missing is marked "geoeval's choice" below and in the README.
"""

from __future__ import annotations

from typing import Literal

ROUTINE_RECENCY = 0.8
RECENT_RECENCY = 1.0
STRONG_ATTRIBUTE_STRENGTH = 1.0
WEAK_ATTRIBUTE_STRENGTH = 0.3

# Table A1 (geoeval's choice): a change rate of at least +50 % is a rising factor, at most -50 % a
# fading one; anything between is stable. Rising factors weigh 1.2, which reproduces the largest
# weight in the authors' demo (1.2).
MOMENTUM_RISING, MOMENTUM_STABLE, MOMENTUM_FADING = 1.2, 1.0, 0.8
MOMENTUM_THRESHOLD = 0.5

# Table A2 (geoeval's choice): relevance x continuity x conflict collapsed to four levels. Only
# weak, invalid or conflicting evidence down-weights (the text: "down-weights a factor only when
# ... weak applicability, invalidity, or conflict"); direct evidence continued within the session
# raises it, so that support by both sides "increases the weight".
CURRENT_NEED = {"continued": 1.2, "direct": 1.0, "weak": 0.6, "conflict": 0.3}
CurrentNeedLevel = Literal["continued", "direct", "weak", "conflict"]


def behaviour_strength(n_supporting: int, n_dimension: int) -> float:
    """S_i = n_i / N_i: the share of the user's behaviours in the same decision dimension that
    support the factor."""
    if n_dimension <= 0:
        raise ValueError("N_i (behaviours in the decision dimension) must be positive")
    if not 0 <= n_supporting <= n_dimension:
        raise ValueError(f"n_i must be within [0, N_i], got {n_supporting} of {n_dimension}")
    return n_supporting / n_dimension


def profile_strength(ratio: float | None = None, relevance: Literal["strong", "weak"] = "strong") -> float:
    """S_i from a profile: its preference ratio when it has one, else 1.0 / 0.3 for a basic
    attribute of strong / weak relevance."""
    if ratio is not None:
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"a preference ratio must be within [0, 1], got {ratio}")
        return float(ratio)
    return STRONG_ATTRIBUTE_STRENGTH if relevance == "strong" else WEAK_ATTRIBUTE_STRENGTH


def recency(routine: bool) -> float:
    """R_i: 0.8 for a routine habit, 1.0 for recent or non-routine evidence."""
    return ROUTINE_RECENCY if routine else RECENT_RECENCY


def window_change_rate(recent: int, earlier: int) -> float:
    """Behaviour-only evidence: the relative change of supporting observations from the earlier to
    the recent window, (recent - earlier) / max(earlier, 1) (geoeval's choice of denominator: an
    empty earlier window counts as one observation, so a new habit is rising, not infinite)."""
    if recent < 0 or earlier < 0:
        raise ValueError("window counts must be non-negative")
    return (recent - earlier) / max(earlier, 1)


def share_change_rate(recent_share: float, profile_share: float) -> float:
    """Profile and recent behaviour both available: the recent share against the profile's
    long-term baseline, (recent - baseline) / baseline; 0 when the baseline is 0 and nothing recent."""
    if profile_share <= 0:
        return 0.0 if recent_share <= 0 else 1.0
    return (recent_share - profile_share) / profile_share


def momentum(change_rate: float) -> float:
    """M_i from the change rate (Table A1, geoeval's thresholds)."""
    if change_rate >= MOMENTUM_THRESHOLD:
        return MOMENTUM_RISING
    if change_rate <= -MOMENTUM_THRESHOLD:
        return MOMENTUM_FADING
    return MOMENTUM_STABLE


def user_preference(strength: float, recency_factor: float, momentum_factor: float) -> float:
    """userpref(z_i) = S_i * R_i * M_i."""
    return strength * recency_factor * momentum_factor


def current_need(level: CurrentNeedLevel) -> float:
    """CurrentNeed(z_i) of valid current-session evidence (Table A2, geoeval's levels)."""
    try:
        return CURRENT_NEED[level]
    except KeyError:
        raise ValueError(f"unknown CurrentNeed level {level!r} (one of {sorted(CURRENT_NEED)})") from None


def evidence_weight(userpref: float | None, current: float | None, digits: int = 3) -> float:
    """w_i: the product of the two sides, a missing side being neutral (1.0). A factor with no
    evidence at all is filtered out before weighting (section 3.1), so both missing is an error."""
    if userpref is None and current is None:
        raise ValueError("a retained factor needs profile/history or current-session evidence")
    return round((1.0 if userpref is None else userpref) * (1.0 if current is None else current), digits)
