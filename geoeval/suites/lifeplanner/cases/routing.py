"""Routing cases (L0 a route between two named places, L1 with stops at the place of a type
nearest to the route, L2 with a stop that fits an implied preference on the way)."""

from __future__ import annotations

import math
from typing import Any, cast

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.choosing import AREA_FLOOR_M, RADIUS_BAND_M
from geoeval.suites.lifeplanner.cases.city_index import Place, norm_name
from geoeval.suites.lifeplanner.cases.lexicon import MODE_WORDS, PREFERENCES, TYPE_NOUNS, Preference
from geoeval.suites.lifeplanner.cases.routes import RouteSteps
from geoeval.suites.lifeplanner.scoring.answers import ref_block
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools


class RoutingCases(RouteSteps):
    """The Routing generators."""

    def _vehicle_mode(self) -> tuple[str, str]:
        return str(self.pick(["driving", "driving", "cycling", "walking"])), str(
            self.pick(["time", "time", "distance"])
        )

    def routing_l0(self) -> dict[str, Any]:
        a, b = self.endpoints(500.0, 3500.0)
        vehicle, mode = self._vehicle_mode()
        adj = self.pick(MODE_WORDS[mode])
        q = self.pick(
            [
                f"What's the {adj} {vehicle} route from {a.name} to {b.name}?",
                f"{self.persona()}I'm {vehicle} from {a.name} to {b.name}. Which route is {adj}, and how long is it?",
                f"{adj.capitalize()} {vehicle} route from {a.name} to {b.name}?",
            ]
        )
        self.only_place_named(a)
        self.only_place_named(b)
        self.find_place(a)
        self.find_place(b)
        self.leg_calls([a.id, b.id], [a.id, b.id], vehicle, mode)
        totals = self.order_totals([a.id, b.id])
        return dict(
            signature=("routing_l0", a.id, b.id, vehicle, mode),
            question=q.strip(),
            answer=self.stop_answer(a, b, [], [a.id, b.id], vehicle, mode, totals),
            implicit_logic=False,
            requirements=[self.route_requirements(a, b, vehicle, mode)],
            constraints=[],
            reference_places=[a.id, b.id],
            reference_order=[a.id, b.id],
            context={"vehicle": vehicle, "mode": mode},
        )

    def _nearest_on_route(
        self, a: Place, b: Place, sub: str, vehicle: str, mode: str, exclude: set[str]
    ) -> tuple[Place, float]:
        """The place of `sub` nearest to the a→b route; unique by 10 m, the same whether the
        route is the fastest or the shortest one (an agent may omit the mode)."""
        pool = [p for p in self.idx.by_sub.get(sub, []) if p.id not in {a.id, b.id}]
        if len(pool) < 2:
            raise Reject("too few places of the type")
        best_ids = set()
        for m in ("time", "distance"):
            ds = nearby_tools.route_buffer_distances(self.city, a.id, b.id, vehicle, m, [p.id for p in pool])
            if ds is None:
                raise Reject("no route")
            order = sorted(range(len(pool)), key=lambda i: (ds[i], pool[i].id))
            if ds[order[1]] - ds[order[0]] < 10 or ds[order[0]] > 800:
                raise Reject("no clear nearest place")
            best_ids.add(pool[order[0]].id)
            if m == mode:
                chosen, dist = pool[order[0]], ds[order[0]]
        if (
            len(best_ids) != 1
            or chosen.id in exclude
            or norm_name(chosen.name) not in {norm_name(p.name) for p in self.idx.unique_named}
        ):
            raise Reject("the nearest place depends on the route or is ambiguous")
        return chosen, dist

    def _buffer_for(self, dist: float) -> int:
        for r in (200, 300, 500, 800):
            if dist <= r - RADIUS_BAND_M:
                return r
        raise Reject("too far from the route")

    def _route_with_stops(
        self, a: Place, b: Place, stops: list[Place], vehicle: str, mode: str
    ) -> tuple[list[str], dict[str, Any], list[str]]:
        """multi_stop_routing with a and b fixed; (reference order, its route, unconstrained-best order)."""
        ids = [a.id, *[s.id for s in stops], b.id]
        msr = self.ranked_orders(ids, vehicle, mode)
        routes = msr["routes"]
        i = self.unique_best(routes, list(range(len(routes))), mode)
        return routes[i]["order"], routes[i], routes[0]["order"]

    def _show_nearest_on_route(self, route_obj: dict[str, Any], p: Place, sub: str, dist: float) -> None:
        """τ*: the route-buffer search that lists `p` first among the places of `sub`."""
        out = self.d.call(
            "nearby_search", center=dict(route_obj), radius_meters=self._buffer_for(dist), place_types=[sub]
        )
        if not out["results"] or out["results"][0]["place_id"] != p.id:
            raise Reject("nearby_search does not list the nearest first")
        self.d.need(f"place:{p.id}:place_type")

    @staticmethod
    def _nearest_on_route_constraint(
        slot: int, sub: str, a: Place, b: Place, vehicle: str, mode: str
    ) -> dict[str, Any]:
        return {
            "kind": "nearest_on_route",
            "role": "slot",
            "slot": slot,
            "place_type": sub,
            "start": a.id,
            "end": b.id,
            "vehicle": vehicle,
            "mode": mode,
            "text": f"One stop is the {TYPE_NOUNS[sub][0]} nearest to the route.",
        }

    def routing_l1(self) -> dict[str, Any]:
        a, b = self.endpoints(1000.0, 3000.0)
        vehicle, mode = self._vehicle_mode()
        k = 1 if self.chance(0.6) else 2
        subs = [
            str(s)
            for s in self.rng.permutation(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 2))[:k]
        ]
        stops: list[Place] = []
        dists = []
        for sub in subs:
            p, dist = self._nearest_on_route(a, b, sub, vehicle, mode, {s.id for s in stops})
            stops.append(p)
            dists.append(dist)
        nouns = [TYPE_NOUNS[s][0] for s in subs]
        adj = self.pick(MODE_WORDS[mode])
        need = " and the nearest ".join(nouns)
        q = self.pick(
            [
                f"{self.persona()}I'm {vehicle} from {a.name} to {b.name}. On the way I need to stop at the nearest "
                f"{need} to my route. What's the {adj} plan?",
                f"{vehicle.capitalize()} from {a.name} to {b.name}: plan the {adj} route that stops at the "
                f"nearest {need} along the way.",
            ]
        )
        self.only_place_named(a)
        self.only_place_named(b)
        order, best, _ = self._route_with_stops(a, b, stops, vehicle, mode)
        self.find_place(a)
        self.find_place(b)
        route_obj = {"start": a.id, "end": b.id, "vehicle": vehicle}
        if mode != "time":
            route_obj["mode"] = mode
        for p, sub, dist in zip(stops, subs, dists):
            self._show_nearest_on_route(route_obj, p, sub, dist)
        self.leg_calls(order, [a.id, *[s.id for s in stops], b.id], vehicle, mode)
        totals = self.order_totals(order)
        if totals != (best["total_distance_m"], best["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        constraints = self.endpoint_constraints(a, b, "route")
        for i, sub in enumerate(subs[: len(stops)]):
            constraints.append(self._nearest_on_route_constraint(i, sub, a, b, vehicle, mode))
        stop_rows = [
            (
                p,
                f"The {TYPE_NOUNS[sub][0]} nearest to the {vehicle} route ({int(math.floor(d + 0.5))} m off it).",
                ref_block("l1", ["place_type"], [], notes_field=False),
                False,
            )
            for p, sub, d in zip(stops, subs, dists)
        ]
        return dict(
            signature=("routing_l1", a.id, b.id, tuple(subs), vehicle, mode),
            question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=False,
            requirements=[
                self.route_requirements(a, b, vehicle, mode),
                *[
                    {"scope": "slot", "slot": i, "requirements": [["place_type", "contains", sub]]}
                    for i, sub in enumerate(subs)
                ],
            ],
            constraints=constraints,
            reference_places=[a.id, *[s.id for s in stops], b.id],
            reference_order=order,
            context={"vehicle": vehicle, "mode": mode, "place_types": subs},
        )

    def _implicit_stop_on_route(
        self, a: Place, b: Place, vehicle: str, mode: str
    ) -> tuple[Place, Preference, int, list[Place]]:
        """A stop of some type that alone, among its type within a buffer of the route, fits a
        preference (the fitting place of that type nearest to the route); (stop, preference,
        buffer, candidates nearest first)."""
        pref = self.pick(PREFERENCES)
        holders = [
            p
            for p in self.idx.unique_named
            if self.satisfies(p, pref) and p.sub in TYPE_NOUNS and p.id not in (a.id, b.id)
        ]
        if not holders:
            raise Reject("no holder")
        ds = nearby_tools.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in holders])
        if ds is None:
            raise Reject("no route")
        near = sorted((d, p.id, p) for d, p in zip(ds, holders) if d <= 480)
        if not near:
            raise Reject("no holder near the route")
        sub = self.pick(sorted({p.sub for _, _, p in near}))
        d0, _, ans = next(x for x in near if x[2].sub == sub)
        same = [p for p in self.idx.by_sub[ans.sub] if p.id not in (a.id, b.id)]
        # the route of `ds` above: there is one
        dsame = cast(
            "list[float]",
            nearby_tools.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in same]),
        )
        radius = self.clean_radius(d0, dsame, step=10)
        inside = sorted(((round(d, 6), p.id, p) for d, p in zip(dsame, same) if d <= radius))
        cands = [p for _, _, p in inside]
        tag_pref = any(f.startswith("tag:") for f in self.satisfies(ans, pref))
        limit = tool_arguments.STANDARD_LIMITS["nearby_search"] if tag_pref else 6
        if not 2 <= len(cands) <= limit or [p for p in cands if self.satisfies(p, pref)] != [ans]:
            raise Reject("the preference does not single out one stop")
        if any(norm_name(p.name) not in {norm_name(u.name) for u in self.idx.unique_named} for p in cands):
            raise Reject("ambiguous candidate names")
        return ans, pref, radius, cands

    def _route_area(self, a: Place, b: Place, vehicle: str, mode: str, ans: Place) -> int:
        """What "on the way" means when no buffer is stated: `area_radius` around the route,
        clear of every place of the stop's type."""
        same = [p for p in self.idx.by_sub[ans.sub] if p.id not in (a.id, b.id)]
        ds = nearby_tools.route_buffer_distances(self.city, a.id, b.id, vehicle, mode, [p.id for p in same])
        if ds is None:
            raise Reject("no route")
        d0 = float(ds[[p.id for p in same].index(ans.id)])
        return self.clean_radius(max(2.0 * d0, d0 + AREA_FLOOR_M), ds, step=10)

    def _second_stop(self, a: Place, b: Place, vehicle: str, mode: str, first: Place) -> tuple[Place, str, float]:
        """Routing L2's optional explicit stop: the place of another type nearest to the route;
        (place, type, distance from the route)."""
        subs = sorted(s for s in TYPE_NOUNS if s != first.sub and len(self.idx.by_sub.get(s, [])) >= 2)
        sub2 = str(self.pick(subs))
        p2, d2 = self._nearest_on_route(a, b, sub2, vehicle, mode, {first.id})
        return p2, sub2, d2

    def routing_l2(self) -> dict[str, Any]:
        a, b = self.endpoints(1000.0, 3000.0)
        vehicle, mode = self._vehicle_mode()
        ans, pref, radius, cands = self._implicit_stop_on_route(a, b, vehicle, mode)
        explicit = self._second_stop(a, b, vehicle, mode, ans) if self.chance(0.4) else None
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
            if self.fitting_in_area(dict(route_obj), area, pref, place_types=[ans.sub]) != [ans.id]:
                raise Reject("another place of the type on the way fits")
            q = self.pick(
                [
                    f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to stop at a {noun} on "
                    f"the way: {need}.{extra} What's the {adj} plan?",
                    f"{vehicle.capitalize()} from {a.name} to {b.name}. {need[0].upper()}{need[1:]}, so I'd like "
                    f"to stop at a {noun} on the way.{extra} Plan the {adj} trip.",
                ]
            )
        else:
            q = self.pick(
                [
                    f"{self.persona()}I'm {vehicle} from {a.name} to {b.name} and want to stop at a {noun} on the way, "
                    f"no more than {radius} m off my route: {need}.{extra} What's the {adj} plan?",
                    f"{vehicle.capitalize()} from {a.name} to {b.name}. {need[0].upper()}{need[1:]}, so I'd like a "
                    f"{noun} within {radius} m of the route.{extra} Plan the {adj} trip.",
                ]
            )
        self.only_place_named(a)
        self.only_place_named(b)
        self.only_fitting_place(route_obj, radius, ans.sub, pref, ans, "the data engine finds another fitting stop")
        order, best, _ = self._route_with_stops(a, b, stops, vehicle, mode)
        self.find_place(a)
        self.find_place(b)
        out = self.d.call("nearby_search", center=dict(route_obj), radius_meters=radius, place_types=[ans.sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(p.id for p in cands):
            raise Reject("nearby_search lists other candidates")
        keys, notes = self.show_preference(
            ans,
            pref,
            [self.idx.by_id[i] for i in listed if i != ans.id],
            search={"center": dict(route_obj), "radius_meters": radius, "place_types": [ans.sub]},
        )
        if explicit:
            self._show_nearest_on_route(route_obj, *explicit)
        self.leg_calls(order, [a.id, *[s.id for s in stops], b.id], vehicle, mode)
        totals = self.order_totals(order)
        if totals != (best["total_distance_m"], best["total_time_s"]):
            raise Reject("legs do not add up to multi_stop_routing")
        constraints = [
            *self.endpoint_constraints(a, b, "route"),
            {
                "kind": "has_preference",
                "role": "slot",
                "slot": 0,
                "facts": list(pref.facts),
                "text": f"A stop fits the need: {need}.",
            },
            {
                "kind": "place_requirement",
                "role": "slot",
                "slot": 0,
                "requirement": ["place_type", "contains", ans.sub],
                "text": f"That stop is a {noun}.",
            },
            {
                "kind": "within_route_buffer",
                "role": "slot",
                "slot": 0,
                "start": a.id,
                "end": b.id,
                "vehicle": vehicle,
                "mode": mode,
                "radius_m": radius,
                "text": f"That stop is within {radius} m of the route.",
            },
        ]
        stop_rows = [
            (
                ans,
                f"The only {noun} within {radius} m of the route that fits: {need}.",
                ref_block("l2", keys, notes, notes_field=True),
                True,
            )
        ]
        requirements = [
            self.route_requirements(a, b, vehicle, mode),
            {"scope": "slot", "slot": 0, "requirements": [["place_type", "contains", ans.sub]]},
        ]
        if area is not None:  # no buffer is stated: the one fitting place of the type on the way
            constraints[4] = {
                **constraints[4],
                "radius_m": area,
                "text": f"That stop is on the way (within {area} m of the route).",
            }
            stop_rows = [(ans, f"The only {noun} on the way that fits: {need}.", stop_rows[0][2], True)]
        if explicit:
            p2, sub2, d2 = explicit
            constraints.append(self._nearest_on_route_constraint(1, sub2, a, b, vehicle, mode))
            stop_rows.append(
                (
                    p2,
                    f"The {TYPE_NOUNS[sub2][0]} nearest to the route ({int(math.floor(d2 + 0.5))} m off it).",
                    ref_block("l2", ["place_type"], [], notes_field=True),
                    False,
                )
            )
            requirements.append({"scope": "slot", "slot": 1, "requirements": [["place_type", "contains", sub2]]})
        return dict(
            signature=("routing_l2", a.id, b.id, ans.id, vehicle, mode),
            question=q.strip(),
            answer=self.stop_answer(a, b, stop_rows, order, vehicle, mode, totals),
            implicit_logic=True,
            requirements=requirements,
            constraints=constraints,
            reference_places=[a.id, *[s.id for s in stops], b.id],
            reference_order=order,
            context={
                "vehicle": vehicle,
                "mode": mode,
                "preference": pref.key,
                "radius_m": area or radius,
                "phrasing": "paper" if area else "explicit",
            },
        )
