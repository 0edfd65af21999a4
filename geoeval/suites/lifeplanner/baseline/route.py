"""The heuristic baseline's plan for route (trip) questions: the start and end it reads, the stops
the question names or asks for by kind or need, every pair routed once, and the best order that
keeps the question's rules ("A before B", open on arrival)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from geoeval.suites.lifeplanner.baseline.reading import (
    _clauses,
    _day_time,
    _distance,
    _mode,
    _need_words,
    _vehicle,
)
from geoeval.suites.lifeplanner.baseline.session import Session
from geoeval.suites.lifeplanner.baseline.tools import (
    DEFAULT_RADIUS_M,
    Found,
    detail,
    named_places,
    probe_type,
    rank_by_keywords,
)
from geoeval.suites.lifeplanner.city.opening_hours import DAYS
from geoeval.suites.lifeplanner.tools.trip_timing import open_on_arrival, readable_hours


def legs_for(
    s: Session, ids: list[str], vehicle: str, mode: str, skip: tuple[str, str] | None = None
) -> dict[tuple[str, str], tuple[float, float]]:
    """Route every pair once (roads are undirected) and use it both ways."""
    legs: dict[tuple[str, str], tuple[float, float]] = {}
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if skip and {a, b} == set(skip) and len(ids) > 2:
                continue
            out = s.call("routing", start_place_id=a, end_place_id=b, mode=mode, vehicle=vehicle) or {}
            if out.get("total_distance_m") is not None:
                v = (float(out["total_distance_m"]), float(out["total_time_s"]))
                legs[(a, b)] = legs[(b, a)] = v
    return legs


def best_order(
    start: str, end: str, stops: list[str], legs: dict, mode: str, ok=lambda order: True
) -> tuple[list[str], float, float] | None:
    """Try every permutation of the stops between fixed start and end."""
    best = None
    for perm in itertools.permutations(stops):
        order = [start, *perm, end]
        if any((a, b) not in legs for a, b in itertools.pairwise(order)):
            continue
        d = sum(legs[(a, b)][0] for a, b in itertools.pairwise(order))
        t = sum(legs[(a, b)][1] for a, b in itertools.pairwise(order))
        key = (t, d) if mode == "time" else (d, t)
        if ok(order) and (best is None or key < best[0]):
            best = (key, order, d, t)
    return None if best is None else (best[1], best[2], best[3])


def route_answer(
    start: Found,
    end: Found,
    stops: list[Found],
    order: list[str],
    vehicle: str,
    mode: str,
    d: float,
    t: float,
    reasons: dict[str, str] | None = None,
    notes: dict[str, list[str]] | None = None,
    keys: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    names = {p.place_id: p.name for p in [start, end, *stops]}
    return {
        "start": {"name": start.name, "place_id": start.place_id, "reason": "User-specified origin."},
        "end": {"name": end.name, "place_id": end.place_id, "reason": "User-specified destination."},
        "waypoints": [
            {
                "name": p.name,
                "place_id": p.place_id,
                "reason": (reasons or {}).get(p.place_id, "Requested stop."),
                "ref": {
                    "note_id": ",".join((notes or {}).get(p.place_id, [])),
                    "attribute_key": ",".join((keys or {}).get(p.place_id, [])),
                },
            }
            for p in stops
        ],
        "optimal_order": [{"name": names[pid], "place_id": pid, "visit_order": k + 1} for k, pid in enumerate(order)],
        "vehicle": vehicle,
        "mode": mode,
        "total_distance_m": round(d),
        "total_time_s": round(t),
    }


def _ends(q: str, found: list[Found]) -> tuple[Found, Found, list[Found]]:
    """Start: the place after "from" (else the first named); end: the place after "to" that
    follows the start (else the last named); the others are stops."""

    def after(word: str, places: list[Found]) -> Found | None:
        return next((p for p in places if re.search(rf"\b{word}\s+(?:\w+\s+){{0,4}}$", q[: p.at], re.IGNORECASE)), None)

    start = after("from", found) or found[0]
    rest = [p for p in found if p is not start]
    end = (
        after("to", [p for p in rest if p.at > start.at])
        or after("at", [p for p in rest if p.at > start.at])
        or rest[-1]
    )
    return start, end, [p for p in found if p is not start and p is not end]


def _stops_by_need(
    s: Session, q: str, route: dict[str, Any], a: Found, names: list[str], taken: set[str]
) -> list[tuple[Found, str, list[str], list[str]]]:
    """Stops the question asks for by kind or need rather than by name: one per clause that asks
    for the nearest X, or for something within a distance of the route or of a named place."""
    out: list[tuple[Found, str, list[str], list[str]]] = []
    for clause in _clauses(q):
        low = clause.lower()
        if s.left() < 6 or re.search(r"each stop|every stop|per stop|minutes", low):
            continue
        nearest = re.search(r"nearest|closest", low)
        dist = _distance(clause)
        wants_stop = re.search(
            r"on the way|along the way|stop somewhere|stop at an? |stop for|off (?:my|the) route", low
        )
        near_start = re.search(rf"\b(?:near|around|close to)\s+{re.escape(a.name.lower())}", low)
        if not (nearest or dist or near_start or (wants_stop and not any(n.lower() in low for n in names))):
            continue
        if nearest:
            for part in re.split(r"\b(?:nearest|closest)\b", clause)[1:]:
                pick = _nearest_stop(s, part, route, names, taken)
                if pick:
                    out.append((pick, "The nearest match to the route.", ["place_type"], []))
            continue
        around_start = bool(near_start) or (bool(dist) and a.name.lower() in low)
        center: Any = a.place_id if around_start else route
        search = {"center": center, "radius_meters": dist or (DEFAULT_RADIUS_M if near_start else 300.0)}
        sub, _ = probe_type(s, clause, names, search)
        if sub:
            search["place_types"] = [sub]
        want, avoid = _need_words(clause, names)
        listed = (s.call("nearby_search", **search) or {}).get("results") or []
        cands = [Found(r["place_id"], r["name"], r) for r in listed if r["place_id"] not in taken][:3]
        if not cands or not want:
            continue
        pick, notes, keys = rank_by_keywords(s, cands, want, avoid) if len(cands) > 1 else (cands[0], {}, {})
        if pick:
            out.append(
                (
                    pick,
                    "Its tags and posts match the request best.",
                    keys.get(pick.place_id, []),
                    notes.get(pick.place_id, []),
                )
            )
            taken.add(pick.place_id)
    return out


def _nearest_stop(s: Session, text: str, route: dict[str, Any], names: list[str], taken: set[str]) -> Found | None:
    """The place of the kind `text` names that lies nearest to the route (results come nearest
    first); the kind is probed over a wide buffer so that a far nearest one is still typed."""
    sub, _ = probe_type(s, text, names, {"center": route, "radius_meters": 1500.0})
    if not sub:
        return None
    for radius in (300.0, 800.0, 1500.0):
        listed = (s.call("nearby_search", center=route, radius_meters=radius, place_types=[sub]) or {}).get(
            "results"
        ) or []
        cands = [Found(r["place_id"], r["name"], r) for r in listed if r["place_id"] not in taken]
        if cands:
            taken.add(cands[0].place_id)
            return cands[0]
    return None


def _before_rule(q: str, stops: list[Found]) -> tuple[str, str] | None:
    """ "A before B": the two stops named in the clause, in the order named."""
    for clause in _clauses(q):
        if " before " not in clause.lower():
            continue
        low = clause.lower()
        named = sorted((low.find(p.name.lower()), p.place_id) for p in stops if p.name.lower() in low)
        if len(named) >= 2:
            return named[0][1], named[1][1]
    return None


def plan_route(s: Session, q: str, system: str) -> dict[str, Any]:
    vehicle, mode = _vehicle(q), _mode(q)
    day, hhmm = _day_time(q)
    found = named_places(s, q)
    if len(found) < 2:
        return {}
    a, b, stops = _ends(q, found)
    route = {"start": a.place_id, "end": b.place_id, "vehicle": vehicle, "mode": mode}
    reasons: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    for p, why, k, n in _stops_by_need(s, q, route, a, [f.name for f in found], {f.place_id for f in found}):
        stops.append(p)
        reasons[p.place_id], keys[p.place_id], notes[p.place_id] = why, k, n
    stops = stops[:5]
    dwell = re.search(r"(\d+)\s*(?:minutes|mins|min)\b", q)
    hours = (
        {p.place_id: detail(s, p.place_id).get("opentime_week") or "" for p in stops} if day and hhmm and dwell else {}
    )
    ids = [a.place_id, *[p.place_id for p in stops], b.place_id]
    legs = legs_for(s, ids, vehicle, mode, skip=(a.place_id, b.place_id))
    first_then = _before_rule(q, stops)

    def ok(order: list[str]) -> bool:
        if first_then and order.index(first_then[0]) > order.index(first_then[1]):
            return False
        if hours:
            assert hhmm is not None and dwell is not None  # hours is read only with a day, a time and a dwell
            departure = int(hhmm[:2]) * 60 + int(hhmm[3:])
            secs = [legs[(u, v)][1] for u, v in itertools.pairwise(order)]
            return open_on_arrival(
                order, secs, DAYS.index(day), departure, int(dwell.group(1)), lambda p: readable_hours(hours[p])
            )
        return True

    found_order = best_order(a.place_id, b.place_id, [p.place_id for p in stops], legs, mode, ok) or best_order(
        a.place_id, b.place_id, [p.place_id for p in stops], legs, mode
    )
    if found_order is None:
        return route_answer(a, b, stops, ids, vehicle, mode, 0, 0, reasons, notes, keys)
    order, d, t = found_order
    return route_answer(a, b, stops, order, vehicle, mode, d, t, reasons, notes, keys)
