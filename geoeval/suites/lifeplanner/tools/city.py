"""The city handle the tools read: a read-only DuckDB connection plus the in-memory road
graph (`open_city`), and the light and full record shapes of Tables 9 and 10."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from geoeval.suites.lifeplanner.city.schema import VEHICLES
from geoeval.suites.lifeplanner.tools.arguments import (
    ToolParameterError,
    ToolResult,
    _quote,
    _text,
)

# --------------------------------------------------------------------------------------------
# The city handle: a read-only DuckDB connection plus the in-memory road graph
# --------------------------------------------------------------------------------------------


@dataclass
class _Route:
    start: int  # place index
    end: int
    vehicle: str
    mode: str
    distance: float
    duration: float
    edges: list[tuple[int, int, int]]  # (gid, from node, to node)


@dataclass
class City:
    """An opened city. Cheap to share: tools only read it."""

    db_path: str
    con: duckdb.DuckDBPyConnection
    place_ids: list[str]
    place_index: dict[str, int]
    place_names: list[str]
    place_xy: np.ndarray
    place_lonlat: np.ndarray
    place_node: np.ndarray
    place_access: np.ndarray
    node_xy: np.ndarray
    node_lonlat: np.ndarray
    way_name: dict[int, str]
    # adjacency per vehicle: node -> [(neighbour, gid, length_m, speed_mps)]
    adjacency: dict[str, list[list[tuple[int, int, float, float]]]]
    _routes: dict[tuple, _Route | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.con.cursor()  # one cursor per call: safe across threads


_CITIES: dict[tuple[str, int], City] = {}
_CITIES_LOCK = threading.Lock()


def open_city(db_path: str | Path) -> City:
    """Open (once per process and file version) a city built by `build_synthetic_city`."""
    path = str(Path(db_path).resolve())
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except FileNotFoundError:
        raise FileNotFoundError(f"no LifePlanner city database at {path}") from None
    with _CITIES_LOCK:
        city = _CITIES.get(key)
        if city is None:
            for old in [k for k in _CITIES if k[0] == path]:
                _CITIES.pop(old).con.close()
            city = _load_city(path)
            _CITIES[key] = city
    return city


def _load_city(path: str) -> City:
    con = duckdb.connect(path, read_only=True)
    places = con.execute("SELECT id, name, x_m, y_m, lon, lat, node_id, access_m FROM places ORDER BY id").fetchall()
    nodes = con.execute("SELECT node_id, x_m, y_m, lon, lat FROM nodes ORDER BY node_id").fetchall()
    ways = con.execute(
        "SELECT gid, name, source, target, length_m, speed_walking, speed_cycling, speed_driving FROM ways ORDER BY gid"
    ).fetchall()
    n_nodes = (max(r[0] for r in nodes) + 1) if nodes else 0
    node_xy = np.zeros((n_nodes, 2))
    node_lonlat = np.zeros((n_nodes, 2))
    for nid, x, y, lon, lat in nodes:
        node_xy[nid] = (x, y)
        node_lonlat[nid] = (lon, lat)
    adjacency: dict[str, list[list[tuple[int, int, float, float]]]] = {
        v: [[] for _ in range(n_nodes)] for v in VEHICLES
    }
    way_name: dict[int, str] = {}
    for gid, name, a, b, length, sw, sc, sd in ways:
        way_name[gid] = name
        for vehicle, speed in zip(VEHICLES, (sw, sc, sd)):
            if speed:
                adjacency[vehicle][a].append((b, gid, length, speed))
                adjacency[vehicle][b].append((a, gid, length, speed))
    ids = [r[0] for r in places]
    return City(
        db_path=path,
        con=con,
        place_ids=ids,
        place_index={pid: i for i, pid in enumerate(ids)},
        place_names=[r[1] for r in places],
        place_xy=np.array([(r[2], r[3]) for r in places], dtype=float),
        place_lonlat=np.array([(r[4], r[5]) for r in places], dtype=float),
        place_node=np.array([r[6] for r in places], dtype=np.int64),
        place_access=np.array([r[7] for r in places], dtype=float),
        node_xy=node_xy,
        node_lonlat=node_lonlat,
        way_name=way_name,
        adjacency=adjacency,
    )


def _place(city: City, name: str, value: Any) -> int:
    pid = _text(name, value, required=True)
    idx = city.place_index.get(pid)
    if idx is None:
        raise ToolParameterError(
            f"{name} '{_quote(pid)}' was not found. Use a place_id returned by place_search or nearby_search."
        )
    return idx


# --------------------------------------------------------------------------------------------
# Records: the light and full shapes of Table 9 / Table 10
# --------------------------------------------------------------------------------------------

PLACE_LIGHT = ("place_id", "name", "place_type", "rating", "cost")
PLACE_DETAIL = PLACE_LIGHT[:3] + ("address", "opentime_week", "rating", "cost", "tag", "alias")
PLACE_FULL = PLACE_DETAIL + ("long_mem", "short_mem")
NOTE_LIGHT = ("note_id", "title", "time", "liked_count", "collected_count", "comment_count")
NOTE_FULL = (
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
COMMENT_FIELDS = ("comment_id", "time", "content", "like_count")

# SQL select lists for those shapes (constants; `id` is exposed as place_id)
_SQL_COLS = {
    "place_id": "id",
    "name": "name",
    "place_type": "place_type",
    "address": "address",
    "opentime_week": "opentime_week",
    "rating": "rating",
    "cost": "cost",
    "tag": "tag",
    "alias": "alias",
    "long_mem": "long_mem",
    "short_mem": "short_mem",
}


def _select(fields: tuple[str, ...]) -> str:
    return ", ".join(_SQL_COLS[f] for f in fields)


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 2)
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value


def _record(fields: tuple[str, ...], row: tuple) -> dict[str, Any]:
    return {f: _clean(v) for f, v in zip(fields, row)}


def _list_payload(results: list[dict[str, Any]], total: int, limit: int, what: str, hint: str) -> ToolResult:
    payload: dict[str, Any] = {"total_matched": total, "returned": len(results), "results": results}
    if total == 0:
        payload["message"] = f"No {what} matched. {hint}"
        return ToolResult(payload, "empty")
    if total > limit:
        payload["message"] = (
            f"Showing the first {limit} of {total} {what}. The search is too broad: "
            f"add filters or use more specific keywords to see the rest."
        )
        return ToolResult(payload, "truncated")
    return ToolResult(payload, "ok")
