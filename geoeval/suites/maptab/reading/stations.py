"""The station names of a map, keyed for the robust identity (`reading/match.py`) and for reading
routes (`reading/route.py`): exact keys (`text.name_key`), unambiguous typos, a trailing "station".

* A station of the answer is the map's station whose `text.name_key` equals its own; else, a
  misspelling, the map's only station within `max_typo_edits` edits (one edit for names of 5-9
  characters, two from 10; none below 5) when exactly one is that close; else a trailing
  "station" / "stn" dropped. A name that is the key of a real station is always that station.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from geoeval.suites.maptab.reading.text import name_key

STATION_SUFFIXES = (" station", " stn")


def max_typo_edits(key: str) -> int:
    """The edits a misspelled name of this length may carry and still be read as a station."""
    return 0 if len(key) < 5 else 1 if len(key) < 10 else 2


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with adjacent transpositions, or `limit + 1` once it exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


class Stations:
    """The station names of a map, keyed for the robust identity."""

    def __init__(self, names: Iterable[str]):
        self.by_key = {name_key(n): n for n in names}
        self.names = list(self.by_key.values())

    def known(self, name: str) -> bool:
        """Whether `name` is a station's name (no typo allowed): the reader keeps such a name whole."""
        return name_key(name) in self.by_key

    @lru_cache(maxsize=4096)  # noqa: B019 - one map's names; the instance lives as long as its sample
    def resolve(self, name: str) -> str | None:
        """The map station `name` names (module docstring), or None."""
        key = name_key(name)
        if key in self.by_key:
            return key
        for suffix in STATION_SUFFIXES:
            if key.endswith(suffix) and key[: -len(suffix)] in self.by_key:
                return key[: -len(suffix)]
        limit = max_typo_edits(key)
        if limit:
            close = [k for k in self.by_key if edit_distance(key, k, limit) <= limit]
            if len(close) == 1:
                return close[0]
        return None
