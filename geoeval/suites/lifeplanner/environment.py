"""The LifePlanner city environment: one DuckDB file per city (section 3.1, Tables 9 and 10).

`build_synthetic_city` writes a seeded synthetic city: places in an AMap-like taxonomy with opening
hours, ratings, costs, structured tags, aliases and the hidden `long_mem` / `short_mem`; a road
network of nodes and ways (`gid`) with speeds per vehicle; and social-media notes with comments whose
place mentions are noisy and sometimes ambiguous. Same seed and parameters, same rows.

Tables (agent-visible columns are listed by `agent_visible_columns`; the rest is internal):

- `places`   id, name, place_type, address, opentime_week, rating, cost, tag, alias,
             long_mem, short_mem (hidden memory), lon, lat, x_m, y_m, node_id, access_m, popularity
- `nodes`    node_id, lon, lat, x_m, y_m
- `ways`     gid, name, highway, source, target, node_ids, length_m,
             speed_walking, speed_cycling, speed_driving (m/s; NULL: the vehicle may not use it)
- `notes`    note_id, title, desc, time, liked_count, collected_count, comment_count, share_count,
             tag_list, search_text (lower-cased title+desc+tags, the text index)
- `comments` comment_id, note_id, time, content, like_count
- `note_mentions` note_id, place_id, mention, mention_kind, role (ground truth: who a note is about;
                  role `subject` for the place the note reviews, `also` for places a crawl passes)
- `note_facts`    note_id, place_id, fact, source              (ground truth: what a note evidences)
- `meta`          key, value

`x_m`/`y_m` are metres in a local plane (the city's south-west corner is 0,0); lon/lat derive from
them, so distances computed on either agree.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

GENERATOR_VERSION = "lifeplanner-synthetic-1"

# --------------------------------------------------------------------------------------------
# Vehicles and road classes
# --------------------------------------------------------------------------------------------

VEHICLES = ("walking", "cycling", "driving")

# m/s per road class and vehicle; None: that vehicle may not use the way.
ROAD_SPEEDS: dict[str, dict[str, float | None]] = {
    "primary": {"walking": 1.4, "cycling": 4.2, "driving": 11.1},      # 40 km/h
    "secondary": {"walking": 1.4, "cycling": 4.2, "driving": 8.3},     # 30 km/h
    "residential": {"walking": 1.4, "cycling": 4.2, "driving": 5.6},   # 20 km/h
    "footway": {"walking": 1.4, "cycling": 2.8, "driving": None},      # pedestrian street
}
# Speed of the short leg between a place and its nearest road node (parking, walking in).
ACCESS_SPEED = {"walking": 1.4, "cycling": 2.8, "driving": 2.8}

# --------------------------------------------------------------------------------------------
# Access separation (Table 9 / Table 10)
# --------------------------------------------------------------------------------------------

MEMORY_FIELDS = ("long_mem", "short_mem")

_PLACE_DETAIL = ("id", "name", "place_type", "address", "opentime_week", "rating", "cost", "tag", "alias")
_NOTE_FULL = ("note_id", "title", "desc", "time", "liked_count", "collected_count", "comment_count",
              "share_count", "tag_list")
_COMMENT_FULL = ("comment_id", "time", "content", "like_count")

_AGENT_COLUMNS: dict[str, tuple[str, ...]] = {
    "places": _PLACE_DETAIL,
    "notes": _NOTE_FULL,
    "comments": _COMMENT_FULL,
    "ways": ("gid", "name"),  # seen only inside routing steps (steps[].way_ids, road_name)
}
_DATA_ENGINE_EXTRA: dict[str, tuple[str, ...]] = {"places": MEMORY_FIELDS}


def agent_visible_columns(table: str) -> tuple[str, ...]:
    """Columns of `table` that any tool of the standard agent toolset may return (Table 9/10).

    The memory fields, coordinates, graph internals and the ground-truth tables are never among
    them; a table with nothing visible returns ()."""
    return _AGENT_COLUMNS.get(table, ())


def data_engine_visible_columns(table: str) -> tuple[str, ...]:
    """Columns the data-engine toolset (Table 8) may return: the agent's plus the memory fields."""
    return _AGENT_COLUMNS.get(table, ()) + _DATA_ENGINE_EXTRA.get(table, ())


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
        times = _parse_times(seg[m.start():])
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


# --------------------------------------------------------------------------------------------
# Taxonomy and vocabulary of the synthetic city
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    place_type: str                      # AMap-like "Top|Sub"
    weight: float                        # share of places
    nouns: tuple[str, ...]               # name endings for independent places
    brands: tuple[str, ...]              # chain brands (their places are "Brand (District Branch)")
    cost: tuple[int, int] | None         # cost per person range, CNY; None: no cost
    hours: tuple[str, ...]               # opening-hours styles, see _hours_text
    tags: tuple[tuple[str, tuple[str, ...]], ...]
    audience: tuple[str, ...] = ()


_FOOD_HOURS = ("day", "day", "day", "split", "closed_monday", "late")
_SHOP_HOURS = ("day", "day", "weekday_weekend", "closed_sunday", "unknown")

CATEGORIES: tuple[Category, ...] = (
    Category("Food & Beverages|Coffee House", 9, ("Coffee", "Cafe", "Coffee Roasters", "Coffee Lab"),
             ("Lucky Bean Coffee", "Mocha Lane", "Ritual Brew"), (15, 45), ("day", "day", "late", "closed_monday"),
             (("Coffee", ("Espresso", "Pour-over", "Latte", "Cold brew", "Macchiato")),
              ("Food", ("Pasta", "Snacks", "Desserts", "Bagels")),
              ("Facility", ("WiFi", "Power outlets", "Reading sofa", "Bookshelves", "Outdoor seating", "Glass roof",
                            "Air conditioning")),
              ("Rule", ("No laptops at weekends", "Pet-friendly", "Quiet zone")))),
    Category("Food & Beverages|Tea House", 6, ("Tea", "Milk Tea", "Tea House"), ("GoodMe Tea", "Cha Yan", "Mixue Ice"),
             (8, 25), ("day", "late"),
             (("Drinks", ("Fruit tea", "Milk tea with mochi", "Cheese foam tea", "Lemon tea")),
              ("Facility", ("Takeaway only", "Seating", "Self-service ordering")),)),
    Category("Food & Beverages|Chinese Restaurant", 10, ("Restaurant", "Kitchen", "Dumplings", "Noodles", "Bistro"),
             ("Yuanji Dumplings", "Old Town Noodles"), (20, 120), _FOOD_HOURS,
             (("Cuisine", ("Hubei", "Sichuan", "Cantonese", "Hunan", "Dim sum")),
              ("Dish", ("Hot dry noodles", "Duck neck", "Steamed fish", "Spicy crayfish", "Lotus root soup")),
              ("Facility", ("Private rooms", "Large tables", "Parking", "Baby chairs")),
              ("Service", ("Reservation", "Delivery", "Group buy")))),
    Category("Food & Beverages|Fast Food Restaurant", 5, ("Burger", "Fried Chicken", "Fast Food"),
             ("Wallace Burger", "Tasty Crispy"), (15, 40), ("day", "late", "always"),
             (("Food", ("Burgers", "Fried chicken", "Fries", "Wraps")), ("Facility", ("Self-service kiosk", "Kids area")))),
    Category("Food & Beverages|Hot Pot Restaurant", 4, ("Hot Pot", "Hotpot House"), ("Bashu Hotpot",), (60, 160),
             ("late", "day"),
             (("Broth", ("Spicy beef tallow", "Tomato", "Mushroom", "Dual broth")),
              ("Service", ("Free snacks while waiting", "Birthday song", "Reservation")),)),
    Category("Food & Beverages|Bakery", 4, ("Bakery", "Bread", "Cake Studio"), ("GANSO Bakery", "Bread Talk"), (10, 50),
             ("day", "closed_monday"),
             (("Food", ("Meat floss cake", "Croissants", "Cheesecake", "Egg tarts", "Peach crisp")),
              ("Service", ("Custom cakes", "Delivery")),)),
    Category("Food & Beverages|Dessert House", 3, ("Sweets", "Dessert", "Grass Jelly"), ("Minsheng Sweet",), (12, 40),
             ("day", "late"),
             (("Food", ("Grass jelly", "Mango pomelo sago", "Tangyuan", "Shaved ice")),)),
    Category("Food & Beverages|Barbecue Restaurant", 4, ("BBQ", "Yakiniku", "Skewers"), ("Songbencang Yakiniku",),
             (50, 150), ("late", "split"),
             (("Food", ("Beef skewers", "Grilled oysters", "Lamb chops", "Wagyu")),
              ("Facility", ("Outdoor seating", "Private rooms", "Smoke extraction")),)),
    Category("Food & Beverages|Pet Cafe", 1.5, ("Pet Cafe", "Cat Cafe", "Dog Cafe"), (), (40, 90),
             ("day", "closed_monday"),
             (("Pet", ("Corgi", "Shiba Inu", "Ragdoll cat", "Golden retriever", "British shorthair")),
              ("Rule", ("Reservation required", "Socks required", "No flash photography")),)),
    Category("Shopping|Convenience Store", 5, ("Convenience Store", "Mart"), ("Keduo Convenience", "Family Mart+"),
             (5, 20), ("always", "late", "day"),
             (("Service", ("Free umbrella borrowing", "Hot food", "Parcel pickup", "Power bank rental", "ATM")),)),
    Category("Shopping|Supermarket", 3, ("Supermarket", "Fresh Market"), ("Ziqiang Supermarket", "Zhongbai Mart"),
             (20, 80), ("day", "weekday_weekend"),
             (("Goods", ("Daily essentials", "Fresh produce", "Imported snacks", "Household goods")),
              ("Facility", ("Parking", "Self-checkout")),)),
    Category("Shopping|Bookstore", 2, ("Books", "Bookstore", "Reading Room"), ("Youhe Bookstore",), (30, 80),
             ("day", "late"),
             (("Facility", ("Reading area", "Cafe corner", "Study desks", "Power outlets")),
              ("Goods", ("Art books", "Second-hand books", "Stationery")),)),
    Category("Shopping|Florist", 1.5, ("Florist", "Flowers"), ("Yunsheng Florist",), (50, 200), ("day",),
             (("Goods", ("Roses", "Sunflowers", "Dried flowers", "Potted plants")), ("Service", ("Same-day delivery",)))),
    Category("Shopping|Optical Shop", 1, ("Optical", "Eyewear"), ("Boyi Optical",), (200, 1200), _SHOP_HOURS,
             (("Brand", ("Zeiss authorized", "Essilor", "Ray-Ban")), ("Service", ("Free eye test", "Lens authenticity check")))),
    Category("Shopping|Brand Bags and Suitcases Store", 1, ("Leather", "Bags"), ("COACH", "Samsonite"), None, ("day",),
             (("Category", ("Luxury bags", "Suitcases", "Wallets")), ("Facility", ("Mall parking",)))),
    Category("Sports & Recreation|Pub", 2.5, ("Bar", "Pub", "Homebar"), ("Sanqi Homebar",), (60, 180),
             ("night", "night", "closed_monday_night"),
             (("Drinks", ("Cocktails", "Craft beer", "Whisky")),
              ("Service", ("Karaoke", "Board games", "Live music")),
              ("Facility", ("Private rooms", "Terrace", "Smoking area")),
              ("Rule", ("Women-friendly", "Reservation required")))),
    Category("Sports & Recreation|KTV", 1.5, ("KTV", "Karaoke"), ("Melody KTV",), (60, 150), ("night", "late"),
             (("Facility", ("Private rooms", "Free fruit platter", "Party room")),)),
    Category("Sports & Recreation|Gym", 2, ("Fitness", "Gym", "Yoga Studio"), ("Supermonkey Gym",), (30, 100),
             ("weekday_weekend", "day"),
             (("Facility", ("Showers", "Lockers", "Swimming pool", "Climbing wall")), ("Service", ("Trial class", "Day pass")))),
    Category("Scenery Spot|Park", 2, ("Park", "Garden", "Lake Park"), (), None, ("always", "park"),
             (("Facility", ("Fountain", "Playground", "Lakeside trail", "Public toilets")),
              ("Scenery", ("Cherry blossoms", "Lotus pond", "Lake sunset", "Forest trail")))),
    Category("Scenery Spot|Tourist Attraction", 1.5, ("Trestle", "Gate", "Tower", "Lake"), (), (0, 60),
             ("always", "park", "day"),
             (("Scenery", ("Lake sunset", "City skyline", "Historic gate", "Walk above the lake")),
              ("Facility", ("Shuttle bus stop", "Viewing platform")))),
    Category("Accommodation Service|Business Hotel", 3, ("Hotel", "Business Hotel", "Inn"),
             ("Ruian Hotel", "Jinjiang Inn"), (180, 500), ("always",),
             (("Facility", ("Luggage storage", "Gym", "Laundry", "Parking")), ("Service", ("Airport shuttle", "Breakfast")))),
    Category("Accommodation Service|Hostel", 1, ("Hostel", "Youth Hostel"), (), (60, 150), ("always",),
             (("Facility", ("Shared kitchen", "Luggage storage", "Common room")),)),
    Category("Science/Culture & Education Service|Museum", 1, ("Museum", "Gallery", "Art Museum"), (), (0, 80),
             ("museum",),
             (("Exhibit", ("Natural history", "Modern art", "Dinosaur fossils", "Local history")),
              ("Service", ("Free audio guide", "Kids workshop")))),
    Category("Science/Culture & Education Service|Library", 1, ("Library",), (), None, ("weekday_weekend", "museum"),
             (("Facility", ("Study desks", "Power outlets", "Air conditioning")),)),
    Category("Medical Service|Pharmacy", 2.5, ("Pharmacy", "Drugstore"), ("Laobaixing Pharmacy",), None,
             ("day", "always"),
             (("Service", ("24h window", "Medical insurance accepted", "Blood pressure check")),)),
    Category("Medical Service|Hospital", 0.7, ("Hospital", "Clinic"), (), None, ("always", "weekday_weekend"),
             (("Department", ("Emergency", "Pediatrics", "Dental", "Ophthalmology")),)),
    Category("Life Service|Hair Salon", 2.5, ("Hair Salon", "Barber"), (), (30, 200), ("day", "closed_tuesday"),
             (("Service", ("Haircut", "Perm", "Hair coloring", "Scalp care")),)),
    Category("Life Service|Laundry", 1, ("Laundry", "Dry Cleaning"), (), (10, 50), ("day", "weekday_weekend"),
             (("Service", ("Self-service washers", "Dry cleaning", "Shoe cleaning")),)),
    Category("Auto Service|Dedicated Charging Station", 1, ("Charging Station", "EV Charging"), ("StarCharge",), None,
             ("always",), (("Facility", ("Fast chargers", "Free parking 2h")),)),
    Category("Enterprises|Company", 5, ("Technology Co., Ltd.", "Tech", "Design Studio", "Space"), (), None,
             ("weekday", "unknown"), (("Facility", ("Visitor registration", "Parking")),)),
    Category("Residential Area|Residential Community", 3, ("Garden", "Residence", "Community", "Apartments"), (), None,
             ("unknown",), (("Facility", ("Gated", "Parcel lockers")),)),
    Category("Science/Culture & Education Service|University", 0.5, ("University", "College"), (), None,
             ("always",), (("Facility", ("Campus gate", "Library", "Canteen")),)),
)

# Each category has a memory profile: which distilled impressions make sense for it.
PROFILE_OF: dict[str, str] = {
    "Food & Beverages|Coffee House": "cafe", "Food & Beverages|Tea House": "cafe",
    "Food & Beverages|Dessert House": "cafe", "Food & Beverages|Bakery": "cafe", "Food & Beverages|Pet Cafe": "cafe",
    "Shopping|Bookstore": "cafe", "Food & Beverages|Chinese Restaurant": "food",
    "Food & Beverages|Fast Food Restaurant": "food", "Food & Beverages|Hot Pot Restaurant": "food",
    "Food & Beverages|Barbecue Restaurant": "food", "Sports & Recreation|Pub": "night", "Sports & Recreation|KTV": "night",
    "Sports & Recreation|Gym": "leisure", "Science/Culture & Education Service|Museum": "leisure",
    "Science/Culture & Education Service|Library": "leisure",
    "Science/Culture & Education Service|University": "leisure", "Scenery Spot|Park": "scenery",
    "Scenery Spot|Tourist Attraction": "scenery", "Accommodation Service|Business Hotel": "stay",
    "Accommodation Service|Hostel": "stay", "Enterprises|Company": "plain",
    "Residential Area|Residential Community": "plain", "Medical Service|Hospital": "plain",
}  # every other category: "shop"
_ANY = "cafe food night leisure scenery stay shop"

# Long memory: what posts say about a place over time (attribute distillation, section 3.1), as
# (key, ((value, profiles), ...)). Values are written so that the note sentences read naturally.
LONG_MEM_VOCAB: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Atmosphere", (("quiet", "cafe leisure stay scenery"), ("cozy", "cafe food night stay"),
                    ("lively", "food night scenery"), ("noisy at weekends", "food cafe night scenery"),
                    ("good for studying", "cafe leisure"), ("romantic", "food night scenery"),
                    ("family-friendly", "food scenery leisure shop"), ("well-lit", "cafe shop leisure"),
                    ("soothing music", "cafe night"), ("cute pink decor", "cafe food"),
                    ("often full", "cafe food night"))),
    ("Scenery", (("lake view", "cafe food scenery stay"), ("rooftop view", "cafe night stay"),
                 ("no real view", "cafe food shop"), ("cherry blossoms in spring", "scenery"),
                 ("sunset over the lake", "scenery cafe"), ("street view", "cafe food"))),
    ("Service", (("welcoming", _ANY + " plain"), ("slow at peak hours", "food cafe shop"),
                 ("professional", "shop leisure stay plain"), ("attentive", "food night stay"),
                 ("patient", "shop leisure"), ("rude at the cashier", "shop food"))),
    ("Positive", (("great latte art", "cafe"), ("affordable", _ANY), ("generous portions", "food"),
                  ("clean toilets", _ANY), ("fast wifi", "cafe stay"), ("fresh ingredients", "food"),
                  ("well-kept trails", "scenery"), ("great cocktails", "night"), ("wide selection", "shop"))),
    ("Negative", (("limited seating", "cafe food"), ("long queues", "food cafe shop scenery"),
                  ("mediocre desserts", "cafe food"), ("mosquitoes in summer", "scenery cafe food"),
                  ("hard to find entrance", _ANY + " plain"), ("pricey drinks", "cafe night"),
                  ("crowded at weekends", "scenery shop leisure"))),
)
SHORT_MEM_VOCAB: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Event", (("Christmas promo (Dec 24-25)", _ANY), ("free fries for social media check-in", "food"),
               ("live music on Friday nights", "night cafe"), ("20% off for students this week", _ANY),
               ("Valentine's Day limited edition menu", "food cafe night"), ("German Corner on Sundays", "cafe"))),
    ("Crowd", (("extremely crowded during cherry blossom season", "scenery"), ("queues after 18:00", "food"),
               ("empty on weekday mornings", _ANY))),
    ("Special Hours", (("closed for renovation until next month", _ANY + " plain"),
                       ("open until 23:00 during the holidays", _ANY), ("opens late on Mondays", _ANY))),
    ("New Arrival", (("new seasonal menu", "food cafe"), ("new matcha series", "cafe"),
                     ("new reading corner", "cafe leisure"), ("new arrivals this week", "shop"))),
)


def _vocab_for(vocab: tuple[tuple[str, tuple[tuple[str, str], ...]], ...], profile: str) -> list[tuple[str, list[str]]]:
    out = []
    for key, entries in vocab:
        vals = [v for v, profiles in entries if profile in profiles.split()]
        if vals:
            out.append((key, vals))
    return out


_LONG_SENTENCES = {
    "Atmosphere": ("The atmosphere is {v}.", "Honestly the vibe is {v}.", "It felt {v} when I went."),
    "Scenery": ("Scenery: {v}.", "As for the view: {v}.", "View-wise, {v}."),
    "Service": ("Staff were {v}.", "Service is {v}.", "The staff were {v}, as usual."),
    "Positive": ("Highlight: {v}.", "What I loved: {v}.", "Plus side, {v}."),
    "Negative": ("Downside: {v}.", "Only complaint: {v}.", "Be warned: {v}."),
}
_SHORT_SENTENCES = {
    "Event": ("Heads up: {v}!", "They currently have this: {v}."),
    "Crowd": ("Note: {v}.", "FYI {v}."),
    "Special Hours": ("Update: {v}.", "Careful, {v}."),
    "New Arrival": ("Just tried the {v}.", "They launched a {v}."),
}
_TAG_SENTENCES = ("They have {v}.", "Good to know: {v}.", "Loved the {v}.", "{v} available, nice.")

SYLLABLES = ("Luo", "Jia", "Hong", "Bo", "Yuan", "Ji", "Tang", "Shan", "Guang", "Bu", "Dong", "Hu", "Zhong", "Nan",
             "Bao", "Feng", "Xu", "Shui", "Guo", "Chu", "He", "Lu", "Xiang", "Guan", "Li", "Wu", "Ling", "Qiao", "Mei",
             "Yun", "Sheng", "Kai", "Wen", "Hua", "Xin", "Ming", "Tai", "Ping", "An", "Le", "Jin", "Yu", "Song", "Ying",
             "Zhuo", "Quan", "Fu", "Shi", "Da", "Ke")
DISTRICT_NAMES = ("Jiedaokou", "Guangbutun", "Luojiashan", "Donghu", "Hongshan", "Zhongnan", "Baofeng", "Xudong",
                  "Shuiguohu", "Chuhe", "Luxiang", "Guanshan", "Zhuodaoquan", "Liyuan", "Tangjiadun", "Wujiashan")
_FOOTWAY_NAMES = ("Hubu Alley", "Tanhualin", "Lingbo Walkway", "Yuemachang Lane", "Pedestrian Street", "Garden Path")
_FILLER = ("Went with my roommate after class.", "Parking was a pain.", "Weather was great today.",
           "Will come back for sure.", "Not sponsored, just sharing.", "Took the metro, easy to reach.",
           "Saving this for later.", "Photos don't do it justice.", "Came here on a rainy afternoon.",
           "My friends from out of town loved it.")
_HOOKS = ("hidden gem", "worth the hype?", "my weekend spot", "honest review", "first visit", "again and again",
          "budget pick", "not what I expected", "perfect for a date", "study day")
_GENERAL_TITLES = ("Weekend citywalk diary", "Rainy day in {d}", "Where to eat around {d}?", "Moving to {d}: tips",
                   "Cherry blossom season is here", "Night run by the lake")
_COMMENT_NOISE = ("Bookmarked!", "lol same", "Great photos", "Where is this exactly?", "Going this weekend",
                  "Is it open on Mondays?", "How much per person?", "Thanks for sharing", "Too crowded for me",
                  "Need to try this", "Is parking available?", "The photos look edited")
_COMMENT_FACT = ("Agree, {s}", "Can confirm. {s}", "Went yesterday. {s}", "{s} (at least last time)")
_HASHTAGS = ("citywalk", "foodie", "weekend", "study spot", "date night", "budget", "photo spot", "local life",
             "student life", "family time")


# --------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE nodes (node_id INTEGER PRIMARY KEY, lon DOUBLE, lat DOUBLE, x_m DOUBLE, y_m DOUBLE);
CREATE TABLE ways (gid INTEGER PRIMARY KEY, name VARCHAR, highway VARCHAR, source INTEGER, target INTEGER,
    node_ids INTEGER[], length_m DOUBLE, speed_walking DOUBLE, speed_cycling DOUBLE, speed_driving DOUBLE);
CREATE TABLE places (id VARCHAR PRIMARY KEY, name VARCHAR, place_type VARCHAR, address VARCHAR,
    opentime_week VARCHAR, rating DOUBLE, cost DOUBLE, tag VARCHAR, alias VARCHAR, long_mem VARCHAR,
    short_mem VARCHAR, lon DOUBLE, lat DOUBLE, x_m DOUBLE, y_m DOUBLE, node_id INTEGER, access_m DOUBLE,
    popularity DOUBLE);
CREATE TABLE notes (note_id VARCHAR PRIMARY KEY, title VARCHAR, "desc" VARCHAR, time TIMESTAMP,
    liked_count INTEGER, collected_count INTEGER, comment_count INTEGER, share_count INTEGER,
    tag_list VARCHAR, search_text VARCHAR);
CREATE TABLE comments (comment_id VARCHAR PRIMARY KEY, note_id VARCHAR, time TIMESTAMP, content VARCHAR,
    like_count INTEGER);
CREATE TABLE note_mentions (note_id VARCHAR, place_id VARCHAR, mention VARCHAR, mention_kind VARCHAR,
    role VARCHAR);
CREATE TABLE note_facts (note_id VARCHAR, place_id VARCHAR, fact VARCHAR, source VARCHAR);
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
"""


@dataclass(frozen=True)
class CityInfo:
    """What `build_synthetic_city` built (also readable back with `read_city_info`)."""

    path: str
    seed: int
    n_places: int
    n_notes: int
    n_comments: int
    n_nodes: int
    n_ways: int
    area_km2: float
    center_lon: float
    center_lat: float
    generator: str = GENERATOR_VERSION


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

_M_PER_DEG_LAT = 110_540.0


def _m_per_deg_lon(lat: float) -> float:
    return 111_320.0 * math.cos(math.radians(lat))


def _word(rng: np.random.Generator, n_syll: int = 2) -> str:
    idx = rng.integers(0, len(SYLLABLES), n_syll)
    w = "".join(SYLLABLES[i] for i in idx)
    return w[0].upper() + w[1:].lower()


def _unique_words(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        w = _word(rng)
        if w not in taken:
            taken.add(w)
            out.append(w)
    return out


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.p = list(range(n))

    def find(self, a: int) -> int:
        while self.p[a] != a:
            self.p[a] = self.p[self.p[a]]
            a = self.p[a]
        return a

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.p[max(ra, rb)] = min(ra, rb)
        return True


def _build_roads(rng: np.random.Generator, side_m: float, spacing_m: float) -> dict[str, Any]:
    """A perturbed street grid: every row and column is a named road; every 6th is a primary avenue,
    every 3rd a secondary road; a few residential segments are missing or pedestrian-only. All
    nodes stay connected for every vehicle."""
    n = max(3, int(round(side_m / spacing_m)) + 1)
    step = side_m / (n - 1)
    jj, ii = np.meshgrid(np.arange(n), np.arange(n))
    jitter = rng.uniform(-0.15 * step, 0.15 * step, size=(2, n, n))
    x = (jj * step + jitter[0]).ravel()
    y = (ii * step + jitter[1]).ravel()
    x = np.clip(x, 0.0, side_m)
    y = np.clip(y, 0.0, side_m)

    taken: set[str] = set()
    names = _unique_words(rng, 2 * n, taken)
    row_class = ["primary" if i % 6 == 0 else "secondary" if i % 3 == 0 else "residential" for i in range(n)]
    suffix = {"primary": "Avenue", "secondary": "Road", "residential": "Street"}
    row_names = [f"{names[i]} {suffix[row_class[i]]}" for i in range(n)]
    col_names = [f"{names[n + j]} {suffix[row_class[j]] if row_class[j] != 'residential' else 'Lane'}"
                 for j in range(n)]

    # candidate edges, rows then columns, in a fixed order
    src, dst, road, cls = [], [], [], []
    for i in range(n):
        for j in range(n - 1):
            src.append(i * n + j); dst.append(i * n + j + 1); road.append(row_names[i]); cls.append(row_class[i])
    for j in range(n):
        for i in range(n - 1):
            src.append(i * n + j); dst.append((i + 1) * n + j); road.append(col_names[j]); cls.append(row_class[j])
    m = len(src)
    u = rng.random(m)
    residential = np.array([c == "residential" for c in cls])
    removed = residential & (u < 0.04)
    footway = residential & (u >= 0.04) & (u < 0.09)
    footway_pick = rng.integers(0, len(_FOOTWAY_NAMES), m)

    # keep the walking graph connected: re-add removed edges that join components
    uf = _UnionFind(n * n)
    for e in range(m):
        if not removed[e]:
            uf.union(src[e], dst[e])
    for e in range(m):
        if removed[e] and uf.union(src[e], dst[e]):
            removed[e] = False
    # keep the driving graph connected: turn pedestrian segments back into streets where needed
    ufd = _UnionFind(n * n)
    for e in range(m):
        if not removed[e] and not footway[e]:
            ufd.union(src[e], dst[e])
    for e in range(m):
        if footway[e] and ufd.union(src[e], dst[e]):
            footway[e] = False

    keep = np.flatnonzero(~removed)
    ways = []
    for gid, e in enumerate(keep, start=1):
        a, b = src[e], dst[e]
        hw = "footway" if footway[e] else cls[e]
        name = _FOOTWAY_NAMES[footway_pick[e]] if footway[e] else road[e]
        length = float(math.hypot(x[a] - x[b], y[a] - y[b]))
        sp = ROAD_SPEEDS[hw]
        ways.append((gid, name, hw, a, b, [a, b], round(length, 1), sp["walking"], sp["cycling"], sp["driving"]))
    return {"n": n, "x": x, "y": y, "ways": ways, "row_names": row_names, "col_names": col_names}


def _hours_text(style: str, rng: np.random.Generator) -> str:
    o = int(rng.choice([7, 8, 9, 10, 10, 11]))
    c = int(rng.choice([20, 21, 21, 22, 22, 23]))
    half = ":30" if rng.random() < 0.25 else ":00"
    if style == "day":
        return f"Monday-Sunday {o:02d}:00-{c:02d}{half}"
    if style == "split":
        return f"Monday-Sunday 11:00-14:00,17:00-{c:02d}{half}"
    if style == "closed_monday":
        return f"Tuesday-Sunday {o:02d}:00-{c:02d}{half}"
    if style == "closed_tuesday":
        return f"Monday-Sunday {o:02d}:00-{c:02d}:00; Tuesday closed"
    if style == "closed_sunday":
        return f"Monday-Saturday {o:02d}:00-{c:02d}:00; Sunday closed"
    if style == "late":
        return f"Monday-Sunday {o:02d}:00-{int(rng.choice([0, 1, 2])):02d}:{'30' if rng.random() < 0.5 else '00'}"
    if style == "night":
        return f"Monday-Sunday {int(rng.choice([18, 19, 20])):02d}:00-02:00"
    if style == "closed_monday_night":
        return "Tuesday-Sunday 19:00-02:00"
    if style == "weekday_weekend":
        return f"Monday-Friday {o:02d}:00-{c:02d}:00; Saturday-Sunday {min(o + 1, 11):02d}:00-{c - 1:02d}:00"
    if style == "weekday":
        return "Monday-Friday 09:00-18:00 (closed on public holidays)"
    if style == "always":
        return "Monday-Sunday 00:00-24:00" if rng.random() < 0.7 else "Open 24 hours"
    if style == "park":
        return "Monday-Sunday 06:00-22:00"
    if style == "museum":
        return "Tuesday-Sunday 09:00-17:00 (last entry 16:30)"
    if style == "unknown":
        return ""
    raise ValueError(f"unknown hours style {style}")


def _place_id(rng: np.random.Generator, taken: set[str]) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    while True:
        pid = "B0" + "".join(alphabet[i] for i in rng.integers(0, 36, 8))
        if pid not in taken:
            taken.add(pid)
            return pid


def _format_tags(groups: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups)


def _typo(word: str, rng: np.random.Generator) -> str:
    if len(word) < 4:
        return word.lower()
    k = int(rng.integers(1, len(word) - 1))
    if rng.random() < 0.5:
        return word[:k] + word[k + 1:]  # a dropped letter
    return word[:k - 1] + word[k] + word[k - 1] + word[k + 1:]  # swapped letters


def _build_places(rng: np.random.Generator, n_places: int, side_m: float, roads: dict[str, Any],
                  districts: list[tuple[str, float, float]]) -> list[dict[str, Any]]:
    weights = np.array([c.weight for c in CATEGORIES], dtype=float)
    cat_idx = rng.choice(len(CATEGORIES), size=n_places, p=weights / weights.sum())
    # positions: half around district centres (commercial clusters), half uniform
    centres = np.array([(dx, dy) for _, dx, dy in districts])
    which = rng.integers(0, len(districts), n_places)
    clustered = rng.random(n_places) < 0.5
    spread = side_m / (2.5 * math.sqrt(len(districts)))
    px = np.where(clustered, centres[which, 0] + rng.normal(0, spread, n_places), rng.uniform(0, side_m, n_places))
    py = np.where(clustered, centres[which, 1] + rng.normal(0, spread, n_places), rng.uniform(0, side_m, n_places))
    px = np.clip(px, 0.0, side_m)
    py = np.clip(py, 0.0, side_m)
    # nearest road node and the district a place belongs to (vectorised in chunks)
    nx, ny = roads["x"], roads["y"]
    node_of = np.empty(n_places, dtype=np.int64)
    for s in range(0, n_places, 2048):
        d2 = (px[s:s + 2048, None] - nx[None, :]) ** 2 + (py[s:s + 2048, None] - ny[None, :]) ** 2
        node_of[s:s + 2048] = np.argmin(d2, axis=1)
    access = np.hypot(px - nx[node_of], py - ny[node_of])
    district_of = np.argmin((px[:, None] - centres[None, :, 0]) ** 2 + (py[:, None] - centres[None, :, 1]) ** 2, axis=1)
    popularity = rng.lognormal(0.0, 1.0, n_places)
    rating_raw = np.clip(rng.normal(4.1, 0.45, n_places), 1.0, 5.0)
    u_cost, u_alias, u_mem = rng.random(n_places), rng.random(n_places), rng.random(n_places)
    n_rows = roads["n"]

    used_names: set[str] = set()
    ids: set[str] = set()
    places = []
    for k in range(n_places):
        cat = CATEGORIES[cat_idx[k]]
        district = districts[district_of[k]][0]
        chain = bool(cat.brands) and rng.random() < 0.35
        if chain:
            brand = cat.brands[int(rng.integers(0, len(cat.brands)))]
            name = f"{brand} ({district} Branch)"
            n_try = 2
            while name in used_names:
                name = f"{brand} ({district} Branch No.{n_try})"
                n_try += 1
        else:
            brand = ""
            while True:
                name = f"{_word(rng)} {cat.nouns[int(rng.integers(0, len(cat.nouns)))]}"
                if name not in used_names:
                    break
        used_names.add(name)
        # alias: an older or shorter name; sometimes it collides with another place's words
        alias = ""
        if u_alias[k] < 0.3:
            alias = brand.split()[0] if brand else name.split()[0]
            if rng.random() < 0.5:
                alias = f"{alias} {district}"
        # tags: 1-3 groups of the category, 1-3 values each
        n_groups = int(rng.integers(1, min(3, len(cat.tags)) + 1))
        g_idx = sorted(rng.choice(len(cat.tags), size=n_groups, replace=False))
        groups = []
        for gi in g_idx:
            key, vals = cat.tags[gi]
            n_vals = int(rng.integers(1, min(3, len(vals)) + 1))
            groups.append((key, [vals[i] for i in sorted(rng.choice(len(vals), size=n_vals, replace=False))]))
        # memory distilled from posts (hidden from the evaluated agent)
        profile = PROFILE_OF.get(cat.place_type, "shop")
        p_mem = 0.25 if profile == "plain" else 0.6
        lm_groups = []
        for key, vals in _vocab_for(LONG_MEM_VOCAB, profile):
            if rng.random() < p_mem:
                n_vals = int(rng.integers(1, min(2, len(vals)) + 1))
                lm_groups.append((key, [vals[i] for i in sorted(rng.choice(len(vals), size=n_vals, replace=False))]))
        sm_groups = []
        short_vocab = _vocab_for(SHORT_MEM_VOCAB, profile)
        if short_vocab and u_mem[k] < (0.15 if profile == "plain" else 0.45):
            key, vals = short_vocab[int(rng.integers(0, len(short_vocab)))]
            sm_groups.append((key, [vals[int(rng.integers(0, len(vals)))]]))
        style = cat.hours[int(rng.integers(0, len(cat.hours)))]
        hours = _hours_text(style, rng)
        cost = None
        if cat.cost is not None and u_cost[k] < 0.93:
            lo, hi = cat.cost
            cost = float(int(rng.integers(lo, hi + 1)))
        rating = None if (cat.cost is None and rng.random() < 0.3) else round(float(rating_raw[k]), 1)
        node = int(node_of[k])
        i_row, j_col = divmod(node, n_rows)
        road = roads["row_names"][i_row] if rng.random() < 0.5 else roads["col_names"][j_col]
        address = f"No. {int(rng.integers(1, 300))} {road}"
        if rng.random() < 0.5:
            address += f" ({int(rng.integers(2, 9)) * 50}m from Metro {district} Station Exit {'ABCD'[int(rng.integers(0, 4))]})"
        places.append({
            "id": _place_id(rng, ids), "name": name, "place_type": cat.place_type, "address": address,
            "opentime_week": hours, "rating": rating, "cost": cost, "tag": _format_tags(groups), "alias": alias,
            "long_mem": _format_tags(lm_groups), "short_mem": _format_tags(sm_groups),
            "x_m": round(float(px[k]), 2), "y_m": round(float(py[k]), 2), "node_id": node,
            "access_m": round(float(access[k]), 1), "popularity": round(float(popularity[k]), 4),
            # generation-only fields (not stored)
            "_brand": brand, "_district": district, "_road": road, "_noun": cat.place_type.split("|")[1].lower(),
            "_tags": groups, "_long": lm_groups, "_short": sm_groups,
        })
    return places


def _mention(p: dict[str, Any], kind: str, rng: np.random.Generator) -> tuple[str, str]:
    """How a post names a place. Returns (text, kind actually used)."""
    if kind == "alias" and p["alias"]:
        return p["alias"], "alias"
    if kind == "brand" and p["_brand"]:
        return p["_brand"], "brand"  # ambiguous: every branch of the chain
    if kind == "typo":
        words = p["name"].split()
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        words[longest] = _typo(words[longest], rng)
        return " ".join(words), "typo"
    if kind == "partial":
        return p["name"].split()[0].lower(), "partial"
    if kind == "landmark":
        return f"the {p['place_type'].split('|')[1].lower()} on {p['_road']}", "landmark"
    return p["name"], "exact"


_MENTION_KINDS = ("exact", "alias", "brand", "partial", "typo", "landmark")
_MENTION_P = np.array([0.45, 0.10, 0.10, 0.15, 0.10, 0.10])


def _fact_sentence(fact: tuple[str, str, str], rng: np.random.Generator) -> str:
    source, key, value = fact
    if source == "long":
        t = _LONG_SENTENCES[key]
    elif source == "short":
        t = _SHORT_SENTENCES[key]
    else:
        t = _TAG_SENTENCES
    return t[int(rng.integers(0, len(t)))].format(v=value)


def _place_facts(p: dict[str, Any]) -> list[tuple[str, str, str]]:
    facts = [("long", k, v) for k, vs in p["_long"] for v in vs]
    facts += [("short", k, v) for k, vs in p["_short"] for v in vs]
    facts += [("tag", k, v) for k, vs in p["_tags"] for v in vs]
    return facts


def _note_ts(rng: np.random.Generator, n: int) -> np.ndarray:
    start = datetime(2023, 1, 1, tzinfo=timezone.utc).timestamp()
    end = datetime(2025, 10, 31, tzinfo=timezone.utc).timestamp()
    return rng.integers(int(start), int(end), n)


def _hex_ids(rng: np.random.Generator, ts: np.ndarray) -> list[str]:
    """RedNote-style 24-hex ids: 8 hex of the timestamp + 16 random hex; unique."""
    lo = rng.integers(0, 2**32, size=(len(ts), 2), dtype=np.uint64)
    ids = [f"{int(t):08x}{int(a):08x}{int(b):08x}" for t, (a, b) in zip(ts, lo)]
    seen: set[str] = set()
    for i, v in enumerate(ids):
        while v in seen:
            v = v[:8] + f"{int(rng.integers(0, 2**32)):08x}" + v[16:]
        seen.add(v)
        ids[i] = v
    return ids


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(int(ts), tz=timezone.utc).replace(tzinfo=None)


def _build_notes(rng: np.random.Generator, places: list[dict[str, Any]], n_notes: int,
                 comments_per_note: float, districts: list[tuple[str, float, float]]) -> dict[str, list]:
    n_places = len(places)
    # which place a note is about: popularity-weighted, at most `cap` notes per place (the paper
    # collects up to 20 per place); 5% of notes are general posts about no place.
    n_general = int(round(0.05 * n_notes))
    n_about = n_notes - n_general
    cap = max(20, math.ceil(1.5 * n_about / max(1, n_places)))
    pop = np.array([p["popularity"] for p in places])
    counts = rng.multinomial(n_about, pop / pop.sum()) if n_places else np.zeros(0, dtype=int)
    for _ in range(50):  # push overflow to places below the cap
        over = np.clip(counts - cap, 0, None)
        if over.sum() == 0:
            break
        counts -= over
        room = np.clip(cap - counts, 0, None).astype(float)
        counts += rng.multinomial(int(over.sum()), room / room.sum())
    about = np.repeat(np.arange(n_places), counts)
    about = np.concatenate([about, -np.ones(n_general, dtype=np.int64)])
    rng.shuffle(about)

    ts = _note_ts(rng, n_notes)
    note_ids = _hex_ids(rng, ts)
    kinds = rng.choice(len(_MENTION_KINDS), size=n_notes, p=_MENTION_P)
    liked = np.floor(rng.lognormal(3.0, 1.4, n_notes)).astype(np.int64)
    n_comments = np.minimum(10, rng.poisson(comments_per_note, n_notes))
    crawl = rng.random(n_notes) < 0.08  # a food crawl: mentions 1-2 more places
    # nearest places to each place, for crawl notes (a multi-place post mentions neighbours)
    xy = np.array([(p["x_m"], p["y_m"]) for p in places]) if n_places else np.zeros((0, 2))

    notes: dict[str, list] = {k: [] for k in ("note_id", "title", "desc", "time", "liked_count", "collected_count",
                                              "comment_count", "share_count", "tag_list", "search_text")}
    mentions: dict[str, list] = {"note_id": [], "place_id": [], "mention": [], "mention_kind": [], "role": []}
    nfacts: dict[str, list] = {"note_id": [], "place_id": [], "fact": [], "source": []}
    comments: dict[str, list] = {"comment_id": [], "note_id": [], "time": [], "content": [], "like_count": []}
    comment_ts = []

    for k in range(n_notes):
        nid = note_ids[k]
        pk = int(about[k])
        tags = [_HASHTAGS[i] for i in rng.choice(len(_HASHTAGS), size=int(rng.integers(1, 3)), replace=False)]
        if pk < 0:  # a general post: districts and filler, no place
            d = districts[int(rng.integers(0, len(districts)))][0]
            title = _GENERAL_TITLES[int(rng.integers(0, len(_GENERAL_TITLES)))].format(d=d)
            body = [_FILLER[i] for i in rng.choice(len(_FILLER), size=3, replace=False)]
            tags.append(d)
            desc = " ".join(body)
        else:
            p = places[pk]
            text, kind = _mention(p, _MENTION_KINDS[int(kinds[k])], rng)
            mentions["note_id"].append(nid); mentions["place_id"].append(p["id"])
            mentions["mention"].append(text); mentions["mention_kind"].append(kind); mentions["role"].append("subject")
            hook = _HOOKS[int(rng.integers(0, len(_HOOKS)))]
            t_kind = int(rng.integers(0, 4))
            title = (f"{text} | {hook}", f"{hook.capitalize()} at {text}", f"{p['_district']} finds: {text}",
                     hook.capitalize())[t_kind]
            facts = _place_facts(p)
            chosen = [facts[i] for i in rng.choice(len(facts), size=min(len(facts), int(rng.integers(1, 4))),
                                                   replace=False)] if facts else []
            body = [f"Finally visited {text}." if t_kind == 3 else f"Some notes on {text}."]
            body += [_fact_sentence(f, rng) for f in chosen]
            body.append(_FILLER[int(rng.integers(0, len(_FILLER)))])
            if crawl[k] and n_places > 1:
                d2 = (xy[:, 0] - xy[pk, 0]) ** 2 + (xy[:, 1] - xy[pk, 1]) ** 2
                near = [int(i) for i in np.argsort(d2, kind="stable")[1:6]]
                for j in near[: int(rng.integers(1, 3))]:
                    q = places[j]
                    qtext, qkind = _mention(q, _MENTION_KINDS[int(rng.choice(len(_MENTION_KINDS), p=_MENTION_P))], rng)
                    body.append(f"Then walked over to {qtext}.")
                    mentions["note_id"].append(nid); mentions["place_id"].append(q["id"])
                    mentions["mention"].append(qtext); mentions["mention_kind"].append(qkind)
                    mentions["role"].append("also")
            for f in chosen:
                nfacts["note_id"].append(nid); nfacts["place_id"].append(p["id"])
                nfacts["fact"].append(f"{f[0]}:{f[1]}:{f[2]}"); nfacts["source"].append("desc")
            tags.append(p["_noun"])
            tags.append(p["_district"])
            desc = " ".join(body)
        # comments: noise, questions, and sometimes another fact about the same place
        nc = int(n_comments[k])
        c_ts = ts[k] + rng.exponential(3 * 86400, nc).astype(np.int64) + 60
        c_like = np.floor(rng.lognormal(0.5, 1.2, nc)).astype(np.int64)
        for c in range(nc):
            if pk >= 0 and rng.random() < 0.3:
                p = places[pk]
                facts = _place_facts(p)
                f = facts[int(rng.integers(0, len(facts)))] if facts else None
                if f is not None:
                    content = _COMMENT_FACT[int(rng.integers(0, len(_COMMENT_FACT)))].format(s=_fact_sentence(f, rng))
                    nfacts["note_id"].append(nid); nfacts["place_id"].append(p["id"])
                    nfacts["fact"].append(f"{f[0]}:{f[1]}:{f[2]}"); nfacts["source"].append("comment")
                else:
                    content = _COMMENT_NOISE[int(rng.integers(0, len(_COMMENT_NOISE)))]
            else:
                content = _COMMENT_NOISE[int(rng.integers(0, len(_COMMENT_NOISE)))]
            comments["note_id"].append(nid); comments["content"].append(content)
            comments["like_count"].append(int(c_like[c])); comment_ts.append(int(c_ts[c]))
        tag_list = ",".join(dict.fromkeys(tags))
        lk = int(liked[k])
        notes["note_id"].append(nid); notes["title"].append(title); notes["desc"].append(desc)
        notes["time"].append(_utc(int(ts[k]))); notes["liked_count"].append(lk)
        notes["collected_count"].append(int(lk * rng.uniform(0.2, 1.0)))
        notes["comment_count"].append(nc + int(rng.poisson(lk * 0.02)))
        notes["share_count"].append(int(lk * rng.uniform(0.0, 0.15)))
        notes["tag_list"].append(tag_list)
        notes["search_text"].append(f"{title} {desc} {tag_list}".lower())

    cts = np.array(comment_ts, dtype=np.int64)
    comments["comment_id"] = _hex_ids(rng, cts)
    comments["time"] = [_utc(int(t)) for t in cts]
    return {"notes": notes, "mentions": mentions, "facts": nfacts, "comments": comments}


def _arrow(columns: dict[str, list], schema: list[tuple[str, pa.DataType]]) -> pa.Table:
    return pa.table({name: pa.array(columns[name], type=t) for name, t in schema})


def build_synthetic_city(path: str | Path, *, seed: int, n_places: int, n_notes: int, area_km2: float = 10.0,
                         comments_per_note: float = 4.0, road_spacing_m: float = 120.0,
                         center: tuple[float, float] = (114.36, 30.53)) -> CityInfo:
    """Build a seeded synthetic city into one DuckDB file at `path` (replaced if it exists).

    Paper scale (section 3.1): `n_places=3600, n_notes=40000` with the default 4 comments per note
    gives about 200,000 notes plus comments over 10 km². The file is written to a temporary name
    and renamed, so a reader never sees a half-built city."""
    if n_places < 2:
        raise ValueError("n_places must be at least 2")
    if n_notes < 0 or area_km2 <= 0 or comments_per_note < 0 or road_spacing_m <= 0:
        raise ValueError("n_notes, comments_per_note must be >= 0; area_km2 and road_spacing_m > 0")
    path = Path(path)
    rng = np.random.default_rng(seed)
    side = math.sqrt(area_km2) * 1000.0
    lon0, lat0 = center
    mlon = _m_per_deg_lon(lat0)
    # the city's south-west corner sits so that `center` is its middle
    lon_sw, lat_sw = lon0 - side / 2 / mlon, lat0 - side / 2 / _M_PER_DEG_LAT

    roads = _build_roads(rng, side, road_spacing_m)
    k = max(2, int(round(math.sqrt(area_km2))))
    names = list(DISTRICT_NAMES) + [f"District {i}" for i in range(len(DISTRICT_NAMES), k * k)]
    districts = [(names[i * k + j], (j + 0.5) * side / k, (i + 0.5) * side / k) for i in range(k) for j in range(k)]
    places = _build_places(rng, n_places, side, roads, districts)
    social = _build_notes(rng, places, n_notes, comments_per_note, districts)

    def lon(xm: Any) -> Any:
        return np.round(lon_sw + np.asarray(xm) / mlon, 7)

    def lat(ym: Any) -> Any:
        return np.round(lat_sw + np.asarray(ym) / _M_PER_DEG_LAT, 7)

    x, y = roads["x"], roads["y"]
    nodes = {"node_id": list(range(len(x))), "lon": lon(x).tolist(), "lat": lat(y).tolist(),
             "x_m": np.round(x, 2).tolist(), "y_m": np.round(y, 2).tolist()}
    ways_cols = list(zip(*roads["ways"]))
    ways = dict(zip(("gid", "name", "highway", "source", "target", "node_ids", "length_m", "speed_walking",
                     "speed_cycling", "speed_driving"), (list(c) for c in ways_cols)))
    pcols = ("id", "name", "place_type", "address", "opentime_week", "rating", "cost", "tag", "alias", "long_mem",
             "short_mem", "x_m", "y_m", "node_id", "access_m", "popularity")
    pl = {c: [p[c] for p in places] for c in pcols}
    pl["lon"] = lon(pl["x_m"]).tolist()
    pl["lat"] = lat(pl["y_m"]).tolist()

    S, I, D, T = pa.string(), pa.int32(), pa.float64(), pa.timestamp("s")
    tables = {
        "nodes": _arrow(nodes, [("node_id", I), ("lon", D), ("lat", D), ("x_m", D), ("y_m", D)]),
        "ways": _arrow(ways, [("gid", I), ("name", S), ("highway", S), ("source", I), ("target", I),
                              ("node_ids", pa.list_(I)), ("length_m", D), ("speed_walking", D),
                              ("speed_cycling", D), ("speed_driving", D)]),
        "places": _arrow(pl, [("id", S), ("name", S), ("place_type", S), ("address", S), ("opentime_week", S),
                              ("rating", D), ("cost", D), ("tag", S), ("alias", S), ("long_mem", S),
                              ("short_mem", S), ("lon", D), ("lat", D), ("x_m", D), ("y_m", D), ("node_id", I),
                              ("access_m", D), ("popularity", D)]),
        "notes": _arrow(social["notes"], [("note_id", S), ("title", S), ("desc", S), ("time", T),
                                          ("liked_count", I), ("collected_count", I), ("comment_count", I),
                                          ("share_count", I), ("tag_list", S), ("search_text", S)]),
        "comments": _arrow(social["comments"], [("comment_id", S), ("note_id", S), ("time", T), ("content", S),
                                                ("like_count", I)]),
        "note_mentions": _arrow(social["mentions"], [("note_id", S), ("place_id", S), ("mention", S),
                                                     ("mention_kind", S), ("role", S)]),
        "note_facts": _arrow(social["facts"], [("note_id", S), ("place_id", S), ("fact", S), ("source", S)]),
    }
    info = CityInfo(path=str(path), seed=int(seed), n_places=n_places, n_notes=n_notes,
                    n_comments=len(social["comments"]["comment_id"]), n_nodes=len(x), n_ways=len(roads["ways"]),
                    area_km2=float(area_km2), center_lon=float(lon0), center_lat=float(lat0))
    meta = {"generator": GENERATOR_VERSION, "seed": str(seed), "n_places": str(n_places), "n_notes": str(n_notes),
            "n_comments": str(info.n_comments), "n_nodes": str(info.n_nodes), "n_ways": str(info.n_ways),
            "area_km2": repr(float(area_km2)), "comments_per_note": repr(float(comments_per_note)),
            "road_spacing_m": repr(float(road_spacing_m)), "center_lon": repr(float(lon0)),
            "center_lat": repr(float(lat0))}

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.execute(SCHEMA)
        for name, tbl in tables.items():
            con.register("_src", tbl)
            con.execute(f"INSERT INTO {name} SELECT * FROM _src")  # table names are constants above
            con.unregister("_src")
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(tmp, path)
    return info


def read_city_info(path: str | Path) -> CityInfo:
    """The `CityInfo` of a built city, from its meta table."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    return CityInfo(path=str(path), seed=int(meta["seed"]), n_places=int(meta["n_places"]),
                    n_notes=int(meta["n_notes"]), n_comments=int(meta["n_comments"]), n_nodes=int(meta["n_nodes"]),
                    n_ways=int(meta["n_ways"]), area_km2=float(meta["area_km2"]),
                    center_lon=float(meta["center_lon"]), center_lat=float(meta["center_lat"]),
                    generator=meta.get("generator", ""))
