"""The tool calls a generated instance expects (`_calls`), their responses computed from the POI
table (`_respond`, deterministic), and the parameter rules its ground truth states."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from geoeval.suites.mapsatisfy.generate.poi_city import SEARCH_PAGE, City, distance_m
from geoeval.suites.mapsatisfy.user.model import MODE_API

if TYPE_CHECKING:
    from geoeval.suites.mapsatisfy.generate.behaviour_chain import Candidate


def _calls(c: Candidate, city: City, needs_profile: bool) -> list[tuple[str, dict[str, Any]]]:
    o, t = c.origin, c.target
    calls: list[tuple[str, dict[str, Any]]] = []
    if needs_profile:
        calls.append(("search_user_action_summary", {"uid": c.user.uid}))
    nav = {
        "start_lon": o.lon,
        "start_lat": o.lat,
        "end_lon": t.lon,
        "end_lat": t.lat,
        "start_name": o.name,
        "end_name": t.name,
    }
    if c.domain == "search":
        calls.append(("search_around_poi", {"query": t.category, "x": o.lon, "y": o.lat, "range": 5000}))
    elif c.domain == "navigation":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_navigation", {**nav, "mode": MODE_API[c.user.top("travel_mode")]}))
    elif c.domain == "ride_hailing":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_taxi_route_plan", {**nav, "end_poi_id": t.poi_id}))
    elif c.domain == "itinerary":
        assert c.second is not None
        calls.append(
            (
                "optimize_visit_order",
                {
                    "start_lon": o.lon,
                    "start_lat": o.lat,
                    "start_name": o.name,
                    "via_points": f"{t.location};{c.second.location}",
                    "via_names": f"{t.name};{c.second.name}",
                    "mode": MODE_API[c.user.top("travel_mode")],
                },
            )
        )
    elif c.domain == "real_time_info":
        calls.append(("search_poi", {"query": t.name, "cur_adcode": city.adcode}))
        calls.append(("get_route_traffic_info", {"poi_id": t.poi_id}))
    else:
        calls.append(("search_around_poi", {"query": t.category, "x": o.lon, "y": o.lat, "range": 5000}))
        calls.append(
            (
                "restaurant_reservation",
                {"poi_id": t.poi_id, "people_num": c.party, "order_time": c.when.strftime("%Y-%m-%d %H:%M")},
            )
        )
    return calls


_SPEED_KMH = {"driving": 30.0, "transit": 22.0, "taxi": 30.0, "walking": 4.5}


def _congestion(poi_id: str, hour: int) -> tuple[str, int]:
    rush = hour in (8, 9, 17, 18, 19)
    h = int(hashlib.sha1(poi_id.encode()).hexdigest()[:4], 16) % 3
    level = ("拥堵", "缓行", "缓行")[h] if rush else ("畅通", "畅通", "缓行")[h]
    return level, {"拥堵": 12, "缓行": 22, "畅通": 38}[level]


def _respond(tool: str, args: dict[str, Any], c: Candidate, city: City) -> dict[str, Any]:
    """The response of a tool call, computed from the POI table (deterministic)."""
    hour = c.when.hour
    by_id = {p.poi_id: p for p in city.pois}
    if tool == "search_user_action_summary":
        return {"status": "ok", **c.user.action_summary()}
    if tool == "search_around_poi":
        x, y, rng_m = float(args["x"]), float(args["y"]), int(args.get("range") or 3000)
        near = sorted((distance_m(x, y, p.lon, p.lat), p.poi_id, p) for p in city.by_category(str(args["query"])))
        hits = [(d, p) for d, _, p in near if d <= rng_m][:SEARCH_PAGE]
        return {
            "status": "ok",
            "count": len(hits),
            "pois": [
                {
                    "poi_id": p.poi_id,
                    "name": p.name,
                    "rating": p.rating,
                    "avg_price": p.avg_price,
                    "open_hours": p.hours_text,
                    "open_now": p.open_at(hour),
                    "distance_m": d,
                }
                for d, p in hits
            ],
        }
    if tool == "search_poi":
        found = [p for p in city.pois if str(args["query"]) in p.name][:3]
        return {
            "status": "ok",
            "count": len(found),
            "pois": [
                {
                    "poi_id": p.poi_id,
                    "name": p.name,
                    "location": p.location,
                    "district": p.district,
                    "open_hours": p.hours_text,
                }
                for p in found
            ],
        }
    if tool in ("get_navigation", "get_taxi_route_plan"):
        d = distance_m(
            float(args["start_lon"]), float(args["start_lat"]), float(args["end_lon"]), float(args["end_lat"])
        )
        road = int(d * 1.3)  # road distance over the straight line
        mode = str(args.get("mode") or "taxi") if tool == "get_navigation" else "taxi"
        minutes = max(1, round(road / 1000 / _SPEED_KMH.get(mode, 30.0) * 60))
        if tool == "get_navigation":
            return {
                "status": "ok",
                "mode": mode,
                "distance_m": road,
                "duration_min": minutes,
                "parking": "目的地有停车场" if mode == "driving" else "",
            }
        return {
            "status": "ok",
            "distance_km": round(road / 1000, 1),
            "duration_min": minutes,
            "price_estimate_yuan": round(13 + max(0.0, road / 1000 - 3) * 2.5, 1),
        }
    if tool == "optimize_visit_order":
        names = str(args["via_names"]).split(";")
        pts = [tuple(float(v) for v in s.split(",")) for s in str(args["via_points"]).split(";")]
        start = (float(args["start_lon"]), float(args["start_lat"]))
        legs = [distance_m(*start, *pts[0]), distance_m(*pts[0], *pts[1])]
        alt = [distance_m(*start, *pts[1]), distance_m(*pts[1], *pts[0])]
        order = names if sum(legs) <= sum(alt) else names[::-1]
        total = int(min(sum(legs), sum(alt)) * 1.3)
        return {
            "status": "ok",
            "order": order,
            "total_distance_m": total,
            "total_duration_min": max(1, round(total / 1000 / _SPEED_KMH.get(str(args.get("mode")), 30.0) * 60)),
        }
    if tool == "get_route_traffic_info":
        level, speed = _congestion(str(args["poi_id"]), hour)
        return {"status": "ok", "poi_id": args["poi_id"], "congestion": level, "avg_speed_kmh": speed}
    if tool == "restaurant_reservation":
        p = by_id[str(args["poi_id"])]
        slots = [f"{h:02d}:{m:02d}" for h in range(hour, min(p.close_hour, hour + 3)) for m in (0, 30)][:4]
        return {
            "status": "ok",
            "poi_id": p.poi_id,
            "name": p.name,
            "people_num": args.get("people_num"),
            "available_slots": slots,
            "table_type": "大厅" if (args.get("people_num") or 2) <= 4 else "包间",
        }
    raise KeyError(f"no response model for tool {tool}")


_PARAM_RULES = {
    "search_around_poi": {"query": "目标地点类别", "x": "当前位置经度", "y": "当前位置纬度"},
    "search_poi": {"query": "目的地名称", "cur_adcode": "当前城市编码"},
    "get_navigation": {
        "start_lon": "起点经度",
        "start_lat": "起点纬度",
        "end_lon": "终点经度",
        "end_lat": "终点纬度",
        "mode": "与用户出行习惯一致的方式",
    },
    "get_taxi_route_plan": {
        "start_lon": "起点经度",
        "start_lat": "起点纬度",
        "end_lon": "终点经度",
        "end_lat": "终点纬度",
    },
    "optimize_visit_order": {"start_lon": "起点经度", "start_lat": "起点纬度", "via_points": "途经点坐标，分号分隔"},
    "get_route_traffic_info": {"poi_id": "目的地poi_id"},
    "restaurant_reservation": {"poi_id": "所选门店poi_id"},
    "search_user_action_summary": {"uid": "用户id"},
}
# parameters the case requires beyond what the tool needs to run
_CASE_REQUIRED = {
    "search_around_poi": ["query", "x", "y"],
    "get_navigation": ["start_lon", "start_lat", "end_lon", "end_lat", "mode"],
}
