"""Cases that mean what they say (issue 28): time-bound evidence holds at the visit, type nouns
cover what a reader takes them to cover, and the second pass, reading the final wording, finds no
other answer; each check is also shown to catch a hand-made case that breaks it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from geoeval.suites.lifeplanner.cases.case import Case
from geoeval.suites.lifeplanner.cases.city_index import CityIndex
from geoeval.suites.lifeplanner.cases.lexicon import (
    PREFERENCE_BY_KEY,
    TIME_BOUND,
    TYPE_NOUNS,
    type_borderline,
    type_reading,
)
from geoeval.suites.lifeplanner.cases.second_reading import TIME, UNIQUE, SecondReading
from geoeval.suites.lifeplanner.cases.visit_time import Visit, definitely_holds, may_hold, visit_for
from geoeval.suites.lifeplanner.city.opening_hours import DAYS
from geoeval.suites.lifeplanner.city.vocabulary import CATEGORIES, LONG_MEM_VOCAB, SHORT_MEM_VOCAB
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools.trip_timing import arrival_minutes, hhmm_to_minute

GERMAN = "short:Event:German Corner on Sundays"


@pytest.fixture(scope="module")
def reader(city_path):
    return SecondReading(CityIndex(str(city_path)))


def _vocabulary() -> set[str]:
    facts = {f"tag:{k}:{v}" for cat in CATEGORIES for k, vs in cat.tags for v in vs}
    facts |= {f"long:{k}:{v}" for k, entries in LONG_MEM_VOCAB for v, _ in entries}
    facts |= {f"short:{k}:{v}" for k, entries in SHORT_MEM_VOCAB for v, _ in entries}
    return facts


# ------------------------------------------------------------------ 1. evidence at the visit

_TIME_WORDS = re.compile(
    r"\b(" + "|".join(d.lower() + "s?" for d in DAYS) + r"|weekends?|weekdays?|nights?|mornings?|evenings?|"
    r"afternoons?|spring|summer|autumn|winter|seasons?|seasonal|holidays?|week|month|dec|christmas|valentine's|"
    r"sunset|sunrise|blossoms?|peak hours|\d{1,2}:\d{2})\b",
    re.IGNORECASE,
)


def test_every_fact_that_says_when_it_holds_has_its_window():
    """A fact whose words name a day, an hour, a season or a date holds only then: it must be in
    `TIME_BOUND`, else the engine would take it as holding at any visit."""
    vocab = _vocabulary()
    worded = {f for f in vocab if _TIME_WORDS.search(f.split(":", 2)[2])}
    assert worded - set(TIME_BOUND) == set()
    assert set(TIME_BOUND) <= vocab  # no window for a fact the city cannot hold
    assert "long:Atmosphere:cute pink decor" not in worded  # words, not letters ("dec")


def test_a_time_bound_fact_holds_only_inside_its_window():
    sunday, tuesday, friday = DAYS.index("Sunday"), DAYS.index("Tuesday"), DAYS.index("Friday")
    assert definitely_holds(GERMAN, Visit(sunday, 10 * 60))
    assert not may_hold(GERMAN, Visit(tuesday, 10 * 60))
    assert definitely_holds(GERMAN, None)  # no time stated: the user chooses when to go
    assert definitely_holds(GERMAN, Visit(DAYS.index("Saturday"), 1440 + 30))  # arriving after midnight
    music = "short:Event:live music on Friday nights"
    assert definitely_holds(music, Visit(friday, 20 * 60)) and not may_hold(music, Visit(friday, 10 * 60))
    # a season the query does not state: may hold (a competitor), never definitely (evidence)
    blossoms = "long:Scenery:cherry blossoms in spring"
    assert may_hold(blossoms, Visit(sunday, 600)) and not definitely_holds(blossoms, Visit(sunday, 600))
    assert definitely_holds(blossoms, visit_for(sunday, 600, PREFERENCE_BY_KEY["sakura"]))
    assert definitely_holds("tag:Facility:WiFi", Visit(tuesday, 3 * 60))  # not time-bound


def _visits(city, case):
    """(place, preference, visit, SC constraint) of every need in a case whose query fixes a time,
    recomputed from the day and time (and, on a trip, the arrival along the reference order)."""
    ctx = case.context
    needs = [con for con in case.constraints if con["kind"] == "has_preference"]
    if case.task == "nearby" and case.level == "l2" and ctx.get("weekday"):
        pref = PREFERENCE_BY_KEY[ctx["preference"]]
        visit = visit_for(DAYS.index(ctx["weekday"]), hhmm_to_minute(ctx["time"]), pref)
        return [(case.reference_places[0], pref, visit, needs[0])]
    if case.task == "trip" and case.level == "l2":
        order = case.reference_order
        legs = [
            routing_tools.routing(
                city, start_place_id=u, end_place_id=v, mode=ctx["mode"], vehicle=ctx["vehicle"]
            ).payload["total_time_s"]
            for u, v in zip(order, order[1:])
        ]
        arrival = dict(zip(order[1:-1], arrival_minutes(legs, hhmm_to_minute(ctx["departure"]), ctx["dwell_min"])))
        out = []
        for con in needs:
            stop = case.answer["waypoints"][con["slot"]]["place_id"]
            pref = PREFERENCE_BY_KEY[ctx["preferences"][con["slot"]]]
            out.append((stop, pref, visit_for(DAYS.index(ctx["weekday"]), arrival[stop], pref), con))
        return out
    return []


def test_every_case_rests_on_evidence_that_holds_at_its_visit(city, reader, cases):
    """Nearby L2 with a stated time and every Trip L2 stop: the place has a fact of its need that
    holds at the visit, and SC's constraint accepts no fact that does not."""
    checked = 0
    for c in cases:
        for pid, pref, visit, con in _visits(city, c):
            facts = reader.idx.by_id[pid].facts
            assert any(f in facts and definitely_holds(f, visit) for f in pref.facts), (c.id, pref.key, visit)
            assert all(definitely_holds(f, visit) for f in con["facts"]), (c.id, con["facts"], visit)
            checked += 1
    assert checked >= 5


def test_the_second_reading_catches_evidence_on_the_wrong_day(city_path):
    """A place whose only evidence for chatting in German is the Sunday German Corner (given to a
    place of the small test city here): a Tuesday query has no valid answer, a Sunday one has."""
    idx = CityIndex(str(city_path))
    i, plain = next((i, p) for i, p in enumerate(idx.places) if p.sub == "Coffee House" and p in idx.unique_named)
    holder = dataclasses.replace(plain, facts=plain.facts | {GERMAN})
    idx.places[i] = idx.by_id[holder.id] = holder
    reader = SecondReading(idx)
    anchor = min(
        (p for p in reader.idx.unique_named if p.id != holder.id),
        key=lambda p: float(reader.idx.distances(holder, [p])[0]),
    )
    radius = int(float(reader.idx.distances(anchor, [holder])[0])) + 1

    def case(day):
        return Case(
            id="nearby_l2_x",
            task="nearby",
            level="l2",
            question=f"I'm near {anchor.name} and I'm practising my German and want to chat with other learners. "
            f"It's {day}, 10:00. Where should I go?",
            answer={},
            tau_star=[],
            evidence=[],
            implicit_logic=True,
            requirements=[],
            constraints=[],
            reference_places=[holder.id],
            reference_order=[],
            context={"anchor": anchor.id, "radius_m": radius, "preference": "german"},
        )

    kinds = lambda day: {k for k, _ in reader.problems(case(day))}  # noqa: E731
    assert TIME in kinds("Tuesday")
    assert TIME not in kinds("Sunday")


# ------------------------------------------------------------------ 2. type nouns


def _siblings(sub: str) -> set[str]:
    """The target sub-types in `sub`'s top-level category."""
    top = next(c.place_type for c in CATEGORIES if c.place_type.endswith("|" + sub)).split("|")[0]
    return {c.place_type.split("|")[1] for c in CATEGORIES if c.place_type.startswith(top + "|")} & set(TYPE_NOUNS)


def _name_words(sub: str) -> set[str]:
    cat = next(c for c in CATEGORIES if c.place_type.endswith("|" + sub))
    return {w.lower() for noun in cat.nouns for w in noun.split()}


def test_no_type_noun_is_narrower_than_the_category_it_names():
    """A sibling in the city's own taxonomy must be covered (or left undecided as borderline, so
    that no case depends on it) when the noun names the whole category ("sightseeing spot" and
    "Scenery Spot"), drops the qualifier of its sub-type ("hotel" for "Business Hotel"), or is a
    word the sibling's places are named with ("Cafe"); and the nouns issue 28 found too narrow."""
    narrow = []
    for sub, (noun, _) in TYPE_NOUNS.items():
        covered = set(type_reading(sub)) | set(type_borderline(sub))
        head = noun.split()[-1].lower()
        top = next(c.place_type for c in CATEGORIES if c.place_type.endswith("|" + sub)).split("|")[0]
        for sib in _siblings(sub) - covered:
            names_category = head == top.split()[-1].lower()
            drops_qualifier = len(sub.split()) > 1 and sub.lower().endswith(" " + noun.lower())
            named_alike = set(noun.lower().split()) <= _name_words(sib)
            if names_category or drops_qualifier or named_alike:
                narrow.append((noun, sib))
    assert narrow == []
    assert "Park" in type_reading("Tourist Attraction")
    assert "Hostel" in type_reading("Business Hotel")
    assert {"Hot Pot Restaurant", "Barbecue Restaurant", "Fast Food Restaurant"} <= set(
        type_reading("Chinese Restaurant")
    ) | set(type_borderline("Chinese Restaurant"))


def test_nearby_lists_everything_the_noun_covers(cases, reader):
    for c in cases:
        if c.task == "nearby" and c.level == "l0":
            assert c.context["place_types"] == list(type_reading(c.context["place_type"])), c.id


def test_the_second_reading_counts_a_park_as_a_sightseeing_spot(reader):
    park = next(p for p in reader.idx.by_sub["Park"] if p.name)
    anchor = min(
        (p for p in reader.idx.unique_named if p.id != park.id),
        key=lambda p: float(reader.idx.distances(park, [p])[0]),
    )
    radius = int(float(reader.idx.distances(anchor, [park])[0])) + 5
    spots = [p.id for p in reader.idx.by_sub["Tourist Attraction"]]
    inside = [pid for pid in spots if float(reader.idx.distances(anchor, [reader.idx.by_id[pid]])[0]) <= radius]
    case = Case(
        id="nearby_l0_x",
        task="nearby",
        level="l0",
        question=f"Which sightseeing spots are within {radius} m of {anchor.name}?",
        answer={},
        tau_star=[],
        evidence=[],
        implicit_logic=False,
        requirements=[],
        constraints=[],
        reference_places=inside,  # the narrow reading: attractions only
        reference_order=[],
        context={"anchor": anchor.id, "radius_m": radius, "place_type": "Tourist Attraction"},
    )
    problems = reader.problems(case)
    assert any(kind == UNIQUE and park.id in detail for kind, detail in problems)


# ------------------------------------------------------------------ 3. uniqueness on the wording


def test_the_second_reading_counts_places_whose_type_meets_the_need(reader):
    """ "Something to leaf through" is met by every bookstore: two bookstores near the anchor make
    the query admit both, whatever their tags say."""
    stores = reader.idx.by_sub["Bookstore"]
    pair = min(
        ((a, b) for a in stores for b in stores if a.id < b.id),
        key=lambda ab: float(reader.idx.distances(ab[0], [ab[1]])[0]),
    )
    anchor = min(
        (p for p in reader.idx.unique_named if p.sub != "Bookstore"),
        key=lambda p: float(reader.idx.distances(p, list(pair)).max()),
    )
    radius = int(float(reader.idx.distances(anchor, list(pair)).max())) + 5
    case = Case(
        id="nearby_l2_x",
        task="nearby",
        level="l2",
        question=f"I'm near {anchor.name} and I forgot my novel, so I'd like something to leaf through there. "
        "Where should I go?",
        answer={},
        tau_star=[],
        evidence=[],
        implicit_logic=True,
        requirements=[],
        constraints=[],
        reference_places=[pair[1].id],
        reference_order=[],
        context={"anchor": anchor.id, "radius_m": radius, "preference": "books"},
    )
    problems = reader.problems(case)
    assert any(kind == UNIQUE and pair[0].id in detail for kind, detail in problems)


def test_the_second_reading_finds_no_other_answer_in_any_generated_case(reader, cases):
    """The engine keeps a case only if this holds; a generator that bypassed the check fails here."""
    assert {c.id: reader.problems(c) for c in cases if reader.problems(c)} == {}
