"""Nearby Discovery cases (L0 every place of a type within a radius, L1 the one place that meets
filters and is open, L2 the nearest place that fits an implied preference)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import Place
from geoeval.suites.lifeplanner.cases.lexicon import PREFERENCES, TYPE_NOUNS, Preference, type_borderline, type_reading
from geoeval.suites.lifeplanner.cases.routes import RouteSteps
from geoeval.suites.lifeplanner.cases.visit_time import definitely_holds, visit_for
from geoeval.suites.lifeplanner.cases.wording import list_words
from geoeval.suites.lifeplanner.city.opening_hours import DAYS, OpeningHours
from geoeval.suites.lifeplanner.scoring.answers import ref_block
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools.trip_timing import boundary_margin, hhmm_to_minute, minute_to_hhmm, open_at_minute


class NearbyCases(RouteSteps):
    """The Nearby Discovery generators."""

    def nearby_l0(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        sub = self.pick(sorted(s for s in TYPE_NOUNS if self.idx.by_sub.get(s)))
        # every place the noun covers for a reader (a "hotel" may be a hostel), none it may or may not
        kinds = type_reading(sub)
        pool = [p for s in kinds for p in self.idx.by_sub.get(s, []) if p.id != anchor.id]
        unsure = [p for s in type_borderline(sub) for p in self.idx.by_sub.get(s, []) if p.id != anchor.id]
        ds = np.sort(self.idx.distances(anchor, pool))
        k = int(self.pick([1, 1, 2, 2, 3]))
        if len(ds) < k:
            raise Reject("too few places of the type")
        step = int(self.pick([50, 10]))
        radius = self.clean_radius(
            float(ds[k - 1]), np.concatenate([ds, self.idx.distances(anchor, unsure)]), step=step, tries=1
        )
        if radius > 1500 or int(np.sum(ds <= radius)) != k or self.within(anchor, unsure, radius)[0]:
            raise Reject("no clean radius")
        found, dist = self.within(anchor, pool, radius)
        noun, plural = TYPE_NOUNS[sub]
        q = self.pick(
            [
                f"Which {plural} are within {radius} m of {anchor.name}?",
                f"{self.persona()}List every {noun} within {radius} metres of {anchor.name}.",
                f"I'm at {anchor.name}. Are there any {plural} within {radius} m?",
            ]
        )
        self.only_place_named(anchor)
        res = self.de("nearby_search", center=anchor.id, radius_meters=radius, place_types=list(kinds))
        if sorted(r["place_id"] for r in res["results"]) != sorted(p.id for p in found):
            raise Reject("the data engine sees another set")
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=list(kinds))
        if [r["place_id"] for r in out["results"]] != [p.id for p in found]:
            raise Reject("nearby_search shows another set")
        for p in found:
            self.d.need(f"place:{p.id}", f"place:{p.id}:place_type")
        return dict(
            signature=("nearby_l0", anchor.id, sub),
            question=q.strip(),
            answer={
                "answer": [
                    {
                        "name": p.name,
                        "place_id": p.id,
                        "reason": f"A {noun} {int(math.floor(d + 0.5))} m from {anchor.name}.",
                        "ref": ref_block("l0", ["place_type"], [], notes_field=False),
                    }
                    for p, d in zip(found, dist)
                ]
            },
            implicit_logic=False,
            requirements=[
                {"scope": "places", "requirements": [self.type_requirement(sub), ["distance_m", "<=", radius]]}
            ],
            constraints=[],
            reference_places=[p.id for p in found],
            reference_order=[],
            context={"anchor": anchor.id, "radius_m": radius, "place_type": sub, "place_types": list(kinds)},
        )

    def nearby_l1(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        sub = self.pick(sorted(s for s in TYPE_NOUNS if len(self.idx.by_sub.get(s, [])) >= 4))
        pool = [p for p in self.idx.unique_named if p.sub == sub]
        all_same = [p for p in self.idx.by_sub[sub] if p.id != anchor.id]
        radius = self.clean_radius(
            float(self.pick([250, 350, 450, 550, 750, 950])), self.idx.distances(anchor, all_same), step=50, tries=4
        )
        cands, _ = self.within(anchor, pool, radius)
        # filters chosen so that 2-5 candidates remain: few enough to check each one's hours
        costs = sorted({float(int(math.ceil(p.cost / 10.0) * 10)) for p in cands if p.cost is not None})
        options = [(r, c) for r in (None, 3.5, 3.8, 4.0, 4.2, 4.5) for c in (None, *costs) if (r, c) != (None, None)]
        options = [options[i] for i in self.rng.permutation(len(options))]
        for min_rating, max_cost in options:
            kept = [
                p
                for p in cands
                if (min_rating is None or (p.rating is not None and p.rating >= min_rating))
                and (max_cost is None or (p.cost is not None and p.cost <= max_cost))
            ]
            if 2 <= len(kept) <= 5 and all(p.hours for p in kept):
                break
        else:
            raise Reject("no filters leave 2-5 candidates")
        hs = [self.idx.hours_of(p) for p in kept]
        wd, t, opens = self.time_when_exactly_one_is_open(hs, earliest=7 * 60, margin=15)
        ans = kept[opens.index(True)]
        day, hhmm = DAYS[wd], minute_to_hhmm(t)
        noun = TYPE_NOUNS[sub][0]
        conds = []
        if min_rating is not None:
            conds.append(f"rated at least {min_rating:g}")
        if max_cost is not None:
            conds.append(f"no more than {max_cost:g} CNY per person")
        conds.append(f"open on {day} at {hhmm}")
        q = self.pick(
            [
                f"{self.persona()}Find a {noun} within {radius} m of {anchor.name} that is {list_words(conds)}.",
                f"I need a {noun} near {anchor.name} (at most {radius} m away), {list_words(conds)}. Which one?",
            ]
        )
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
        reqs = [
            ["place_type", "contains", sub],
            ["distance_m", "<=", radius],
            ["opentime_week", "open_at", [day, hhmm]],
        ]
        keys = ["opentime_week"]
        if min_rating is not None:
            reqs.append(["rating", ">=", min_rating])
            keys.append("rating")
        if max_cost is not None:
            reqs.append(["cost", "<=", max_cost])
            keys.append("cost")
        self.d.need(*(f"place:{ans.id}:{k}" for k in keys))
        texts = {
            "place_type": f"It is a {noun}.",
            "distance_m": f"It is within {radius} m of {anchor.name}.",
            "opentime_week": f"It is open on {day} at {hhmm}.",
            "rating": f"It is rated at least {min_rating}.",
            "cost": f"It costs at most {max_cost} CNY per person.",
        }
        return dict(
            signature=("nearby_l1", anchor.id, sub, radius, min_rating, max_cost, wd, t),
            question=q.strip(),
            answer={
                "answer": [
                    {
                        "name": ans.name,
                        "place_id": ans.id,
                        "reason": f"The only {noun} within {radius} m meeting the filters that is open then "
                        f"({ans.hours}).",
                        "ref": ref_block("l1", keys, [], notes_field=True),
                    }
                ]
            },
            implicit_logic=False,
            requirements=[{"scope": "places", "requirements": reqs}],
            constraints=[
                {"kind": "place_requirement", "role": "places", "requirement": r, "text": texts[r[0]]} for r in reqs
            ],
            reference_places=[ans.id],
            reference_order=[],
            context={"anchor": anchor.id, "radius_m": radius, "place_type": sub, "weekday": day, "time": hhmm},
        )

    def nearby_l2(self) -> dict[str, Any]:
        anchor = self.pick(self.idx.unique_named)
        pref = self.pick(PREFERENCES)
        ans, d_ans, radius, cands = self._nearest_fitting(anchor, pref)
        sub = ans.sub
        timed = self.chance(0.5)
        h = self.idx.hours_of(ans)
        day, hhmm = self._open_time(h) if timed else (None, None)
        # issue 28: a stated day and time fix the visit; the answer's evidence must hold then
        visit = visit_for(DAYS.index(day), hhmm_to_minute(hhmm), pref) if day and hhmm else None
        if not self.satisfies(ans, pref, visit):
            raise Reject("the answer's evidence does not hold at the stated time")
        noun = TYPE_NOUNS[sub][0]
        need = self.pick(pref.phrases)
        when = f" It's {day}, {hhmm}." if timed else ""
        area = None
        if self.paper:  # Figure 1's Nearby L2: where the user is and what they need; no type, no radius
            fitting = [p for p in self.idx.places if self.satisfies(p, pref)]
            area = self.area_radius(anchor, d_ans, fitting)
            if self.fitting_in_area(anchor.id, area, pref) != [ans.id]:
                raise Reject("another place of any type near the anchor fits")
            q = self.pick(
                [
                    f"{self.persona()}I'm near {anchor.name} and {need}.{when} Where should I go?",
                    f"{need[0].upper()}{need[1:]}.{when} I'm around {anchor.name}; which place nearby suits me?",
                ]
            )
        else:
            q = self.pick(
                [
                    f"{self.persona()}I'm near {anchor.name} and {need}.{when} Which {noun} within {radius} m should I go to?",
                    f"{need[0].upper()}{need[1:]}.{when} Is there a {noun} within {radius} m of {anchor.name} for me?",
                ]
            )
        self.only_place_named(anchor)
        # Figure 10: the full records (memory included) single out the answer within the radius
        self.only_fitting_place(anchor.id, radius, sub, pref, ans, "the data engine finds another fitting place")
        self.find_place(anchor)
        out = self.d.call("nearby_search", center=anchor.id, radius_meters=radius, place_types=[sub])
        listed = [r["place_id"] for r in out["results"]]
        if sorted(listed) != sorted(p.id for p in cands):
            raise Reject("nearby_search lists another set")
        ordered = [self.idx.by_id[i] for i in listed]
        keys, notes = self.show_preference(
            ans,
            pref,
            [p for p in ordered if p.id != ans.id],
            search={"center": anchor.id, "radius_meters": radius, "place_types": [sub]},
            visit=visit,
        )
        reqs: list[list[Any]] = [["place_type", "contains", sub], ["distance_m", "<=", radius]]
        constraints = [
            {
                "kind": "has_preference",
                "role": "places",
                "facts": [f for f in pref.facts if definitely_holds(f, visit)],
                "text": f"The place fits the need: {need}.",
            },
            {
                "kind": "within_radius",
                "role": "places",
                "center": anchor.id,
                "radius_m": radius,
                "text": f"It is within {radius} m of {anchor.name}.",
            },
            {
                "kind": "place_requirement",
                "role": "places",
                "requirement": ["place_type", "contains", sub],
                "text": f"It is a {noun}.",
            },
        ]
        if area is not None:  # the query states neither: the answer is the one fitting place near the anchor
            reqs = [["distance_m", "<=", area]]
            constraints = [
                constraints[0],
                {
                    "kind": "within_radius",
                    "role": "places",
                    "center": anchor.id,
                    "radius_m": area,
                    "text": f"It is near {anchor.name} (within {area} m).",
                },
            ]
        if timed:
            if not self.d.tau or self.d.tau[-1] != {"tool": "place_detail", "arguments": {"place_id": ans.id}}:
                self.d.call("place_detail", place_id=ans.id)
            keys = keys + ["opentime_week"]
            self.d.need(f"place:{ans.id}:opentime_week")
            reqs.append(["opentime_week", "open_at", [day, hhmm]])
            constraints.append(
                {
                    "kind": "place_requirement",
                    "role": "places",
                    "requirement": ["opentime_week", "open_at", [day, hhmm]],
                    "text": f"It is open on {day} at {hhmm}.",
                }
            )
        return dict(
            signature=("nearby_l2", anchor.id, ans.id, pref.key),
            question=q.strip(),
            answer={
                "answer": [
                    {
                        "name": ans.name,
                        "place_id": ans.id,
                        "reason": (
                            f"The only place near {anchor.name} that fits: {need}."
                            if area
                            else f"The only {noun} within {radius} m of {anchor.name} that fits: {need}."
                        ),
                        "ref": ref_block("l2", keys, notes, notes_field=True),
                        "implicit_logic": "True",
                    }
                ]
            },
            implicit_logic=True,
            requirements=[{"scope": "places", "requirements": reqs}],
            constraints=constraints,
            reference_places=[ans.id],
            reference_order=[],
            context={
                "anchor": anchor.id,
                "radius_m": area or radius,
                "place_type": sub,
                "preference": pref.key,
                "weekday": day,
                "time": hhmm,
                "phrasing": "paper" if area else "explicit",
            },
        )

    def _nearest_fitting(self, anchor: Place, pref: Preference) -> tuple[Place, float, int, list[Place]]:
        """Nearby L2's answer: the place of some type nearest to `anchor` that fits `pref` (nothing
        of that type fits closer), the only fitting one among the few places of its type within a
        clean radius; (answer, its distance, radius, candidates)."""
        holders = [
            p for p in self.idx.unique_named if self.satisfies(p, pref) and p.sub in TYPE_NOUNS and p.id != anchor.id
        ]
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
        limit = (
            tool_arguments.STANDARD_LIMITS["nearby_search"] if tag_pref else 6
        )  # a tag is found by one geo_tag search
        if len(inside_all) != len(cands) or not 2 <= len(cands) <= limit:
            raise Reject("candidate set not clean")
        if [p for p in cands if self.satisfies(p, pref)] != [ans]:
            raise Reject("the preference does not single out one place")
        return ans, d_ans, radius, cands

    def _open_time(self, hours: OpeningHours) -> tuple[str, str]:
        """A (day, HH:MM) at which `hours` is open, at least 20 minutes from opening or closing."""
        for _ in range(40):
            wd, t = self.weekday_time(7 * 60, 23 * 60 + 55)
            if open_at_minute(hours, wd, t) and boundary_margin(hours, wd, t) >= 20:
                return DAYS[wd], minute_to_hhmm(t)
        raise Reject("no open time")
