"""nearby_search: places around a POI or along a route buffer."""

from __future__ import annotations

import json
from typing import Any, cast

import numpy as np

from geoeval.api import clean_value, nesting_depth
from geoeval.suites.lifeplanner.city.schema import VEHICLES
from geoeval.suites.lifeplanner.tools.arguments import (
    DATA_ENGINE_LIMITS,
    MAX_ARGUMENT_DEPTH,
    MAX_CENTER_CHARS,
    MAX_RADIUS_M,
    MODES,
    STANDARD_LIMITS,
    ToolParameterError,
    ToolResult,
    _brief,
    _choice,
    _number,
    _tool,
)
from geoeval.suites.lifeplanner.tools.city import (
    PLACE_FULL,
    PLACE_LIGHT,
    City,
    _list_payload,
    _place,
    _record,
    _Route,
    _select,
)
from geoeval.suites.lifeplanner.tools.places import _place_filters, _where
from geoeval.suites.lifeplanner.tools.routing import _half_up, _route

# --------------------------------------------------------------------------------------------
# nearby_search
# --------------------------------------------------------------------------------------------


def _point_polyline_distance(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Distance (same units) of each point to a polyline, vectorised over points and segments."""
    if len(line) == 1:
        return np.hypot(points[:, 0] - line[0, 0], points[:, 1] - line[0, 1])
    a, b = line[:-1], line[1:]
    ab = b - a
    denom = np.maximum((ab**2).sum(axis=1), 1e-12)
    ap = points[:, None, :] - a[None, :, :]
    t = np.clip((ap * ab[None, :, :]).sum(axis=2) / denom[None, :], 0.0, 1.0)
    closest = a[None, :, :] + t[:, :, None] * ab[None, :, :]
    return np.sqrt(((points[:, None, :] - closest) ** 2).sum(axis=2)).min(axis=1)


def _center(city: City, center: Any) -> tuple[str, Any]:
    """('place', index) or ('route', (a, b, vehicle, mode))."""
    if isinstance(center, str) and center.strip().startswith("{"):
        if len(center) > MAX_CENTER_CHARS:
            raise ToolParameterError(f"center is too long ({len(center)} characters, at most {MAX_CENTER_CHARS}).")
        try:
            center = json.loads(center)
        except (ValueError, RecursionError):  # RecursionError: "{" nested past Python's stack
            raise ToolParameterError("center looks like a route object but is not valid JSON.") from None
        if nesting_depth(center, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            raise ToolParameterError(f"center is nested more than {MAX_ARGUMENT_DEPTH} levels deep.")
        center = clean_value(center)
    if isinstance(center, str):
        return "place", _place(city, "center", center)
    if isinstance(center, dict):
        extra = sorted(set(center) - {"start", "end", "vehicle", "mode"})
        if extra:
            raise ToolParameterError(
                f"center route object has unknown keys {_brief(extra)}; expected 'start', 'end', 'vehicle', 'mode'."
            )
        a = _place(city, "center.start", center.get("start"))
        b = _place(city, "center.end", center.get("end"))
        if a == b:
            raise ToolParameterError("center.start and center.end are the same place.")
        vehicle = _choice("center.vehicle", center.get("vehicle", "driving"), VEHICLES)
        mode = _choice("center.mode", center.get("mode", "time"), MODES)
        return "route", (a, b, vehicle, mode)
    raise ToolParameterError(
        "center must be a place_id string or a route object "
        "{'start': 'ID', 'end': 'ID', 'vehicle': 'driving', 'mode': 'time'}."
    )


def _route_line(city: City, r: _Route) -> np.ndarray:
    """The polyline (metres) a route buffer is measured from: start place, road nodes, end place."""
    nodes = [int(city.place_node[r.start])] + [e[2] for e in r.edges]
    return np.vstack([city.place_xy[[r.start]], city.node_xy[nodes], city.place_xy[[r.end]]])


def route_buffer_distances(
    city: City, start_id: str, end_id: str, vehicle: str, mode: str, place_ids: list[str]
) -> list[float] | None:
    """Distance (m) of each place to the route from `start_id` to `end_id`, measured as
    `nearby_search` measures a route buffer; None when there is no route."""
    r = _route(city, city.place_index[start_id], city.place_index[end_id], vehicle, mode)
    if r is None:
        return None
    idx = np.array([city.place_index[p] for p in place_ids], dtype=np.int64)
    if not len(idx):
        return []
    return [float(d) for d in _point_polyline_distance(city.place_xy[idx], _route_line(city, r))]


@_tool
def nearby_search(
    city: City,
    center: Any,
    radius_meters: Any = 100,
    place_types: Any = None,
    min_rating: Any = None,
    max_rating: Any = None,
    min_cost: Any = None,
    max_cost: Any = None,
    geo_tag: Any = None,
    social_mem: Any = None,
    *,
    toolset: str = "standard",
) -> ToolResult:
    """Places within `radius_meters` of a place (straight line) or of a route (its buffer), nearest
    first. The centre place, or the route's endpoints, are not listed."""
    kind, c = _center(city, center)
    # never None: the value passed is not
    radius = cast(float, _number("radius_meters", 100 if radius_meters is None else radius_meters, 1, MAX_RADIUS_M))
    filters = _place_filters(place_types, min_rating, max_rating, min_cost, max_cost, geo_tag, social_mem, toolset)
    if kind == "place":
        exclude = {c}
        line = city.place_xy[[c]]
        route_info = None
    else:
        a, b, vehicle, mode = c
        r = _route(city, a, b, vehicle, mode)
        if r is None:
            return ToolResult({"error": f"No {vehicle} route between the two places.", "results": []}, "empty")
        exclude = {a, b}
        line = _route_line(city, r)
        route_info = {
            "start": city.place_ids[a],
            "end": city.place_ids[b],
            "vehicle": vehicle,
            "mode": mode,
            "total_distance_m": _half_up(r.distance),
            "total_time_s": _half_up(r.duration),
        }
    # candidates: a bounding box around the centre/route, then the attribute filters in SQL
    lo, hi = line.min(axis=0) - radius, line.max(axis=0) + radius
    sql = ["x_m BETWEEN ? AND ?", "y_m BETWEEN ? AND ?", *filters.sql]
    params = [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1]), *filters.params]
    cand = city.cursor().execute(f"SELECT id FROM places {_where(sql)}", params).fetchall()
    cand_idx = np.array([city.place_index[r[0]] for r in cand if city.place_index[r[0]] not in exclude], dtype=np.int64)
    dist = _point_polyline_distance(city.place_xy[cand_idx], line) if len(cand_idx) else np.zeros(0)
    keep = dist <= radius
    cand_idx, dist = cand_idx[keep], dist[keep]
    order = sorted(range(len(cand_idx)), key=lambda k: (round(float(dist[k]), 6), city.place_ids[cand_idx[k]]))
    fields = PLACE_LIGHT if toolset == "standard" else PLACE_FULL
    limit = (STANDARD_LIMITS if toolset == "standard" else DATA_ENGINE_LIMITS)["nearby_search"]
    shown = [int(cand_idx[k]) for k in order[:limit]]
    rows = {}
    if shown:
        ids = [city.place_ids[i] for i in shown]
        rows = {
            r[0]: r
            for r in city.cursor()
            .execute(f"SELECT {_select(fields)} FROM places WHERE list_contains(?, id)", [ids])
            .fetchall()
        }
    results = []
    for k in order[:limit]:
        rec = _record(fields, rows[city.place_ids[int(cand_idx[k])]])
        rec["distance_m"] = _half_up(float(dist[k]))
        results.append(rec)
    out = _list_payload(
        results, len(order), limit, "places", "Try a larger radius_meters, fewer filters, or other geo_tag keywords."
    )
    if route_info is not None:
        out.payload["route"] = route_info
    return out
