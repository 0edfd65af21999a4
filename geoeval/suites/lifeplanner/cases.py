"""The LifePlanner case engine (section 3.2 "Evaluation Case Generation", Figure 10): a
deterministic data engine that derives, from one city database, cases for the 11 task × level
combinations in the proportions of Table 4, at any size.

For every case the engine works as the paper's data engine does, with templates in place of the
LLM (no model is needed; the same seed gives the same cases byte for byte):

1. pick a candidate answer a* from the database (places, their attributes, their notes);
2. verify with the data-engine toolset (Table 8: full records with memory, `social_mem`
   filters, `multi_stop_routing`) that a* is the only answer the query admits — the calls are
   kept as `engine_path`;
3. write the reference tool path τ* in the *standard* toolset (Table 7), the path an evaluated
   agent can walk: it is run while the case is built, so every call in it works, and replaying it
   (`replay`) shows the answer (`check_case`);
4. phrase the query from templates with varied personas, stating explicit requirements (L1) or
   implying preferences (L2) that make τ* necessary.

Each case carries the Table 5 answer with the Table 6 fields, τ*, the identities IG requires
(`evidence`), `implicit_logic`, the explicit attribute requirements A checks (`requirements`)
and the constraints SC checks (`constraints`), both evaluated by `judging.py`.

Routing and Trip cases get their order and totals from `multi_stop_routing`. Trip cases follow
Figure 10's Scenario B where they can: fixed start and end, and constraints (opening hours on
arrival given a departure time and a stay per stop, or an order dependency) that rule out the
unconstrained optimum, so the reference is the best order that meets them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner import tools as T
from geoeval.suites.lifeplanner.answers import optimal_order, parse_answer, place_stop, ref_block
from geoeval.suites.lifeplanner.environment import (
    CATEGORIES,
    DAYS,
    LONG_MEM_VOCAB,
    PROFILE_OF,
    SHORT_MEM_VOCAB,
    WEEK_MINUTES,
    OpeningHoursError,
    parse_opening_hours,
)
from geoeval.suites.lifeplanner.judging import (
    arrival_minutes,
    attribute_accuracy_of,
    constraint_results,
    minute_to_hhmm,
    parse_fact_groups,
    purity_checks,
)
from geoeval.suites.lifeplanner.lexicon import (
    DISLIKES,
    MODE_WORDS,
    PERSONAS,
    PREFERENCES,
    TYPE_NOUNS,
    TYPES_MEANING,
    Preference,
)
from geoeval.suites.lifeplanner.metrics import COMBINATIONS
from geoeval.suites.lifeplanner.trajectory import Trajectory, observed_items, route_item, route_legs

# Cached case files are keyed by this: change it when the engine would make different cases.
ENGINE_VERSION = "lifeplanner-cases-2"
# Table 4: cases per task and level (667 in all).
TABLE4: dict[tuple[str, str], int] = {
    ("place", "l0"): 100, ("place", "l1"): 72, ("place", "l2"): 35,
    ("nearby", "l0"): 104, ("nearby", "l1"): 52, ("nearby", "l2"): 35,
    ("routing", "l0"): 100, ("routing", "l1"): 50, ("routing", "l2"): 31,
    ("trip", "l1"): 53, ("trip", "l2"): 35,
}
TASK_TITLES = {"place": "Place Perception", "nearby": "Nearby Discovery", "routing": "Routing", "trip": "Trip Design"}
# τ* must leave room in the 30-call budget for an agent that is not omniscient
MAX_REFERENCE_CALLS = 26
_TIME_GAP_S = 5       # a reference order must beat the next admissible one by this much (time) ...
_DIST_GAP_M = 10      # ... or this much (distance), so that the optimum is unique
_MARGIN_MIN = 5       # arrivals this far from an opening/closing boundary (time-window cases)
_RADIUS_BAND_M = 20   # no candidate this close to a stated radius (rounding must not decide)
_AREA_FLOOR_M = 150   # an unstated "near"/"on the way" reaches at least this far past the answer


class CaseGenerationError(ValueError):
    """The city cannot supply the requested cases (too small for some combination)."""


class Reject(Exception):
    """One attempt at a case failed a check; the engine draws again."""


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    task: str          # place | nearby | routing | trip
    level: str         # l0 | l1 | l2
    question: str
    answer: Any        # a*, Table 5 schema with the Table 6 fields
    tau_star: list[dict[str, Any]]      # [{"tool", "arguments"}], standard toolset
    evidence: list[str]                 # identities IG requires (see trajectory.py)
    implicit_logic: bool
    requirements: list[dict[str, Any]]  # A (judging.attribute_accuracy_of)
    constraints: list[dict[str, Any]]   # SC (judging.constraint_results)
    reference_places: list[str]         # p*
    reference_order: list[str]          # visiting order (routing/trip)
    context: dict[str, Any]             # anchor, vehicle, mode, weekday, departure, scenario, ...
    engine_path: list[dict[str, Any]] = field(default_factory=list)  # data-engine verification calls

    @property
    def type(self) -> str:
        return f"{self.task}_L{self.level[1]}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        return cls(**{k: v for k, v in d.items() if k != "type"})

    def instance(self) -> dict[str, Any]:
        """The case as the paper's instances look (Figure 8): type, question, answer."""
        return {"type": self.type, "question": self.question, "answer": self.answer}


def allocate(n_cases: int, combos: list[tuple[str, str]] | None = None) -> dict[tuple[str, str], int]:
    """Cases per combination for `n_cases` in all, in Table 4's proportions (largest remainder;
    ties go to the combination listed first). `combos` restricts to a subset, renormalised."""
    combos = list(combos or COMBINATIONS)
    if n_cases < 0:
        raise ValueError("n_cases must be >= 0")
    unknown = [c for c in combos if c not in TABLE4]
    if unknown:
        raise ValueError(f"unknown task/level combinations {unknown}")
    total = sum(TABLE4[c] for c in combos)
    quotas = {c: n_cases * TABLE4[c] / total for c in combos}
    counts = {c: int(math.floor(q)) for c, q in quotas.items()}
    left = n_cases - sum(counts.values())
    for c in sorted(combos, key=lambda c: (-(quotas[c] - counts[c]), combos.index(c)))[:left]:
        counts[c] += 1
    return counts


# --------------------------------------------------------------------------------------------
# The city as the engine sees it
# --------------------------------------------------------------------------------------------


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


def _norm(s: str) -> str:
    return " ".join(s.casefold().split())


class CityIndex:
    """Places with their facts, and which notes evidence which fact (the data engine's view)."""

    def __init__(self, db_path: str) -> None:
        self.city = T.open_city(db_path)
        cur = self.city.cursor()
        rows = cur.execute("SELECT id, name, place_type, opentime_week, rating, cost, tag, alias, long_mem, short_mem, "
                           "x_m, y_m FROM places ORDER BY id").fetchall()
        self.places: list[Place] = []
        for pid, name, ptype, hours, rating, cost, tag, alias, lm, sm, x, y in rows:
            facts = parse_fact_groups(tag, "tag") | parse_fact_groups(lm, "long") | parse_fact_groups(sm, "short")
            self.places.append(Place(pid, name, ptype, ptype.split("|")[-1], hours or "", rating, cost, tag or "",
                                     alias or "", float(x), float(y), frozenset(facts)))
        self.by_id = {p.id: p for p in self.places}
        self.xy = np.array([(p.x, p.y) for p in self.places]) if self.places else np.zeros((0, 2))
        counts: dict[str, int] = {}
        for p in self.places:
            counts[_norm(p.name)] = counts.get(_norm(p.name), 0) + 1
        # places a query can name unambiguously (and that search_notes can quote)
        self.unique_named = [p for p in self.places if counts[_norm(p.name)] == 1 and '"' not in p.name]
        self.by_sub: dict[str, list[Place]] = {}
        for p in self.places:
            self.by_sub.setdefault(p.sub, []).append(p)
        self._hours: dict[str, Any] = {}
        ev = cur.execute(
            "SELECT f.place_id, f.fact, f.note_id, m.mention_kind, n.liked_count FROM note_facts f "
            "JOIN note_mentions m ON m.note_id = f.note_id AND m.place_id = f.place_id AND m.role = 'subject' "
            "JOIN notes n ON n.note_id = f.note_id WHERE f.source = 'desc' "
            "ORDER BY f.place_id, f.fact, n.liked_count DESC, f.note_id").fetchall()
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


def boundary_margin(hours: Any, weekday: int, minute: float) -> float:
    """Minutes from (weekday, minute) to the nearest opening or closing time of `hours`."""
    t = weekday * 1440 + minute
    best = math.inf
    for s, e in hours.intervals:
        for b in (s, e):
            for shift in (-WEEK_MINUTES, 0, WEEK_MINUTES):
                best = min(best, abs(t - (b + shift)))
    return best


def _open(hours: Any, weekday: int, minute: float) -> bool:
    m = int(math.floor(minute))
    return hours.is_open((weekday + m // 1440) % 7, m % 1440)


def _list_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _or_words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


# --------------------------------------------------------------------------------------------
# One case under construction
# --------------------------------------------------------------------------------------------


class Draft:
    """τ* (standard tools, run as it is written), the data-engine calls, the evidence."""

    def __init__(self, city: T.City) -> None:
        self.city = city
        self.tau: list[dict[str, Any]] = []
        self.results: list[T.ToolResult] = []
        self.engine_path: list[dict[str, Any]] = []
        self.evidence: list[str] = []
        self.legs: dict[tuple[str, str], tuple[int, int]] = {}

    def call(self, tool: str, **arguments: Any) -> Any:
        """Run one standard-toolset call of τ*; a call that does not work rejects the case."""
        result = run_standard(self.city, tool, arguments)
        if result.failure_class == "parameter_error":
            raise Reject(f"τ* call {tool}({arguments}) failed: {result.error}")
        self.tau.append({"tool": tool, "arguments": arguments})
        self.results.append(result)
        if tool == "routing" and result.failure_class == "ok":
            p = result.payload
            self.legs[(p["start"]["place_id"], p["end"]["place_id"])] = (p["total_distance_m"], p["total_time_s"])
        return result.payload

    def need(self, *items: str) -> None:
        for it in items:
            if it not in self.evidence:
                self.evidence.append(it)


def run_standard(city: T.City, tool: str, arguments: dict[str, Any]) -> T.ToolResult:
    """One call of the standard agent toolset (Table 7) on `city`."""
    fns = {"place_search": T.place_search, "place_detail": T.place_detail, "nearby_search": T.nearby_search,
           "routing": T.routing, "search_notes": T.search_notes, "note_detail": T.note_detail}
    if tool not in fns:
        raise ValueError(f"{tool!r} is not a standard agent tool")
    if tool in ("place_search", "nearby_search", "search_notes"):
        return fns[tool](city, **arguments, toolset="standard")
    return fns[tool](city, **arguments)


def replay(city: T.City, tau: list[dict[str, Any]]) -> list[T.ToolResult]:
    """Run τ* with the standard tools."""
    return [run_standard(city, step["tool"], dict(step["arguments"])) for step in tau]


def trajectory_of(tau: list[dict[str, Any]], results: list[T.ToolResult]) -> Trajectory:
    """The trajectory an agent that walks τ* would have (for checking the reference)."""
    from geoeval.suites.lifeplanner.trajectory import ToolCallRecord

    traj = Trajectory()
    for step, res in zip(tau, results):
        traj.calls.append(ToolCallRecord(step["tool"], dict(step["arguments"]), res.failure_class, res.payload))
        traj.observed |= observed_items(step["tool"], res.payload)
        traj.legs.update(route_legs(step["tool"], res.payload))
    return traj


def check_case(city: T.City, case: Case) -> list[str]:
    """What is wrong with a case (empty: nothing). Replays τ* and checks that it shows every
    required identity, that its routing legs add up to the reference totals along the reference
    order, and that the reference answer scores A = 1, meets every constraint (SC = 1) and is
    grounded in what τ* returns (RP = 1)."""
    problems: list[str] = []
    results = replay(city, case.tau_star)
    for step, res in zip(case.tau_star, results):
        if res.failure_class == "parameter_error":
            problems.append(f"τ* call {step['tool']} fails: {res.error}")
    traj = trajectory_of(case.tau_star, results)
    missing = [e for e in case.evidence if e not in traj.observed]
    if missing:
        problems.append(f"τ* does not show the required evidence {missing}")
    try:
        parsed = parse_answer(case.task, case.level, case.answer)
    except ValueError as exc:
        return problems + [f"the reference answer does not follow the schema: {exc}"]
    if case.task in ("routing", "trip"):
        legs = [traj.leg(a, b, parsed.vehicle, parsed.mode) for a, b in zip(case.reference_order, case.reference_order[1:])]
        if any(leg is None for leg in legs):
            problems.append("τ* does not compute every leg of the reference order")
        else:
            d = sum(leg[0] for leg in legs)  # type: ignore[index]
            t = sum(leg[1] for leg in legs)  # type: ignore[index]
            if (d, t) != (case.answer["total_distance_m"], case.answer["total_time_s"]):
                problems.append(f"the legs of τ* add up to ({d}, {t}), not the reference totals "
                                f"({case.answer['total_distance_m']}, {case.answer['total_time_s']})")
    if attribute_accuracy_of(city, case.to_dict(), parsed) != 1.0:
        problems.append("the reference answer fails its own attribute requirements (A < 1)")
    failed = [c["text"] for c, ok in zip(case.constraints, constraint_results(city, case.to_dict(), parsed)) if not ok]
    if failed:
        problems.append(f"the reference answer breaks constraints {failed}")
    impure = [name for name, ok in purity_checks(city, parsed, traj) if not ok]
    if impure:
        problems.append(f"the reference answer is not grounded in τ*: {impure}")
    return problems


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class CaseEngine:
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

    # ---------------------------------------------------------------- random choices
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

    # ---------------------------------------------------------------- data-engine calls
    def de(self, tool: str, **arguments: Any) -> Any:
        """One data-engine call (Table 8), recorded in the case's engine_path."""
        fns = {"place_search": T.place_search, "nearby_search": T.nearby_search, "search_notes": T.search_notes,
               "multi_stop_routing": T.multi_stop_routing, "place_detail": T.place_detail}
        kwargs = dict(arguments)
        if tool in ("place_search", "nearby_search", "search_notes"):
            kwargs["toolset"] = "data_engine"
        res = fns[tool](self.city, **kwargs)
        self.d.engine_path.append({"tool": tool, "arguments": arguments, "failure_class": res.failure_class})
        if res.failure_class == "parameter_error":
            raise Reject(f"data-engine call {tool} failed: {res.error}")
        return res.payload

    def only_place_named(self, p: Place) -> None:
        """Figure 10's uniqueness check for a place the query names: one exact name match."""
        res = self.de("place_search", query_name=p.name)
        exact = [r["place_id"] for r in res["results"] if _norm(r["name"]) == _norm(p.name)]
        if exact != [p.id]:
            raise Reject(f"{p.name!r} does not name one place")

    def find_place(self, p: Place) -> None:
        """τ*: look the named place up (the exact match comes first)."""
        out = self.d.call("place_search", query_name=p.name)
        if not out["results"] or out["results"][0]["place_id"] != p.id:
            raise Reject("place_search does not put the named place first")
        self.d.need(f"place:{p.id}")

    def de_facts(self, p: Place) -> frozenset[str]:
        """A place's facts as the data engine reads them (full record with memory)."""
        res = self.de("place_search", query_name=p.name)
        rec = next((r for r in res["results"] if r["place_id"] == p.id), None)
        if rec is None:
            raise Reject("the data engine cannot find the place")
        return frozenset(parse_fact_groups(rec["tag"], "tag") | parse_fact_groups(rec["long_mem"], "long")
                         | parse_fact_groups(rec["short_mem"], "short"))

    def findable_note(self, p: Place, fact: str) -> tuple[str, str, list[str]]:
        """An evidence note of `fact` about `p` that a keyword search finds: (note_id, keyword, every
        evidence note of the fact that search returns). Figure 10: without one, discard the place."""
        value = fact.split(":", 2)[2]
        exact = [n for n, kind in self.idx.evidence.get((p.id, fact), []) if kind == "exact"]
        if not exact or '"' in value:
            raise Reject("no note names the place exactly while stating the fact")
        keyword = f'"{p.name}" AND "{value}"'
        found = [r["note_id"] for r in self.de("search_notes", keyword=keyword)["results"]]
        evidence = {n for n, _ in self.idx.evidence[(p.id, fact)]}
        hits = [n for n in found if n in evidence]
        if exact[0] not in hits:
            raise Reject("the evidence note is not among the search results")
        return exact[0], keyword, hits

    def show_dislike(self, trap: Place, dislike: Preference) -> None:
        """τ* steps that find and read the note showing `trap` has what the user dislikes (the
        reason it is not the answer)."""
        note, keyword, _ = self.findable_note(trap, self.satisfies(trap, dislike)[0])
        self.d.call("search_notes", keyword=keyword)
        self.d.call("note_detail", note_id=note)
        self.d.need(f"note:{note}")

    def satisfies(self, p: Place, pref: Preference) -> list[str]:
        return [f for f in pref.facts if f in p.facts]

    # ---------------------------------------------------------------- evidence for one preference
    def show_preference(self, p: Place, pref: Preference, others: list[Place],
                        search: dict[str, Any] | None = None) -> tuple[list[str], list[str]]:
        """τ* steps that show `p` meets `pref` and `others` do not; returns the ref's
        (attribute_keys, note_ids). A tag shows in the records: with `search` (nearby_search
        arguments of the candidate area) one geo_tag search singles `p` out, else each
        candidate's record is read. Memory shows only in notes: one search per candidate."""
        facts = self.satisfies(p, pref)
        tag = [f for f in facts if f.startswith("tag:")]
        if tag:
            value = tag[0].split(":", 2)[2]
            if search is not None:
                out = self.d.call("nearby_search", **search, geo_tag=[value])
                if [r["place_id"] for r in out["results"]] != [p.id]:
                    raise Reject("the tag search does not single out the place")
                self.d.call("place_detail", place_id=p.id)
            else:
                for q in [p, *others]:
                    self.d.call("place_detail", place_id=q.id)
            self.d.need(f"place:{p.id}:tag")
            return [f"tag:{value}"], []
        fact = facts[0]
        note, keyword, hits = self.findable_note(p, fact)
        value = fact.split(":", 2)[2]
        for q in others:
            self.d.call("search_notes", keyword=f'"{q.name}" AND "{value}"')
        self.d.call("search_notes", keyword=keyword)
        self.d.call("note_detail", note_id=note)
        self.d.need(f"note:{note}")
        return [], hits

    # ---------------------------------------------------------------- routing helpers
    def leg_calls(self, order: list[str], stops: list[str], vehicle: str, mode: str) -> None:
        """τ*: one routing call per pair of stops a planner must compare (every pair but start–end
        when there are stops between), in the direction the reference order travels it."""
        consecutive = set(zip(order, order[1:]))
        start, end = order[0], order[-1]
        for i, u in enumerate(stops):
            for v in stops[i + 1:]:
                if {u, v} == {start, end} and len(stops) > 2:
                    continue
                a, b = (v, u) if (v, u) in consecutive else (u, v)
                self.d.call("routing", start_place_id=a, end_place_id=b, mode=mode, vehicle=vehicle)
        for a, b in zip(order, order[1:]):
            self.d.need(route_item(a, b, vehicle, mode))

    def order_totals(self, order: list[str]) -> tuple[int, int]:
        d = t = 0
        for a, b in zip(order, order[1:]):
            if (a, b) not in self.d.legs:
                raise Reject("a leg of the reference order was not computed")
            d += self.d.legs[(a, b)][0]
            t += self.d.legs[(a, b)][1]
        return d, t

    def ranked_orders(self, stops: list[str], vehicle: str, mode: str) -> dict[str, Any]:
        """multi_stop_routing with the first stop fixed as start and the last as end."""
        out = self.de("multi_stop_routing", stop_ids=stops, start_id=stops[0], end_id=stops[-1], vehicle=vehicle,
                      mode=mode)
        return out

    @staticmethod
    def primary(route: dict[str, Any], mode: str) -> float:
        return route["total_time_s"] if mode == "time" else route["total_distance_m"]

    def unique_best(self, routes: list[dict[str, Any]], keep: list[int], mode: str) -> int:
        """Index (into routes) of the best admissible order; it must beat the next admissible one
        by the uniqueness gap."""
        if not keep:
            raise Reject("no admissible order")
        gap = _TIME_GAP_S if mode == "time" else _DIST_GAP_M
        if len(keep) > 1 and self.primary(routes[keep[1]], mode) - self.primary(routes[keep[0]], mode) < gap:
            raise Reject("the best admissible order is not unique")
        return keep[0]

    @staticmethod
    def leg_table(msr: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int]]:
        return {(leg["from"], leg["to"]): (leg["distance_m"], leg["time_s"]) for leg in msr["legs"]}

    def arrivals(self, order: list[str], legs: dict, departure: int, dwell: int) -> list[float]:
        return arrival_minutes([legs[(a, b)][1] for a, b in zip(order, order[1:])], departure, dwell)

    def time_feasibility(self, order: list[str], legs: dict, weekday: int, departure: int,
                         dwell: int) -> tuple[bool, float]:
        """(every stop open on arrival, smallest distance in minutes of an arrival to an opening
        or closing time)."""
        ok, margin = True, math.inf
        for p, t in zip(order[1:-1], self.arrivals(order, legs, departure, dwell)):
            h = self.idx.hours_of(self.idx.by_id[p])
            ok = ok and _open(h, weekday, t)
            margin = min(margin, boundary_margin(h, weekday, t))
        return ok, margin

    def stop_answer(self, start: Place, end: Place, stops: list[tuple[Place, str, dict[str, str] | None, bool]],
                    order: list[str], vehicle: str, mode: str, totals: tuple[int, int],
                    start_reason: str = "User-specified origin.", end_reason: str = "User-specified destination.") \
            -> dict[str, Any]:
        ans: dict[str, Any] = {"start": place_stop(start, start_reason), "end": place_stop(end, end_reason)}
        if stops:
            wps = []
            for p, reason, ref, implicit in stops:
                w: dict[str, Any] = place_stop(p, reason)
                if ref is not None:
                    w["ref"] = ref
                if implicit:
                    w["implicit_logic"] = "True"
                wps.append(w)
            ans["waypoints"] = wps
            ans["optimal_order"] = optimal_order([self.idx.by_id[p] for p in order])
        ans.update({"vehicle": vehicle, "mode": mode, "total_distance_m": totals[0], "total_time_s": totals[1]})
        return ans

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

    def clear_band(self, center: Place, places: list[Place], radius: float) -> bool:
        ds = self.idx.distances(center, [p for p in places if p.id != center.id])
        return not np.any(np.abs(ds - radius) < _RADIUS_BAND_M)

    @staticmethod
    def clean_radius(reach: float, distances: Any, step: int = 10, tries: int = 30) -> int:
        """The smallest radius (a multiple of `step`) that reaches `reach` with `_RADIUS_BAND_M`
        to spare and has no distance in `distances` within that band of it, so that rounding
        (and the agent's own arithmetic) never decides what is inside."""
        ds = np.asarray(list(distances), dtype=float)
        radius = int(math.ceil((reach + _RADIUS_BAND_M) / step) * step)
        for _ in range(tries):
            if not np.any(np.abs(ds - radius) < _RADIUS_BAND_M):
                return radius
            radius += step
        raise Reject("no clean radius")

    # ================================================================ Place Perception
    def place_l0(self) -> dict[str, Any]:
        kind = self.pick(["opentime_week", "opentime_week", "rating", "cost", "address", "tag"])
        p = self.pick(self.idx.unique_named)
        persona = self.persona()
        if kind == "opentime_week":
            if not p.hours:
                raise Reject("hours not available")
            q = self.pick([f"What are the opening hours of {p.name}?",
                           f"{persona}When is {p.name} open during the week?",
                           f"Could you tell me the business hours of {p.name}?"])
        elif kind == "rating":
            if p.rating is None:
                raise Reject("no rating")
            q = self.pick([f"What rating does {p.name} have?", f"{persona}How well rated is {p.name}?"])
        elif kind == "cost":
            if p.cost is None:
                raise Reject("no cost")
            q = self.pick([f"How much does {p.name} cost per person?",
                           f"{persona}What's the average spend per person at {p.name}?"])
        elif kind == "address":
            q = self.pick([f"What is the address of {p.name}?", f"{persona}Where exactly is {p.name}?"])
        else:
            own = p.tag_facts
            cat = next((c for c in CATEGORIES if c.place_type == p.place_type), None)
            if cat is None:  # a real (OSM) place type outside the synthetic vocabulary
                raise Reject("no tag vocabulary for the place type")
            vocab = [f"tag:{k}:{v}" for k, vs in cat.tags for v in vs]
            missing = [f for f in vocab if f.split(":", 2)[2].casefold() not in p.tag.casefold()]
            want = self.chance(0.5)
            pool = own if want else missing
            if not pool:
                raise Reject("no tag to ask about")
            fact = self.pick(pool)
            value = fact.split(":", 2)[2]
            q = self.pick([f"Does {p.name} have {value.lower()}?", f"{persona}Can I expect {value.lower()} at {p.name}?"])
        self.only_place_named(p)
        self.find_place(p)
        if kind in ("rating", "cost"):
            value_out: Any = self.d.results[-1].payload["results"][0][kind]
            key = kind
        else:
            det = self.d.call("place_detail", place_id=p.id)
            if kind == "tag":
                value_out = value.casefold() in det["tag"].casefold()
                key = f"tag:{value}"
            else:
                value_out = det[kind]
                key = kind
        self.d.need(f"place:{p.id}:{'tag' if kind == 'tag' else kind}")
        return dict(
            signature=("place_l0", p.id, kind, key), question=q.strip(),
            answer={"answer": value_out, "ref": ref_block("l0", [key], [], notes_field=True)},
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["value", "==", value_out]]}],
            constraints=[], reference_places=[p.id], reference_order=[],
            context={"kind": kind, "place": p.id})

    def _neighbours(self, p: Place, pool: list[Place], k: int, max_d: float = 1500.0) -> list[Place]:
        others = [o for o in pool if o.id != p.id]
        ds = self.idx.distances(p, others)
        order = sorted((float(d), o.id, o) for d, o in zip(ds, others) if d <= max_d)
        return [o for _, _, o in order[:k]]

    def _social_verdict(self, persona: str) -> dict[str, Any]:
        """Place L1 that only social-media posts answer (Figure 1: "Is Boyi Optical an authorized
        Zeiss store ...? True", grounded in a note): does a named place have a stated memory
        fact? Yes: a note names the place exactly and states it (τ*: the search that finds it and
        the note). No: the place has no fact meaning it (both ways, `lexicon.STEMS`) and the
        data engine's note search for the place and the value finds nothing."""
        p = self.pick(self.idx.unique_named)
        want = self.chance(0.5)
        own = sorted(f for f in p.facts if f.startswith(("long:", "short:")))
        if want:
            fact = self.pick(own)
            note, keyword, hits = self.findable_note(p, fact)
        else:
            profile = PROFILE_OF.get(p.place_type, "shop")
            vocab = [f"{src}:{k}:{v}" for src, table in (("long", LONG_MEM_VOCAB), ("short", SHORT_MEM_VOCAB))
                     for k, entries in table for v, profiles in entries if profile in profiles.split()]
            fact = self.pick([f for f in vocab if f not in p.facts])
            meaning = [pref for pref in (*PREFERENCES, *DISLIKES) if fact in pref.facts]
            if any(self.satisfies(p, pref) for pref in meaning):
                raise Reject("the place has a fact that means the same")
            value = fact.split(":", 2)[2]
            keyword = f'"{p.name}" AND "{value}"'
            if '"' in value or self.de("search_notes", keyword=keyword)["results"]:
                raise Reject("a note about the place mentions the value")
            note, hits = None, []
        key, value = fact.split(":", 2)[1:]
        if key == "Atmosphere":
            q = f"{persona}Is {p.name} {value}, according to social-media posts?"
        else:
            q = self.pick([f"{persona}Do social-media posts about {p.name} mention {value}?",
                           f"I saw something online. Do people's posts about {p.name} mention {value}?"])
        self.only_place_named(p)
        self.find_place(p)
        self.d.call("search_notes", keyword=keyword)
        if note:
            self.d.call("note_detail", note_id=note)
            self.d.need(f"note:{note}")
        return dict(
            signature=("place_l1", "social_verdict", p.id, fact), question=q.strip(),
            answer={"answer": want,
                    "reason": (f"A post about {p.name} says so." if want else
                               f"No post about {p.name} mentions {value}."),
                    "ref": ref_block("l1", [], hits if want else [], notes_field=True)},
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["value", "==", want]]}],
            constraints=[{"kind": "value_equals", "expected": want,
                          "text": f"The verdict follows what posts about {p.name} say about {value}."}],
            reference_places=[p.id], reference_order=[], context={"kind": "social_verdict", "fact": fact})

    def place_l1(self) -> dict[str, Any]:
        kinds = ["open_verdict", "open_verdict", "compare", "which_open"]
        kind = self.pick(kinds + ["social_verdict"] * 2 if self.l1_social else kinds)
        persona = self.persona()
        if kind == "social_verdict":
            return self._social_verdict(persona)
        if kind == "open_verdict":
            p = self.pick([x for x in self.idx.unique_named if x.hours])
            h = self.idx.hours_of(p)
            want = self.chance(0.5)
            for _ in range(40):
                wd, t = self.weekday_time(7 * 60, 23 * 60 + 30)
                if _open(h, wd, t) == want and boundary_margin(h, wd, t) >= 20:
                    break
            else:
                raise Reject("no time with the wanted verdict")
            day, hhmm = DAYS[wd], minute_to_hhmm(t)
            q = self.pick([f"{persona}I'll pass by {p.name} on {day} at {hhmm}. Will it be open?",
                           f"Is {p.name} open on {day} at {hhmm}?",
                           f"{persona}Can I still go to {p.name} at {hhmm} on a {day}?"])
            self.only_place_named(p)
            self.find_place(p)
            self.d.call("place_detail", place_id=p.id)
            self.d.need(f"place:{p.id}:opentime_week")
            verdict = bool(_open(h, wd, t))
            return dict(
                signature=("place_l1", kind, p.id, wd, t), question=q.strip(),
                answer={"answer": verdict,
                        "reason": f"{p.name} opens {p.hours}; on {day} at {hhmm} it is {'open' if verdict else 'closed'}.",
                        "ref": ref_block("l1", ["opentime_week"], [], notes_field=True)},
                implicit_logic=False,
                requirements=[{"scope": "answer", "requirements": [["value", "==", verdict]]}],
                constraints=[{"kind": "value_equals", "expected": verdict,
                              "text": f"The verdict follows {p.name}'s opening hours on {day} at {hhmm}."}],
                reference_places=[p.id], reference_order=[], context={"kind": kind, "weekday": day, "time": hhmm})
        sub = self.pick(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 3))
        pool = [x for x in self.idx.unique_named if x.sub == sub]
        p = self.pick(pool)
        n = 3 if self.chance(0.7) else 2
        group = [p, *self._neighbours(p, pool, n - 1)]
        if len(group) < n:
            raise Reject("not enough neighbours")
        group = [group[i] for i in self.rng.permutation(len(group))]
        names = [g.name for g in group]
        noun_pl = TYPE_NOUNS[sub][1]
        if kind == "compare":
            attr = self.pick(["rating", "cost"])
            vals = [getattr(g, attr) for g in group]
            if any(v is None for v in vals):
                raise Reject("missing values")
            best_val = max(vals) if attr == "rating" else min(vals)
            ranked = sorted(vals, reverse=attr == "rating")
            if abs(ranked[0] - ranked[1]) < (0.2 if attr == "rating" else 5):
                raise Reject("too close to call")
            winner = group[vals.index(best_val)]
            if attr == "rating":
                q = self.pick([f"{persona}Between {_list_words(names)}, which one has the best rating?",
                               f"Which is rated highest: {_or_words(names)}?"])
                req = ["rating", ">=", best_val]
            else:
                q = self.pick([f"{persona}Which is cheapest per person: {_or_words(names)}?",
                               f"I'm on a budget. Among {_list_words(names)}, which costs the least per person?"])
                req = ["cost", "<=", best_val]
            for g in group:
                self.only_place_named(g)
            for g in group:
                self.find_place(g)
                self.d.need(f"place:{g.id}:{attr}")
            reason = f"{winner.name} has the {'highest rating' if attr == 'rating' else 'lowest cost'} ({best_val:g})."
            keys = [attr]
        else:  # which_open
            hs = [self.idx.hours_of(g) for g in group]
            if any(not h.known for h in hs):
                raise Reject("unknown hours")
            for _ in range(60):
                wd, t = self.weekday_time(6 * 60, 23 * 60 + 55)
                opens = [_open(h, wd, t) for h in hs]
                if sum(opens) == 1 and min(boundary_margin(h, wd, t) for h in hs) >= 20:
                    break
            else:
                raise Reject("no time when exactly one is open")
            winner = group[opens.index(True)]
            day, hhmm = DAYS[wd], minute_to_hhmm(t)
            q = self.pick([f"{persona}It's {day}, {hhmm}. Which of {_list_words(names)} is open right now?",
                           f"Which of these {noun_pl} can I still visit on {day} at {hhmm}: {_list_words(names)}?"])
            req = ["opentime_week", "open_at", [day, hhmm]]
            for g in group:
                self.only_place_named(g)
            for g in group:
                self.find_place(g)
                self.d.call("place_detail", place_id=g.id)
                self.d.need(f"place:{g.id}:opentime_week")
            reason = f"Only {winner.name} is open on {day} at {hhmm} ({winner.hours})."
            keys = ["opentime_week"]
        cands = [g.id for g in group]
        return dict(
            signature=("place_l1", kind, tuple(sorted(cands)), str(req)), question=q.strip(),
            answer={"answer": winner.name, "reason": reason, "ref": ref_block("l1", keys, [], notes_field=True)},
            implicit_logic=False,
            requirements=[{"scope": "answer_place", "requirements": [req, ["place_id", "in", cands]]}],
            constraints=[{"kind": "place_requirement", "role": "answer_place", "requirement": req,
                          "text": f"The chosen place satisfies {req[0]} {req[1]} {req[2]}."},
                         {"kind": "place_requirement", "role": "answer_place", "requirement": ["place_id", "in", cands],
                          "text": f"The chosen place is one of {_list_words(names)}."}],
            reference_places=[winner.id], reference_order=[], context={"kind": kind, "candidates": cands})

    def _record_facts(self, rec: dict[str, Any]) -> frozenset[str]:
        return frozenset(parse_fact_groups(rec.get("tag"), "tag") | parse_fact_groups(rec.get("long_mem"), "long")
                         | parse_fact_groups(rec.get("short_mem"), "short"))

    def _fitting_in_area(self, center: str, radius: float, pref: Preference, dislike: Preference | None = None,
                         place_types: list[str] | None = None) -> list[str]:
        """Figure 10's uniqueness check for an area the query only implies: every place (of
        `place_types`, else of any type) within `radius` of `center` whose full record (memory
        included) fits `pref` and has none of `dislike`'s facts."""
        args: dict[str, Any] = {"center": center, "radius_meters": radius}
        if place_types:
            args["place_types"] = place_types
        records: dict[str, dict[str, Any]] = {}
        mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
        tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
        for key, values in (("social_mem", mem), ("geo_tag", tags)):
            if not values:
                continue
            res = self.de("nearby_search", **args, **{key: values})
            if res["total_matched"] > res["returned"]:
                raise Reject("more places match than the data engine returns")
            records.update({r["place_id"]: r for r in res["results"]})
        kinds = [t for t in TYPES_MEANING.get(pref.key, ()) if not place_types or t in place_types]
        if kinds:  # places that fit by their type alone
            res = self.de("nearby_search", **{**args, "place_types": kinds})
            if res["total_matched"] > res["returned"]:
                raise Reject("more places match than the data engine returns")
            records.update({r["place_id"]: {**r, "_fits_by_type": True} for r in res["results"]})
        out = []
        for pid, rec in sorted(records.items(), key=lambda kv: kv[1].get("distance_m", 0)):
            facts = self._record_facts(rec)
            fits = rec.get("_fits_by_type") or any(f in facts for f in pref.facts)
            if fits and not (dislike and any(f in facts for f in dislike.facts)):
                out.append(pid)
        return out

    def _area_radius(self, center: Place, d_answer: float, places: list[Place]) -> int:
        """The area "near X" means when the query states no radius: twice the answer's distance and
        at least `_AREA_FLOOR_M` beyond it, clear by the rounding band of every place in `places`
        (the ones that could change the answer: the candidates' type, or everything that fits)."""
        return self.clean_radius(max(2.0 * d_answer, d_answer + _AREA_FLOOR_M),
                                 self.idx.distances(center, [p for p in places if p.id != center.id]), step=10)

    def place_l2(self) -> dict[str, Any]:
        return self._place_l2_paper() if self.paper else self._place_l2_explicit()

    def _place_l2_paper(self) -> dict[str, Any]:
        """Figure 1's Place L2 ("... I absolutely hate mosquitoes. Which cafe should I choose?"):
        the query names the type and where the user is, never the candidates or a radius. The
        candidates are every place of the type near the anchor (`_area_radius`)."""
        pref = self.pick(PREFERENCES)
        a = self.pick([p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS])
        named = [p for p in self.idx.unique_named if p.sub != a.sub]
        ds = self.idx.distances(a, named)
        anchor = self.pick([p for p, d in zip(named, ds) if 30.0 <= d <= 250.0])
        d_a = float(self.idx.distances(anchor, [a])[0])
        same = [p for p in self.idx.by_sub[a.sub] if p.id != anchor.id]
        radius = self._area_radius(anchor, d_a, same)
        cands, _ = self.within(anchor, same, radius)
        if not 2 <= len(cands) <= 8:
            raise Reject("candidate set not clean")
        dislike = self.pick(DISLIKES) if self.chance(0.5) else None
        if dislike and self.satisfies(a, dislike):
            raise Reject("the answer has the dislike")
        trap = [c for c in cands if c.id != a.id and self.satisfies(c, pref) and dislike and self.satisfies(c, dislike)]
        if dislike and not trap:
            raise Reject("no distractor with the dislike")
        self.only_place_named(anchor)
        if self._fitting_in_area(anchor.id, radius, pref, dislike, [a.sub]) != [a.id]:
            raise Reject("the full records do not single out the answer")
        noun = TYPE_NOUNS[a.sub][0]
        need = self.pick(pref.phrases)
        dis = ""
        if dislike:
            phrase = self.pick(dislike.phrases)
            dis = f", and {phrase[0].lower()}{phrase[1:]}"
        q = self.pick([f"{self.persona()}I'm near {anchor.name}. {need[0].upper()}{need[1:]}{dis}. "
                       f"Which {noun} should I choose?",
                       f"{need[0].upper()}{need[1:]}{dis}. Which {noun} around {anchor.name} should I go to?"])
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=[a.sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(c.id for c in cands) or out["returned"] != len(cands):
            raise Reject("nearby_search lists another candidate set")
        ordered = [self.idx.by_id[i] for i in listed]
        keys, notes = self.show_preference(a, pref, [c for c in ordered if c.id != a.id])
        if dislike:
            self.show_dislike(trap[0], dislike)
        ids = [c.id for c in cands]
        constraints = [
            {"kind": "has_preference", "role": "answer_place", "facts": list(pref.facts),
             "text": f"The chosen place fits the need: {need}."},
            {"kind": "place_requirement", "role": "answer_place", "requirement": ["place_type", "contains", a.sub],
             "text": f"The chosen place is a {noun}."},
            {"kind": "within_radius", "role": "answer_place", "center": anchor.id, "radius_m": radius,
             "text": f"The chosen place is near {anchor.name} (within {radius} m)."}]
        if dislike:
            constraints.append({"kind": "lacks_preference", "role": "answer_place", "facts": list(dislike.facts),
                                "text": f"The chosen place avoids what the user dislikes ({dislike.phrases[0]})."})
        return dict(
            signature=("place_l2", a.id, pref.key, anchor.id), question=q.strip(),
            answer={"answer": a.name,
                    "reason": f"{a.name} is the only {noun} near {anchor.name} whose {'tags' if keys else 'posts'} "
                              f"show it fits: {need}.",
                    "ref": ref_block("l2", keys, notes, notes_field=True), "implicit_logic": "True"},
            implicit_logic=True,
            requirements=[{"scope": "answer_place", "requirements": [["place_id", "in", ids]]}],
            constraints=constraints, reference_places=[a.id], reference_order=[],
            context={"kind": "preference", "preference": pref.key, "dislike": dislike.key if dislike else None,
                     "candidates": ids, "anchor": anchor.id, "radius_m": radius, "phrasing": "paper"})

    def _place_l2_explicit(self) -> dict[str, Any]:
        pref = self.pick(PREFERENCES)
        holders = [p for p in self.idx.unique_named if self.satisfies(p, pref)]
        a = self.pick(holders)
        pool = [x for x in self.idx.unique_named if x.sub == a.sub]
        dislike = None
        others: list[Place] = []
        near = self._neighbours(a, pool, 8)
        if self.chance(0.5):
            dislike = self.pick(DISLIKES)
            if self.satisfies(a, dislike):
                raise Reject("the answer has the dislike")
            trap = [o for o in near if self.satisfies(o, pref) and self.satisfies(o, dislike)]
            if not trap:
                raise Reject("no distractor with the dislike")
            others.append(trap[0])
        plain = [o for o in near if not self.satisfies(o, pref) and o not in others]
        n_plain = (1 if others else int(self.pick([1, 2])))
        if len(plain) < n_plain:
            raise Reject("no plain candidates")
        others += plain[:n_plain]
        group = [a, *others]
        group = [group[i] for i in self.rng.permutation(len(group))]
        names = [g.name for g in group]
        # Figure 10: verify with the full records that a is the only candidate that fits
        for g in group:
            self.only_place_named(g)
            facts = self.de_facts(g)
            fits = any(f in facts for f in pref.facts) and not (dislike and any(f in facts for f in dislike.facts))
            if fits != (g.id == a.id):
                raise Reject("the memory check does not single out the answer")
        noun = TYPE_NOUNS.get(a.sub, (a.sub.lower(), ""))[0]
        need = self.pick(pref.phrases)
        dis = ""
        if dislike:
            phrase = self.pick(dislike.phrases)
            dis = f", and {phrase[0].lower()}{phrase[1:]}"
        q = self.pick([f"{self.persona()}{need[0].upper()}{need[1:]}{dis}. Which {noun} should I choose: {_or_words(names)}?",
                       f"{need[0].upper()}{need[1:]}{dis}. Between {_list_words(names)}, where should I go?"])
        for g in group:
            self.find_place(g)
        keys, notes = self.show_preference(a, pref, others)
        if dislike:
            self.show_dislike(others[0], dislike)
        cands = [g.id for g in group]
        constraints = [
            {"kind": "has_preference", "role": "answer_place", "facts": list(pref.facts),
             "text": f"The chosen place fits the need: {need}."},
            {"kind": "place_requirement", "role": "answer_place", "requirement": ["place_id", "in", cands],
             "text": f"The chosen place is one of {_list_words(names)}."}]
        if dislike:
            constraints.append({"kind": "lacks_preference", "role": "answer_place", "facts": list(dislike.facts),
                                "text": f"The chosen place avoids what the user dislikes ({dislike.phrases[0]})."})
        return dict(
            signature=("place_l2", a.id, pref.key, tuple(sorted(cands))), question=q.strip(),
            answer={"answer": a.name,
                    "reason": f"{a.name} is the only one whose {'tags' if keys else 'posts'} show it fits: {need}.",
                    "ref": ref_block("l2", keys, notes, notes_field=True), "implicit_logic": "True"},
            implicit_logic=True,
            requirements=[{"scope": "answer_place", "requirements": [["place_id", "in", cands]]}],
            constraints=constraints, reference_places=[a.id], reference_order=[],
            context={"kind": "preference", "preference": pref.key, "dislike": dislike.key if dislike else None,
                     "candidates": cands})

    # ================================================================ Nearby Discovery
    def nearby_l0(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        sub = self.pick(sorted(s for s in TYPE_NOUNS if self.idx.by_sub.get(s)))
        pool = [p for p in self.idx.by_sub[sub] if p.id != anchor.id]
        ds = np.sort(self.idx.distances(anchor, pool))
        k = int(self.pick([1, 1, 2, 2, 3]))
        if len(ds) < k:
            raise Reject("too few places of the type")
        step = int(self.pick([50, 10]))
        radius = self.clean_radius(float(ds[k - 1]), ds, step=step, tries=1)
        if radius > 1500 or int(np.sum(ds <= radius)) != k:
            raise Reject("no clean radius")
        found, dist = self.within(anchor, pool, radius)
        noun, plural = TYPE_NOUNS[sub]
        q = self.pick([f"Which {plural} are within {radius} m of {anchor.name}?",
                       f"{self.persona()}List every {noun} within {radius} metres of {anchor.name}.",
                       f"I'm at {anchor.name}. Are there any {plural} within {radius} m?"])
        self.only_place_named(anchor)
        res = self.de("nearby_search", center=anchor.id, radius_meters=radius, place_types=[sub])
        if sorted(r["place_id"] for r in res["results"]) != sorted(p.id for p in found):
            raise Reject("the data engine sees another set")
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=[sub])
        if [r["place_id"] for r in out["results"]] != [p.id for p in found]:
            raise Reject("nearby_search shows another set")
        for p in found:
            self.d.need(f"place:{p.id}", f"place:{p.id}:place_type")
        return dict(
            signature=("nearby_l0", anchor.id, sub), question=q.strip(),
            answer={"answer": [{"name": p.name, "place_id": p.id,
                                "reason": f"A {noun} {int(math.floor(d + 0.5))} m from {anchor.name}.",
                                "ref": ref_block("l0", ["place_type"], [], notes_field=False)}
                               for p, d in zip(found, dist)]},
            implicit_logic=False,
            requirements=[{"scope": "places", "requirements": [["place_type", "contains", sub],
                                                               ["distance_m", "<=", radius]]}],
            constraints=[], reference_places=[p.id for p in found], reference_order=[],
            context={"anchor": anchor.id, "radius_m": radius, "place_type": sub})

    def nearby_l1(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        sub = self.pick(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 4))
        pool = [p for p in self.idx.unique_named if p.sub == sub]
        all_same = [p for p in self.idx.by_sub[sub] if p.id != anchor.id]
        radius = self.clean_radius(float(self.pick([250, 350, 450, 550, 750, 950])),
                                   self.idx.distances(anchor, all_same), step=50, tries=4)
        cands, _ = self.within(anchor, pool, radius)
        # filters chosen so that 2-5 candidates remain: few enough to check each one's hours
        costs = sorted({float(int(math.ceil(p.cost / 10.0) * 10)) for p in cands if p.cost is not None})
        options = [(r, c) for r in (None, 3.5, 3.8, 4.0, 4.2, 4.5) for c in (None, *costs) if (r, c) != (None, None)]
        options = [options[i] for i in self.rng.permutation(len(options))]
        for min_rating, max_cost in options:
            kept = [p for p in cands if (min_rating is None or (p.rating is not None and p.rating >= min_rating))
                    and (max_cost is None or (p.cost is not None and p.cost <= max_cost))]
            if 2 <= len(kept) <= 5 and all(p.hours for p in kept):
                break
        else:
            raise Reject("no filters leave 2-5 candidates")
        hs = [self.idx.hours_of(p) for p in kept]
        for _ in range(60):
            wd, t = self.weekday_time(7 * 60, 23 * 60 + 55)
            opens = [_open(h, wd, t) for h in hs]
            if sum(opens) == 1 and min(boundary_margin(h, wd, t) for h in hs) >= 15:
                break
        else:
            raise Reject("no time when exactly one is open")
        ans = kept[opens.index(True)]
        day, hhmm = DAYS[wd], minute_to_hhmm(t)
        noun = TYPE_NOUNS[sub][0]
        conds = []
        if min_rating is not None:
            conds.append(f"rated at least {min_rating:g}")
        if max_cost is not None:
            conds.append(f"no more than {max_cost:g} CNY per person")
        conds.append(f"open on {day} at {hhmm}")
        q = self.pick([f"{self.persona()}Find a {noun} within {radius} m of {anchor.name} that is {_list_words(conds)}.",
                       f"I need a {noun} near {anchor.name} (at most {radius} m away), {_list_words(conds)}. Which one?"])
        args: dict[str, Any] = {"center": anchor.id, "radius_meters": radius, "place_types": [sub]}
        if min_rating is not None:
            args["min_rating"] = min_rating
        if max_cost is not None:
            args["max_cost"] = max_cost
        self.only_place_named(anchor)
        res = self.de("nearby_search", **args)
        if sorted(r["place_id"] for r in res["results"]) != sorted(p.id for p in kept):
            raise Reject("the data engine sees another candidate set")
        self.find_place(anchor)
        out = self.d.call("nearby_search", **args)
        if sorted(r["place_id"] for r in out["results"]) != sorted(p.id for p in kept) or out["returned"] != len(kept):
            raise Reject("nearby_search shows another candidate set")
        for p in sorted(kept, key=lambda p: [r["place_id"] for r in out["results"]].index(p.id)):
            self.d.call("place_detail", place_id=p.id)
        reqs = [["place_type", "contains", sub], ["distance_m", "<=", radius], ["opentime_week", "open_at", [day, hhmm]]]
        keys = ["opentime_week"]
        if min_rating is not None:
            reqs.append(["rating", ">=", min_rating])
            keys.append("rating")
        if max_cost is not None:
            reqs.append(["cost", "<=", max_cost])
            keys.append("cost")
        self.d.need(*(f"place:{ans.id}:{k}" for k in keys))
        texts = {"place_type": f"It is a {noun}.", "distance_m": f"It is within {radius} m of {anchor.name}.",
                 "opentime_week": f"It is open on {day} at {hhmm}.", "rating": f"It is rated at least {min_rating}.",
                 "cost": f"It costs at most {max_cost} CNY per person."}
        return dict(
            signature=("nearby_l1", anchor.id, sub, radius, min_rating, max_cost, wd, t), question=q.strip(),
            answer={"answer": [{"name": ans.name, "place_id": ans.id,
                                "reason": f"The only {noun} within {radius} m meeting the filters that is open then "
                                          f"({ans.hours}).",
                                "ref": ref_block("l1", keys, [], notes_field=True)}]},
            implicit_logic=False,
            requirements=[{"scope": "places", "requirements": reqs}],
            constraints=[{"kind": "place_requirement", "role": "places", "requirement": r, "text": texts[r[0]]}
                         for r in reqs],
            reference_places=[ans.id], reference_order=[],
            context={"anchor": anchor.id, "radius_m": radius, "place_type": sub, "weekday": day, "time": hhmm})

    def nearby_l2(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        pref = self.pick(PREFERENCES)
        holders = [p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS
                   and p.id != anchor.id]
        ds = self.idx.distances(anchor, holders)
        near = sorted((float(d), p.id, p) for d, p in zip(ds, holders) if d <= 500)
        if not near:
            raise Reject("no fitting place near the anchor")
        # the nearest fitting place of one type: nothing of that type fits closer
        sub = self.pick(sorted({p.sub for _, _, p in near}))
        d_ans, _, ans = next(x for x in near if x[2].sub == sub)
        same = [p for p in self.idx.by_sub[sub] if p.id != anchor.id]
        radius = self.clean_radius(d_ans + float(self.pick([0, 30, 80])), self.idx.distances(anchor, same), step=10)
        cands, _ = self.within(anchor, [p for p in self.idx.unique_named if p.sub == sub], radius)
        inside_all, _ = self.within(anchor, same, radius)
        tag_pref = any(f.startswith("tag:") for f in self.satisfies(ans, pref))
        limit = T.STANDARD_LIMITS["nearby_search"] if tag_pref else 6  # a tag is found by one geo_tag search
        if len(inside_all) != len(cands) or not 2 <= len(cands) <= limit:
            raise Reject("candidate set not clean")
        if [p for p in cands if self.satisfies(p, pref)] != [ans]:
            raise Reject("the preference does not single out one place")
        timed = self.chance(0.5)
        h = self.idx.hours_of(ans)
        day = hhmm = None
        if timed:
            for _ in range(40):
                wd, t = self.weekday_time(7 * 60, 23 * 60 + 55)
                if _open(h, wd, t) and boundary_margin(h, wd, t) >= 20:
                    day, hhmm = DAYS[wd], minute_to_hhmm(t)
                    break
            else:
                raise Reject("no open time")
        noun = TYPE_NOUNS[sub][0]
        need = self.pick(pref.phrases)
        when = f" It's {day}, {hhmm}." if timed else ""
        area = None
        if self.paper:  # Figure 1's Nearby L2: where the user is and what they need; no type, no radius
            fitting = [p for p in self.idx.places if self.satisfies(p, pref)]
            area = self._area_radius(anchor, d_ans, fitting)
            if self._fitting_in_area(anchor.id, area, pref) != [ans.id]:
                raise Reject("another place of any type near the anchor fits")
            q = self.pick([f"{self.persona()}I'm near {anchor.name} and {need}.{when} Where should I go?",
                           f"{need[0].upper()}{need[1:]}.{when} I'm around {anchor.name}; which place nearby suits me?"])
        else:
            q = self.pick([f"{self.persona()}I'm near {anchor.name} and {need}.{when} Which {noun} within {radius} m should I go to?",
                           f"{need[0].upper()}{need[1:]}.{when} Is there a {noun} within {radius} m of {anchor.name} for me?"])
        self.only_place_named(anchor)
        # Figure 10: the full records (memory included) single out the answer within the radius
        found: set[str] = set()
        mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
        tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
        if mem:
            found |= {r["place_id"] for r in self.de("nearby_search", center=anchor.id, radius_meters=radius,
                                                      place_types=[sub], social_mem=mem)["results"]}
        if tags:
            found |= {r["place_id"] for r in self.de("nearby_search", center=anchor.id, radius_meters=radius,
                                                      place_types=[sub], geo_tag=tags)["results"]}
        if found != {ans.id}:
            raise Reject("the data engine finds another fitting place")
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=[sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(p.id for p in cands):
            raise Reject("nearby_search lists another set")
        ordered = [self.idx.by_id[i] for i in listed]
        keys, notes = self.show_preference(ans, pref, [p for p in ordered if p.id != ans.id],
                                           search={"center": anchor.id, "radius_meters": radius, "place_types": [sub]})
        reqs: list[list[Any]] = [["place_type", "contains", sub], ["distance_m", "<=", radius]]
        constraints = [{"kind": "has_preference", "role": "places", "facts": list(pref.facts),
                        "text": f"The place fits the need: {need}."},
                       {"kind": "within_radius", "role": "places", "center": anchor.id, "radius_m": radius,
                        "text": f"It is within {radius} m of {anchor.name}."},
                       {"kind": "place_requirement", "role": "places", "requirement": ["place_type", "contains", sub],
                        "text": f"It is a {noun}."}]
        if area is not None:  # the query states neither: the answer is the one fitting place near the anchor
            reqs = [["distance_m", "<=", area]]
            constraints = [constraints[0], {"kind": "within_radius", "role": "places", "center": anchor.id,
                                            "radius_m": area, "text": f"It is near {anchor.name} (within {area} m)."}]
        if timed:
            if not self.d.tau or self.d.tau[-1] != {"tool": "place_detail", "arguments": {"place_id": ans.id}}:
                self.d.call("place_detail", place_id=ans.id)
            keys = keys + ["opentime_week"]
            self.d.need(f"place:{ans.id}:opentime_week")
            reqs.append(["opentime_week", "open_at", [day, hhmm]])
            constraints.append({"kind": "place_requirement", "role": "places",
                                "requirement": ["opentime_week", "open_at", [day, hhmm]],
                                "text": f"It is open on {day} at {hhmm}."})
        return dict(
            signature=("nearby_l2", anchor.id, ans.id, pref.key), question=q.strip(),
            answer={"answer": [{"name": ans.name, "place_id": ans.id,
                                "reason": (f"The only place near {anchor.name} that fits: {need}." if area else
                                           f"The only {noun} within {radius} m of {anchor.name} that fits: {need}."),
                                "ref": ref_block("l2", keys, notes, notes_field=True), "implicit_logic": "True"}]},
            implicit_logic=True,
            requirements=[{"scope": "places", "requirements": reqs}], constraints=constraints,
            reference_places=[ans.id], reference_order=[],
            context={"anchor": anchor.id, "radius_m": area or radius, "place_type": sub, "preference": pref.key,
                     "weekday": day, "time": hhmm, "phrasing": "paper" if area else "explicit"})

    # ================================================================ Routing
    def _vehicle_mode(self) -> tuple[str, str]:
        return str(self.pick(["driving", "driving", "cycling", "walking"])), str(self.pick(["time", "time", "distance"]))

    def routing_l0(self) -> dict[str, Any]:
        a, b = self.endpoints(500.0, 3500.0)
        vehicle, mode = self._vehicle_mode()
        adj = self.pick(MODE_WORDS[mode])
        q = self.pick([f"What's the {adj} {vehicle} route from {a.name} to {b.name}?",
                       f"{self.persona()}I'm {vehicle} from {a.name} to {b.name}. Which route is {adj}, and how long is it?",
                       f"{adj.capitalize()} {vehicle} route from {a.name} to {b.name}?"])
        self.only_place_named(a)
        self.only_place_named(b)
        self.find_place(a)
        self.find_place(b)
        self.leg_calls([a.id, b.id], [a.id, b.id], vehicle, mode)
        totals = self.order_totals([a.id, b.id])
        return dict(
            signature=("routing_l0", a.id, b.id, vehicle, mode), question=q.strip(),
            answer=self.stop_answer(a, b, [], [a.id, b.id], vehicle, mode, totals),
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["vehicle", "==", vehicle], ["mode", "==", mode],
                                                             ["start_id", "==", a.id], ["end_id", "==", b.id]]}],
            constraints=[], reference_places=[a.id, b.id], reference_order=[a.id, b.id],
            context={"vehicle": vehicle, "mode": mode})

    def _nearest_on_route(self, a: Place, b: Place, sub: str, vehicle: str, mode: str,
                          exclude: set[str]) -> tuple[Place, float]:
        """The place of `sub` nearest to the a→b route; unique by 10 m, the same whether the
        route is the fastest or the shortest one (an agent may omit the mode)."""
        pool = [p for p in self.idx.by_sub.get(sub, []) if p.id not in {a.id, b.id}]
        if len(pool) < 2:
            raise Reject("too few places of the type")
        best_ids = set()
        for m in ("time", "distance"):
            ds = T.route_buffer_distances(self.city, a.id, b.id, vehicle, m, [p.id for p in pool])
            if ds is None:
                raise Reject("no route")
            order = sorted(range(len(pool)), key=lambda i: (ds[i], pool[i].id))
            if ds[order[1]] - ds[order[0]] < 10 or ds[order[0]] > 800:
                raise Reject("no clear nearest place")
            best_ids.add(pool[order[0]].id)
            if m == mode:
                chosen, dist = pool[order[0]], ds[order[0]]
        if len(best_ids) != 1 or chosen.id in exclude or _norm(chosen.name) not in {_norm(p.name) for p in self.idx.unique_named}:
            raise Reject("the nearest place depends on the route or is ambiguous")
        return chosen, dist

    def _buffer_for(self, dist: float) -> int:
        for r in (200, 300, 500, 800):
            if dist <= r - _RADIUS_BAND_M:
                return r
        raise Reject("too far from the route")

    def _route_with_stops(self, a: Place, b: Place, stops: list[Place], vehicle: str, mode: str) \
            -> tuple[list[str], dict[str, Any], list[str]]:
        """multi_stop_routing with a and b fixed; (reference order, its route, unconstrained-best order)."""
        ids = [a.id, *[s.id for s in stops], b.id]
        msr = self.ranked_orders(ids, vehicle, mode)
        routes = msr["routes"]
        i = self.unique_best(routes, list(range(len(routes))), mode)
        return routes[i]["order"], routes[i], routes[0]["order"]

    def routing_l1(self) -> dict[str, Any]:
        a, b = self.endpoints(1000.0, 3000.0)
        vehicle, mode = self._vehicle_mode()
        k = 1 if self.chance(0.6) else 2
        subs = [str(s) for s in self.rng.permutation(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 2))[:k]]
        stops: list[Place] = []
        dists = []
        for sub in subs:
            p, dist = self._nearest_on_route(a, b, sub, vehicle, mode, {s.id for s in stops})
            stops.append(p)
            dists.append(dist)
        nouns = [TYPE_NOUNS[s][0] for s in subs]
        adj = self.pick(MODE_WORDS[mode])
        need = " and the nearest ".join(nouns)
        q = self.pick([f"{self.persona()}I'm {vehicle} from {a.name} to {b.name}. On the way I need to stop at the nearest "
                       f"{need} to my route. What's the {adj} plan?",
                       f"{vehicle.capitalize()} from {a.name} to {b.name}: plan the {adj} route that stops at the "
                       f"nearest {need} along the way."])
        self.only_place_named(a)
        self.only_place_named(b)
        order, best, _ = self._route_with_stops(a, b, stops, vehicle, mode)
        self.find_place(a)
        self.find_place(b)
        route_obj = {"start": a.id, "end": b.id, "vehicle": vehicle}
        if mode != "time":
            route_obj["mode"] = mode
        for p, sub, dist in zip(stops, subs, dists):
            out = self.d.call("nearby_search", center=dict(route_obj), radius_meters=self._buffer_for(dist),
                              place_types=[sub])
            if not out["results"] or out["results"][0]["place_id"] != p.id:
                raise Reject("nearby_search does not list the nearest first")
            self.d.need(f"place:{p.id}:place_type")
        self.leg_calls(order, [a.id, *[s.id for s in stops], b.id], vehicle, mode)
        totals = self.order_totals(order)
        if totals != (best["total_distance_m"], best["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        constraints = [{"kind": "starts_at", "place_id": a.id, "text": f"The route starts at {a.name}."},
                       {"kind": "ends_at", "place_id": b.id, "text": f"The route ends at {b.name}."}]
        for i, (p, sub) in enumerate(zip(stops, subs)):
            constraints.append({"kind": "nearest_on_route", "role": "slot", "slot": i, "place_type": sub,
                                "start": a.id, "end": b.id, "vehicle": vehicle, "mode": mode,
                                "text": f"One stop is the {TYPE_NOUNS[sub][0]} nearest to the route."})
        stop_rows = [(p, f"The {TYPE_NOUNS[sub][0]} nearest to the {vehicle} route ({int(math.floor(d + 0.5))} m off it).",
                      ref_block("l1", ["place_type"], [], notes_field=False), False)
                     for p, sub, d in zip(stops, subs, dists)]
        return dict(
            signature=("routing_l1", a.id, b.id, tuple(subs), vehicle, mode), question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["vehicle", "==", vehicle], ["mode", "==", mode],
                                                             ["start_id", "==", a.id], ["end_id", "==", b.id]]},
                          *[{"scope": "slot", "slot": i, "requirements": [["place_type", "contains", sub]]}
                            for i, sub in enumerate(subs)]],
            constraints=constraints, reference_places=[a.id, *[s.id for s in stops], b.id], reference_order=order,
            context={"vehicle": vehicle, "mode": mode, "place_types": subs})

    def _implicit_stop_on_route(self, a: Place, b: Place, vehicle: str, mode: str) \
            -> tuple[Place, Preference, int, list[Place]]:
        """A stop of some type that alone, among its type within a buffer of the route, fits a
        preference (the fitting place of that type nearest to the route); (stop, preference,
        buffer, candidates nearest first)."""
        pref = self.pick(PREFERENCES)
        holders = [p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS
                   and p.id not in (a.id, b.id)]
        if not holders:
            raise Reject("no holder")
        ds = T.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in holders])
        if ds is None:
            raise Reject("no route")
        near = sorted((d, p.id, p) for d, p in zip(ds, holders) if d <= 480)
        if not near:
            raise Reject("no holder near the route")
        sub = self.pick(sorted({p.sub for _, _, p in near}))
        d0, _, ans = next(x for x in near if x[2].sub == sub)
        same = [p for p in self.idx.by_sub[ans.sub] if p.id not in (a.id, b.id)]
        dsame = T.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in same])
        radius = self.clean_radius(d0, dsame, step=10)
        inside = sorted(((round(d, 6), p.id, p) for d, p in zip(dsame, same) if d <= radius))
        cands = [p for _, _, p in inside]
        tag_pref = any(f.startswith("tag:") for f in self.satisfies(ans, pref))
        limit = T.STANDARD_LIMITS["nearby_search"] if tag_pref else 6
        if not 2 <= len(cands) <= limit or [p for p in cands if self.satisfies(p, pref)] != [ans]:
            raise Reject("the preference does not single out one stop")
        if any(_norm(p.name) not in {_norm(u.name) for u in self.idx.unique_named} for p in cands):
            raise Reject("ambiguous candidate names")
        return ans, pref, radius, cands

    def _route_area(self, a: Place, b: Place, vehicle: str, mode: str, ans: Place) -> int:
        """What "on the way" means when no buffer is stated: `_area_radius` around the route,
        clear of every place of the stop's type."""
        same = [p for p in self.idx.by_sub[ans.sub] if p.id not in (a.id, b.id)]
        ds = T.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in same])
        if ds is None:
            raise Reject("no route")
        d0 = float(ds[[p.id for p in same].index(ans.id)])
        return self.clean_radius(max(2.0 * d0, d0 + _AREA_FLOOR_M), ds, step=10)

    def routing_l2(self) -> dict[str, Any]:
        a, b = self.endpoints(1000.0, 3000.0)
        vehicle, mode = self._vehicle_mode()
        ans, pref, radius, cands = self._implicit_stop_on_route(a, b, vehicle, mode)
        explicit = None
        if self.chance(0.4):
            subs = sorted(s for s in TYPE_NOUNS if s != ans.sub and len(self.idx.by_sub.get(s, [])) >= 2)
            sub2 = str(self.pick(subs))
            p2, d2 = self._nearest_on_route(a, b, sub2, vehicle, mode, {ans.id})
            explicit = (p2, sub2, d2)
        stops = [ans] + ([explicit[0]] if explicit else [])
        noun = TYPE_NOUNS[ans.sub][0]
        need = self.pick(pref.phrases)
        adj = self.pick(MODE_WORDS[mode])
        extra = f" I also need to stop at the nearest {TYPE_NOUNS[explicit[1]][0]} to my route." if explicit else ""
        route_obj = {"start": a.id, "end": b.id, "vehicle": vehicle}
        if mode != "time":
            route_obj["mode"] = mode
        area = None
        if self.paper:  # Figure 1's Routing L2 ("... grab a cup of coffee and have some reading"): no buffer
            area = self._route_area(a, b, vehicle, mode, ans)
            if self._fitting_in_area(dict(route_obj), area, pref, place_types=[ans.sub]) != [ans.id]:
                raise Reject("another place of the type on the way fits")
            q = self.pick([f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to stop at a {noun} on "
                           f"the way: {need}.{extra} What's the {adj} plan?",
                           f"{vehicle.capitalize()} from {a.name} to {b.name}. {need[0].upper()}{need[1:]}, so I'd like "
                           f"to stop at a {noun} on the way.{extra} Plan the {adj} trip."])
        else:
            q = self.pick([f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to stop at a {noun} on the way, "
                           f"no more than {radius} m off my route: {need}.{extra} What's the {adj} plan?",
                           f"{vehicle.capitalize()} from {a.name} to {b.name}. {need[0].upper()}{need[1:]}, so I'd like a "
                           f"{noun} within {radius} m of the route.{extra} Plan the {adj} trip."])
        self.only_place_named(a)
        self.only_place_named(b)
        mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
        tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
        found: set[str] = set()
        if mem:
            found |= {r["place_id"] for r in self.de("nearby_search", center=dict(route_obj), radius_meters=radius,
                                                      place_types=[ans.sub], social_mem=mem)["results"]}
        if tags:
            found |= {r["place_id"] for r in self.de("nearby_search", center=dict(route_obj), radius_meters=radius,
                                                      place_types=[ans.sub], geo_tag=tags)["results"]}
        if found != {ans.id}:
            raise Reject("the data engine finds another fitting stop")
        order, best, _ = self._route_with_stops(a, b, stops, vehicle, mode)
        self.find_place(a)
        self.find_place(b)
        out = self.d.call("nearby_search", center=dict(route_obj), radius_meters=radius, place_types=[ans.sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(p.id for p in cands):
            raise Reject("nearby_search lists other candidates")
        keys, notes = self.show_preference(ans, pref, [self.idx.by_id[i] for i in listed if i != ans.id],
                                           search={"center": dict(route_obj), "radius_meters": radius,
                                                   "place_types": [ans.sub]})
        if explicit:
            p2, sub2, d2 = explicit
            out2 = self.d.call("nearby_search", center=dict(route_obj), radius_meters=self._buffer_for(d2),
                               place_types=[sub2])
            if not out2["results"] or out2["results"][0]["place_id"] != p2.id:
                raise Reject("nearby_search does not list the nearest first")
            self.d.need(f"place:{p2.id}:place_type")
        self.leg_calls(order, [a.id, *[s.id for s in stops], b.id], vehicle, mode)
        totals = self.order_totals(order)
        if totals != (best["total_distance_m"], best["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        constraints = [{"kind": "starts_at", "place_id": a.id, "text": f"The route starts at {a.name}."},
                       {"kind": "ends_at", "place_id": b.id, "text": f"The route ends at {b.name}."},
                       {"kind": "has_preference", "role": "slot", "slot": 0, "facts": list(pref.facts),
                        "text": f"A stop fits the need: {need}."},
                       {"kind": "place_requirement", "role": "slot", "slot": 0,
                        "requirement": ["place_type", "contains", ans.sub], "text": f"That stop is a {noun}."},
                       {"kind": "within_route_buffer", "role": "slot", "slot": 0, "start": a.id, "end": b.id,
                        "vehicle": vehicle, "mode": mode, "radius_m": radius,
                        "text": f"That stop is within {radius} m of the route."}]
        stop_rows = [(ans, f"The only {noun} within {radius} m of the route that fits: {need}.",
                      ref_block("l2", keys, notes, notes_field=True), True)]
        requirements = [{"scope": "answer", "requirements": [["vehicle", "==", vehicle], ["mode", "==", mode],
                                                             ["start_id", "==", a.id], ["end_id", "==", b.id]]},
                        {"scope": "slot", "slot": 0, "requirements": [["place_type", "contains", ans.sub]]}]
        if area is not None:  # no buffer is stated: the one fitting place of the type on the way
            constraints[4] = {**constraints[4], "radius_m": area,
                              "text": f"That stop is on the way (within {area} m of the route)."}
            stop_rows = [(ans, f"The only {noun} on the way that fits: {need}.", stop_rows[0][2], True)]
        if explicit:
            p2, sub2, d2 = explicit
            constraints.append({"kind": "nearest_on_route", "role": "slot", "slot": 1, "place_type": sub2,
                                "start": a.id, "end": b.id, "vehicle": vehicle, "mode": mode,
                                "text": f"One stop is the {TYPE_NOUNS[sub2][0]} nearest to the route."})
            stop_rows.append((p2, f"The {TYPE_NOUNS[sub2][0]} nearest to the route ({int(math.floor(d2 + 0.5))} m off it).",
                              ref_block("l2", ["place_type"], [], notes_field=True), False))
            requirements.append({"scope": "slot", "slot": 1, "requirements": [["place_type", "contains", sub2]]})
        return dict(
            signature=("routing_l2", a.id, b.id, ans.id, vehicle, mode), question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=True, requirements=requirements, constraints=constraints,
            reference_places=[a.id, *[s.id for s in stops], b.id], reference_order=order,
            context={"vehicle": vehicle, "mode": mode, "preference": pref.key, "radius_m": area or radius,
                     "phrasing": "paper" if area else "explicit"})

    # ================================================================ Trip Design
    def _time_window(self, routes: list[dict[str, Any]], legs: dict, mode: str) \
            -> tuple[int, int, int, int] | None:
        """Scenario B by opening hours: (weekday, departure, dwell, index of the reference route)
        such that the unconstrained optimum reaches some stop while it is closed, and the best
        order that finds every stop open is unique. Every arrival that decides this is at least
        `_MARGIN_MIN` from an opening or closing time."""
        for _ in range(150):
            wd, dep = self.weekday_time(7 * 60, 21 * 60 + 30)
            dwell = int(self.pick([20, 30, 45, 60]))
            ok0, m0 = self.time_feasibility(routes[0]["order"], legs, wd, dep, dwell)
            if ok0 or m0 < _MARGIN_MIN:
                continue
            keep, margins = [], []
            for i, r in enumerate(routes):
                ok, m = self.time_feasibility(r["order"], legs, wd, dep, dwell)
                if m < _MARGIN_MIN:
                    keep = []
                    break
                if ok:
                    keep.append(i)
            if not keep:
                continue
            try:
                return wd, dep, dwell, self.unique_best(routes, keep, mode)
            except Reject:
                continue
        return None

    def _trip_frame(self) -> tuple[Place, Place, str, str]:
        a, b = self.endpoints(900.0, 2500.0)
        vehicle = str(self.pick(["driving", "cycling", "walking"]))
        mode = str(self.pick(["time", "time", "distance"]))
        return a, b, vehicle, mode

    def trip_l1(self) -> dict[str, Any]:
        a, b, vehicle, mode = self._trip_frame()
        k = 3 if self.chance(0.6) else 2
        mid = Place("", "", "", "", "", None, None, "", "", (a.x + b.x) / 2, (a.y + b.y) / 2, frozenset())
        pool = [p for p in self.idx.unique_named if p.sub in TYPE_NOUNS and p.hours and p.id not in (a.id, b.id)]
        ds = self.idx.distances(mid, pool)
        near = [p for p, d in zip(pool, ds) if d <= 1200]
        if len(near) < k:
            raise Reject("too few places between the endpoints")
        picks = [near[i] for i in self.rng.permutation(len(near))[:k]]
        ids = [a.id, *[p.id for p in picks], b.id]
        self.only_place_named(a)
        self.only_place_named(b)
        for p in picks:
            self.only_place_named(p)
        msr = self.ranked_orders(ids, vehicle, mode)
        routes, legs = msr["routes"], self.leg_table(msr)
        kind = "time" if self.chance(0.6) else "order"
        chosen = self._time_window(routes, legs, mode) if kind == "time" else None
        if kind == "time" and chosen is None:
            kind = "order"
        names = [p.name for p in picks]
        adj = self.pick(MODE_WORDS[mode])
        constraints = [{"kind": "starts_at", "place_id": a.id, "text": f"The trip starts at {a.name}."},
                       {"kind": "ends_at", "place_id": b.id, "text": f"The trip ends at {b.name}."},
                       {"kind": "visits_all", "place_ids": [p.id for p in picks],
                        "text": f"The trip visits {_list_words(names)}."}]
        context: dict[str, Any] = {"vehicle": vehicle, "mode": mode, "scenario": "B", "constraint": kind,
                                   "unconstrained_order": routes[0]["order"]}
        if kind == "time":
            wd, dep, dwell, ri = chosen  # type: ignore[misc]
            day, hhmm = DAYS[wd], minute_to_hhmm(dep)
            rule = (f"I'm leaving at {hhmm} on {day} and will spend about {dwell} minutes at each stop; every place "
                    f"has to be open when I get there.")
            constraints.append({"kind": "open_on_arrival", "weekday": day, "departure": hhmm, "dwell_min": dwell,
                                "vehicle": vehicle, "mode": mode,
                                "text": f"Every stop is open on arrival (leaving {hhmm} on {day}, {dwell} min per stop)."})
            context.update(weekday=day, departure=hhmm, dwell_min=dwell)
        else:
            best = routes[0]["order"]
            pairs = [(x, y) for i, y in enumerate(best[1:-1]) for x in best[1:-1][i + 1:]]  # x after y in best
            pairs = [pairs[i] for i in self.rng.permutation(len(pairs))]
            ri = None
            for x, y in pairs:
                keep = [i for i, r in enumerate(routes) if r["order"].index(x) < r["order"].index(y)]
                try:
                    ri = self.unique_best(routes, keep, mode)
                except Reject:
                    continue
                break
            if ri is None:
                raise Reject("no order dependency that changes the optimum")
            px, py = self.idx.by_id[x], self.idx.by_id[y]
            rule = self.pick([f"I have to stop at {px.name} before {py.name}.",
                              f"I must pick something up at {px.name} before I go to {py.name}."])
            constraints.append({"kind": "order_before", "first": x, "then": y,
                                "text": f"{px.name} is visited before {py.name}."})
            context.update(first=x, then=y)
        ref = routes[ri]
        order = ref["order"]
        if order == routes[0]["order"]:
            raise Reject("the constraint does not change the optimum")
        q = self.pick([f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to visit {_list_words(names)}. "
                       f"{rule} What's the {adj} plan?",
                       f"Plan my {vehicle} trip from {a.name} to {b.name} via {_list_words(names)}. {rule} "
                       f"I want the {adj} route."])
        self.find_place(a)
        self.find_place(b)
        for p in picks:
            self.find_place(p)
            if kind == "time":
                self.d.call("place_detail", place_id=p.id)
                self.d.need(f"place:{p.id}:opentime_week")
        self.leg_calls(order, ids, vehicle, mode)
        totals = self.order_totals(order)
        if totals != (ref["total_distance_m"], ref["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        if kind == "time":
            arr = self.arrivals(order, legs, dep, dwell)
            reasons = {p: f"Open on arrival at {minute_to_hhmm(t)} ({self.idx.by_id[p].hours})."
                       for p, t in zip(order[1:-1], arr)}
            keys = ["opentime_week"]
        else:
            reasons = {p.id: "User-specified stop." for p in picks}
            keys = []
        stop_rows = [(p, reasons[p.id], ref_block("l1", keys, [], notes_field=False), False) for p in picks]
        return dict(
            signature=("trip_l1", tuple(ids), vehicle, mode, kind), question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=False,
            requirements=[{"scope": "answer", "requirements": [["vehicle", "==", vehicle], ["mode", "==", mode],
                                                             ["start_id", "==", a.id], ["end_id", "==", b.id]]},
                          *[{"scope": "slot", "slot": i, "requirements": [["name", "==", p.name]]}
                            for i, p in enumerate(picks)]],
            constraints=constraints, reference_places=ids, reference_order=order, context=context)

    def trip_l2(self) -> dict[str, Any]:
        a, b, vehicle, mode = self._trip_frame()
        k = 2 if self.chance(0.6) else 3
        slots: list[tuple[Place, Preference, int]] = []
        used_prefs: set[str] = set()
        for _ in range(k):
            for _try in range(12):
                pref = self.pick(PREFERENCES)
                if pref.key in used_prefs:
                    continue
                holders = [p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS
                           and p.hours and p.id not in (a.id, b.id) and p.id not in {s[0].id for s in slots}]
                ds = self.idx.distances(a, holders)
                reach = 700 if self.paper else 1800  # an unstated "near" must stay near
                near = sorted((float(d), p.id, p) for d, p in zip(ds, holders) if d <= reach)
                if not near:
                    continue
                # the fitting place of one type nearest to the start: none of that type fits closer
                sub = self.pick(sorted({p.sub for _, _, p in near}))
                d_p, _, p = next(x for x in near if x[2].sub == sub)
                same = [o for o in self.idx.by_sub[p.sub] if o.id != a.id]
                try:
                    radius = (self._area_radius(a, d_p, same) if self.paper
                              else self.clean_radius(d_p, self.idx.distances(a, same), step=100, tries=3))
                except Reject:
                    continue
                inside, _ = self.within(a, same, radius)
                if [o for o in inside if self.satisfies(o, pref)] != [p]:
                    continue
                fact = self.satisfies(p, pref)[0]
                if not fact.startswith("tag:"):  # memory shows only in notes: one must name the place
                    try:
                        self.findable_note(p, fact)
                    except Reject:
                        continue
                slots.append((p, pref, radius))
                used_prefs.add(pref.key)
                break
            else:
                raise Reject("no slot")
        stops = [s[0] for s in slots]
        ids = [a.id, *[s.id for s in stops], b.id]
        self.only_place_named(a)
        self.only_place_named(b)
        for p, pref, radius in slots:
            mem = [pref.value_of(f) for f in pref.facts if not f.startswith("tag:")]
            tags = [pref.value_of(f) for f in pref.facts if f.startswith("tag:")]
            found: set[str] = set()
            if mem:
                found |= {r["place_id"] for r in self.de("nearby_search", center=a.id, radius_meters=radius,
                                                          place_types=[p.sub], social_mem=mem)["results"]}
            if tags:
                found |= {r["place_id"] for r in self.de("nearby_search", center=a.id, radius_meters=radius,
                                                          place_types=[p.sub], geo_tag=tags)["results"]}
            if found != {p.id}:
                raise Reject("the data engine finds another fitting place")
        msr = self.ranked_orders(ids, vehicle, mode)
        routes, legs = msr["routes"], self.leg_table(msr)
        chosen = self._time_window(routes, legs, mode)
        if chosen is not None:
            wd, dep, dwell, ri = chosen
            scenario = "B"
        else:  # Scenario A: the optimum already finds every place open at some departure
            scenario = "A"
            ri = self.unique_best(routes, list(range(len(routes))), mode)
            for _ in range(60):
                wd, dep = self.weekday_time(7 * 60, 21 * 60)
                dwell = int(self.pick([20, 30, 45, 60]))
                ok, m = self.time_feasibility(routes[ri]["order"], legs, wd, dep, dwell)
                if ok and m >= _MARGIN_MIN:
                    break
            else:
                raise Reject("no departure with every stop open")
        ref = routes[ri]
        order = ref["order"]
        day, hhmm = DAYS[wd], minute_to_hhmm(dep)
        adj = self.pick(MODE_WORDS[mode])
        wants = []
        for p, pref, radius in slots:
            where = f"near {a.name}" if self.paper else f"within {radius / 1000:g} km of {a.name}"
            wants.append(f"{self.pick(pref.phrases)} (a {TYPE_NOUNS[p.sub][0]} {where})")
        q = (f"{self.persona()}It's {day}, {hhmm}, and I'm setting off {vehicle} from {a.name} to {b.name}. "
             f"On the way: {'; '.join(wants)}. I'll spend about {dwell} minutes at each stop. "
             f"Plan the {adj} trip.")
        self.find_place(a)
        self.find_place(b)
        stop_rows = []
        constraints = [{"kind": "starts_at", "place_id": a.id, "text": f"The trip starts at {a.name}."},
                       {"kind": "ends_at", "place_id": b.id, "text": f"The trip ends at {b.name}."}]
        requirements: list[dict[str, Any]] = [
            {"scope": "answer", "requirements": [["vehicle", "==", vehicle], ["mode", "==", mode],
                                                             ["start_id", "==", a.id], ["end_id", "==", b.id]]}]
        for i, (p, pref, radius) in enumerate(slots):
            fact = self.satisfies(p, pref)[0]
            value = pref.value_of(fact)
            if fact.startswith("tag:"):
                out = self.d.call("nearby_search", center=a.id, radius_meters=radius, place_types=[p.sub],
                                  geo_tag=[value])
                if [r["place_id"] for r in out["results"]] != [p.id]:
                    raise Reject("the tag search does not single out the stop")
                self.d.call("place_detail", place_id=p.id)
                self.d.need(f"place:{p.id}:tag", f"place:{p.id}:opentime_week")
                keys, notes = [f"tag:{value}", "opentime_week"], []
            else:
                self.d.call("nearby_search", center=a.id, radius_meters=radius, place_types=[p.sub])
                note, keyword, hits = self.findable_note(p, fact)
                self.d.call("search_notes", keyword=keyword)
                self.d.call("note_detail", note_id=note)
                self.d.call("place_detail", place_id=p.id)
                self.d.need(f"note:{note}", f"place:{p.id}:opentime_week")
                keys, notes = ["opentime_week"], hits
            noun = TYPE_NOUNS[p.sub][0]
            stop_rows.append((p, f"The only {noun} within {radius} m of {a.name} that fits: {pref.phrases[0]}.",
                              ref_block("l2", keys, notes, notes_field=True), True))
            constraints += [
                {"kind": "has_preference", "role": "slot", "slot": i, "facts": list(pref.facts),
                 "text": f"A stop fits: {pref.phrases[0]}."},
                {"kind": "place_requirement", "role": "slot", "slot": i, "requirement": ["place_type", "contains", p.sub],
                 "text": f"That stop is a {noun}."},
                {"kind": "within_radius", "role": "slot", "slot": i, "center": a.id, "radius_m": radius,
                 "text": (f"That stop is near {a.name} (within {radius} m)." if self.paper
                          else f"That stop is within {radius} m of {a.name}.")}]
            requirements.append({"scope": "slot", "slot": i, "requirements": [["place_type", "contains", p.sub],
                                                                              ["distance_m", "<=", radius]]})
        constraints.append({"kind": "open_on_arrival", "weekday": day, "departure": hhmm, "dwell_min": dwell,
                            "vehicle": vehicle, "mode": mode,
                            "text": f"Every stop is open on arrival (leaving {hhmm} on {day}, {dwell} min per stop)."})
        self.leg_calls(order, ids, vehicle, mode)
        totals = self.order_totals(order)
        if totals != (ref["total_distance_m"], ref["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        arr = self.arrivals(order, legs, dep, dwell)
        when = {p: minute_to_hhmm(t) for p, t in zip(order[1:-1], arr)}
        stop_rows = [(p, f"{reason} Arrival about {when[p.id]}, within its hours.", block, imp)
                     for p, reason, block, imp in stop_rows]
        return dict(
            signature=("trip_l2", tuple(sorted(ids)), vehicle, mode), question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=True, requirements=requirements, constraints=constraints,
            reference_places=ids, reference_order=order,
            context={"anchor": a.id, "vehicle": vehicle, "mode": mode, "scenario": scenario, "weekday": day,
                     "departure": hhmm, "dwell_min": dwell, "unconstrained_order": routes[0]["order"],
                     "preferences": [s[1].key for s in slots], "phrasing": "paper" if self.paper else "explicit"})

    # ================================================================ driver
    GENERATORS = {
        ("place", "l0"): "place_l0", ("place", "l1"): "place_l1", ("place", "l2"): "place_l2",
        ("nearby", "l0"): "nearby_l0", ("nearby", "l1"): "nearby_l1", ("nearby", "l2"): "nearby_l2",
        ("routing", "l0"): "routing_l0", ("routing", "l1"): "routing_l1", ("routing", "l2"): "routing_l2",
        ("trip", "l1"): "trip_l1", ("trip", "l2"): "trip_l2",
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
                        f"{budget} attempts; use a larger city (env.n_places / env.n_notes) or fewer cases")
                self.d = Draft(self.city)
                try:
                    fields = getattr(self, self.GENERATORS[combo])()
                except Reject:
                    continue
                sig = fields.pop("signature")
                if sig in seen:
                    continue
                case = Case(id=f"{combo[0]}_{combo[1]}_{len(made):04d}", task=combo[0], level=combo[1],
                            tau_star=self.d.tau, evidence=list(self.d.evidence), engine_path=self.d.engine_path,
                            **fields)
                if len(case.tau_star) > MAX_REFERENCE_CALLS or check_case(self.city, case):
                    continue
                seen.add(sig)
                made.append(case)
            cases += made
        return cases


def generate_cases(db_path: str, *, n_cases: int, seed: int,
                   combos: list[tuple[str, str]] | None = None, l2_phrasing: str = "paper",
                   l1_social: bool = True) -> list[Case]:
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
