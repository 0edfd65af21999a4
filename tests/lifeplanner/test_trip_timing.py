"""Trip timing shared by the case engine, the rules judge and the heuristic baseline."""

from __future__ import annotations

import math

from geoeval.suites.lifeplanner.city.opening_hours import parse_opening_hours
from geoeval.suites.lifeplanner.tools.trip_timing import (
    NEVER_OPEN,
    arrival_check,
    arrival_minutes,
    boundary_margin,
    hhmm_to_minute,
    minute_to_hhmm,
    open_at_minute,
    open_on_arrival,
    readable_hours,
    stop_arrivals,
)

DAY = parse_opening_hours("Monday-Sunday 10:00-22:00")
NIGHT = parse_opening_hours("Monday-Sunday 19:00-02:00")


def test_clock_conversions():
    assert hhmm_to_minute("09:05") == 545
    assert minute_to_hhmm(545.9) == "09:05"
    assert minute_to_hhmm(1440 + 30) == "00:30"


def test_arrivals_add_legs_and_a_dwell_at_every_stop_but_the_destination():
    # leave 10:00, legs of 10, 20 and 5 minutes, 30 minutes at each stop
    assert arrival_minutes([600, 1200, 300], 600, 30) == [610.0, 660.0, 695.0]
    assert stop_arrivals(["a", "x", "y", "b"], [600, 1200, 300], 600, 30) == [("x", 610.0), ("y", 660.0)]


def test_an_arrival_past_midnight_falls_on_the_next_day():
    assert open_at_minute(NIGHT, 0, 1440 + 60)  # Tuesday 01:00, still open from Monday night
    assert not open_at_minute(NIGHT, 0, 1440 + 150)  # Tuesday 02:30
    assert open_at_minute(NIGHT, 6, 1440 + 60)  # Sunday night into Monday
    assert not open_at_minute(DAY, 0, 599.9)  # 09:59.9 counts as 09:59


def test_open_on_arrival_stops_at_the_first_closed_stop():
    asked: list[str] = []

    def hours_of(p: str):
        asked.append(p)
        return {"x": DAY, "y": NIGHT}[p]

    # 09:00 departure: x is reached at 09:10, before it opens
    assert not open_on_arrival(["a", "x", "y", "b"], [600, 600, 600], 0, 540, 30, hours_of)
    assert asked == ["x"]
    # 18:40: x at 18:50 (open), y at 19:30 (open)
    assert open_on_arrival(["a", "x", "y", "b"], [600, 600, 600], 0, 1120, 30, hours_of)


def test_arrival_check_reads_every_stop_and_reports_the_tightest_margin():
    hours = {"x": DAY, "y": NIGHT}
    ok, margin = arrival_check(["a", "x", "y", "b"], [600, 600, 600], 0, 540, 30, hours.__getitem__)
    assert not ok
    assert margin == 50  # x at 09:10 is 50 minutes before 10:00; y at 09:50 is 470 after 02:00
    assert boundary_margin(DAY, 0, 610) == 10
    assert boundary_margin(NEVER_OPEN, 0, 610) == math.inf


def test_unreadable_hours_are_never_open():
    assert readable_hours("garbled") is NEVER_OPEN
    assert readable_hours("Monday-Sunday 10:00-22:00") == DAY
    assert not open_on_arrival(["a", "x", "b"], [60, 60], 0, 720, 30, lambda p: readable_hours("garbled"))
