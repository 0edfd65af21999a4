"""The agent and data-engine tools: results checked against independent computations (plain SQL,
networkx), light versus full records, truncation, failure classes, bad input and injection."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
import re

import networkx as nx
import pytest

from geoeval.suites.lifeplanner.city.schema import ACCESS_SPEED, MEMORY_FIELDS
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools import toolsets
from geoeval.suites.lifeplanner.tools.keyword_logic import (
    And,
    KeywordSyntaxError,
    Not,
    Or,
    Term,
    keyword_matches,
    keyword_sql,
    parse_keyword_logic,
)

from .helpers import rows

DE = "data_engine"


def _places(db):
    return rows(db, "SELECT * FROM places ORDER BY id")


# ------------------------------------------------------------------ place_search


def test_place_search_light_records_and_name_matching(city, db):
    r = place_tools.place_search(city, "coffee")
    assert r.failure_class == "ok"
    expected = [p for p in _places(db) if all(w in f"{p['name']} {p['alias']}".lower() for w in ["coffee"])]
    assert r.payload["total_matched"] == len(expected) > 0
    for rec in r.payload["results"]:
        assert tuple(rec) == city_handle.PLACE_LIGHT  # Table 7: place_id, name, type, rating, cost only
    # best rated first among non-exact, non-prefix matches
    ratings = [x["rating"] for x in r.payload["results"] if not x["name"].lower().startswith("coffee")]
    assert ratings == sorted(ratings, key=lambda v: -(v if v is not None else -1))


def test_place_search_every_word_must_match_and_exact_names_come_first(city, db):
    p = next(p for p in _places(db) if " " in p["name"] and "(" not in p["name"])
    r = place_tools.place_search(city, p["name"].upper())
    assert r.payload["results"][0]["place_id"] == p["id"]
    reversed_words = " ".join(reversed(p["name"].split()))
    assert p["id"] in {x["place_id"] for x in place_tools.place_search(city, reversed_words).payload["results"]}
    assert place_tools.place_search(city, p["name"] + " zzzz").failure_class == "empty"


def test_place_search_filters_agree_with_a_brute_force_scan(city, db):
    places = _places(db)
    cases = [
        dict(place_types=["Food & Beverages"], min_rating=4.2),
        dict(place_types=["coffee house", "tea house"], max_cost=30),
        dict(geo_tag=["wifi", "power outlets"]),
        dict(min_cost=50, max_cost=120, max_rating=4.0),
        dict(place_types="Shopping, Scenery Spot"),  # a comma string is a list too
    ]
    for kw in cases:
        r = place_tools.place_search(city, "", **kw, toolset=DE)
        types = kw.get("place_types")
        types = [t.strip().lower() for t in (types.split(",") if isinstance(types, str) else types or [])]

        def ok(p):
            if types and not any(t in p["place_type"].lower() for t in types):
                return False
            if kw.get("geo_tag") and not any(g in p["tag"].lower() or g in p["name"].lower() for g in kw["geo_tag"]):
                return False
            for key, col, cmp in (
                ("min_rating", "rating", 1),
                ("max_rating", "rating", -1),
                ("min_cost", "cost", 1),
                ("max_cost", "cost", -1),
            ):
                if key in kw and (p[col] is None or (p[col] - kw[key]) * cmp < 0):
                    return False
            return True

        expected = {p["id"] for p in places if ok(p)}
        assert r.payload["total_matched"] == len(expected), kw
        assert {x["place_id"] for x in r.payload["results"]} <= expected
        if len(expected) <= tool_arguments.DATA_ENGINE_LIMITS["place_search"]:
            assert {x["place_id"] for x in r.payload["results"]} == expected


def test_place_search_truncates_broad_and_empties_narrow_queries(city):
    broad = place_tools.place_search(city, "", place_types=["Food & Beverages"])
    assert broad.failure_class == "truncated"
    assert broad.payload["returned"] == tool_arguments.STANDARD_LIMITS["place_search"] < broad.payload["total_matched"]
    assert "too broad" in broad.payload["message"]
    narrow = place_tools.place_search(city, "meat floss cake")
    assert narrow.failure_class == "empty"
    assert narrow.payload["total_matched"] == 0 and narrow.payload["results"] == []
    assert narrow.payload["message"].startswith("No places matched")


def test_data_engine_place_search_returns_memory_and_filters_on_it(city, db):
    places = _places(db)
    r = place_tools.place_search(city, "", social_mem=["good for studying"], toolset=DE)
    expected = {p["id"] for p in places if "good for studying" in (p["long_mem"] + p["short_mem"]).lower()}
    assert r.payload["total_matched"] == len(expected) > 0
    assert all(tuple(x) == city_handle.PLACE_FULL for x in r.payload["results"])
    assert all("good for studying" in x["long_mem"].lower() + x["short_mem"].lower() for x in r.payload["results"])


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(query_name=""), "query_name is required"),
        (dict(query_name=None), "query_name is required"),
        (dict(query_name=42), "must be a string"),
        (dict(query_name="x", min_rating="high"), "min_rating must be a number"),
        (dict(query_name="x", min_rating=7), "between 1 and 5"),
        (dict(query_name="x", min_rating=4.5, max_rating=3), "greater than max_rating"),
        (dict(query_name="x", max_cost=-1), "max_cost must be between"),
        (dict(query_name="x", place_types=5), "place_types must be a list"),
        (dict(query_name="x", place_types=["ok", 3]), "only strings"),
        (dict(query_name="x", geo_tag=["w"] * 30 + [str(i) for i in range(30)]), "too many keywords"),
        (dict(query_name="x", social_mem=["quiet"]), "social_mem is not a parameter"),  # hidden memory
        (dict(query_name="x", min_rating=True), "boolean"),
        (dict(query_name="x" * 500), "too long"),
    ],
)
def test_place_search_parameter_errors(city, kwargs, fragment):
    r = place_tools.place_search(city, **kwargs)
    assert r.failure_class == "parameter_error"
    assert fragment in r.error


def test_numbers_given_as_strings_are_accepted(city):
    a = place_tools.place_search(city, "", place_types=["Food"], min_rating="4.5", toolset=DE)
    b = place_tools.place_search(city, "", place_types=["Food"], min_rating=4.5, toolset=DE)
    assert a == b and a.failure_class != "parameter_error"


# ------------------------------------------------------------------ injection


INJECTIONS = [
    "x'; DROP TABLE places; --",
    "' OR '1'='1",
    "%",
    "_",
    "\\",
    "B0' UNION SELECT long_mem FROM places --",
    "); DELETE FROM notes; --",
]


@pytest.mark.parametrize("evil", INJECTIONS)
def test_injection_strings_are_only_ever_data(city, db, evil):
    r = place_tools.place_search(city, evil)
    assert r.failure_class in ("empty", "ok")
    # '%' and '_' are literal characters, not wildcards
    expected = sum(1 for p in _places(db) if evil.lower() in f"{p['name']} {p['alias']}".lower())
    assert r.payload["total_matched"] == expected
    assert place_tools.place_detail(city, evil).failure_class == "parameter_error"
    assert note_tools.note_detail(city, evil).failure_class == "parameter_error"
    s = note_tools.search_notes(city, f'"{evil}"' if '"' not in evil else evil)
    assert s.failure_class in ("empty", "ok", "parameter_error")
    assert db.execute("SELECT count(*) FROM places").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM notes").fetchone()[0] > 0


# ------------------------------------------------------------------ place_detail / sample_place


def test_place_detail_is_full_but_never_memory(city, db):
    p = _places(db)[3]
    r = place_tools.place_detail(city, p["id"])
    assert r.failure_class == "ok"
    assert tuple(r.payload) == city_handle.PLACE_DETAIL
    assert r.payload["opentime_week"] == p["opentime_week"] and r.payload["tag"] == p["tag"]
    assert not set(MEMORY_FIELDS) & set(r.payload)
    bad = place_tools.place_detail(city, "B0XXXXXXXX")
    assert bad.failure_class == "parameter_error" and "was not found" in bad.error


def test_sample_place_is_seeded_full_and_bounded(city):
    a = place_tools.sample_place(city, 5, seed=1)
    assert a == place_tools.sample_place(city, 5, seed=1)
    assert a != place_tools.sample_place(city, 5, seed=2)
    assert len(a.payload["pois"]) == 5 and all(tuple(p) == city_handle.PLACE_FULL for p in a.payload["pois"])
    assert len({p["place_id"] for p in a.payload["pois"]}) == 5
    for bad in (0, 51, 2.5, "many", None):
        assert place_tools.sample_place(city, bad).failure_class == "parameter_error"


# ------------------------------------------------------------------ routing


def _graph(db, vehicle, mode):
    g = nx.Graph()
    for w in rows(db, "SELECT * FROM ways"):
        speed = w[f"speed_{vehicle}"]
        if speed:
            g.add_edge(
                w["source"],
                w["target"],
                gid=w["gid"],
                weight=w["length_m"] / speed if mode == "time" else w["length_m"],
                length=w["length_m"],
                time=w["length_m"] / speed,
            )
    return g


@pytest.mark.parametrize("vehicle", ["walking", "cycling", "driving"])
@pytest.mark.parametrize("mode", ["time", "distance"])
def test_routing_is_optimal_against_networkx(city, db, vehicle, mode):
    g = _graph(db, vehicle, mode)
    places = _places(db)
    rnd = random.Random(f"{vehicle}{mode}")
    for _ in range(6):
        a, b = rnd.sample(places, 2)
        r = routing_tools.routing(city, a["id"], b["id"], mode=mode, vehicle=vehicle)
        assert r.failure_class == "ok"
        cost = nx.shortest_path_length(g, a["node_id"], b["node_id"], weight="weight")
        access = a["access_m"] + b["access_m"]
        # the answer's own path, recomputed from its way ids
        gids = [gid for s in r.payload["steps"] for gid in s["way_ids"]]
        edge_by_gid = {d["gid"]: (u, v, d) for u, v, d in g.edges(data=True)}
        length = sum(edge_by_gid[x][2]["length"] for x in gids)
        secs = sum(edge_by_gid[x][2]["time"] for x in gids)
        assert (secs if mode == "time" else length) == pytest.approx(cost, rel=1e-9, abs=1e-6)
        assert r.payload["total_distance_m"] == math.floor(length + access + 0.5)
        assert r.payload["total_time_s"] == math.floor(secs + access / ACCESS_SPEED[vehicle] + 0.5)
        # the way ids chain from the start node to the end node
        node = a["node_id"]
        for x in gids:
            u, v, _ = edge_by_gid[x]
            assert node in (u, v)
            node = v if node == u else u
        assert node == b["node_id"]
        assert r.payload["start"] == {"place_id": a["id"], "name": a["name"]}
        assert r.payload["vehicle"] == vehicle and r.payload["mode"] == mode


def test_routing_steps_name_roads_and_time_beats_distance_by_car(city, db):
    places = _places(db)
    rnd = random.Random(3)
    faster = False
    for _ in range(15):
        a, b = rnd.sample(places, 2)
        t = routing_tools.routing(city, a["id"], b["id"], mode="time", vehicle="driving").payload
        d = routing_tools.routing(city, a["id"], b["id"], mode="distance", vehicle="driving").payload
        assert t["total_time_s"] <= d["total_time_s"] + 1
        assert d["total_distance_m"] <= t["total_distance_m"] + 1
        faster |= t["total_time_s"] < d["total_time_s"]
        steps = t["steps"]
        assert steps[0]["instruction"].startswith("Depart from") and steps[-1]["instruction"].startswith("Arrive at")
        names = dict(db.execute("SELECT gid, name FROM ways").fetchall())
        for s in steps[1:-1]:
            assert s["road_name"] and all(names[x] == s["road_name"] for x in s["way_ids"])
            assert re.match(
                r"^(Head \w+ on|Turn (left|right) onto|Continue onto|Make a U-turn onto) ", s["instruction"]
            )
        assert abs(sum(s["distance_m"] for s in steps) - t["total_distance_m"]) <= len(steps)
        assert len(t["geometry"]) >= 2 and all(len(pt) == 2 for pt in t["geometry"])
    assert faster  # somewhere the fast avenues beat the short lanes


def test_driving_never_uses_footways(city, db):
    footways = {g for (g,) in db.execute("SELECT gid FROM ways WHERE highway = 'footway'").fetchall()}
    places = _places(db)
    rnd = random.Random(9)
    used_by_walkers = set()
    for _ in range(25):
        a, b = rnd.sample(places, 2)
        drive = routing_tools.routing(city, a["id"], b["id"], vehicle="driving").payload
        walk = routing_tools.routing(city, a["id"], b["id"], vehicle="walking", mode="distance").payload
        assert not footways & {x for s in drive["steps"] for x in s["way_ids"]}
        used_by_walkers |= footways & {x for s in walk["steps"] for x in s["way_ids"]}
    assert used_by_walkers  # pedestrian streets are real shortcuts for walkers


def test_avoid_way_ids(city, db):
    a, b = _places(db)[10], _places(db)[60]
    first = routing_tools.routing(city, a["id"], b["id"], vehicle="cycling").payload
    used = [x for s in first["steps"] for x in s["way_ids"]]
    assert used
    avoid = used[len(used) // 2 : len(used) // 2 + 1]
    second = routing_tools.routing(city, a["id"], b["id"], vehicle="cycling", avoid_way_ids=avoid)
    assert second.failure_class == "ok"
    assert not set(avoid) & {x for s in second.payload["steps"] for x in s["way_ids"]}
    assert second.payload["total_time_s"] >= first["total_time_s"]
    assert second.payload["avoided_way_ids"] == avoid
    # as strings, too
    assert (
        routing_tools.routing(city, a["id"], b["id"], vehicle="cycling", avoid_way_ids=[str(avoid[0])]).payload
        == second.payload
    )
    # cutting every way at the start node leaves no route: too narrow
    node = a["node_id"]
    around = [g for (g,) in db.execute("SELECT gid FROM ways WHERE source = ? OR target = ?", [node, node]).fetchall()]
    if b["node_id"] != node:
        cut = routing_tools.routing(city, a["id"], b["id"], avoid_way_ids=around)
        assert cut.failure_class == "empty" and "No driving route" in cut.payload["error"]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(start_place_id="B0NOPE0000"), "start_place_id 'B0NOPE0000' was not found"),
        (dict(mode="fastest"), "mode must be one of"),
        (dict(vehicle="plane"), "vehicle must be one of"),
        (dict(avoid_way_ids=[1.5]), "integer way ids"),
        (dict(avoid_way_ids=[10**9]), "unknown way id"),
        (dict(avoid_way_ids={"a": 1}), "must be a list"),
        (dict(avoid_way_ids=[True]), "integer way ids"),
    ],
)
def test_routing_parameter_errors(city, db, kwargs, fragment):
    a, b = _places(db)[0], _places(db)[1]
    args = dict(start_place_id=a["id"], end_place_id=b["id"]) | kwargs
    r = routing_tools.routing(city, **args)
    assert r.failure_class == "parameter_error" and fragment in r.error
    same = routing_tools.routing(city, a["id"], a["id"])
    assert same.failure_class == "parameter_error" and "same place" in same.error


# ------------------------------------------------------------------ multi_stop_routing


def test_multi_stop_routing_enumerates_every_order_with_routing_legs(city, db):
    ids = [p["id"] for p in _places(db)[20:25]]
    r = routing_tools.multi_stop_routing(city, ids, vehicle="walking", mode="distance")
    assert r.failure_class == "ok"
    routes = r.payload["routes"]
    assert r.payload["n_permutations"] == len(routes) == math.factorial(5)
    assert {tuple(x["order"]) for x in routes} == set(itertools.permutations(ids))
    leg = {}
    for u, v in itertools.permutations(ids, 2):
        p = routing_tools.routing(city, u, v, vehicle="walking", mode="distance").payload
        leg[(u, v)] = (p["total_distance_m"], p["total_time_s"])
    for x in routes:
        pairs = list(zip(x["order"], x["order"][1:]))
        assert x["total_distance_m"] == sum(leg[p][0] for p in pairs)
        assert x["total_time_s"] == sum(leg[p][1] for p in pairs)
    keys = [(x["total_distance_m"], x["total_time_s"]) for x in routes]
    assert keys == sorted(keys)
    assert [x["rank"] for x in routes] == list(range(1, len(routes) + 1))


def test_multi_stop_routing_fixed_start_and_end(city, db):
    ids = [p["id"] for p in _places(db)[30:35]]
    r = routing_tools.multi_stop_routing(
        city, ids, start_id=ids[2], end_id=ids[0], vehicle="driving", mode="time"
    ).payload
    assert r["n_permutations"] == math.factorial(3)
    assert all(x["order"][0] == ids[2] and x["order"][-1] == ids[0] for x in r["routes"])
    assert [x["total_time_s"] for x in r["routes"]] == sorted(x["total_time_s"] for x in r["routes"])
    only_start = routing_tools.multi_stop_routing(city, ids, start_id=ids[1]).payload
    assert only_start["n_permutations"] == math.factorial(4)
    assert all(x["order"][0] == ids[1] for x in only_start["routes"])


def test_multi_stop_routing_is_deterministic_and_caches_agree_with_routing(city, db):
    ids = [p["id"] for p in _places(db)[40:44]]
    a = routing_tools.multi_stop_routing(city, ids, vehicle="cycling")
    b = routing_tools.multi_stop_routing(city, list(ids), vehicle="cycling")
    assert a == b
    best = a.payload["routes"][0]
    total = sum(
        routing_tools.routing(city, u, v, vehicle="cycling").payload["total_time_s"]
        for u, v in zip(best["order"], best["order"][1:])
    )
    assert total == best["total_time_s"]


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda ids: dict(stop_ids=ids[:1]), "between 2 and 8"),
        (lambda ids: dict(stop_ids=ids[:9]), "between 2 and 8"),
        (lambda ids: dict(stop_ids=[ids[0], ids[0]]), "more than once"),
        (lambda ids: dict(stop_ids=ids[:3], start_id=ids[5]), "start_id must be one of stop_ids"),
        (lambda ids: dict(stop_ids=ids[:3], start_id=ids[0], end_id=ids[0]), "must be different"),
        (lambda ids: dict(stop_ids=ids[:8]), "orders to enumerate"),
        (lambda ids: dict(stop_ids="B0"), "must be a list"),
        (lambda ids: dict(stop_ids=ids[:3], mode="cheapest"), "mode must be one of"),
    ],
)
def test_multi_stop_routing_parameter_errors(city, db, make, fragment):
    ids = [p["id"] for p in _places(db)[:10]]
    r = routing_tools.multi_stop_routing(city, **make(ids))
    assert r.failure_class == "parameter_error" and fragment in r.error


# ------------------------------------------------------------------ nearby_search


def test_nearby_search_around_a_place(city, db):
    places = _places(db)
    c = places[7]
    r = nearby_tools.nearby_search(city, c["id"], radius_meters=400, toolset=DE)
    expected = sorted(
        (math.hypot(p["x_m"] - c["x_m"], p["y_m"] - c["y_m"]), p["id"])
        for p in places
        if p["id"] != c["id"] and math.hypot(p["x_m"] - c["x_m"], p["y_m"] - c["y_m"]) <= 400
    )
    assert r.payload["total_matched"] == len(expected) > 0
    got = [x["place_id"] for x in r.payload["results"]]
    assert got == [pid for _, pid in expected][: len(got)]
    assert [x["distance_m"] for x in r.payload["results"]] == [math.floor(d + 0.5) for d, _ in expected][: len(got)]
    light = nearby_tools.nearby_search(city, c["id"], radius_meters=400)
    assert all(tuple(x) == city_handle.PLACE_LIGHT + ("distance_m",) for x in light.payload["results"])
    filtered = nearby_tools.nearby_search(
        city, c["id"], radius_meters=1500, place_types=["Food & Beverages"], min_rating=4
    )
    assert all(x["place_type"].startswith("Food & Beverages") and x["rating"] >= 4 for x in filtered.payload["results"])


def test_nearby_search_default_radius_is_100m_and_classes(city, db):
    places = _places(db)
    counts = [nearby_tools.nearby_search(city, p["id"]).payload["total_matched"] for p in places[:40]]
    for p, n in zip(places[:40], counts):
        assert n == sum(
            1 for q in places if q["id"] != p["id"] and math.hypot(q["x_m"] - p["x_m"], q["y_m"] - p["y_m"]) <= 100
        )
    assert nearby_tools.nearby_search(city, places[0]["id"], radius_meters=5000).failure_class == "truncated"
    assert (
        nearby_tools.nearby_search(city, places[0]["id"], radius_meters=1, geo_tag=["no such tag"]).failure_class
        == "empty"
    )


def _seg_dist(p, a, b):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(p[0] - ax - t * dx, p[1] - ay - t * dy)


def test_nearby_search_along_a_route_buffer(city, db):
    places = _places(db)
    a, b = places[5], places[150]
    route = routing_tools.routing(city, a["id"], b["id"], vehicle="walking").payload
    nodes = dict((r[0], (r[1], r[2])) for r in db.execute("SELECT node_id, x_m, y_m FROM nodes").fetchall())
    ways = {r[0]: (r[1], r[2]) for r in db.execute("SELECT gid, source, target FROM ways").fetchall()}
    path = [a["node_id"]]
    for gid in (x for s in route["steps"] for x in s["way_ids"]):
        u, v = ways[gid]
        path.append(v if path[-1] == u else u)
    line = [(a["x_m"], a["y_m"])] + [nodes[n] for n in path] + [(b["x_m"], b["y_m"])]

    def dist(p):
        return min(_seg_dist((p["x_m"], p["y_m"]), line[i], line[i + 1]) for i in range(len(line) - 1))

    for center in (
        {"start": a["id"], "end": b["id"], "vehicle": "walking"},
        json.dumps({"start": a["id"], "end": b["id"], "vehicle": "walking"}),
    ):
        r = nearby_tools.nearby_search(city, center, radius_meters=60, toolset=DE)
        expected = {p["id"] for p in places if p["id"] not in (a["id"], b["id"]) and dist(p) <= 60}
        assert r.payload["total_matched"] == len(expected) > 0
        assert {x["place_id"] for x in r.payload["results"]} <= expected
        assert r.payload["route"]["total_time_s"] == route["total_time_s"]
        ds = [x["distance_m"] for x in r.payload["results"]]
        assert ds == sorted(ds) and max(ds) <= 60


@pytest.mark.parametrize(
    "center, kwargs, fragment",
    [
        (None, {}, "center must be a place_id string or a route object"),
        (5, {}, "center must be a place_id"),
        ("B0MISSING1", {}, "center 'B0MISSING1' was not found"),
        ({"start": "B0MISSING1", "end": "x"}, {}, "center.start"),
        ({"start": "@0", "end": "@0"}, {}, "same place"),
        ({"start": "@0", "end": "@1", "via": "x"}, {}, "unknown keys"),
        ({"start": "@0", "end": "@1", "vehicle": "boat"}, {}, "center.vehicle must be one of"),
        ("{not json", {}, "not valid JSON"),
        ("@0", {"radius_meters": 0}, "radius_meters must be between 1 and 5000"),
        ("@0", {"radius_meters": 10**6}, "radius_meters must be between"),
        ("@0", {"radius_meters": "far"}, "radius_meters must be a number"),
        ("@0", {"social_mem": "quiet"}, "social_mem is not a parameter"),
    ],
)
def test_nearby_search_parameter_errors(city, db, center, kwargs, fragment):
    ids = [p["id"] for p in _places(db)[:2]]

    def sub(x):
        if isinstance(x, str) and x.startswith("@"):
            return ids[int(x[1:])]
        if isinstance(x, dict):
            return {k: sub(v) for k, v in x.items()}
        return x

    r = nearby_tools.nearby_search(city, sub(center), **kwargs)
    assert r.failure_class == "parameter_error" and fragment in r.error


# ------------------------------------------------------------------ keyword logic


@pytest.mark.parametrize(
    "text, ast",
    [
        ("coffee", Term("coffee")),
        ("Latte Art", Term("latte art")),  # adjacent words: one phrase
        ("coffee AND quiet", And((Term("coffee"), Term("quiet")))),
        ("coffee and quiet", Term("coffee and quiet")),  # operators are upper-case only
        ("a OR b AND c", Or((Term("a"), And((Term("b"), Term("c")))))),  # AND binds tighter
        ("(a OR b) AND c", And((Or((Term("a"), Term("b"))), Term("c")))),
        ("a NOT b", And((Term("a"), Not(Term("b"))))),  # binary NOT = AND NOT
        ("NOT a", Not(Term("a"))),
        ("a AND NOT NOT b", And((Term("a"), Not(Not(Term("b")))))),
        ('"rock AND roll" OR jazz', Or((Term("rock and roll"), Term("jazz")))),
        ("  quiet   corner ", Term("quiet corner")),
    ],
)
def test_keyword_parser(text, ast):
    assert parse_keyword_logic(text) == ast


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "AND",
        "coffee AND",
        "OR tea",
        "(coffee",
        "coffee)",
        "()",
        '"unclosed',
        "a NOT",
        " OR ".join("abcdefghijklmn"),
        "(" * 10 + "a" + ")" * 10,
        "x" * 301,
    ],
)
def test_keyword_parser_rejects(bad):
    with pytest.raises(KeywordSyntaxError):
        parse_keyword_logic(bad)


def test_keyword_sql_has_placeholders_only():
    sql, params = keyword_sql(parse_keyword_logic('x\' OR 1=1 -- AND ("; DROP TABLE notes" NOT y)'))
    assert params == ["x'", "1=1 --", "; drop table notes", "y"]
    assert "drop" not in sql.lower() and "'" not in sql
    assert sql.count("?") == len(params)
    with pytest.raises(ValueError):
        keyword_sql(Term("a"), column="search_text; DROP TABLE notes")


def test_search_notes_sql_agrees_with_python_on_random_expressions(city, db):
    notes = db.execute("SELECT note_id, search_text FROM notes").fetchall()
    words = ["quiet", "coffee", "cozy", "latte art", "queues", "jiedaokou", "hidden gem", "weekend", "tea", "the"]
    rnd = random.Random(0)

    def expr(depth=0):
        r = rnd.random()
        if depth > 2 or r < 0.35:
            return rnd.choice(words) if " " not in (w := rnd.choice(words)) else f'"{w}"'
        if r < 0.55:
            return f"NOT {expr(depth + 1)}"
        op = rnd.choice(["AND", "OR", "NOT"])
        return f"({expr(depth + 1)} {op} {expr(depth + 1)})"

    for _ in range(40):
        text = expr()
        ast = parse_keyword_logic(text)
        expected = sorted(n for n, st in notes if keyword_matches(ast, st))
        r = note_tools.search_notes(city, text)
        assert r.payload["total_matched"] == len(expected), text
        assert r.failure_class == ("empty" if not expected else "truncated" if len(expected) > 20 else "ok")


def test_search_notes_light_and_full(city, db):
    r = note_tools.search_notes(city, "quiet")
    assert r.failure_class in ("ok", "truncated")
    assert all(tuple(x) == city_handle.NOTE_LIGHT for x in r.payload["results"])
    likes = [x["liked_count"] for x in r.payload["results"]]
    assert likes == sorted(likes, reverse=True)
    full = note_tools.search_notes(city, "quiet", toolset=DE)
    assert [x["note_id"] for x in full.payload["results"]] == [x["note_id"] for x in r.payload["results"]]
    for x in full.payload["results"]:
        assert tuple(x)[:-1] == city_handle.NOTE_FULL and len(x["comments"]) <= 10
        stored = db.execute("SELECT count(*) FROM comments WHERE note_id = ?", [x["note_id"]]).fetchone()[0]
        assert len(x["comments"]) == stored
    bad = note_tools.search_notes(city, "quiet AND")
    assert bad.failure_class == "parameter_error" and bad.error.startswith("Invalid keyword logic")
    assert note_tools.search_notes(city, ["quiet"]).failure_class == "parameter_error"
    assert note_tools.search_notes(city, "zzqqxx").failure_class == "empty"


def test_note_detail(city, db):
    note_id, desc = db.execute('SELECT note_id, "desc" FROM notes ORDER BY comment_count DESC LIMIT 1').fetchone()
    r = note_tools.note_detail(city, note_id)
    assert r.failure_class == "ok"
    assert tuple(r.payload)[:-1] == city_handle.NOTE_FULL and r.payload["desc"] == desc
    comments = r.payload["comments"]
    assert comments and all(tuple(c) == city_handle.COMMENT_FIELDS for c in comments)
    assert [c["like_count"] for c in comments] == sorted((c["like_count"] for c in comments), reverse=True)
    assert note_tools.note_detail(city, "0" * 24).failure_class == "parameter_error"
    assert note_tools.note_detail(city, None).failure_class == "parameter_error"


# ------------------------------------------------------------------ access separation


def test_standard_tools_never_show_memory_coordinates_or_ground_truth(city, db):
    places = _places(db)
    mems = {p[f] for p in places for f in MEMORY_FIELDS if len(p[f]) > 25}
    ids = [p["id"] for p in places]
    results = [
        place_tools.place_search(city, "", place_types=["Food"]),
        place_tools.place_search(city, "coffee"),
        *(place_tools.place_detail(city, i) for i in ids[:60]),
        nearby_tools.nearby_search(city, ids[0], radius_meters=800),
        nearby_tools.nearby_search(city, {"start": ids[1], "end": ids[2]}, radius_meters=200),
        routing_tools.routing(city, ids[3], ids[4]),
        note_tools.search_notes(city, "quiet OR cozy OR queues"),
        note_tools.note_detail(city, db.execute("SELECT note_id FROM notes LIMIT 1").fetchone()[0]),
    ]
    forbidden_keys = {
        "long_mem",
        "short_mem",
        "x_m",
        "y_m",
        "node_id",
        "access_m",
        "popularity",
        "search_text",
        "mention",
        "mention_kind",
        "fact",
        "lon",
        "lat",
    }

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)

    for r in results:
        assert r.failure_class != "parameter_error"
        assert not forbidden_keys & set(keys(r.payload))
        text = r.text()
        assert not any(m in text for m in mems)
    # the data engine does see them
    de = place_tools.place_search(city, "", place_types=["Food"], toolset=DE)
    assert any(x["long_mem"] for x in de.payload["results"])


# ------------------------------------------------------------------ Inspect tools


def test_inspect_toolsets_have_the_papers_names_and_parameters(city_path):
    from inspect_ai.tool import ToolDef

    std = {ToolDef(t).name: ToolDef(t) for t in toolsets.agent_tools(city_path)}
    de = {ToolDef(t).name: ToolDef(t) for t in toolsets.data_engine_tools(city_path)}
    assert list(std) == ["place_search", "place_detail", "nearby_search", "routing", "search_notes", "note_detail"]
    assert set(de) == set(std) | {"sample_place", "multi_stop_routing"}
    assert list(std["place_search"].parameters.properties) == [
        "query_name",
        "place_types",
        "min_rating",
        "max_rating",
        "min_cost",
        "max_cost",
        "geo_tag",
    ]
    assert "social_mem" in de["place_search"].parameters.properties
    assert "social_mem" in de["nearby_search"].parameters.properties
    assert std["place_search"].parameters.required == ["query_name"]
    assert list(std["routing"].parameters.properties) == [
        "start_place_id",
        "end_place_id",
        "avoid_way_ids",
        "mode",
        "vehicle",
    ]
    assert list(de["multi_stop_routing"].parameters.properties) == ["stop_ids", "start_id", "end_id", "vehicle", "mode"]
    assert std["search_notes"].description.startswith("Search social media posts by keyword logic")
    assert std["place_search"].parameters.properties["geo_tag"].description.endswith("matches if ANY keyword hits")


def test_inspect_tools_return_json_raise_tool_errors_and_log_failure_classes(city_path, db):
    from inspect_ai.tool import ToolDef, ToolError
    from inspect_ai.util import store

    tools = {ToolDef(t).name: t for t in toolsets.agent_tools(city_path)}
    de = {ToolDef(t).name: t for t in toolsets.data_engine_tools(city_path, seed=4)}
    store().set(tool_arguments.TOOL_LOG_KEY, [])
    pid = db.execute("SELECT id FROM places ORDER BY id LIMIT 1").fetchone()[0]

    async def run():
        out = json.loads(await tools["place_detail"](place_id=pid))
        assert out["place_id"] == pid
        with pytest.raises(ToolError, match="was not found"):
            await tools["place_detail"](place_id="nope")
        assert json.loads(await tools["place_search"](query_name="zzzzqqq"))["total_matched"] == 0
        broad = json.loads(await tools["search_notes"](keyword="the"))
        assert broad["returned"] == 20
        first = json.loads(await de["sample_place"](num_samples=3))
        second = json.loads(await de["sample_place"](num_samples=3))
        assert first != second  # each call draws anew, from a seeded sequence
        assert "long_mem" in first["pois"][0]

    asyncio.run(run())
    log = store().get(tool_arguments.TOOL_LOG_KEY)
    assert [e["failure_class"] for e in log] == ["ok", "parameter_error", "empty", "truncated", "ok", "ok"]
    assert log[1] == {"tool": "place_detail", "arguments": {"place_id": "nope"}, "failure_class": "parameter_error"}


def test_turn_instructions_from_bearings():
    assert routing_tools._turn(0, 10) == "Continue onto"
    assert routing_tools._turn(0, 90) == "Turn right onto"
    assert routing_tools._turn(0, 270) == "Turn left onto"
    assert routing_tools._turn(350, 80) == "Turn right onto"  # across north
    assert routing_tools._turn(90, 265) == "Make a U-turn onto"
    assert [routing_tools._cardinal(d) for d in (0, 44, 90, 180, 225, 359)] == [
        "north",
        "northeast",
        "east",
        "south",
        "southwest",
        "north",
    ]
