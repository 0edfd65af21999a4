"""The city file's schema: vehicles and road speeds, which columns each toolset may return
(Tables 9 and 10), the DuckDB DDL and `CityInfo`."""

from __future__ import annotations

from dataclasses import dataclass

GENERATOR_VERSION = "lifeplanner-synthetic-1"

# --------------------------------------------------------------------------------------------
# Vehicles and road classes
# --------------------------------------------------------------------------------------------

VEHICLES = ("walking", "cycling", "driving")

# m/s per road class and vehicle; None: that vehicle may not use the way.
ROAD_SPEEDS: dict[str, dict[str, float | None]] = {
    "primary": {"walking": 1.4, "cycling": 4.2, "driving": 11.1},  # 40 km/h
    "secondary": {"walking": 1.4, "cycling": 4.2, "driving": 8.3},  # 30 km/h
    "residential": {"walking": 1.4, "cycling": 4.2, "driving": 5.6},  # 20 km/h
    "footway": {"walking": 1.4, "cycling": 2.8, "driving": None},  # pedestrian street
}
# Speed of the short leg between a place and its nearest road node (parking, walking in).
ACCESS_SPEED = {"walking": 1.4, "cycling": 2.8, "driving": 2.8}

# --------------------------------------------------------------------------------------------
# Access separation (Table 9 / Table 10)
# --------------------------------------------------------------------------------------------

MEMORY_FIELDS = ("long_mem", "short_mem")

_PLACE_DETAIL = ("id", "name", "place_type", "address", "opentime_week", "rating", "cost", "tag", "alias")
_NOTE_FULL = (
    "note_id",
    "title",
    "desc",
    "time",
    "liked_count",
    "collected_count",
    "comment_count",
    "share_count",
    "tag_list",
)
_COMMENT_FULL = ("comment_id", "time", "content", "like_count")

_AGENT_COLUMNS: dict[str, tuple[str, ...]] = {
    "places": _PLACE_DETAIL,
    "notes": _NOTE_FULL,
    "comments": _COMMENT_FULL,
    "ways": ("gid", "name"),  # seen only inside routing steps (steps[].way_ids, road_name)
}
_DATA_ENGINE_EXTRA: dict[str, tuple[str, ...]] = {"places": MEMORY_FIELDS}


def agent_visible_columns(table: str) -> tuple[str, ...]:
    """Columns of `table` that any tool of the standard agent toolset may return (Table 9/10).

    The memory fields, coordinates, graph internals and the ground-truth tables are never among
    them; a table with nothing visible returns ()."""
    return _AGENT_COLUMNS.get(table, ())


def data_engine_visible_columns(table: str) -> tuple[str, ...]:
    """Columns the data-engine toolset (Table 8) may return: the agent's plus the memory fields."""
    return _AGENT_COLUMNS.get(table, ()) + _DATA_ENGINE_EXTRA.get(table, ())


# --------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------

SCHEMA = """
CREATE TABLE nodes (node_id INTEGER PRIMARY KEY, lon DOUBLE, lat DOUBLE, x_m DOUBLE, y_m DOUBLE);
CREATE TABLE ways (gid INTEGER PRIMARY KEY, name VARCHAR, highway VARCHAR, source INTEGER, target INTEGER,
    node_ids INTEGER[], length_m DOUBLE, speed_walking DOUBLE, speed_cycling DOUBLE, speed_driving DOUBLE);
CREATE TABLE places (id VARCHAR PRIMARY KEY, name VARCHAR, place_type VARCHAR, address VARCHAR,
    opentime_week VARCHAR, rating DOUBLE, cost DOUBLE, tag VARCHAR, alias VARCHAR, long_mem VARCHAR,
    short_mem VARCHAR, lon DOUBLE, lat DOUBLE, x_m DOUBLE, y_m DOUBLE, node_id INTEGER, access_m DOUBLE,
    popularity DOUBLE);
CREATE TABLE notes (note_id VARCHAR PRIMARY KEY, title VARCHAR, "desc" VARCHAR, time TIMESTAMP,
    liked_count INTEGER, collected_count INTEGER, comment_count INTEGER, share_count INTEGER,
    tag_list VARCHAR, search_text VARCHAR);
CREATE TABLE comments (comment_id VARCHAR PRIMARY KEY, note_id VARCHAR, time TIMESTAMP, content VARCHAR,
    like_count INTEGER);
CREATE TABLE note_mentions (note_id VARCHAR, place_id VARCHAR, mention VARCHAR, mention_kind VARCHAR,
    role VARCHAR);
CREATE TABLE note_facts (note_id VARCHAR, place_id VARCHAR, fact VARCHAR, source VARCHAR);
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
"""


@dataclass(frozen=True)
class CityInfo:
    """What `build_synthetic_city` built (also readable back with `read_city_info`)."""

    path: str
    seed: int
    n_places: int
    n_notes: int
    n_comments: int
    n_nodes: int
    n_ways: int
    area_km2: float
    center_lon: float
    center_lat: float
    generator: str = GENERATOR_VERSION
