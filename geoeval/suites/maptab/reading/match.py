"""The robust protocol's EMA, PMA and DS (`scoring.protocol=robust`): the paper's definitions
(appendix C.1) over what `reading/route.py` read, with exact name identity.

* A station of the answer is the map's station whose `text.name_key` equals its own; else, a
  misspelling, the map's only station within `MAX_TYPO_EDITS` edits (one edit for names of 5-9
  characters, two from 10; none below 5) when exactly one is that close; else a trailing
  "station" / "stn" dropped. A name that is the key of a real station is always that station, so
  similar-named stations ("Shinjuku" / "Shinjuku Sanchome", the Cleveland map's "East 55th" /
  "East 79th") are told apart, and a typo never becomes a different real station.
* EMA: some reference has the same stations in the same order, and on Metromap the same transfer
  marks at every position (the paper's rule; Travelmap references carry none, so marks are
  ignored there, as the paper's in-run metric does).
* PMA: the longest matching prefix of stations (transfer marks not compared, the authors' prefix
  rule) over the reference length, best over references, rounded to 4 decimals.
* Several candidates (the one-answer rule): the worst candidate's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from geoeval.suites.maptab.reading.route import read_route
from geoeval.suites.maptab.reading.route_line import Stop, parse_answer_text
from geoeval.suites.maptab.reading.stations import Stations
from geoeval.suites.maptab.reading.text import name_key


def stations_of(metadata: dict, references: Sequence[str]) -> Stations:
    """The sample's map stations (`metadata["stations"]`), else the references' stations."""
    names = metadata.get("stations")
    if not names:  # a sample built before samples carried the map's names: the references' stations
        names = [s.name for r in references for s in parse_answer_text(r)[0]]
    return _cached_stations(tuple(names))


@lru_cache(maxsize=64)
def _cached_stations(names: tuple[str, ...]) -> Stations:
    return Stations(names)


def _resolved(route: list[Stop], stations: Stations) -> list[tuple[str | None, bool]]:
    """Each stop as its station's key; a name of no station keeps its own key (marked, so that it
    equals only the same name: a reference naming a station the list lacks still matches itself)."""
    return [(stations.resolve(s.name) or f"?{name_key(s.name)}", s.transfer) for s in route]


def _exact(pred: list[tuple[str | None, bool]], gold: list[tuple[str | None, bool]], marks: bool) -> bool:
    return len(pred) == len(gold) and all(
        p is not None and p == g and (not marks or pt == gt) for (p, pt), (g, gt) in zip(pred, gold)
    )


def _prefix(pred: list[tuple[str | None, bool]], gold: list[tuple[str | None, bool]]) -> float:
    matched = 0
    for (p, _), (g, _) in zip(pred, gold):
        if p is None or p != g:
            break
        matched += 1
    return matched / len(gold) if gold else 0.0


def candidates(raw: str, references: Sequence[str], metadata: dict) -> list[list[Stop]]:
    """The candidate routes of an answer, read knowing the map's station names (`reading.route`)."""
    return read_route(raw, stations_of(metadata, references)).candidates


def _scored(raw: str, references: Sequence[str], metadata: dict, score) -> float:
    found = candidates(raw, references, metadata)
    if not found:
        return 0.0
    stations = stations_of(metadata, references)
    golds = [_resolved(r, stations) for ref in references for r in parse_answer_text(ref)[:1]]
    return min(score(_resolved(c, stations), golds) for c in found)


def ema(raw: str, references: Sequence[str], metadata: dict) -> float:
    """Robust EMA of an answer (its raw text; module docstring)."""
    marks = metadata.get("scenario", "metromap") == "metromap"
    return _scored(raw, references, metadata, lambda p, golds: float(any(_exact(p, g, marks) for g in golds)))


def pma(raw: str, references: Sequence[str], metadata: dict) -> float:
    """Robust PMA (module docstring)."""
    return round(
        _scored(raw, references, metadata, lambda p, golds: max((_prefix(p, g) for g in golds), default=0.0)), 4
    )
