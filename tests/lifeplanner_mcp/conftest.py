"""A tiny synthetic city for the MCP tests (built once per session, < 1 s) and the tool calls
the parity tests replay in process and over MCP."""

from __future__ import annotations

import duckdb
import pytest

from geoeval.suites.lifeplanner.city.environment import build_synthetic_city

SEED = 5
N_PLACES = 150
N_NOTES = 300


@pytest.fixture(scope="session")
def city_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("lifeplanner_mcp") / "city.duckdb"
    build_synthetic_city(path, seed=SEED, n_places=N_PLACES, n_notes=N_NOTES, area_km2=1.0)
    return path


@pytest.fixture(scope="session")
def city_ids(city_path):
    """Ids and words taken from the city itself (plain SQL, independent of the tools)."""
    con = duckdb.connect(str(city_path), read_only=True)
    try:
        places = [r[0] for r in con.execute("SELECT id FROM places ORDER BY id LIMIT 3").fetchall()]
        first_word = con.execute("SELECT split_part(name, ' ', 1) FROM places ORDER BY id LIMIT 1").fetchone()[0]
        note_id, title = con.execute("SELECT note_id, title FROM notes ORDER BY note_id LIMIT 1").fetchone()
        gid = con.execute("SELECT min(gid) FROM ways").fetchone()[0]
    finally:
        con.close()
    return {
        "places": places,
        "first_word": first_word,
        "note_id": note_id,
        "note_word": max(title.split(), key=len),
        "gid": int(gid),
    }


def standard_calls(ids):
    """(tool, arguments) for the standard toolset: every tool, and each failure class."""
    p0, p1, p2 = ids["places"]
    return [
        ("place_search", {"query_name": ids["first_word"]}),
        ("place_search", {"query_name": "", "place_types": ["Food & Beverages"]}),  # broad: truncated
        ("place_search", {"query_name": "zzqxv"}),  # empty
        ("place_search", {"query_name": "x'; DROP TABLE places; --"}),  # injection is data: empty
        ("place_search", {"query_name": "a", "min_rating": 9}),  # parameter error
        ("place_search", {"query_name": "a", "min_rating": "high"}),  # ill-typed: parameter error
        ("place_detail", {"place_id": p0}),
        ("place_detail", {"place_id": "B0NOTAPLACE"}),
        ("nearby_search", {"center": p0, "radius_meters": 400}),
        ("nearby_search", {"center": {"start": p0, "end": p1, "vehicle": "walking"}, "radius_meters": 150}),
        ("nearby_search", {"center": p0, "radius_meters": 1, "place_types": ["Shopping"]}),  # empty
        ("nearby_search", {"center": p0, "radius_meters": -5}),
        ("routing", {"start_place_id": p0, "end_place_id": p2}),
        (
            "routing",
            {
                "start_place_id": p0,
                "end_place_id": p2,
                "mode": "distance",
                "vehicle": "walking",
                "avoid_way_ids": [ids["gid"]],
            },
        ),
        ("routing", {"start_place_id": p0, "end_place_id": p0}),
        ("routing", {"start_place_id": p0, "end_place_id": p1, "vehicle": "plane"}),
        ("search_notes", {"keyword": ids["note_word"]}),
        ("search_notes", {"keyword": "a"}),  # truncated
        ("search_notes", {"keyword": "zzqxv OR qqzzx"}),  # empty
        ("search_notes", {"keyword": "(coffee AND"}),  # malformed logic
        ("note_detail", {"note_id": ids["note_id"]}),
        ("note_detail", {"note_id": "0000"}),
    ]


def data_engine_calls(ids):
    p0, p1, p2 = ids["places"]
    return [
        ("place_search", {"query_name": "", "social_mem": ["quiet", "cozy"]}),
        ("place_search", {"query_name": "", "place_types": "Food & Beverages,Shopping"}),
        ("place_detail", {"place_id": p1}),
        ("nearby_search", {"center": p0, "radius_meters": 300, "social_mem": "quiet"}),
        ("routing", {"start_place_id": p1, "end_place_id": p2, "vehicle": "cycling"}),
        ("sample_place", {"num_samples": 3}),  # the k-th sample_place call of a server uses seed k
        ("sample_place", {"num_samples": 0}),  # parameter error
        ("multi_stop_routing", {"stop_ids": [p0, p1, p2], "start_id": p0}),
        ("multi_stop_routing", {"stop_ids": [p0]}),
        ("search_notes", {"keyword": ids["note_word"]}),
        ("note_detail", {"note_id": ids["note_id"]}),
    ]
