"""Trip timing: when a trip reaches each stop and whether every stop is open on arrival.

A trip leaves its start at a departure minute, drives each leg in the time `routing` reports and
spends a fixed dwell at every stop between start and end. The case engine (choosing a departure
that rules out the unconstrained optimum), the rules judge (the `open_on_arrival` constraint) and
the heuristic baseline (its admissible orders) all time a trip with these functions, so the three
agree on every arrival to the minute.

Minutes are counted from 00:00 of the departure weekday; an arrival past 1440 falls on a later day.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from geoeval.suites.lifeplanner.city.opening_hours import WEEK_MINUTES, OpeningHours, parse_opening_hours

# hours that are never open: what an unreadable opentime_week counts as for an agent
NEVER_OPEN = OpeningHours(text="", known=False, intervals=())


def hhmm_to_minute(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def minute_to_hhmm(minute: float) -> str:
    m = int(minute) % 1440
    return f"{m // 60:02d}:{m % 60:02d}"


def arrival_minutes(leg_seconds: Sequence[float], departure_min: float, dwell_min: float) -> list[float]:
    """Minute of the day (may pass 1440) at which each stop after the start is reached: the trip
    leaves the start at `departure_min`, and spends `dwell_min` at every intermediate stop."""
    t = float(departure_min)
    out = []
    for k, secs in enumerate(leg_seconds):
        t += secs / 60.0
        out.append(t)
        if k < len(leg_seconds) - 1:  # the last stop is the destination: no dwell counted after it
            t += dwell_min
    return out


def stop_arrivals(
    order: Sequence[str], leg_seconds: Sequence[float], departure_min: float, dwell_min: float
) -> list[tuple[str, float]]:
    """(stop, arrival minute) for every stop of `order` between its start and its end."""
    return list(zip(order[1:-1], arrival_minutes(leg_seconds, departure_min, dwell_min)))


def open_at_minute(hours: OpeningHours, weekday: int, minute: float) -> bool:
    """Open at a minute counted from 00:00 of `weekday` (a minute past 1440 is the next day)."""
    m = math.floor(minute)
    return hours.is_open((weekday + m // 1440) % 7, m % 1440)


def boundary_margin(hours: OpeningHours, weekday: int, minute: float) -> float:
    """Minutes from (weekday, minute) to the nearest opening or closing time of `hours`."""
    t = weekday * 1440 + minute
    best = math.inf
    for s, e in hours.intervals:
        for b in (s, e):
            for shift in (-WEEK_MINUTES, 0, WEEK_MINUTES):
                best = min(best, abs(t - (b + shift)))
    return best


def readable_hours(text: str | None) -> OpeningHours:
    """`text` parsed, or `NEVER_OPEN` when it follows no understood form (an agent cannot rely on it)."""
    try:
        return parse_opening_hours(text)
    except ValueError:
        return NEVER_OPEN


def open_on_arrival(
    order: Sequence[str],
    leg_seconds: Sequence[float],
    weekday: int,
    departure_min: float,
    dwell_min: float,
    hours_of: Callable[[str], OpeningHours],
) -> bool:
    """Whether every stop between start and end is open when the trip reaches it. Stops are
    checked in order and the first closed one decides (`hours_of` is not asked about the rest)."""
    return all(
        open_at_minute(hours_of(p), weekday, t) for p, t in stop_arrivals(order, leg_seconds, departure_min, dwell_min)
    )


def arrival_check(
    order: Sequence[str],
    leg_seconds: Sequence[float],
    weekday: int,
    departure_min: float,
    dwell_min: float,
    hours_of: Callable[[str], OpeningHours],
) -> tuple[bool, float]:
    """(every stop open on arrival, smallest distance in minutes of an arrival to an opening or
    closing time). Every stop's hours are read, so an unreadable one always surfaces."""
    ok, margin = True, math.inf
    for p, t in stop_arrivals(order, leg_seconds, departure_min, dwell_min):
        h = hours_of(p)
        ok = ok and open_at_minute(h, weekday, t)
        margin = min(margin, boundary_margin(h, weekday, t))
    return ok, margin
