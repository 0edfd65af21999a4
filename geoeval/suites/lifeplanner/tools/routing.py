"""routing and multi_stop_routing on the road graph (Dijkstra per vehicle and mode, turn
instructions)."""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any

from geoeval.suites.lifeplanner.city.schema import ACCESS_SPEED, VEHICLES
from geoeval.suites.lifeplanner.tools.arguments import (
    MAX_AVOID,
    MAX_PERMUTATIONS,
    MAX_STOPS,
    MODES,
    ToolParameterError,
    ToolResult,
    _brief,
    _choice,
    _tool,
)
from geoeval.suites.lifeplanner.tools.city import City, _place, _Route

# --------------------------------------------------------------------------------------------
# Routing on the road graph
# --------------------------------------------------------------------------------------------


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _dijkstra(
    city: City, source: int, targets: set[int], vehicle: str, mode: str, avoid: frozenset[int]
) -> dict[int, tuple[float, float, int, int]]:
    """Labels of settled nodes: node -> (distance, duration, predecessor node, gid). Stops when all
    targets are settled. Ties break on node id through the heap, so results are deterministic and
    a label does not depend on which other targets were asked for."""
    adj = city.adjacency[vehicle]
    by_time = mode == "time"
    best = {source: 0.0}
    label: dict[int, tuple[float, float, int, int]] = {}
    pending = {source: (0.0, 0.0, -1, -1)}
    heap = [(0.0, source)]
    remaining = set(targets)
    while heap and remaining:
        cost, u = heapq.heappop(heap)
        if u in label or cost > best.get(u, math.inf):
            continue
        label[u] = pending[u]
        remaining.discard(u)
        d_u, t_u = label[u][0], label[u][1]
        for v, gid, length, speed in adj[u]:
            if gid in avoid or v in label:
                continue
            t = length / speed
            c = cost + (t if by_time else length)
            if c < best.get(v, math.inf):
                best[v] = c
                pending[v] = (d_u + length, t_u + t, u, gid)
                heapq.heappush(heap, (c, v))
    return label


def _route_from_labels(city: City, a: int, b: int, labels: dict, vehicle: str, mode: str) -> _Route | None:
    na, nb = int(city.place_node[a]), int(city.place_node[b])
    if nb not in labels:
        return None
    edges = []
    node = nb
    while node != na:
        _, _, prev, gid = labels[node]
        edges.append((gid, prev, node))
        node = prev
    edges.reverse()
    access = float(city.place_access[a] + city.place_access[b])
    d, t = labels[nb][0], labels[nb][1]
    return _Route(a, b, vehicle, mode, d + access, t + access / ACCESS_SPEED[vehicle], edges)


def _route(city: City, a: int, b: int, vehicle: str, mode: str, avoid: frozenset[int] = frozenset()) -> _Route | None:
    key = (a, b, vehicle, mode, avoid)
    with city._lock:
        if key in city._routes:
            return city._routes[key]
    labels = _dijkstra(city, int(city.place_node[a]), {int(city.place_node[b])}, vehicle, mode, avoid)
    route = _route_from_labels(city, a, b, labels, vehicle, mode)
    with city._lock:
        if len(city._routes) > 20000:
            city._routes.clear()
        city._routes[key] = route
    return route


def _bearing(city: City, u: int, v: int) -> float:
    dx, dy = city.node_xy[v] - city.node_xy[u]
    return math.degrees(math.atan2(dx, dy)) % 360.0


def _cardinal(deg: float) -> str:
    return ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")[
        int((deg + 22.5) // 45) % 8
    ]


def _turn(prev: float, new: float) -> str:
    delta = (new - prev + 540.0) % 360.0 - 180.0
    if abs(delta) < 30:
        return "Continue onto"
    if abs(delta) > 150:
        return "Make a U-turn onto"
    return "Turn right onto" if delta > 0 else "Turn left onto"


def _route_steps(city: City, r: _Route, speeds: dict[int, tuple[float, float]]) -> list[dict[str, Any]]:
    access_speed = ACCESS_SPEED[r.vehicle]
    start_access, end_access = float(city.place_access[r.start]), float(city.place_access[r.end])
    steps = [
        {
            "instruction": f"Depart from {city.place_names[r.start]}",
            "road_name": "",
            "way_ids": [],
            "distance_m": _half_up(start_access),
            "duration_s": _half_up(start_access / access_speed),
        }
    ]
    groups: list[list[tuple[int, int, int]]] = []
    for e in r.edges:
        if groups and city.way_name[groups[-1][-1][0]] == city.way_name[e[0]]:
            groups[-1].append(e)
        else:
            groups.append([e])
    prev_bearing = None
    for g in groups:
        road = city.way_name[g[0][0]]
        first = _bearing(city, g[0][1], g[0][2])
        verb = f"Head {_cardinal(first)} on" if prev_bearing is None else _turn(prev_bearing, first)
        length = 0.0
        seconds = 0.0
        for gid, _, _ in g:
            length += speeds[gid][0]
            seconds += speeds[gid][0] / speeds[gid][1]
        steps.append(
            {
                "instruction": f"{verb} {road}",
                "road_name": road,
                "way_ids": [e[0] for e in g],
                "distance_m": _half_up(length),
                "duration_s": _half_up(seconds),
            }
        )
        prev_bearing = _bearing(city, g[-1][1], g[-1][2])
    steps.append(
        {
            "instruction": f"Arrive at {city.place_names[r.end]}",
            "road_name": "",
            "way_ids": [],
            "distance_m": _half_up(end_access),
            "duration_s": _half_up(end_access / access_speed),
        }
    )
    return steps


def _edge_speeds(city: City, vehicle: str, edges: list[tuple[int, int, int]]) -> dict[int, tuple[float, float]]:
    out = {}
    for gid, u, v in edges:
        for w, g, length, speed in city.adjacency[vehicle][u]:
            if g == gid and w == v:
                out[gid] = (length, speed)
                break
    return out


def _avoid_ids(city: City, value: Any) -> frozenset[int]:
    if value is None:
        return frozenset()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ToolParameterError(f"avoid_way_ids must be a list of way ids (ways.gid), got {type(value).__name__}.")
    if len(items) > MAX_AVOID:
        raise ToolParameterError(f"avoid_way_ids: too many ids ({len(items)}, at most {MAX_AVOID}).")
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip().lstrip("-").isdigit():
            item = int(item.strip())
        if isinstance(item, bool) or not isinstance(item, int) and not (isinstance(item, float) and item.is_integer()):
            raise ToolParameterError(f"avoid_way_ids must contain integer way ids, got {_brief(item)}.")
        out.add(int(item))
    unknown = sorted(g for g in out if g not in city.way_name)
    if unknown:
        raise ToolParameterError(f"avoid_way_ids: unknown way id(s) {unknown[:10]}; use way_ids from routing steps.")
    return frozenset(out)


def _route_payload(city: City, r: _Route, avoid: frozenset[int]) -> dict[str, Any]:
    speeds = _edge_speeds(city, r.vehicle, r.edges)
    nodes = [r.edges[0][1]] + [e[2] for e in r.edges] if r.edges else [int(city.place_node[r.start])]
    geometry = (
        [city.place_lonlat[r.start].tolist()]
        + [city.node_lonlat[n].tolist() for n in nodes]
        + [city.place_lonlat[r.end].tolist()]
    )
    return {
        "start": {"place_id": city.place_ids[r.start], "name": city.place_names[r.start]},
        "end": {"place_id": city.place_ids[r.end], "name": city.place_names[r.end]},
        "vehicle": r.vehicle,
        "mode": r.mode,
        "total_distance_m": _half_up(r.distance),
        "total_time_s": _half_up(r.duration),
        "avoided_way_ids": sorted(avoid),
        "steps": _route_steps(city, r, speeds),
        "geometry": [[round(lon, 6), round(lat, 6)] for lon, lat in geometry],
    }


@_tool
def routing(
    city: City,
    start_place_id: Any,
    end_place_id: Any,
    avoid_way_ids: Any = None,
    mode: Any = "time",
    vehicle: Any = "driving",
) -> ToolResult:
    """The optimal route between two places (Dijkstra on the road graph): shortest time or
    distance for the vehicle, never using an avoided way. Totals are whole metres and seconds;
    the legs of `multi_stop_routing` are these same numbers."""
    a = _place(city, "start_place_id", start_place_id)
    b = _place(city, "end_place_id", end_place_id)
    if a == b:
        raise ToolParameterError("start_place_id and end_place_id are the same place.")
    mode = _choice("mode", mode, MODES)
    vehicle = _choice("vehicle", vehicle, VEHICLES)
    avoid = _avoid_ids(city, avoid_way_ids)
    r = _route(city, a, b, vehicle, mode, avoid)
    if r is None:
        return ToolResult(
            {
                "error": f"No {vehicle} route from {city.place_names[a]} to {city.place_names[b]}"
                f"{' avoiding the given ways' if avoid else ''}.",
                "total_distance_m": None,
                "total_time_s": None,
            },
            "empty",
        )
    return ToolResult(_route_payload(city, r, avoid), "ok")


@_tool
def multi_stop_routing(
    city: City, stop_ids: Any, start_id: Any = None, end_id: Any = None, vehicle: Any = "driving", mode: Any = "time"
) -> ToolResult:
    """Every visiting order of `stop_ids` (open trip, or with a fixed start and/or end among them),
    scored with the legs `routing` returns, best first by `mode` then by the other total; ties
    break on the order of `stop_ids`. Data engine only."""
    if not isinstance(stop_ids, (list, tuple)):
        raise ToolParameterError("stop_ids must be a list of place_ids.")
    if len(stop_ids) > MAX_STOPS:  # before resolving them: a list may be very long
        raise ToolParameterError(f"stop_ids must list between 2 and {MAX_STOPS} places, got {len(stop_ids)}.")
    idx = [_place(city, "stop_ids", s) for s in stop_ids]
    if len(set(idx)) != len(idx):
        raise ToolParameterError("stop_ids contains the same place more than once.")
    if not 2 <= len(idx) <= MAX_STOPS:
        raise ToolParameterError(f"stop_ids must list between 2 and {MAX_STOPS} places, got {len(idx)}.")
    vehicle = _choice("vehicle", vehicle, VEHICLES)
    mode = _choice("mode", mode, MODES)
    fixed = {}
    for name, value in (("start_id", start_id), ("end_id", end_id)):
        if value is not None and value != "":
            i = _place(city, name, value)
            if i not in idx:
                raise ToolParameterError(f"{name} must be one of stop_ids.")
            fixed[name] = i
    if "start_id" in fixed and fixed.get("start_id") == fixed.get("end_id"):
        raise ToolParameterError("start_id and end_id must be different places (round trips are not supported).")
    middle = [i for i in idx if i not in fixed.values()]
    n_perm = math.factorial(len(middle))
    if n_perm > MAX_PERMUTATIONS:
        raise ToolParameterError(
            f"{n_perm} orders to enumerate (at most {MAX_PERMUTATIONS}); fix a start/end or use fewer stops."
        )
    legs: dict[tuple[int, int], tuple[int, int]] = {}
    for a in idx:
        labels = _dijkstra(
            city, int(city.place_node[a]), {int(city.place_node[b]) for b in idx if b != a}, vehicle, mode, frozenset()
        )
        for b in idx:
            if b == a:
                continue
            key: tuple[int, int, str, str, frozenset[int]] = (a, b, vehicle, mode, frozenset())
            with city._lock:
                r = city._routes.get(key)
            if r is None:
                r = _route_from_labels(city, a, b, labels, vehicle, mode)
                with city._lock:
                    city._routes[key] = r
            if r is None:
                return ToolResult(
                    {"error": f"No {vehicle} route from {city.place_names[a]} to {city.place_names[b]}."}, "empty"
                )
            legs[(a, b)] = (_half_up(r.distance), _half_up(r.duration))
    position = {i: k for k, i in enumerate(idx)}
    routes = []
    for perm in itertools.permutations(middle):
        order = (
            ([fixed["start_id"]] if "start_id" in fixed else [])
            + list(perm)
            + ([fixed["end_id"]] if "end_id" in fixed else [])
        )
        dist = sum(legs[(u, v)][0] for u, v in zip(order, order[1:]))
        secs = sum(legs[(u, v)][1] for u, v in zip(order, order[1:]))
        primary, secondary = (secs, dist) if mode == "time" else (dist, secs)
        routes.append((primary, secondary, tuple(position[i] for i in order), order, dist, secs))
    routes.sort(key=lambda x: x[:3])
    return ToolResult(
        {
            "vehicle": vehicle,
            "mode": mode,
            "n_stops": len(idx),
            "n_permutations": len(routes),
            "start_id": city.place_ids[fixed["start_id"]] if "start_id" in fixed else None,
            "end_id": city.place_ids[fixed["end_id"]] if "end_id" in fixed else None,
            "stops": [{"place_id": city.place_ids[i], "name": city.place_names[i]} for i in idx],
            "legs": [
                {"from": city.place_ids[a], "to": city.place_ids[b], "distance_m": d, "time_s": t}
                for (a, b), (d, t) in legs.items()
            ],
            "routes": [
                {
                    "rank": k + 1,
                    "order": [city.place_ids[i] for i in r[3]],
                    "total_distance_m": r[4],
                    "total_time_s": r[5],
                }
                for k, r in enumerate(routes)
            ],
        },
        "ok",
    )
