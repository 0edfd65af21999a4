"""Choosing a case's answer and area: the engine's state (`EngineState`), its seeded draws
(`pick`, `chance`, `persona`, `weekday_time`) and the geometry of candidates (endpoints, places
within a radius, radii clear of rounding, the area an unstated "near" means)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import CityIndex, Place
from geoeval.suites.lifeplanner.cases.lexicon import PERSONAS, Preference, type_reading
from geoeval.suites.lifeplanner.cases.visit_time import Visit, definitely_holds
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools.trip_timing import boundary_margin, open_at_minute

if TYPE_CHECKING:  # the draft's module builds on these steps
    from geoeval.suites.lifeplanner.cases.case import Draft

RADIUS_BAND_M = 20  # no candidate this close to a stated radius (rounding must not decide)
AREA_FLOOR_M = 150  # an unstated "near"/"on the way" reaches at least this far past the answer


class EngineState:
    """What every engine step reads: the city, its index, the seeded draws, the case being built
    and the phrasing options (set by `CaseEngine.__init__`)."""

    idx: CityIndex
    city: city_handle.City
    seed: int
    rng: np.random.Generator
    d: Draft
    paper: bool
    l1_social: bool


class ChoosingSteps(EngineState):
    """Seeded draws and candidate geometry."""

    def pick(self, seq: Any) -> Any:
        if not len(seq):
            raise Reject("nothing to choose from")
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def persona(self) -> str:
        return (self.pick(PERSONAS) + " ") if self.chance(0.5) else ""

    def weekday_time(self, lo: int = 6 * 60, hi: int = 23 * 60 + 55) -> tuple[int, int]:
        return int(self.rng.integers(7)), int(self.rng.integers(lo // 5, hi // 5 + 1)) * 5

    def time_when_exactly_one_is_open(
        self, hours: list[Any], *, earliest: int, margin: int
    ) -> tuple[int, int, list[bool]]:
        """A (weekday, minute) from `earliest` to 23:55 when exactly one of `hours` is open, at
        least `margin` minutes from any of them opening or closing (so that the answer does not
        hang on a boundary), and which of them is open; 60 draws at most."""
        for _ in range(60):
            weekday, minute = self.weekday_time(earliest, 23 * 60 + 55)
            opens = [open_at_minute(h, weekday, minute) for h in hours]
            if sum(opens) == 1 and min(boundary_margin(h, weekday, minute) for h in hours) >= margin:
                return weekday, minute, opens
        raise Reject("no time when exactly one is open")

    def satisfies(self, p: Place, pref: Preference, visit: Visit | None = None) -> list[str]:
        """`p`'s facts that meet `pref` and definitely hold at `visit` (None: the query states no
        time, so every fact holds)."""
        return [f for f in pref.facts if f in p.facts and definitely_holds(f, visit)]

    def type_requirement(self, sub: str) -> list[Any]:
        """A's requirement that a place is of a type the noun written for `sub` covers."""
        kinds = type_reading(sub)
        if len(kinds) == 1:
            return ["place_type", "contains", sub]
        return ["place_type", "in", sorted({p.place_type for s in kinds for p in self.idx.by_sub.get(s, [])})]

    def endpoints(self, lo: float = 900.0, hi: float = 3200.0) -> tuple[Place, Place]:
        a = self.pick(self.idx.unique_named)
        cands = [p for p in self.idx.unique_named if p.id != a.id]
        ds = self.idx.distances(a, cands)
        ok = [p for p, d in zip(cands, ds) if lo <= d <= hi]
        b = self.pick(ok)
        return a, b

    def within(self, center: Place, places: list[Place], radius: float) -> tuple[list[Place], list[float]]:
        ds = self.idx.distances(center, places)
        keep = [(p, float(d)) for p, d in zip(places, ds) if d <= radius and p.id != center.id]
        keep.sort(key=lambda x: (round(x[1], 6), x[0].id))
        return [p for p, _ in keep], [d for _, d in keep]

    @staticmethod
    def clean_radius(reach: float, distances: Any, step: int = 10, tries: int = 30) -> int:
        """The smallest radius (a multiple of `step`) that reaches `reach` with `RADIUS_BAND_M`
        to spare and has no distance in `distances` within that band of it, so that rounding
        (and the agent's own arithmetic) never decides what is inside."""
        ds = np.asarray(list(distances), dtype=float)
        radius = int(math.ceil((reach + RADIUS_BAND_M) / step) * step)
        for _ in range(tries):
            if not np.any(np.abs(ds - radius) < RADIUS_BAND_M):
                return radius
            radius += step
        raise Reject("no clean radius")

    def area_radius(self, center: Place, d_answer: float, places: list[Place]) -> int:
        """The area "near X" means when the query states no radius: twice the answer's distance and
        at least `AREA_FLOOR_M` beyond it, clear by the rounding band of every place in `places`
        (the ones that could change the answer: the candidates' type, or everything that fits)."""
        return self.clean_radius(
            max(2.0 * d_answer, d_answer + AREA_FLOOR_M),
            self.idx.distances(center, [p for p in places if p.id != center.id]),
            step=10,
        )
