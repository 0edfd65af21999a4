"""Shared steps of the Routing and Trip families: the ranked orders of `multi_stop_routing`, the
unique best admissible order, and the route answer (Table 5's start, end, waypoints, order, totals)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geoeval.suites.lifeplanner.cases.case import Reject
from geoeval.suites.lifeplanner.cases.city_index import Place
from geoeval.suites.lifeplanner.cases.reference_path import ReferencePathSteps
from geoeval.suites.lifeplanner.scoring.answers import optimal_order, place_stop

_TIME_GAP_S = 5  # a reference order must beat the next admissible one by this much (time) ...
_DIST_GAP_M = 10  # ... or this much (distance), so that the optimum is unique


class RouteSteps(ReferencePathSteps):
    """Orders, their uniqueness and the route answer; the last layer of the shared steps that
    every family builds on."""

    def ranked_orders(self, stops: list[str], vehicle: str, mode: str) -> dict[str, Any]:
        """multi_stop_routing with the first stop fixed as start and the last as end."""
        out = self.de(
            "multi_stop_routing", stop_ids=stops, start_id=stops[0], end_id=stops[-1], vehicle=vehicle, mode=mode
        )
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

    @staticmethod
    def route_requirements(a: Place, b: Place, vehicle: str, mode: str) -> dict[str, Any]:
        """A's requirement group on a route answer's own fields: vehicle, mode, start and end."""
        return {
            "scope": "answer",
            "requirements": [
                ["vehicle", "==", vehicle],
                ["mode", "==", mode],
                ["start_id", "==", a.id],
                ["end_id", "==", b.id],
            ],
        }

    @staticmethod
    def endpoint_constraints(a: Place, b: Place, what: str) -> list[dict[str, Any]]:
        """SC's fixed start and end of a route or a trip (`what`)."""
        return [
            {"kind": "starts_at", "place_id": a.id, "text": f"The {what} starts at {a.name}."},
            {"kind": "ends_at", "place_id": b.id, "text": f"The {what} ends at {b.name}."},
        ]

    def stop_answer(
        self,
        start: Place,
        end: Place,
        stops: Sequence[tuple[Place, str, dict[str, str] | None, bool]],
        order: list[str],
        vehicle: str,
        mode: str,
        totals: tuple[int, int],
        start_reason: str = "User-specified origin.",
        end_reason: str = "User-specified destination.",
    ) -> dict[str, Any]:
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
