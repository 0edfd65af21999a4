"""Synthetic station names: English-like, unique and pairwise dissimilar (the difflib ratio of any
two lower-cased names is below `NAME_SIMILARITY_LIMIT` in both argument orders), because the
authors' scorer accepts a station name when the ratio is >= 0.5.
"""

from __future__ import annotations

import difflib
import random

from geoeval.api import GeoevalError

NAME_SIMILARITY_LIMIT = 0.5  # the scorer's match threshold; generated names stay strictly below
MAX_NAME_ROOT_LENGTH = 9

_ONSETS = (
    "b",
    "br",
    "c",
    "ch",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "r",
    "s",
    "sh",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "y",
)
_VOWELS = ("a", "e", "i", "o", "u", "ea", "ai", "oa")
_CODAS = ("", "", "", "n", "r", "l", "m", "s", "t", "nd", "rn", "st")
_ENDINGS = (
    "ton",
    "ley",
    "ford",
    "by",
    "wick",
    "mere",
    "dale",
    "well",
    "more",
    "ham",
    "stead",
    "worth",
    "field",
    "bury",
    "ridge",
    "combe",
    "holm",
    "thorpe",
    "low",
    "den",
    "hurst",
    "side",
)
_SECOND_SYLLABLE_VOWELS = ("a", "o", "ie", "ey", "en", "in")
_PLACE_WORDS = (
    "Park",
    "Square",
    "Cross",
    "Hill",
    "Gate",
    "Market",
    "Bridge",
    "Wharf",
    "Green",
    "Heights",
    "Road",
    "Lane",
    "Common",
    "Fields",
    "Quay",
    "Row",
    "Yard",
    "Vale",
    "Abbey",
    "Docks",
    "Court",
    "Mills",
    "Halt",
    "Circus",
    "Junction",
    "Plaza",
    "Terrace",
    "Walk",
)


def _station_names(rng: random.Random, n: int) -> list[str]:
    """n unique, pronounceable names whose pairwise difflib ratio (lower-cased) is < 0.5."""
    names: list[str] = []
    lowered: list[str] = []
    used_words: set[str] = set()
    for _ in range(200_000):
        if len(names) == n:
            return names
        root = rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        if rng.random() < 0.75:
            root += rng.choice(_ENDINGS)
        else:
            root += rng.choice(_ONSETS) + rng.choice(_SECOND_SYLLABLE_VOWELS)
        if len(root) > MAX_NAME_ROOT_LENGTH or len(root) < 4:
            continue
        candidate = root.capitalize()
        free_words = [w for w in _PLACE_WORDS if w not in used_words]
        word = None
        if free_words and rng.random() < 0.45:
            word = rng.choice(free_words)
            candidate = f"{candidate} {word}"
        low = candidate.lower()
        # SequenceMatcher is not symmetric, and the scorer may compare in either order
        if any(
            difflib.SequenceMatcher(None, low, other).ratio() >= NAME_SIMILARITY_LIMIT
            or difflib.SequenceMatcher(None, other, low).ratio() >= NAME_SIMILARITY_LIMIT
            for other in lowered
        ):
            continue
        names.append(candidate)
        lowered.append(low)
        if word:
            used_words.add(word)
    raise GeoevalError(f"could not draw {n} mutually dissimilar station names")  # pragma: no cover
