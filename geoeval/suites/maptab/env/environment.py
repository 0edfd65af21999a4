"""The MapTab environment: generated (or loaded) maps stored in one DuckDB file, and their
rendered images.

`build_environment` is deterministic for an env config and seed, and idempotent: the DuckDB file
is keyed by a hash of both, built once, and reused by every job and worker that asks for it.
Tools query this file with parameterised SQL only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from geoeval import __version__
from geoeval.api import CopyingMemo, file_key
from geoeval.suites.maptab import SCORING_VERSION
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station

SCHEMA = """
CREATE TABLE IF NOT EXISTS maps (name VARCHAR PRIMARY KEY, scenario VARCHAR, width INTEGER, height INTEGER,
    country VARCHAR, map_difficulty VARCHAR, gs DOUBLE, wasp DOUBLE, mc DOUBLE);
CREATE TABLE IF NOT EXISTS stations (map VARCHAR, name VARCHAR, lines VARCHAR[], x DOUBLE, y DOUBLE, time DOUBLE,
    price DOUBLE, comfort DOUBLE, reliability DOUBLE, transfer_time DOUBLE, PRIMARY KEY (map, name));
CREATE TABLE IF NOT EXISTS edges (map VARCHAR, a VARCHAR, b VARCHAR, lines VARCHAR[], time DOUBLE, price DOUBLE,
    comfort DOUBLE, reliability DOUBLE, PRIMARY KEY (map, a, b));
CREATE TABLE IF NOT EXISTS lines (map VARCHAR, name VARCHAR, color VARCHAR, stations VARCHAR[], loop BOOLEAN,
    PRIMARY KEY (map, name));
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
"""


@dataclass(frozen=True)
class MapTabEnv:
    """A picklable handle: what a worker needs to reopen the environment.

    `source` is "synthetic" (generated maps, queries drawn per run), "real" (real topology,
    `real.py`; queries drawn per run as for "synthetic") or "authors" (the authors'
    released files: `items_path` is the JSON of their test-set items, normalised, that
    `authors.env.authors_samples` turns into samples)."""

    db_path: str
    image_dir: str
    map_names: tuple[str, ...]
    map_difficulty: dict[str, str]
    source: str = "synthetic"
    items_path: str = ""
    # content hash of external inputs (the authors' files); part of the run hash, see RunSpec
    fingerprint: str = ""


def env_key(env_cfg: dict[str, Any], seed: int) -> str:
    """The cache key of an environment folder (maps, tables, rendered images): the config, the
    seed, and the code that builds them (geoeval's version and the suite's scoring version)."""

    blob = json.dumps({"env": env_cfg, "seed": seed, "code": [__version__, SCORING_VERSION]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _map_rows(maps: list[MetroMap], difficulty: dict[str, dict[str, Any]]) -> dict[str, list[tuple]]:
    """The rows of `maps`, `stations`, `edges` and `lines`, in the maps' order and in the column
    order of `SCHEMA`."""
    rows: dict[str, list[tuple]] = {"maps": [], "stations": [], "edges": [], "lines": []}
    for m in maps:
        d = difficulty.get(m.name, {})
        rows["maps"].append(
            (
                m.name,
                m.scenario,
                m.width,
                m.height,
                m.country,
                d.get("level", ""),
                d.get("gs"),
                d.get("wasp"),
                d.get("mc"),
            )
        )
        rows["stations"] += [
            (m.name, s.name, list(s.lines), s.x, s.y, s.time, s.price, s.comfort, s.reliability, s.transfer_time)
            for s in m.stations.values()
        ]
        rows["edges"] += [(m.name, e.a, e.b, list(e.lines), e.time, e.price, e.comfort, e.reliability) for e in m.edges]
        rows["lines"] += [(m.name, ln.name, ln.color, list(ln.stations), ln.loop) for ln in m.lines.values()]
    return rows


def save_maps(
    db_path: str | Path, maps: list[MetroMap], difficulty: dict[str, dict[str, Any]], meta: dict[str, str]
) -> None:
    """Write maps into a fresh DuckDB file atomically (build in a temp file, then rename)."""
    import pyarrow as pa

    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_suffix(f".tmp{os.getpid()}.duckdb")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.execute(SCHEMA)
        # each table in one insert from an Arrow table: `executemany` took ~0.7 ms a row, 1.1 s
        # for 40 maps (their generation takes 0.3 s), ~9 s at the paper's 328
        for table, rows in _map_rows(maps, difficulty).items():
            if rows:
                # the Arrow types of the table `SCHEMA` made, so that the two cannot drift apart
                schema = con.sql(f"SELECT * FROM {table} LIMIT 0").to_arrow_table().schema
                columns = [pa.array(list(values), type=field.type) for values, field in zip(zip(*rows), schema)]
                con.register("_geoeval_new_rows", pa.Table.from_arrays(columns, schema=schema))
                con.execute(f"INSERT INTO {table} SELECT * FROM _geoeval_new_rows")
                con.unregister("_geoeval_new_rows")
        con.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    finally:
        con.close()
    os.replace(tmp, db_path)


#: Maps and levels read back from environment files, for the next job of a sweep (copies each time).
_READ_BACK = CopyingMemo(maxsize=8)


def load_maps(db_path: str | Path, names: list[str] | None = None) -> list[MetroMap]:
    """Read maps back, in name order, exactly as they were saved (insertion order of rows kept)."""
    key = ("maps", file_key(db_path), None if names is None else tuple(names))
    return _READ_BACK.get(key, lambda: _read_maps(db_path, names))


def _read_maps(db_path: str | Path, names: list[str] | None) -> list[MetroMap]:
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute("SELECT name, scenario, width, height, country FROM maps ORDER BY name").fetchall()
        out = []
        for name, scenario, width, height, country in rows:
            if names is not None and name not in names:
                continue
            stations = {
                r[0]: Station(
                    name=r[0],
                    lines=tuple(r[1]),
                    x=r[2],
                    y=r[3],
                    time=r[4],
                    price=r[5],
                    comfort=r[6],
                    reliability=r[7],
                    transfer_time=r[8],
                )
                for r in con.execute(
                    "SELECT name, lines, x, y, time, price, comfort, reliability, transfer_time FROM stations "
                    "WHERE map = ? ORDER BY rowid",
                    [name],
                ).fetchall()
            }
            edges = [
                Edge(a=r[0], b=r[1], lines=tuple(r[2]), time=r[3], price=r[4], comfort=r[5], reliability=r[6])
                for r in con.execute(
                    "SELECT a, b, lines, time, price, comfort, reliability FROM edges WHERE map = ? ORDER BY rowid",
                    [name],
                ).fetchall()
            ]
            lines = {
                r[0]: Line(name=r[0], color=r[1], stations=tuple(r[2]), loop=bool(r[3]))
                for r in con.execute(
                    "SELECT name, color, stations, loop FROM lines WHERE map = ? ORDER BY rowid", [name]
                ).fetchall()
            }
            out.append(
                MetroMap(
                    name=name,
                    scenario=scenario,
                    stations=stations,
                    edges=edges,
                    lines=lines,
                    width=width,
                    height=height,
                    country=country,
                )
            )
        return out
    finally:
        con.close()


def map_levels(db_path: str | Path) -> dict[str, str]:
    """Each stored map's difficulty level (Easy / Medium / Hard)."""

    def read() -> dict[str, str]:
        con = duckdb.connect(str(db_path), read_only=True)
        try:
            return dict(con.execute("SELECT name, map_difficulty FROM maps").fetchall())
        finally:
            con.close()

    return _READ_BACK.get(("levels", file_key(db_path)), read)


def station_neighbors(db_path: str | Path, map_name: str, station: str) -> list[dict[str, Any]]:
    """Adjacent stations of `station` with the lines between them (parameterised SQL: the station
    name comes from a model and is never interpolated)."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute(
            "SELECT CASE WHEN a = ? THEN b ELSE a END AS neighbor, lines FROM edges "
            "WHERE map = ? AND (a = ? OR b = ?) ORDER BY neighbor",
            [station, map_name, station, station],
        ).fetchall()
    finally:
        con.close()
    return [{"station": r[0], "lines": list(r[1])} for r in rows]


def image_data_uri(png_path: str | Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(png_path).read_bytes()).decode()


def resolution_tag(resolution: float) -> str:
    """1 -> "1", 0.5 -> "1_2", 0.03125 -> "1_32"; other values -> "0.3"."""
    inv = 1.0 / resolution
    if abs(inv - round(inv)) < 1e-9:
        return "1" if round(inv) == 1 else f"1_{round(inv)}"
    return f"{resolution:g}"


def map_image(env: MapTabEnv, m: MetroMap, resolution: float, language: str = "en") -> Path:
    """The map's PNG at `resolution` × full size, rendered once and cached next to the DuckDB file
    (and, across work dirs, in the disk cache: `render.image.map_png`)."""
    from geoeval.suites.maptab.render.image import map_png

    path = Path(env.image_dir) / f"{m.name}@{resolution_tag(resolution)}.{language}.png"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        png = map_png(m, scale=resolution, language=language)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(png)
        os.replace(tmp, path)
    return path
