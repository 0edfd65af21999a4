"""The LifePlanner city environment: one DuckDB file per city (section 3.1, Tables 9 and 10).

`build_synthetic_city` writes a seeded synthetic city: places in an AMap-like taxonomy with opening
hours, ratings, costs, structured tags, aliases and the hidden `long_mem` / `short_mem`; a road
network of nodes and ways (`gid`) with speeds per vehicle; and social-media notes with comments whose
place mentions are noisy and sometimes ambiguous. Same seed and parameters, same rows.

Tables (agent-visible columns are listed by `agent_visible_columns`; the rest is internal):

- `places`   id, name, place_type, address, opentime_week, rating, cost, tag, alias,
             long_mem, short_mem (hidden memory), lon, lat, x_m, y_m, node_id, access_m, popularity
- `nodes`    node_id, lon, lat, x_m, y_m
- `ways`     gid, name, highway, source, target, node_ids, length_m,
             speed_walking, speed_cycling, speed_driving (m/s; NULL: the vehicle may not use it)
- `notes`    note_id, title, desc, time, liked_count, collected_count, comment_count, share_count,
             tag_list, search_text (lower-cased title+desc+tags, the text index)
- `comments` comment_id, note_id, time, content, like_count
- `note_mentions` note_id, place_id, mention, mention_kind, role (ground truth: who a note is about;
                  role `subject` for the place the note reviews, `also` for places a crawl passes)
- `note_facts`    note_id, place_id, fact, source              (ground truth: what a note evidences)
- `meta`          key, value

`x_m`/`y_m` are metres in a local plane (the city's south-west corner is 0,0); lon/lat derive from
them, so distances computed on either agree.

This module writes and reads the file (`build_synthetic_city`, `read_city_info`); the modules it
is built from are beside it: `schema` (vehicles, access separation, DDL, `CityInfo`),
`opening_hours`, `vocabulary` (taxonomy and phrase banks, data), `layout` (roads and places) and
`notes` (notes, comments, ground truth).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from geoeval.suites.lifeplanner.city.layout import (
    _M_PER_DEG_LAT,
    _build_places,
    _build_roads,
    _m_per_deg_lon,
)
from geoeval.suites.lifeplanner.city.notes import (
    _build_notes,
)
from geoeval.suites.lifeplanner.city.schema import (
    GENERATOR_VERSION,
    SCHEMA,
    CityInfo,
)
from geoeval.suites.lifeplanner.city.vocabulary import (
    DISTRICT_NAMES,
)


def _arrow(columns: dict[str, list], schema: list[tuple[str, pa.DataType]]) -> pa.Table:
    return pa.table({name: pa.array(columns[name], type=t) for name, t in schema})


def build_synthetic_city(
    path: str | Path,
    *,
    seed: int,
    n_places: int,
    n_notes: int,
    area_km2: float = 10.0,
    comments_per_note: float = 4.0,
    road_spacing_m: float = 120.0,
    center: tuple[float, float] = (114.36, 30.53),
) -> CityInfo:
    """Build a seeded synthetic city into one DuckDB file at `path` (replaced if it exists).

    Paper scale (section 3.1): `n_places=3600, n_notes=40000` with the default 4 comments per note
    gives about 200,000 notes plus comments over 10 km². The file is written to a temporary name
    and renamed, so a reader never sees a half-built city."""
    if n_places < 2:
        raise ValueError("n_places must be at least 2")
    if n_notes < 0 or area_km2 <= 0 or comments_per_note < 0 or road_spacing_m <= 0:
        raise ValueError("n_notes, comments_per_note must be >= 0; area_km2 and road_spacing_m > 0")
    path = Path(path)
    rng = np.random.default_rng(seed)
    side = math.sqrt(area_km2) * 1000.0
    lon0, lat0 = center
    mlon = _m_per_deg_lon(lat0)
    # the city's south-west corner sits so that `center` is its middle
    lon_sw, lat_sw = lon0 - side / 2 / mlon, lat0 - side / 2 / _M_PER_DEG_LAT

    roads = _build_roads(rng, side, road_spacing_m)
    k = max(2, int(round(math.sqrt(area_km2))))
    names = list(DISTRICT_NAMES) + [f"District {i}" for i in range(len(DISTRICT_NAMES), k * k)]
    districts = [(names[i * k + j], (j + 0.5) * side / k, (i + 0.5) * side / k) for i in range(k) for j in range(k)]
    places = _build_places(rng, n_places, side, roads, districts)
    social = _build_notes(rng, places, n_notes, comments_per_note, districts)

    def lon(xm: Any) -> Any:
        return np.round(lon_sw + np.asarray(xm) / mlon, 7)

    def lat(ym: Any) -> Any:
        return np.round(lat_sw + np.asarray(ym) / _M_PER_DEG_LAT, 7)

    x, y = roads["x"], roads["y"]
    nodes = {
        "node_id": list(range(len(x))),
        "lon": lon(x).tolist(),
        "lat": lat(y).tolist(),
        "x_m": np.round(x, 2).tolist(),
        "y_m": np.round(y, 2).tolist(),
    }
    ways_cols = list(zip(*roads["ways"]))
    ways = dict(
        zip(
            (
                "gid",
                "name",
                "highway",
                "source",
                "target",
                "node_ids",
                "length_m",
                "speed_walking",
                "speed_cycling",
                "speed_driving",
            ),
            (list(c) for c in ways_cols),
        )
    )
    pcols = (
        "id",
        "name",
        "place_type",
        "address",
        "opentime_week",
        "rating",
        "cost",
        "tag",
        "alias",
        "long_mem",
        "short_mem",
        "x_m",
        "y_m",
        "node_id",
        "access_m",
        "popularity",
    )
    pl = {c: [p[c] for p in places] for c in pcols}
    pl["lon"] = lon(pl["x_m"]).tolist()
    pl["lat"] = lat(pl["y_m"]).tolist()

    S, I, D, T = pa.string(), pa.int32(), pa.float64(), pa.timestamp("s")
    tables = {
        "nodes": _arrow(nodes, [("node_id", I), ("lon", D), ("lat", D), ("x_m", D), ("y_m", D)]),
        "ways": _arrow(
            ways,
            [
                ("gid", I),
                ("name", S),
                ("highway", S),
                ("source", I),
                ("target", I),
                ("node_ids", pa.list_(I)),
                ("length_m", D),
                ("speed_walking", D),
                ("speed_cycling", D),
                ("speed_driving", D),
            ],
        ),
        "places": _arrow(
            pl,
            [
                ("id", S),
                ("name", S),
                ("place_type", S),
                ("address", S),
                ("opentime_week", S),
                ("rating", D),
                ("cost", D),
                ("tag", S),
                ("alias", S),
                ("long_mem", S),
                ("short_mem", S),
                ("lon", D),
                ("lat", D),
                ("x_m", D),
                ("y_m", D),
                ("node_id", I),
                ("access_m", D),
                ("popularity", D),
            ],
        ),
        "notes": _arrow(
            social["notes"],
            [
                ("note_id", S),
                ("title", S),
                ("desc", S),
                ("time", T),
                ("liked_count", I),
                ("collected_count", I),
                ("comment_count", I),
                ("share_count", I),
                ("tag_list", S),
                ("search_text", S),
            ],
        ),
        "comments": _arrow(
            social["comments"], [("comment_id", S), ("note_id", S), ("time", T), ("content", S), ("like_count", I)]
        ),
        "note_mentions": _arrow(
            social["mentions"], [("note_id", S), ("place_id", S), ("mention", S), ("mention_kind", S), ("role", S)]
        ),
        "note_facts": _arrow(social["facts"], [("note_id", S), ("place_id", S), ("fact", S), ("source", S)]),
    }
    info = CityInfo(
        path=str(path),
        seed=int(seed),
        n_places=n_places,
        n_notes=n_notes,
        n_comments=len(social["comments"]["comment_id"]),
        n_nodes=len(x),
        n_ways=len(roads["ways"]),
        area_km2=float(area_km2),
        center_lon=float(lon0),
        center_lat=float(lat0),
    )
    meta = {
        "generator": GENERATOR_VERSION,
        "seed": str(seed),
        "n_places": str(n_places),
        "n_notes": str(n_notes),
        "n_comments": str(info.n_comments),
        "n_nodes": str(info.n_nodes),
        "n_ways": str(info.n_ways),
        "area_km2": repr(float(area_km2)),
        "comments_per_note": repr(float(comments_per_note)),
        "road_spacing_m": repr(float(road_spacing_m)),
        "center_lon": repr(float(lon0)),
        "center_lat": repr(float(lat0)),
    }

    write_city_file(path, tables, meta)
    return info


def write_city_file(path: Path, tables: dict[str, Any], meta: dict[str, str]) -> None:
    """Write a city's tables (Arrow, named as in `SCHEMA`) and meta rows into a new DuckDB file
    atomically: built under a temporary name, then renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.execute(SCHEMA)
        for name, tbl in tables.items():
            con.register("_src", tbl)
            con.execute(f"INSERT INTO {name} SELECT * FROM _src")  # table names are SCHEMA's, never input
            con.unregister("_src")
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(tmp, path)


def read_city_info(path: str | Path) -> CityInfo:
    """The `CityInfo` of a built city, from its meta table."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    return CityInfo(
        path=str(path),
        seed=int(meta["seed"]),
        n_places=int(meta["n_places"]),
        n_notes=int(meta["n_notes"]),
        n_comments=int(meta["n_comments"]),
        n_nodes=int(meta["n_nodes"]),
        n_ways=int(meta["n_ways"]),
        area_km2=float(meta["area_km2"]),
        center_lon=float(meta["center_lon"]),
        center_lat=float(meta["center_lat"]),
        generator=meta.get("generator", ""),
    )
