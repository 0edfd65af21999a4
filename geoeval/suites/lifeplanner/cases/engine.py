"""The case engine: one class that combines the four task families' generators over the shared
steps, draws each task × level combination from its own seeded stream, and keeps the cases that
pass `check_case`; and the case file format (JSON lines)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner.cases.case import (
    MAX_REFERENCE_CALLS,
    Case,
    CaseGenerationError,
    Draft,
    Reject,
    allocate,
)
from geoeval.suites.lifeplanner.cases.check import check_case
from geoeval.suites.lifeplanner.cases.city_index import CityIndex
from geoeval.suites.lifeplanner.cases.nearby import NearbyCases
from geoeval.suites.lifeplanner.cases.place import PlaceCases
from geoeval.suites.lifeplanner.cases.routing import RoutingCases
from geoeval.suites.lifeplanner.cases.second_reading import SecondReading
from geoeval.suites.lifeplanner.cases.trip import TripCases
from geoeval.suites.lifeplanner.metrics import COMBINATIONS


class CaseEngine(PlaceCases, NearbyCases, RoutingCases, TripCases):
    """The 11 generators (one method per task × level, from the four family mixins) over one city
    and seed; `generate` makes a run's cases, each read again from its final wording
    (`second_reading`) before it is kept."""

    def __init__(self, db_path: str, seed: int, l2_phrasing: str = "paper", l1_social: bool = True) -> None:
        if l2_phrasing not in ("paper", "explicit"):
            raise ValueError(f"l2_phrasing must be 'paper' or 'explicit', not {l2_phrasing!r}")
        self.paper = l2_phrasing == "paper"
        self.l1_social = bool(l1_social)
        self.idx = CityIndex(db_path)
        self.city = self.idx.city
        self.seed = int(seed)
        self.rng = np.random.default_rng(seed)
        self.d: Draft = Draft(self.city)
        self.second_reading = SecondReading(self.idx)
        # per combination: how many finished cases each second-pass check dropped (and the engine
        # drew again), by problem kind (`second_reading.TIME`, `TYPE`, `UNIQUE`)
        self.drops: dict[tuple[str, str], Counter[str]] = {}
        self.rejects: dict[tuple[str, str], Counter[str]] = {}  # per combination: draws rejected, by reason

    GENERATORS = {
        ("place", "l0"): "place_l0",
        ("place", "l1"): "place_l1",
        ("place", "l2"): "place_l2",
        ("nearby", "l0"): "nearby_l0",
        ("nearby", "l1"): "nearby_l1",
        ("nearby", "l2"): "nearby_l2",
        ("routing", "l0"): "routing_l0",
        ("routing", "l1"): "routing_l1",
        ("routing", "l2"): "routing_l2",
        ("trip", "l1"): "trip_l1",
        ("trip", "l2"): "trip_l2",
    }

    def generate(self, counts: dict[tuple[str, str], int]) -> list[Case]:
        cases: list[Case] = []
        for ci, combo in enumerate(COMBINATIONS):
            want = counts.get(combo, 0)
            if not want:
                continue
            # each combination draws from its own stream: adding cases of one combination does
            # not change the cases of another
            self.rng = np.random.default_rng([self.seed, ci])
            seen: set[Any] = set()
            made: list[Case] = []
            attempts = 0
            budget = 400 + 150 * want
            while len(made) < want:
                attempts += 1
                if attempts > budget:
                    raise CaseGenerationError(
                        f"could make only {len(made)} of {want} {combo[0]}_{combo[1]} cases from this city in "
                        f"{budget} attempts; use a larger city (env.n_places / env.n_notes) or fewer cases"
                    )
                self.d = Draft(self.city)
                try:
                    fields = getattr(self, self.GENERATORS[combo])()
                except Reject as exc:
                    self.rejects.setdefault(combo, Counter())[str(exc)] += 1
                    continue
                sig = fields.pop("signature")
                if sig in seen:
                    continue
                case = Case(
                    id=f"{combo[0]}_{combo[1]}_{len(made):04d}",
                    task=combo[0],
                    level=combo[1],
                    tau_star=self.d.tau,
                    evidence=list(self.d.evidence),
                    engine_path=self.d.engine_path,
                    **fields,
                )
                if len(case.tau_star) > MAX_REFERENCE_CALLS or check_case(self.city, case):
                    continue
                try:
                    problems = self.second_reading.problems(case)
                except Reject as unreadable:  # a place the second reading cannot read: not a sure case
                    problems = [("unreadable", str(unreadable))]
                if problems:
                    self.drops.setdefault(combo, Counter()).update({kind for kind, _ in problems})
                    continue
                seen.add(sig)
                made.append(case)
            cases += made
        return cases


def generate_cases(
    db_path: str,
    *,
    n_cases: int,
    seed: int,
    combos: list[tuple[str, str]] | None = None,
    l2_phrasing: str = "paper",
    l1_social: bool = True,
) -> list[Case]:
    """`n_cases` cases over `combos` (default: all 11) in Table 4's proportions, deterministic in
    the city and `seed`. `l2_phrasing`: "paper" (no place type, radius or candidate list where
    Figure 8 gives none) or "explicit" (the earlier wording); `l1_social`: Place L1 includes
    yes/no questions that only social-media posts answer."""
    engine = CaseEngine(str(db_path), seed, l2_phrasing=l2_phrasing, l1_social=l1_social)
    return engine.generate(allocate(n_cases, combos))


def cases_to_jsonl(cases: list[Case]) -> str:
    return "".join(json.dumps(c.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for c in cases)


def cases_from_jsonl(text: str) -> list[Case]:
    return [Case.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]
