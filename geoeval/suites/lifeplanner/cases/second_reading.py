"""The second pass (issue 28): a case read from its final wording, not from the generator's
intent. The query's words (the place-type nouns with what a reader takes them to cover, the needs
and dislikes it implies, a stated radius, day, time and filters, the places it names) select the
places that satisfy it, over the whole city; the case is kept only if they are exactly its
reference places, no place of a borderline type could count, and the reference's evidence for
each need holds at the visit (the query's day and time, or the computed arrival on a trip).

Where the query leaves an extent unstated ("near X", "on the way"), the area is the one the case
records (`choosing.area_radius`: the suite's documented meaning of "near"); everything else comes
from the words. Named places are read from the case (they are checked unique by name elsewhere)."""

from __future__ import annotations

import re
from typing import Any

from geoeval.suites.lifeplanner.cases.case import Case, Reject
from geoeval.suites.lifeplanner.cases.city_index import CityIndex, Place
from geoeval.suites.lifeplanner.cases.lexicon import (
    DISLIKES,
    PREFERENCES,
    TYPE_NOUNS,
    TYPES_MEANING,
    Preference,
    type_borderline,
    type_reading,
)
from geoeval.suites.lifeplanner.cases.visit_time import Visit, definitely_holds, may_hold, visit_for
from geoeval.suites.lifeplanner.city.opening_hours import DAYS
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools.trip_timing import arrival_minutes, hhmm_to_minute, open_at_minute

# problem kinds, as the engine counts what each check drops
TIME = "evidence outside the visit time"
TYPE = "a borderline place type could count"
UNIQUE = "the wording admits another answer"

_NOUN_WORDS = sorted(((word, sub) for sub, words in TYPE_NOUNS.items() for word in words), key=lambda x: -len(x[0]))
_DAY_RE = re.compile(r"\b(" + "|".join(DAYS) + r")\b")
_TIME_RE = re.compile(r"\b(\d{2}:\d{2})\b")


def nouns_in(text: str) -> list[tuple[int, str]]:
    """(position, sub-type) of every place-type noun in `text`, longest first where they overlap."""
    taken: list[tuple[int, int]] = []
    out = []
    for word, sub in _NOUN_WORDS:
        for m in re.finditer(r"\b" + re.escape(word) + r"\b", text, flags=re.IGNORECASE):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append((m.start(), sub))
    return sorted(out)


def phrases_in(text: str, prefs: tuple[Preference, ...]) -> list[tuple[int, Preference]]:
    """(position, preference) of every need or dislike phrase in `text` (case-insensitive)."""
    low = text.casefold()
    out = []
    for pref in prefs:
        for phrase in pref.phrases:
            i = low.find(phrase.casefold())
            if i >= 0:
                out.append((i, pref))
    return sorted(out, key=lambda x: x[0])


def fits(p: Place, pref: Preference, visit: Visit | None, *, definitely: bool = False) -> bool:
    """Whether `p` meets `pref` at `visit`: by a fact that holds then (definitely, or possibly), or
    by its type alone (a library for revising)."""
    holds = definitely_holds if definitely else may_hold
    return p.sub in TYPES_MEANING.get(pref.key, ()) or any(f in p.facts and holds(f, visit) for f in pref.facts)


def _ruled_out(p: Place, dislike: Preference | None, visit: Visit | None) -> bool:
    return dislike is not None and any(f in p.facts and definitely_holds(f, visit) for f in dislike.facts)


def _has_dislike(p: Place, dislike: Preference | None, visit: Visit | None) -> bool:
    return dislike is not None and any(f in p.facts and may_hold(f, visit) for f in dislike.facts)


def _stated_visit(text: str, pref: Preference | None) -> Visit | None:
    """The day and time the query states for the visit (a need's own words, "an exam on Monday",
    are not the visit)."""
    for phrase in (ph for p in (*PREFERENCES, *DISLIKES) for ph in p.phrases):
        text = re.sub(re.escape(phrase), " ", text, flags=re.IGNORECASE)
    day, time = _DAY_RE.search(text), _TIME_RE.search(text)
    if not day and not time:
        return None
    return visit_for(DAYS.index(day.group(1)) if day else None, hhmm_to_minute(time.group(1)) if time else None, pref)


def _stated_radius(text: str) -> float | None:
    m = re.search(r"\b(\d+) (?:m|metres)\b", text)
    if m:
        return float(m.group(1))
    m = re.search(r"\bwithin ([\d.]+) km\b", text)
    return float(m.group(1)) * 1000 if m else None


class SecondReading:
    """Reads cases against one city."""

    def __init__(self, idx: CityIndex) -> None:
        self.idx = idx

    def problems(self, case: Case) -> list[tuple[str, str]]:
        """(kind, detail) of everything the wording admits that the case does not say; empty: none."""
        reader = {
            "nearby": self._nearby,
            "place": self._place,
            "routing": self._routing,
            "trip": self._trip,
        }[case.task]
        try:
            return reader(case)
        except ValueError as exc:  # two place types where one is read, a route that does not exist
            return [(UNIQUE, f"the wording cannot be read one way: {exc}")]

    # ------------------------------------------------------------------ shared
    def _type_ok(self, p: Place, sub: str | None) -> bool:
        return sub is None or p.sub in type_reading(sub)

    def _borderline(self, p: Place, sub: str | None) -> bool:
        return sub is not None and p.sub in type_borderline(sub)

    def _near(self, center: Place, radius: float, exclude: set[str]) -> list[Place]:
        ds = self.idx.distances(center, self.idx.places)
        return [p for p, d in zip(self.idx.places, ds) if d <= radius and p.id != center.id and p.id not in exclude]

    def _open_then(self, p: Place, weekday: int, minute: float) -> bool:
        """Whether `p` is open at that time. Hours that cannot be read (OpenStreetMap's free text)
        do not show it open: the generators never draw such a place either, so a reader of the
        hours as published could not tell it admissible."""
        if not p.hours:
            return False
        try:
            hours = self.idx.hours_of(p)
        except Reject:
            return False
        return bool(open_at_minute(hours, weekday, minute))

    def _select(
        self,
        pool: list[Place],
        sub: str | None,
        pref: Preference | None,
        dislike: Preference | None,
        visit: Visit | None,
        extra: Any = None,
    ) -> tuple[list[str], list[str]]:
        """(ids the wording admits, ids of borderline types that would be admitted)."""
        admitted, borderline = [], []
        for p in pool:
            if extra is not None and not extra(p):
                continue
            if pref is not None and not fits(p, pref, visit):
                continue
            if _ruled_out(p, dislike, visit):
                continue
            if self._type_ok(p, sub):
                admitted.append(p.id)
            elif self._borderline(p, sub):
                borderline.append(p.id)
        return sorted(admitted), sorted(borderline)

    def _verdicts(
        self,
        want: list[str],
        admitted: list[str],
        borderline: list[str],
        evidence: list[tuple[Place, Preference | None, Visit | None]],
        dislike: Preference | None = None,
    ) -> list[tuple[str, str]]:
        out = []
        for p, pref, visit in evidence:
            if pref is None:
                out.append((UNIQUE, "the wording states no need the reader knows"))
                continue
            if not fits(p, pref, visit, definitely=True):
                out.append((TIME, f"{p.id} meets {pref.key!r} only outside the visit {visit}"))
            if _has_dislike(p, dislike, visit):
                out.append((TIME, f"{p.id} may have what the user dislikes ({dislike.key})"))  # type: ignore[union-attr]
        if borderline:
            out.append((TYPE, f"places of borderline types {borderline} could count"))
        if sorted(admitted) != sorted(want):
            out.append((UNIQUE, f"the wording admits {sorted(admitted)}, the case says {sorted(want)}"))
        return out

    def _one(self, found: list[tuple[int, Any]], what: str) -> Any:
        if len(found) > 1:
            raise ValueError(f"the query states {len(found)} {what}")
        return found[0][1] if found else None

    # ------------------------------------------------------------------ families
    def _nearby(self, case: Case) -> list[tuple[str, str]]:
        q = case.question
        anchor = self.idx.by_id[case.context["anchor"]]
        text = q.replace(anchor.name, " ")
        sub = self._one(nouns_in(text), "place types")
        pref = self._one(phrases_in(text, PREFERENCES), "needs")
        visit = _stated_visit(text, pref)
        radius = _stated_radius(text) or float(case.context["radius_m"])
        rating = re.search(r"rated at least ([\d.]+)", text)
        cost = re.search(r"no more than ([\d.]+) CNY", text)

        def filters(p: Place) -> bool:
            if rating and (p.rating is None or p.rating < float(rating.group(1)) - 1e-9):
                return False
            if cost and (p.cost is None or p.cost > float(cost.group(1)) + 1e-9):
                return False
            # a stated time means the place must be open then (Nearby L1, timed Nearby L2)
            if visit is None or visit.minute is None:
                return True
            return self._open_then(p, visit.weekday or 0, visit.minute)

        admitted, borderline = self._select(self._near(anchor, radius, set()), sub, pref, None, visit, filters)
        evidence = [(self.idx.by_id[case.reference_places[0]], pref, visit)] if pref else []
        return self._verdicts(case.reference_places, admitted, borderline, evidence)

    def _place(self, case: Case) -> list[tuple[str, str]]:
        if case.level != "l2":
            return []  # named places and their attributes: no type word, need or area to read
        q = case.question
        names = [self.idx.by_id[i].name for i in case.context.get("candidates", [])]
        anchor = self.idx.by_id[case.context["anchor"]] if case.context.get("anchor") else None
        text = q
        for name in sorted([*names, *([anchor.name] if anchor else [])], key=len, reverse=True):
            text = text.replace(name, " ")
        sub = self._one(nouns_in(text), "place types")
        pref = self._one(phrases_in(text, PREFERENCES), "needs")
        dislike = self._one(phrases_in(text, DISLIKES), "dislikes")
        visit = _stated_visit(text, pref)
        answer = self.idx.by_id[case.reference_places[0]]
        if anchor is not None:  # "near X": the case's area around the anchor
            pool = self._near(anchor, float(case.context["radius_m"]), set())
        else:  # the named candidates
            pool = [self.idx.by_id[i] for i in case.context["candidates"]]
            sub = None
        admitted, borderline = self._select(pool, sub, pref, dislike, visit)
        return self._verdicts([answer.id], admitted, borderline, [(answer, pref, visit)], dislike)

    def _route_distances(self, case: Case, pool: list[Place]) -> list[float]:
        a, b = case.reference_order[0], case.reference_order[-1]
        ds = nearby_tools.route_buffer_distances(
            self.idx.city, a, b, case.context["vehicle"], case.context["mode"], [p.id for p in pool]
        )
        if ds is None:
            raise ValueError("no route between the case's ends")
        return ds

    def _routing(self, case: Case) -> list[tuple[str, str]]:
        if case.level == "l0":
            return []
        a, b = case.reference_order[0], case.reference_order[-1]
        text = case.question
        for pid in (a, b):
            text = text.replace(self.idx.by_id[pid].name, " ")
        stops = sorted(case.reference_order[1:-1])
        pool = [p for p in self.idx.places if p.id not in (a, b)]
        ds = dict(zip([p.id for p in pool], self._route_distances(case, pool)))
        want: list[str] = []
        out: list[tuple[str, str]] = []
        for pos, sub in nouns_in(text):
            if text[:pos].rstrip().endswith("nearest"):  # "the nearest X to my route"
                kinds = set(type_reading(sub)) | set(type_borderline(sub))
                ranked = sorted((ds[p.id], p.id) for p in pool if p.sub in kinds)
                if len(ranked) < 2 or ranked[1][0] - ranked[0][0] < 10:
                    out.append((UNIQUE, f"no clear nearest {TYPE_NOUNS[sub][0]} to the route"))
                want.append(ranked[0][1])
                if self.idx.by_id[ranked[0][1]].sub not in type_reading(sub):
                    out.append((TYPE, f"the nearest {TYPE_NOUNS[sub][0]} is of a borderline type"))
            else:  # a stop that meets the need, on the way
                pref = self._one(phrases_in(text, PREFERENCES), "needs")
                area = _stated_radius(text) or float(case.context["radius_m"])
                near = [p for p in pool if ds[p.id] <= area]
                admitted, borderline = self._select(near, sub, pref, None, None)
                stop = next((s for s in stops if s in admitted), None)
                evidence: list[tuple[Place, Preference | None, Visit | None]] = (
                    [(self.idx.by_id[stop], pref, None)] if stop and pref else []
                )
                out += self._verdicts([stop] if stop else [], admitted, borderline, evidence)
                want += admitted
        if sorted(set(want)) != stops:
            out.append((UNIQUE, f"the wording asks for stops {sorted(set(want))}, the case has {stops}"))
        return out

    def _trip(self, case: Case) -> list[tuple[str, str]]:
        if case.level != "l2":
            return []  # every stop is named
        order = case.reference_order
        a, b = self.idx.by_id[order[0]], self.idx.by_id[order[-1]]
        text = case.question.replace(a.name, "@A").replace(b.name, "@B")
        stated = _stated_visit(text, None)
        if stated is None or stated.weekday is None or stated.minute is None:
            raise ValueError("the trip states no day and departure time")
        day, departure = stated.weekday, stated.minute
        dwell = float(re.search(r"about (\d+) minutes at each stop", text).group(1))  # type: ignore[union-attr]
        vehicle, mode = case.context["vehicle"], case.context["mode"]
        legs = []
        for u, v in zip(order, order[1:]):
            res = routing_tools.routing(self.idx.city, start_place_id=u, end_place_id=v, mode=mode, vehicle=vehicle)
            legs.append(float(res.payload["total_time_s"]))
        arrival = dict(zip(order[1:-1], arrival_minutes(legs, departure, dwell)))
        wants = re.findall(r"([^:;]+?) \(a ([^()]+?) (near @A|within [\d.]+ km of @A)\)", text)
        radii = {c["slot"]: float(c["radius_m"]) for c in case.constraints if c["kind"] == "within_radius"}
        out: list[tuple[str, str]] = []
        chosen: list[str] = []
        for i, (need, noun, where) in enumerate(wants):
            sub = self._one(nouns_in(noun), "place types")
            pref = self._one(phrases_in(need, PREFERENCES), "needs")
            area = _stated_radius(where) or radii[i]
            pool = self._near(a, area, {a.id, b.id})
            admitted, borderline = self._select(pool, sub, pref, None, None)
            stop = next((s for s in order[1:-1] if s in admitted), None)
            evidence = []
            if stop is not None:
                evidence = [(self.idx.by_id[stop], pref, visit_for(day, arrival[stop], pref))]
            out += self._verdicts([stop] if stop else [], admitted, borderline, evidence)
            chosen += admitted
        if len(wants) != len(order) - 2 or sorted(chosen) != sorted(order[1:-1]):
            out.append((UNIQUE, f"the wording asks for stops {sorted(chosen)}, the case has {sorted(order[1:-1])}"))
        return out
