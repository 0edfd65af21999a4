"""Writing the reference path τ*: the engine steps that add calls to τ* (looking a place up, showing
that a place meets a preference or has a dislike, and the routing legs of an order) on the case
under construction (`case.Draft`)."""

from __future__ import annotations

from typing import Any

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import Place
from geoeval.suites.lifeplanner.cases.lexicon import Preference
from geoeval.suites.lifeplanner.cases.verifying import VerifyingSteps
from geoeval.suites.lifeplanner.cases.visit_time import Visit
from geoeval.suites.lifeplanner.scoring.trajectory import route_item


class ReferencePathSteps(VerifyingSteps):
    """Engine steps that write τ* (each call runs at once; a call that fails rejects the case)."""

    def find_place(self, p: Place) -> None:
        """τ*: look the named place up (the exact match comes first)."""
        out = self.d.call("place_search", query_name=p.name)
        if not out["results"] or out["results"][0]["place_id"] != p.id:
            raise Reject("place_search does not put the named place first")
        self.d.need(f"place:{p.id}")

    def show_dislike(self, trap: Place, dislike: Preference) -> None:
        """τ* steps that find and read the note showing `trap` has what the user dislikes (the
        reason it is not the answer)."""
        note, keyword, _ = self.findable_note(trap, self.satisfies(trap, dislike)[0])
        self.d.call("search_notes", keyword=keyword)
        self.d.call("note_detail", note_id=note)
        self.d.need(f"note:{note}")

    # ---------------------------------------------------------------- evidence for one preference
    def show_preference(
        self,
        p: Place,
        pref: Preference,
        others: list[Place],
        search: dict[str, Any] | None = None,
        visit: Visit | None = None,
    ) -> tuple[list[str], list[str]]:
        """τ* steps that show `p` meets `pref` and `others` do not; returns the ref's
        (attribute_keys, note_ids). A tag shows in the records: with `search` (nearby_search
        arguments of the candidate area) one geo_tag search singles `p` out, else each
        candidate's record is read. Memory shows only in notes: one search per candidate. Only
        facts that hold at `visit` are shown."""
        facts = self.satisfies(p, pref, visit)
        if not facts:
            raise Reject("no evidence of the preference holds at the visit")
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

    def leg_calls(self, order: list[str], stops: list[str], vehicle: str, mode: str) -> None:
        """τ*: one routing call per pair of stops a planner must compare (every pair but start–end
        when there are stops between), in the direction the reference order travels it."""
        consecutive = set(zip(order, order[1:]))
        start, end = order[0], order[-1]
        for i, u in enumerate(stops):
            for v in stops[i + 1 :]:
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
