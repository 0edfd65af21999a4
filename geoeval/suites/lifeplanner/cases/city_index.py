"""The city as the case engine sees it: every place with its facts (tags and hidden memory),
parsed opening hours, and which notes evidence which fact (the data engine's view)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.city.opening_hours import OpeningHoursError, parse_opening_hours
from geoeval.suites.lifeplanner.scoring.judging import parse_fact_groups
from geoeval.suites.lifeplanner.tools import city as city_handle


@dataclass(frozen=True)
class Place:
    id: str
    name: str
    place_type: str
    sub: str
    hours: str
    rating: float | None
    cost: float | None
    tag: str
    alias: str
    x: float
    y: float
    facts: frozenset[str]

    @property
    def tag_facts(self) -> list[str]:
        return sorted(f for f in self.facts if f.startswith("tag:"))


def norm_name(s: str) -> str:
    """A name as queries match it: case-folded, whitespace collapsed."""
    return " ".join(s.casefold().split())


class CityIndex:
    """Places with their facts, and which notes evidence which fact (the data engine's view)."""

    def __init__(self, db_path: str) -> None:
        self.city = city_handle.open_city(db_path)
        cur = self.city.cursor()
        rows = cur.execute(
            "SELECT id, name, place_type, opentime_week, rating, cost, tag, alias, long_mem, short_mem, "
            "x_m, y_m FROM places ORDER BY id"
        ).fetchall()
        self.places: list[Place] = []
        for pid, name, ptype, hours, rating, cost, tag, alias, lm, sm, x, y in rows:
            facts = parse_fact_groups(tag, "tag") | parse_fact_groups(lm, "long") | parse_fact_groups(sm, "short")
            self.places.append(
                Place(
                    pid,
                    name,
                    ptype,
                    ptype.split("|")[-1],
                    hours or "",
                    rating,
                    cost,
                    tag or "",
                    alias or "",
                    float(x),
                    float(y),
                    frozenset(facts),
                )
            )
        self.by_id = {p.id: p for p in self.places}
        self.xy = np.array([(p.x, p.y) for p in self.places]) if self.places else np.zeros((0, 2))
        counts: dict[str, int] = {}
        for p in self.places:
            counts[norm_name(p.name)] = counts.get(norm_name(p.name), 0) + 1
        # places a query can name unambiguously (and that search_notes can quote)
        self.unique_named = [p for p in self.places if counts[norm_name(p.name)] == 1 and '"' not in p.name]
        self.by_sub: dict[str, list[Place]] = {}
        for p in self.places:
            self.by_sub.setdefault(p.sub, []).append(p)
        self._hours: dict[str, Any] = {}
        ev = cur.execute(
            "SELECT f.place_id, f.fact, f.note_id, m.mention_kind, n.liked_count FROM note_facts f "
            "JOIN note_mentions m ON m.note_id = f.note_id AND m.place_id = f.place_id AND m.role = 'subject' "
            "JOIN notes n ON n.note_id = f.note_id WHERE f.source = 'desc' "
            "ORDER BY f.place_id, f.fact, n.liked_count DESC, f.note_id"
        ).fetchall()
        self.evidence: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for pid, fact, nid, kind, _ in ev:
            lst = self.evidence.setdefault((pid, fact), [])
            if all(n != nid for n, _ in lst):
                lst.append((nid, kind))

    def hours_of(self, p: Place) -> Any:
        h = self._hours.get(p.id)
        if h is None:
            try:
                h = self._hours[p.id] = parse_opening_hours(p.hours)
            except OpeningHoursError:
                # real (OSM) hours this parser cannot read are kept raw: no case may depend on them
                raise Reject(f"unreadable opening hours of {p.id}") from None
        return h

    def distances(self, p: Place, others: list[Place]) -> np.ndarray:
        if not others:
            return np.zeros(0)
        xy = np.array([(o.x, o.y) for o in others])
        return np.hypot(xy[:, 0] - p.x, xy[:, 1] - p.y)
