"""Opening hours: parsing `opentime_week` text into weekly minute intervals, and the
`is_open` / `closing_minute` questions asked of them."""

from __future__ import annotations

import re
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Opening hours
# --------------------------------------------------------------------------------------------

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DAY_INDEX: dict[str, int] = {}
for _i, _d in enumerate(DAYS):
    for _alias in {_d.lower(), _d[:3].lower(), _d[:2].lower()}:
        _DAY_INDEX[_alias] = _i
_DAY_INDEX.update({"tues": 1, "thur": 3, "thurs": 3, "weds": 2})
_ALL_DAYS = tuple(range(7))
WEEK_MINUTES = 7 * 1440


class OpeningHoursError(ValueError):
    """An opentime_week string that follows none of the understood forms."""


@dataclass(frozen=True)
class OpeningHours:
    """Parsed weekly hours. `intervals` are [start, end) in minutes from Monday 00:00; an end past
    the end of the week wraps into Monday (a Sunday night that runs past midnight)."""

    text: str
    known: bool
    intervals: tuple[tuple[int, int], ...]

    def _containing(self, t: int) -> tuple[int, int] | None:
        for s, e in self.intervals:
            if s <= t < e:
                return s, e
            if s <= t + WEEK_MINUTES < e:
                return s - WEEK_MINUTES, e - WEEK_MINUTES
        return None

    def is_open(self, weekday: int, minute: int) -> bool:
        return self._containing(weekday * 1440 + minute) is not None

    def closes_at(self, weekday: int, minute: int) -> int | None:
        """Minutes from Monday 00:00 of this week at which the interval open at (weekday, minute)
        ends (may exceed the day or the week); None when closed then."""
        hit = self._containing(weekday * 1440 + minute)
        return None if hit is None else hit[1]


_PAREN_RE = re.compile(r"\([^)]*\)|（[^）]*）")
_TIME_RANGE_RE = re.compile(r"^(\d{1,2}):(\d{2})-(\d{1,2}):(\d{2})$")
_ALWAYS_RE = re.compile(r"^(open\s+)?(24\s*hours|24/7|24h)$", re.I)
_CLOSED_WORDS = {"closed", "off", "rest"}


def _parse_days(part: str) -> tuple[int, ...]:
    part = part.strip().strip(",").strip()
    if not part or part.lower() in {"daily", "everyday", "every day"}:
        return _ALL_DAYS
    days: list[int] = []
    for chunk in part.split(","):
        chunk = chunk.strip()
        if not chunk:
            continue
        ends = [c.strip().lower().rstrip(".") for c in chunk.split("-")]
        if len(ends) > 2 or any(e not in _DAY_INDEX for e in ends):
            raise OpeningHoursError(f"unknown day or day range '{chunk}'")
        a = _DAY_INDEX[ends[0]]
        b = _DAY_INDEX[ends[-1]]
        d = a
        while True:  # a range may wrap through the weekend: Friday-Monday
            if d not in days:
                days.append(d)
            if d == b:
                break
            d = (d + 1) % 7
    return tuple(days)


def _parse_times(part: str) -> list[tuple[int, int]]:
    part = part.strip().lower()
    if part in _CLOSED_WORDS:
        return []
    if _ALWAYS_RE.match(part):
        return [(0, 1440)]
    out = []
    for chunk in part.split(","):
        chunk = re.sub(r"\s+", "", chunk)
        m = _TIME_RANGE_RE.match(chunk)
        if not m:
            raise OpeningHoursError(f"cannot read time range '{chunk}' (expected HH:MM-HH:MM)")
        h1, m1, h2, m2 = (int(g) for g in m.groups())
        if h1 > 24 or h2 > 24 or m1 > 59 or m2 > 59 or (h1 == 24 and m1) or (h2 == 24 and m2):
            raise OpeningHoursError(f"time out of range in '{chunk}'")
        s, e = h1 * 60 + m1, h2 * 60 + m2
        if e <= s:  # overnight: 19:00-02:00 closes at 02:00 the next day
            e += 1440
        out.append((s, e))
    return out


def parse_opening_hours(text: str | None) -> OpeningHours:
    """Read an opentime_week string.

    Understood forms (case-insensitive), segments separated by ';', later segments overriding
    earlier ones for the days they name (as OSM opening_hours does):
      `Monday-Sunday 10:00-22:00`, `Tuesday-Sunday 19:00-02:00` (past midnight),
      `Monday-Sunday 11:00-14:00,17:00-21:30` (split shifts), `Monday,Wednesday,Friday 08:00-12:00`,
      `Friday-Monday 10:00-18:00` (wrapping range), `Monday-Saturday 09:00-21:00; Sunday closed`,
      `Monday-Sunday 00:00-24:00`, `Open 24 hours`, `Daily 07:00-23:00`, `10:00-22:00` (every day),
      OSM day abbreviations (`Mo-Fr 08:00-20:00`), and trailing notes in parentheses, which are
      ignored. An empty or missing string means "not available" (`known=False`).
    """
    raw = text or ""
    s = _PAREN_RE.sub(" ", raw)
    s = s.replace("–", "-").replace("—", "-").replace("~", "-").replace("～", "-").replace("：", ":")
    s = s.replace("；", ";").strip()
    if not s:
        return OpeningHours(raw, False, ())
    if _ALWAYS_RE.match(s):
        return OpeningHours(raw, True, tuple((d * 1440, d * 1440 + 1440) for d in _ALL_DAYS))
    per_day: dict[int, list[tuple[int, int]]] = {}
    for seg in s.split(";"):
        seg = seg.strip()
        if not seg:
            continue
        m = re.search(r"\d|\b(closed|off|rest|open\s+24|24\s*hours)\b", seg, re.I)
        if not m:
            raise OpeningHoursError(f"no hours in segment '{seg}' of '{raw}'")
        days = _parse_days(seg[: m.start()])
        times = _parse_times(seg[m.start() :])
        for d in days:
            per_day[d] = list(times)
    intervals = sorted((d * 1440 + a, d * 1440 + b) for d, ts in per_day.items() for a, b in ts)
    return OpeningHours(raw, True, tuple(intervals))


def _to_weekday(weekday: int | str) -> int:
    if isinstance(weekday, bool):
        raise ValueError(f"weekday must be 0-6 (Monday=0) or a day name, got {weekday!r}")
    if isinstance(weekday, int):
        if not 0 <= weekday <= 6:
            raise ValueError(f"weekday must be 0-6 (Monday=0), got {weekday}")
        return weekday
    key = str(weekday).strip().lower()
    if key not in _DAY_INDEX:
        raise ValueError(f"unknown weekday {weekday!r}")
    return _DAY_INDEX[key]


def _to_minute(hhmm: str | int) -> int:
    if isinstance(hhmm, int) and not isinstance(hhmm, bool):
        if not 0 <= hhmm < 1440:
            raise ValueError(f"minute of day must be 0-1439, got {hhmm}")
        return hhmm
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", str(hhmm))
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError(f"time must be HH:MM between 00:00 and 23:59, got {hhmm!r}")
    return int(m.group(1)) * 60 + int(m.group(2))


def is_open(opentime_week: str | None, weekday: int | str, hhmm: str | int) -> bool:
    """Whether a place with these hours is open on `weekday` (0=Monday, or a day name) at `hhmm`.

    Unknown hours (empty string or None) count as not open: an agent cannot rely on them.
    Raises `OpeningHoursError` (a ValueError) for a string of no understood form."""
    return parse_opening_hours(opentime_week).is_open(_to_weekday(weekday), _to_minute(hhmm))


def closing_minute(opentime_week: str | None, weekday: int | str, hhmm: str | int) -> int | None:
    """Minute (from 00:00 of `weekday`; may exceed 1440 past midnight) at which the place closes,
    when it is open at `hhmm` on `weekday`; else None."""
    wd = _to_weekday(weekday)
    end = parse_opening_hours(opentime_week).closes_at(wd, _to_minute(hhmm))
    return None if end is None else end - wd * 1440
