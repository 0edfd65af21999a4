"""Trip Design cases (Figure 10's Scenario B where the city allows: fixed start and end, and
opening hours on arrival or an order dependency that rule out the unconstrained optimum; L2 stops
are the places that fit implied preferences near the start)."""

from __future__ import annotations

from typing import Any

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import Place
from geoeval.suites.lifeplanner.cases.lexicon import MODE_WORDS, PREFERENCES, TYPE_NOUNS, Preference
from geoeval.suites.lifeplanner.cases.routes import RouteSteps
from geoeval.suites.lifeplanner.cases.visit_time import Visit, definitely_holds, visit_for
from geoeval.suites.lifeplanner.cases.wording import list_words
from geoeval.suites.lifeplanner.city.opening_hours import DAYS
from geoeval.suites.lifeplanner.scoring.answers import ref_block
from geoeval.suites.lifeplanner.tools.trip_timing import arrival_check, arrival_minutes, minute_to_hhmm

_MARGIN_MIN = 5  # arrivals this far from an opening/closing boundary (time-window cases)


class TripCases(RouteSteps):
    """The Trip Design generators and the opening-hours windows they rely on."""

    @staticmethod
    def leg_seconds(order: list[str], legs: dict) -> list[int]:
        return [legs[(a, b)][1] for a, b in zip(order, order[1:])]

    def arrivals(self, order: list[str], legs: dict, departure: int, dwell: int) -> list[float]:
        return arrival_minutes(self.leg_seconds(order, legs), departure, dwell)

    def time_feasibility(
        self, order: list[str], legs: dict, weekday: int, departure: int, dwell: int
    ) -> tuple[bool, float]:
        """(every stop open on arrival, smallest distance in minutes of an arrival to an opening
        or closing time)."""
        return arrival_check(
            order,
            self.leg_seconds(order, legs),
            weekday,
            departure,
            dwell,
            lambda p: self.idx.hours_of(self.idx.by_id[p]),
        )

    def _time_window(self, routes: list[dict[str, Any]], legs: dict, mode: str) -> tuple[int, int, int, int] | None:
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
            keep: list[int] = []
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
        constraints = [
            *self.endpoint_constraints(a, b, "trip"),
            {"kind": "visits_all", "place_ids": [p.id for p in picks], "text": f"The trip visits {list_words(names)}."},
        ]
        context: dict[str, Any] = {
            "vehicle": vehicle,
            "mode": mode,
            "scenario": "B",
            "constraint": kind,
            "unconstrained_order": routes[0]["order"],
        }
        if kind == "time":
            wd, dep, dwell, ri = chosen  # type: ignore[misc]
            day, hhmm = DAYS[wd], minute_to_hhmm(dep)
            rule = (
                f"I'm leaving at {hhmm} on {day} and will spend about {dwell} minutes at each stop; every place "
                f"has to be open when I get there."
            )
            constraints.append(
                {
                    "kind": "open_on_arrival",
                    "weekday": day,
                    "departure": hhmm,
                    "dwell_min": dwell,
                    "vehicle": vehicle,
                    "mode": mode,
                    "text": f"Every stop is open on arrival (leaving {hhmm} on {day}, {dwell} min per stop).",
                }
            )
            context.update(weekday=day, departure=hhmm, dwell_min=dwell)
        else:
            x, y, ri = self._order_dependency(routes, mode)
            px, py = self.idx.by_id[x], self.idx.by_id[y]
            rule = self.pick(
                [
                    f"I have to stop at {px.name} before {py.name}.",
                    f"I must pick something up at {px.name} before I go to {py.name}.",
                ]
            )
            constraints.append(
                {"kind": "order_before", "first": x, "then": y, "text": f"{px.name} is visited before {py.name}."}
            )
            context.update(first=x, then=y)
        ref = routes[ri]
        order = ref["order"]
        if order == routes[0]["order"]:
            raise Reject("the constraint does not change the optimum")
        q = self.pick(
            [
                f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to visit {list_words(names)}. "
                f"{rule} What's the {adj} plan?",
                f"Plan my {vehicle} trip from {a.name} to {b.name} via {list_words(names)}. {rule} "
                f"I want the {adj} route.",
            ]
        )
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
            reasons = {
                p: f"Open on arrival at {minute_to_hhmm(t)} ({self.idx.by_id[p].hours})."
                for p, t in zip(order[1:-1], arr)
            }
            keys = ["opentime_week"]
        else:
            reasons = {p.id: "User-specified stop." for p in picks}
            keys = []
        stop_rows = [(p, reasons[p.id], ref_block("l1", keys, [], notes_field=False), False) for p in picks]
        return dict(
            signature=("trip_l1", tuple(ids), vehicle, mode, kind),
            question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=False,
            requirements=[
                self.route_requirements(a, b, vehicle, mode),
                *[{"scope": "slot", "slot": i, "requirements": [["name", "==", p.name]]} for i, p in enumerate(picks)],
            ],
            constraints=constraints,
            reference_places=ids,
            reference_order=order,
            context=context,
        )

    def _order_dependency(self, routes: list[dict[str, Any]], mode: str) -> tuple[str, str, int]:
        """Scenario B by an order dependency: stops (x, y) that the unconstrained optimum visits y
        first, such that the best order visiting x before y is unique; (x, y, index of the
        reference route)."""
        best = routes[0]["order"]
        pairs = [(x, y) for i, y in enumerate(best[1:-1]) for x in best[1:-1][i + 1 :]]  # x after y in best
        pairs = [pairs[i] for i in self.rng.permutation(len(pairs))]
        for x, y in pairs:
            keep = [i for i, r in enumerate(routes) if r["order"].index(x) < r["order"].index(y)]
            try:
                return x, y, self.unique_best(routes, keep, mode)
            except Reject:
                continue
        raise Reject("no order dependency that changes the optimum")

    def trip_l2(self) -> dict[str, Any]:
        a, b, vehicle, mode = self._trip_frame()
        k = 2 if self.chance(0.6) else 3
        slots: list[tuple[Place, Preference, int]] = []
        for _ in range(k):
            slots.append(self._preference_stop(a, b, slots))
        stops = [s[0] for s in slots]
        ids = [a.id, *[s.id for s in stops], b.id]
        self.only_place_named(a)
        self.only_place_named(b)
        for p, pref, radius in slots:
            self.only_fitting_place(a.id, radius, p.sub, pref, p, "the data engine finds another fitting place")
        msr = self.ranked_orders(ids, vehicle, mode)
        routes, legs = msr["routes"], self.leg_table(msr)
        wd, dep, dwell, ri, scenario = self._departure(routes, legs, mode)
        ref = routes[ri]
        order = ref["order"]
        # issue 28: each stop's evidence must hold when the trip reaches it
        arrival = dict(zip(order[1:-1], self.arrivals(order, legs, dep, dwell)))
        visits = [visit_for(wd, arrival[p.id], pref) for p, pref, _ in slots]
        if any(not self.satisfies(p, pref, v) for (p, pref, _), v in zip(slots, visits)):
            raise Reject("a stop's evidence does not hold on arrival")
        day, hhmm = DAYS[wd], minute_to_hhmm(dep)
        adj = self.pick(MODE_WORDS[mode])
        wants = []
        for p, pref, radius in slots:
            where = f"near {a.name}" if self.paper else f"within {radius / 1000:g} km of {a.name}"
            wants.append(f"{self.pick(pref.phrases)} (a {TYPE_NOUNS[p.sub][0]} {where})")
        q = (
            f"{self.persona()}It's {day}, {hhmm}, and I'm setting off {vehicle} from {a.name} to {b.name}. "
            f"On the way: {'; '.join(wants)}. I'll spend about {dwell} minutes at each stop. "
            f"Plan the {adj} trip."
        )
        self.find_place(a)
        self.find_place(b)
        stop_rows = []
        constraints = self.endpoint_constraints(a, b, "trip")
        requirements: list[dict[str, Any]] = [self.route_requirements(a, b, vehicle, mode)]
        for i, ((p, pref, radius), visit) in enumerate(zip(slots, visits)):
            row, slot_constraints, slot_requirements = self._preference_stop_path(i, a, p, pref, radius, visit)
            stop_rows.append(row)
            constraints += slot_constraints
            requirements.append(slot_requirements)
        constraints.append(
            {
                "kind": "open_on_arrival",
                "weekday": day,
                "departure": hhmm,
                "dwell_min": dwell,
                "vehicle": vehicle,
                "mode": mode,
                "text": f"Every stop is open on arrival (leaving {hhmm} on {day}, {dwell} min per stop).",
            }
        )
        self.leg_calls(order, ids, vehicle, mode)
        totals = self.order_totals(order)
        if totals != (ref["total_distance_m"], ref["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        arr = self.arrivals(order, legs, dep, dwell)
        when = {p: minute_to_hhmm(t) for p, t in zip(order[1:-1], arr)}
        stop_rows = [
            (p, f"{reason} Arrival about {when[p.id]}, within its hours.", block, imp)
            for p, reason, block, imp in stop_rows
        ]
        return dict(
            signature=("trip_l2", tuple(sorted(ids)), vehicle, mode),
            question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=True,
            requirements=requirements,
            constraints=constraints,
            reference_places=ids,
            reference_order=order,
            context={
                "anchor": a.id,
                "vehicle": vehicle,
                "mode": mode,
                "scenario": scenario,
                "weekday": day,
                "departure": hhmm,
                "dwell_min": dwell,
                "unconstrained_order": routes[0]["order"],
                "preferences": [s[1].key for s in slots],
                "phrasing": "paper" if self.paper else "explicit",
            },
        )

    def _preference_stop(
        self, a: Place, b: Place, slots: list[tuple[Place, Preference, int]]
    ) -> tuple[Place, Preference, int]:
        """One more Trip L2 stop (12 draws): a preference not used yet and the place of one type
        nearest to the start that fits it, alone among its type within the area around the start;
        (stop, preference, radius)."""
        used_prefs = {s[1].key for s in slots}
        for _try in range(12):
            pref = self.pick(PREFERENCES)
            if pref.key in used_prefs:
                continue
            holders = [
                p
                for p in self.idx.unique_named
                if self.satisfies(p, pref)
                and p.sub in TYPE_NOUNS
                and p.hours
                and p.id not in (a.id, b.id)
                and p.id not in {s[0].id for s in slots}
            ]
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
                radius = (
                    self.area_radius(a, d_p, same)
                    if self.paper
                    else self.clean_radius(d_p, self.idx.distances(a, same), step=100, tries=3)
                )
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
            return p, pref, radius
        raise Reject("no slot")

    def _departure(self, routes: list[dict[str, Any]], legs: dict, mode: str) -> tuple[int, int, int, int, str]:
        """(weekday, departure, dwell, index of the reference route, scenario): Scenario B when
        opening hours rule out the optimum (`_time_window`), else Scenario A, a departure at which
        the optimum already finds every stop open."""
        chosen = self._time_window(routes, legs, mode)
        if chosen is not None:
            wd, dep, dwell, ri = chosen
            return wd, dep, dwell, ri, "B"
        ri = self.unique_best(routes, list(range(len(routes))), mode)
        for _ in range(60):
            wd, dep = self.weekday_time(7 * 60, 21 * 60)
            dwell = int(self.pick([20, 30, 45, 60]))
            ok, m = self.time_feasibility(routes[ri]["order"], legs, wd, dep, dwell)
            if ok and m >= _MARGIN_MIN:
                return wd, dep, dwell, ri, "A"
        raise Reject("no departure with every stop open")

    def _preference_stop_path(
        self, i: int, a: Place, p: Place, pref: Preference, radius: int, visit: Visit | None
    ) -> tuple[tuple[Place, str, dict[str, str], bool], list[dict[str, Any]], dict[str, Any]]:
        """τ* steps that show stop `i` fits its preference at `visit` and its hours (a tag search
        singles it out, or its note is found and read); (its answer row, its constraints, its
        requirement group)."""
        fact = self.satisfies(p, pref, visit)[0]
        value = pref.value_of(fact)
        if fact.startswith("tag:"):
            out = self.d.call("nearby_search", center=a.id, radius_meters=radius, place_types=[p.sub], geo_tag=[value])
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
        row = (
            p,
            f"The only {noun} within {radius} m of {a.name} that fits: {pref.phrases[0]}.",
            ref_block("l2", keys, notes, notes_field=True),
            True,
        )
        constraints = [
            {
                "kind": "has_preference",
                "role": "slot",
                "slot": i,
                "facts": [f for f in pref.facts if definitely_holds(f, visit)],
                "text": f"A stop fits: {pref.phrases[0]}.",
            },
            {
                "kind": "place_requirement",
                "role": "slot",
                "slot": i,
                "requirement": ["place_type", "contains", p.sub],
                "text": f"That stop is a {noun}.",
            },
            {
                "kind": "within_radius",
                "role": "slot",
                "slot": i,
                "center": a.id,
                "radius_m": radius,
                "text": (
                    f"That stop is near {a.name} (within {radius} m)."
                    if self.paper
                    else f"That stop is within {radius} m of {a.name}."
                ),
            },
        ]
        requirements = {
            "scope": "slot",
            "slot": i,
            "requirements": [["place_type", "contains", p.sub], ["distance_m", "<=", radius]],
        }
        return row, constraints, requirements
