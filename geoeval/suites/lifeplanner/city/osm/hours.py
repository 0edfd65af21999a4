"""OSM `opening_hours` in the LifePlanner environment's format (`convert_opening_hours`): the
weekly rules converted when they parse to the same intervals, holiday rules dropped, any other
form kept as OSM wrote it."""

from __future__ import annotations

import re

from geoeval.suites.lifeplanner.city.opening_hours import OpeningHoursError, parse_opening_hours

_OSM_DAYS = {
    "Mo": "Monday",
    "Tu": "Tuesday",
    "We": "Wednesday",
    "Th": "Thursday",
    "Fr": "Friday",
    "Sa": "Saturday",
    "Su": "Sunday",
}
_DAY_ABBR_RE = re.compile(r"\b(Mo|Tu|We|Th|Fr|Sa|Su)\b")
_HOLIDAY_RE = re.compile(r"^(PH|SH)\b")
_ADDITIONAL_RULE_RE = re.compile(r"(?<=\d),\s*(?=(?:Mo|Tu|We|Th|Fr|Sa|Su|PH|SH)\b)")


def convert_opening_hours(raw: str | None) -> tuple[str, str, int]:
    """OSM `opening_hours` -> (text, status, holiday rules dropped).

    status `converted`: `text` is in the environment's format (full day names, `closed`,
    `Open 24 hours`) and parses to the same weekly intervals as the OSM rules it came from.
    Public/school-holiday rules (`PH off`, `SH ...`) have no place in a weekly schedule and are
    dropped (counted). status `raw`: a form `parse_opening_hours` cannot read (comma-separated
    rules, `sunrise`, month ranges, free text...); `text` is the OSM string unchanged. status
    `empty`: no hours."""
    s = raw.strip() if isinstance(raw, str) else ""  # pandas gives NaN for a missing tag
    if not s:
        return "", "empty", 0
    if s == "24/7":
        return "Open 24 hours", "converted", 0
    segments, dropped = [], 0
    for seg in s.split(";"):
        seg = seg.strip()
        if not seg:
            continue
        if _HOLIDAY_RE.match(seg):
            dropped += 1
            continue
        segments.append(seg)
    # OSM's additional-rule separator: a comma after a time, before a day ("Mo-Fr 11:00-18:00, Sa
    # 11:00-15:00"). Additional rules add to earlier ones while ';' overrides them; the two agree
    # when the rules' days do not overlap, which is checked below.
    split: list[str] = []
    for seg in segments:
        split += [p.strip() for p in _ADDITIONAL_RULE_RE.split(seg) if p.strip()]
    additive = len(split) > len(segments)
    segments = [seg for seg in split if not _HOLIDAY_RE.match(seg)]
    dropped += len(split) - len(segments)
    osm_weekly = "; ".join(segments)
    text = _DAY_ABBR_RE.sub(lambda m: _OSM_DAYS[m.group(1)], osm_weekly)
    text = re.sub(r"\boff\b", "closed", text)
    text = re.sub(r"\s*,\s*", ",", text)
    try:
        converted = parse_opening_hours(text)
        original = parse_opening_hours(osm_weekly)  # the parser reads OSM day abbreviations too
    except OpeningHoursError:
        return s, "raw", 0
    if not segments or converted.intervals != original.intervals:
        return s, "raw", 0
    if additive:
        try:
            union = sorted({iv for seg in segments for iv in parse_opening_hours(seg).intervals})
        except OpeningHoursError:
            return s, "raw", 0
        if tuple(union) != converted.intervals:
            return s, "raw", 0
    return text, "converted", dropped
