"""When a visit happens and whether a time-bound fact holds then (issue 28): "German Corner on
Sundays" supports a wish to chat in German on a Sunday visit, not on a Tuesday one.

A query that states no time lets the user choose when, so every fact holds for it. A query that
fixes a day and a time (Nearby L2 "It's Tuesday, 10:15", a trip's departure and the computed
arrival at each stop) fixes the visit: a fact holds only inside its window. What the query does
not state (the season, a date) is unknown: such a fact may hold, but does not definitely hold.
The answer's evidence must definitely hold; another place counts as fitting if its facts may hold,
and a dislike rules a place out only if it definitely holds (both ways, so that no reading of the
query admits another answer)."""

from __future__ import annotations

from dataclasses import dataclass

from geoeval.suites.lifeplanner.cases.lexicon import TIME_BOUND, Preference


@dataclass(frozen=True)
class Visit:
    """The visit a query fixes: weekday (0 = Monday), minute of that day's timeline (past 1,440 on
    the next day) and season, each None where the query does not state it."""

    weekday: int | None = None
    minute: float | None = None
    season: str | None = None


def visit_for(weekday: int | None, minute: float | None, pref: Preference | None = None) -> Visit | None:
    """The visit of a query that states `weekday` and `minute` (None: states no time) with the
    season its need states."""
    if weekday is None and minute is None:
        return None
    return Visit(weekday, minute, pref.season if pref else None)


def _verdict(fact: str, visit: Visit | None) -> bool | None:
    """True: `fact` holds at `visit`; False: it does not; None: the query leaves it open."""
    window = TIME_BOUND.get(fact)
    if window is None or visit is None:
        return True
    answers: list[bool | None] = []
    if window.days is not None:
        if visit.weekday is None:
            answers.append(None)
        else:
            day = (visit.weekday + int((visit.minute or 0) // 1440)) % 7
            answers.append(day in window.days)
    if window.start is not None and window.end is not None:
        if visit.minute is None:
            answers.append(None)
        else:
            answers.append(window.start <= visit.minute % 1440 < window.end)
    if window.season is not None:
        answers.append(None if visit.season is None else visit.season == window.season)
    if window.dates is not None:
        answers.append(None)
    if False in answers:
        return False
    return None if None in answers else True


def definitely_holds(fact: str, visit: Visit | None) -> bool:
    return _verdict(fact, visit) is True


def may_hold(fact: str, visit: Visit | None) -> bool:
    return _verdict(fact, visit) is not False
