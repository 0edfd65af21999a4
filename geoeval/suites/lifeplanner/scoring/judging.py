"""Checking an answer against the database: the explicit attribute requirements of Attribute
Accuracy (A, eq. 1), the constraints of Semantic Constraint (SC) and the faithfulness checks of
Reasoning Purity (RP), and the offline `rules` judge of the judge ensemble that scores SC and RP
with them.

A case states its requirements and constraints as data (see `cases/`):

- requirement groups `{"scope", "requirements": [[attribute, op, value], ...]}` with scope
  `answer` (the answer's own fields: value, vehicle, mode), `answer_place` (the place a Place
  Perception answer names), `places` (every place a Nearby answer names) or `slot` (some waypoint
  of a route; `slot` gives its index), checked with `metrics.satisfies`;
- constraints `{"kind", ..., "text"}`; `text` is the English rubric line model judges read.

Place records carry the agent-visible attributes plus `distance_m` to the case's anchor, when the
case has one. Facts (`tag:Key:value`, `long:...`, `short:...`) are read from the database's tag and
hidden memory fields: the judge may read what the evaluated agent may not.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any, cast

from geoeval.suites.lifeplanner.city.opening_hours import DAYS, parse_opening_hours
from geoeval.suites.lifeplanner.metrics import Requirement, attribute_accuracy, satisfies
from geoeval.suites.lifeplanner.scoring.answers import ParsedAnswer
from geoeval.suites.lifeplanner.scoring.places_named import place_mentions
from geoeval.suites.lifeplanner.scoring.purity import reason_claims
from geoeval.suites.lifeplanner.scoring.trajectory import Trajectory
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools.trip_timing import hhmm_to_minute, open_on_arrival

# --------------------------------------------------------------------------------------------
# Place records and facts
# --------------------------------------------------------------------------------------------


def parse_fact_groups(text: str | None, source: str) -> set[str]:
    """`Atmosphere: quiet, cozy; Scenery: lake view` -> {`long:Atmosphere:quiet`, ...}."""
    out: set[str] = set()
    for seg in (text or "").split(";"):
        key, sep, values = seg.partition(":")
        if not sep:
            continue
        for v in values.split(","):
            v = v.strip()
            if v:
                out.add(f"{source}:{key.strip()}:{v}")
    return out


_RECORDS: dict[str, dict[str, dict[str, Any]]] = {}
_RECORDS_LOCK = threading.Lock()


def place_records(city: city_handle.City) -> dict[str, dict[str, Any]]:
    """Every place's full record (agent-visible fields, memory, facts), once per opened city."""
    key = f"{city.db_path}@{id(city)}"
    with _RECORDS_LOCK:
        got = _RECORDS.get(key)
    if got is not None:
        return got
    rows = (
        city.cursor()
        .execute(
            "SELECT id, name, place_type, address, opentime_week, rating, cost, tag, alias, long_mem, short_mem "
            "FROM places ORDER BY id"
        )
        .fetchall()
    )
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        rec = dict(
            zip(
                (
                    "place_id",
                    "name",
                    "place_type",
                    "address",
                    "opentime_week",
                    "rating",
                    "cost",
                    "tag",
                    "alias",
                    "long_mem",
                    "short_mem",
                ),
                r,
            )
        )
        rec["facts"] = frozenset(
            parse_fact_groups(rec["tag"], "tag")
            | parse_fact_groups(rec["long_mem"], "long")
            | parse_fact_groups(rec["short_mem"], "short")
        )
        out[rec["place_id"]] = rec
    with _RECORDS_LOCK:
        for k in [k for k in _RECORDS if k.startswith(f"{city.db_path}@")]:
            del _RECORDS[k]
        _RECORDS[key] = out
    return out


_VISIBLE = ("place_id", "name", "place_type", "address", "opentime_week", "rating", "cost", "tag", "alias")


def visible_record(city: city_handle.City, place_id: str, anchor: str | None = None) -> dict[str, Any] | None:
    """The agent-visible record of a place (what A's requirements are checked on), plus
    `distance_m` to `anchor` (straight line, as nearby_search measures it)."""
    rec = place_records(city).get(place_id)
    if rec is None:
        return None
    out = {k: rec[k] for k in _VISIBLE}
    if anchor is not None and anchor in city.place_index:
        out["distance_m"] = straight_distance(city, place_id, anchor)
    return out


def straight_distance(city: city_handle.City, a: str, b: str) -> float:
    pa, pb = city.place_xy[city.place_index[a]], city.place_xy[city.place_index[b]]
    return float(math.hypot(pa[0] - pb[0], pa[1] - pb[1]))


def resolve_place(city: city_handle.City, value: Any) -> str | None:
    """A place an answer names: its place_id, or its exact name (case and spacing ignored)."""
    if not isinstance(value, str):
        return None
    v = value.strip()
    if v in city.place_index:
        return v
    key = " ".join(v.casefold().split())
    hits = [pid for pid, rec in place_records(city).items() if " ".join(rec["name"].casefold().split()) == key]
    return hits[0] if len(hits) == 1 else None


def has_any_fact(city: city_handle.City, place_id: str, facts: list[str]) -> bool:
    rec = place_records(city).get(place_id)
    if rec is None:
        return False
    own = {f.casefold() for f in rec["facts"]}
    return any(f.casefold() in own for f in facts)


# --------------------------------------------------------------------------------------------
# Time: the legs of a visiting order (trip_timing times them)
# --------------------------------------------------------------------------------------------


def leg_times(city: city_handle.City, order: list[str], vehicle: str, mode: str) -> list[float] | None:
    """Seconds of each leg of `order`, as `routing` reports them; None if a leg has no route or
    a place is unknown."""
    out = []
    for a, b in zip(order, order[1:]):
        if a not in city.place_index or b not in city.place_index or a == b:
            return None
        r = routing_tools.routing(city, a, b, mode=mode, vehicle=vehicle)
        if r.failure_class != "ok":
            return None
        out.append(float(r.payload["total_time_s"]))
    return out


# --------------------------------------------------------------------------------------------
# Requirements (A) and constraints (SC)
# --------------------------------------------------------------------------------------------


def answer_record(parsed: ParsedAnswer) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    if parsed.value is not None:
        rec["value"] = parsed.value
    if parsed.vehicle is not None:
        rec["vehicle"] = parsed.vehicle
    if parsed.mode is not None:
        rec["mode"] = parsed.mode
    # a route's ends are attributes the request fixes ("from A to B"), so A checks them too
    if parsed.start is not None:
        rec["start_id"] = parsed.start
    if parsed.end is not None:
        rec["end_id"] = parsed.end
    return rec


def answer_place(city: city_handle.City, parsed: ParsedAnswer) -> str | None:
    """The place a Place Perception answer names (by id or exact name), if any."""
    if parsed.task == "place":
        return resolve_place(city, parsed.value)
    return None


def stop_places(parsed: ParsedAnswer) -> list[str]:
    """A route's intermediate stops: its waypoints, else its order without start and end."""
    if parsed.waypoints:
        return list(parsed.waypoints)
    return [p for p in parsed.order if p not in (parsed.start, parsed.end)]


def _req(r: Any) -> Requirement:
    attribute, op, value = r
    if op in ("open_at", "closed_at") or op == "in":
        value = tuple(value)
    return Requirement(attribute, op, value)


def attribute_accuracy_of(
    city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer, *, loose: bool = False
) -> float:
    """A (eq. 1): 1 when every requirement group of the case holds for the answer, else 0.
    `loose`: the answer's own text values are compared ignoring punctuation (robust protocol)."""
    anchor = (case.get("context") or {}).get("anchor")
    for group in case.get("requirements") or []:
        reqs = [_req(r) for r in group["requirements"]]
        scope = group["scope"]
        if scope == "answer":
            ok = attribute_accuracy([answer_record(parsed)], reqs, loose) == 1.0
        elif scope == "answer_place":
            pid = answer_place(city, parsed)
            rec = visible_record(city, pid, anchor) if pid else None
            ok = rec is not None and attribute_accuracy([rec], reqs) == 1.0
        elif scope == "places":
            recs = [visible_record(city, p, anchor) for p in parsed.places]
            ok = (
                all(r is not None for r in recs) and attribute_accuracy(cast("list[dict[str, Any]]", recs), reqs) == 1.0
            )
        elif scope == "slot":
            recs = [visible_record(city, p, anchor) for p in stop_places(parsed)]
            ok = any(r is not None and all(satisfies(r, q) for q in reqs) for r in recs)
        else:
            raise ValueError(f"unknown requirement scope {scope!r}")
        if not ok:
            return 0.0
    return 1.0


def _places_for(city: city_handle.City, con: Mapping[str, Any], parsed: ParsedAnswer) -> list[str]:
    role = con.get("role", "places")
    if role == "answer_place":
        pid = answer_place(city, parsed)
        return [pid] if pid else []
    if role == "slot":
        return stop_places(parsed)
    return list(parsed.places) if parsed.task == "nearby" else stop_places(parsed)


def _check_place(city: city_handle.City, con: Mapping[str, Any], pid: str, anchor: str | None) -> bool:
    kind = con["kind"]
    if pid not in city.place_index:
        return False
    if kind == "place_requirement":
        rec = visible_record(city, pid, anchor)
        return rec is not None and satisfies(rec, _req(con["requirement"]))
    if kind == "has_preference":
        return has_any_fact(city, pid, con["facts"])
    if kind == "lacks_preference":
        return not has_any_fact(city, pid, con["facts"])
    if kind == "within_radius":
        return con["center"] in city.place_index and straight_distance(city, pid, con["center"]) <= con["radius_m"]
    if kind == "within_route_buffer":
        d = nearby_tools.route_buffer_distances(city, con["start"], con["end"], con["vehicle"], con["mode"], [pid])
        return d is not None and d[0] <= con["radius_m"]
    if kind == "nearest_on_route":
        recs = place_records(city)
        same = [
            p
            for p, r in recs.items()
            if con["place_type"].casefold() in (r["place_type"] or "").casefold()
            and p not in (con["start"], con["end"])
        ]
        if pid not in same:
            return False
        ds = nearby_tools.route_buffer_distances(city, con["start"], con["end"], con["vehicle"], con["mode"], same)
        if ds is None:
            return False
        mine = ds[same.index(pid)]
        return mine <= min(ds) + 0.5
    raise ValueError(f"unknown place constraint kind {kind!r}")


_PLACE_KINDS = {
    "place_requirement",
    "has_preference",
    "lacks_preference",
    "within_radius",
    "within_route_buffer",
    "nearest_on_route",
}


def constraint_results(city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer) -> list[bool]:
    """Whether the answer meets each constraint of the case, in order. Constraints on one slot
    are judged on the waypoint that meets most of them (the answer may list stops in any order)."""
    anchor = (case.get("context") or {}).get("anchor")
    constraints = list(case.get("constraints") or [])
    results: list[bool | None] = [None] * len(constraints)
    slots: dict[int, list[int]] = {}
    for i, con in enumerate(constraints):
        if con["kind"] in _PLACE_KINDS and con.get("role") == "slot":
            slots.setdefault(int(con["slot"]), []).append(i)
    for idxs in slots.values():
        best: list[bool] = [False] * len(idxs)
        for pid in stop_places(parsed):
            got = [_check_place(city, constraints[i], pid, anchor) for i in idxs]
            if sum(got) > sum(best):
                best = got
        for i, ok in zip(idxs, best):
            results[i] = ok
    for i, con in enumerate(constraints):
        if results[i] is not None:
            continue
        kind = con["kind"]
        if kind in _PLACE_KINDS:
            pids = _places_for(city, con, parsed)
            results[i] = bool(pids) and all(_check_place(city, con, p, anchor) for p in pids)
        elif kind == "value_equals":
            results[i] = (
                satisfies({"value": parsed.value}, Requirement("value", "==", con["expected"]))
                if parsed.value is not None
                else False
            )
        elif kind == "starts_at":
            results[i] = parsed.start == con["place_id"] and (not parsed.order or parsed.order[0] == con["place_id"])
        elif kind == "ends_at":
            results[i] = parsed.end == con["place_id"] and (not parsed.order or parsed.order[-1] == con["place_id"])
        elif kind == "visits_all":
            results[i] = set(con["place_ids"]) <= set(parsed.order or stop_places(parsed))
        elif kind == "order_before":
            order = parsed.order
            results[i] = (
                con["first"] in order and con["then"] in order and order.index(con["first"]) < order.index(con["then"])
            )
        elif kind == "open_on_arrival":
            results[i] = _open_on_arrival(city, con, parsed)
        else:
            raise ValueError(f"unknown constraint kind {kind!r}")
    return [bool(r) for r in results]


def _open_on_arrival(city: city_handle.City, con: Mapping[str, Any], parsed: ParsedAnswer) -> bool:
    order = parsed.order
    if len(order) < 3:
        return False
    secs = leg_times(city, order, con["vehicle"], con["mode"])
    if secs is None:
        return False
    departure, weekday = hhmm_to_minute(con["departure"]), DAYS.index(con["weekday"])
    recs = place_records(city)
    return open_on_arrival(
        order,
        secs,
        weekday,
        departure,
        float(con["dwell_min"]),
        lambda p: parse_opening_hours(recs[p]["opentime_week"]),
    )


def semantic_constraint_score(city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer) -> float:
    """The rules judge's SC: the share of the case's constraints the answer meets (1 without any)."""
    res = constraint_results(city, case, parsed)
    return sum(res) / len(res) if res else 1.0


# --------------------------------------------------------------------------------------------
# Reasoning Purity: is what the answer states grounded in the database and in what the agent saw?
# --------------------------------------------------------------------------------------------


def _norm(s: Any) -> str:
    return " ".join(str(s).casefold().split())


def purity_checks(city: city_handle.City, parsed: ParsedAnswer, traj: Trajectory) -> list[tuple[str, bool]]:
    """(check, passed) for every claim of the answer that can be checked against the database
    and the trajectory: named places exist, were seen, and carry the names given; cited notes
    exist and were seen; reported route totals are the sum of legs the agent saw."""
    recs = place_records(city)
    checks: list[tuple[str, bool]] = []
    for pid in parsed.places:
        checks.append((f"place {pid} exists", pid in recs))
        checks.append((f"place {pid} was seen in a tool result", f"place:{pid}" in traj.observed))
    for pid, name in parsed.names.items():
        if pid in recs:
            checks.append((f"name of {pid}", _norm(name) == _norm(recs[pid]["name"])))
    if parsed.task == "place":
        answered = answer_place(city, parsed)
        if answered is not None:
            checks.append((f"answered place {answered} was seen", f"place:{answered}" in traj.observed))
    if parsed.note_ids:
        rows = (
            city.cursor()
            .execute("SELECT note_id FROM notes WHERE list_contains(?, note_id)", [parsed.note_ids])
            .fetchall()
        )
        known = {r[0] for r in rows}
        for nid in parsed.note_ids:
            checks.append((f"note {nid} exists", nid in known))
            checks.append(
                (f"note {nid} was seen", f"note:{nid}" in traj.observed or f"note_listed:{nid}" in traj.observed)
            )
    if parsed.task in ("routing", "trip") and parsed.order and parsed.vehicle and parsed.mode:
        legs = [traj.leg(a, b, parsed.vehicle, parsed.mode) for a, b in zip(parsed.order, parsed.order[1:])]
        if all(leg is not None for leg in legs):
            computed = cast("list[tuple[float, float]]", legs)  # no None among them
            d = sum(leg[0] for leg in computed)
            t = sum(leg[1] for leg in computed)
            checks.append(
                ("total_distance_m is the sum of the legs seen", abs(float(parsed.total_distance_m) - d) <= 1)
            )
            checks.append(("total_time_s is the sum of the legs seen", abs(float(parsed.total_time_s) - t) <= 1))
        else:
            checks.append(("every leg of the route was computed with routing", False))
    return checks


def reasoning_purity_score(city: city_handle.City, parsed: ParsedAnswer, traj: Trajectory) -> float:
    checks = purity_checks(city, parsed, traj)
    return sum(ok for _, ok in checks) / len(checks) if checks else 1.0


_VOCABULARY: dict[int, list[str]] = {}


def fact_vocabulary(city: city_handle.City) -> list[str]:
    """Every tag and memory value some place of the city has (the fact phrases a reason can claim)."""
    recs = place_records(city)
    got = _VOCABULARY.get(id(recs))
    if got is None:
        got = sorted({f.split(":", 2)[2] for rec in recs.values() for f in rec["facts"]})
        _VOCABULARY.clear()
        _VOCABULARY[id(recs)] = got
    return got


def _reasons(city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer) -> list[tuple[str | None, str]]:
    """(the place a reason speaks of, the reason) for every reason the answer gives."""
    raw = parsed.raw if isinstance(parsed.raw, dict) else {}
    out: list[tuple[str | None, str]] = []
    if parsed.task == "place":
        subject = answer_place(city, parsed)
        if subject is None and len(case.get("reference_places") or []) == 1:
            subject = case["reference_places"][0]  # a verdict or a value about the place asked of
        if isinstance(raw.get("reason"), str):
            out.append((subject, raw["reason"]))
        return out
    items: list[Any] = list(raw.get("answer") or []) if parsed.task == "nearby" else []
    if parsed.task in ("routing", "trip"):
        items = [raw.get("start"), raw.get("end"), *(raw.get("waypoints") or [])]
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("reason"), str):
            pid = item.get("place_id") if isinstance(item.get("place_id"), str) else None
            out.append((pid, item["reason"]))
    return out


def _cited_notes_text(city: city_handle.City, note_ids: list[str]) -> str:
    if not note_ids:
        return ""
    rows = (
        city.cursor()
        .execute('SELECT title, "desc", tag_list FROM notes WHERE list_contains(?, note_id)', [note_ids])
        .fetchall()
    )
    return " ".join(" ".join(str(x or "") for x in r) for r in rows)


def robust_purity_checks(
    city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer, traj: Trajectory
) -> list[tuple[str, bool]]:
    """The paper protocol's checks, plus what the answer cites (each `ref.attribute_key` is a real
    field of the place, shown to the agent, and a `tag:` key is one of its tags; a value answered
    for one cited field is the record's), the places its reasons name (each seen in a tool
    result) and what its reasons state about their place (`purity.reason_claims`)."""
    recs = place_records(city)
    checks = purity_checks(city, parsed, traj)
    subject = answer_place(city, parsed)
    if parsed.task == "place" and subject is None and len(case.get("reference_places") or []) == 1:
        subject = case["reference_places"][0]
    if parsed.task == "place" and subject in recs:
        plain = [k for k in parsed.attribute_keys if ":" not in k]
        for k in parsed.attribute_keys:
            field_name, _, tag = k.partition(":")
            if field_name == "tag" and tag:
                checks.append((f"{subject}.tag was shown", f"place:{subject}:tag" in traj.observed))
                if parsed.value is not False:  # a "no" cites the tag it did not find
                    checks.append((f"{subject} has tag {tag}", f" {_norm(tag)}" in " " + _norm(recs[subject]["tag"])))
            elif field_name in _VISIBLE:
                checks.append((f"{subject}.{k} was shown", f"place:{subject}:{k}" in traj.observed))
            else:
                checks.append((f"{k} is a field of the place", False))
        value = parsed.value
        stated = len(plain) == 1 and plain[0] in _VISIBLE and value is not None and not isinstance(value, bool)
        if stated and answer_place(city, parsed) is None:
            checks.append(
                (
                    f"answered {plain[0]} is the record's",
                    satisfies(recs[subject], Requirement(plain[0], "==", value), True),
                )
            )
    vocabulary = fact_vocabulary(city)
    notes_text = _cited_notes_text(city, parsed.note_ids)
    names = {_norm(r["name"]): pid for pid, r in recs.items()}

    for pid, reason in _reasons(city, case, parsed):
        asserted, rejected = place_mentions(city, reason)
        for named in dict.fromkeys([*asserted, *rejected]):
            checks.append((f"{named}, named in a reason, was seen", f"place:{named}" in traj.observed))
        if pid is None or pid not in recs:
            continue
        rec, here = recs[pid], pid

        def distance_to(name: str, here: str = here) -> float | None:
            other = names.get(_norm(name))
            return straight_distance(city, here, other) if other else None

        checks += [
            (f"{pid}: {claim}", ok)
            for claim, ok in reason_claims(
                reason,
                rec,
                vocabulary=vocabulary,
                question=str(case.get("question") or ""),
                evidence_text=notes_text,
                distance_to=distance_to,
            )
        ]
    return checks


def robust_purity_score(
    city: city_handle.City, case: Mapping[str, Any], parsed: ParsedAnswer, traj: Trajectory
) -> float:
    """The share of the answer's checkable claims that hold; 0 when it states nothing checkable
    (no faithfulness is shown by an answer that grounds nothing: RP is not a default of 1)."""
    checks = robust_purity_checks(city, case, parsed, traj)
    return sum(ok for _, ok in checks) / len(checks) if checks else 0.0


# --------------------------------------------------------------------------------------------
# The `rules` judge
# --------------------------------------------------------------------------------------------


def rules_judge(request: Any) -> float:
    """The offline judge of the ensemble (`judge.models: [rules]`). `request.context` holds
    `metric` (`sc` or `rp`), the `db_path`, the `case`, the `parsed` answer and the
    `trajectory`."""
    ctx = request.context
    city = city_handle.open_city(ctx["db_path"])
    if ctx["metric"] == "sc":
        return semantic_constraint_score(city, ctx["case"], ctx["parsed"])
    if ctx["metric"] == "rp":
        if ctx.get("protocol", "paper") == "robust":
            return robust_purity_score(city, ctx["case"], ctx["parsed"], ctx["trajectory"])
        return reasoning_purity_score(city, ctx["parsed"], ctx["trajectory"])
    raise ValueError(f"the rules judge scores 'sc' or 'rp', not {ctx['metric']!r}")
