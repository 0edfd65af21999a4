"""GTFS feed importer: a static GTFS folder (stops.txt, routes.txt, trips.txt, stop_times.txt) as
MapTab lines, i.e. ordered station sequences, for `real_topology.build_real_map`.

Rules (GTFS reference: https://gtfs.org/schedule/reference/):
* One line per route (`routes.txt`), named by `route_long_name`, else `route_short_name`, else
  `route_id`; colour `#route_color` when given.
* A route's station sequence is its most common trip pattern: the stop sequence (by
  `stop_sequence`) shared by the most trips, reversed trips counted as the same pattern (a line runs
  both ways; MapTab's edges are undirected). Ties go to the longest pattern, then the
  lexicographically smallest, so the result does not depend on file order.
* Stops become stations: a stop with a `parent_station` is its parent (platforms of one station are
  one station), and stops that end up with the same name (case- and space-insensitive) are one
  station. Those merges make the interchanges: a station used by two routes is on both lines.
* A pattern that returns to its first station is a loop line (the closing stop is dropped).
  Consecutive repeats of one station (two platforms of one parent) collapse to one.
* Routes whose pattern has fewer than two stations are skipped (nothing to draw or route).

Errors (missing file or column, a trip without stop times, no usable route) raise
`GeoevalError` naming the file and what is wrong.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from geoeval.api import GeoevalError

REQUIRED_FILES = {
    "stops.txt": ("stop_id", "stop_name"),
    "routes.txt": ("route_id",),
    "trips.txt": ("route_id", "trip_id"),
    "stop_times.txt": ("trip_id", "stop_id", "stop_sequence"),
}


@dataclass(frozen=True)
class RealLine:
    """A line of a real network: display name, colour ("#rrggbb" or "" when the source has none)
    and station names in running order; a loop line does not repeat its first station."""

    name: str
    color: str
    stations: tuple[str, ...]
    loop: bool = False


def _read(folder: Path, file: str) -> list[dict[str, str]]:
    path = folder / file
    if not path.is_file():
        raise GeoevalError(f"GTFS feed {folder}: {file} is missing")
    # utf-8-sig: feeds exported from spreadsheets often start with a byte-order mark
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        columns = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED_FILES[file] if c not in columns]
        if missing:
            raise GeoevalError(f"GTFS feed {folder}: {file} lacks column(s) {missing}")
        return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]


def _station_keys(stops: list[dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """stop_id -> station key, and station key -> display name (parent first, then by name)."""
    by_id = {s["stop_id"]: s for s in stops}
    key_of: dict[str, str] = {}
    display: dict[str, str] = {}
    for stop_id in by_id:
        s = by_id[stop_id]
        seen = set()
        # follow parent_station up to the top (a platform -> station; entrances are not on trips)
        while s.get("parent_station") and s["parent_station"] in by_id and s["stop_id"] not in seen:
            seen.add(s["stop_id"])
            s = by_id[s["parent_station"]]
        name = " ".join(s["stop_name"].split())
        key = name.lower()
        key_of[stop_id] = key
        display.setdefault(key, name)
    return key_of, display


def _patterns(trip_stops: dict[str, list[tuple[int, str]]], key_of: dict[str, str]) -> tuple[Counter, dict]:
    """Trips per pattern (a pattern and its reverse are one), and each pattern as first run (trips
    in trip_id order), so a line keeps the direction its feed lists first."""
    patterns: Counter = Counter()
    oriented: dict[tuple[str, ...], tuple[str, ...]] = {}
    for trip_id in sorted(trip_stops):
        seq: list[str] = []
        for _, stop_id in sorted(trip_stops[trip_id]):
            if stop_id not in key_of:
                raise GeoevalError(f"GTFS stop_times.txt: trip {trip_id!r} uses unknown stop_id {stop_id!r}")
            key = key_of[stop_id]
            if not seq or seq[-1] != key:
                seq.append(key)
        canonical = min(tuple(seq), tuple(reversed(seq)))
        patterns[canonical] += 1
        oriented.setdefault(canonical, tuple(seq))
    return patterns, oriented


def load_gtfs_lines(folder: str | Path, routes: list[str] | None = None) -> list[RealLine]:
    """The feed's lines (one per route with a usable pattern), in routes.txt order. `routes`
    keeps only routes whose id, short name or long name is listed."""
    folder = Path(folder)
    if not folder.is_dir():
        raise GeoevalError(f"GTFS feed {folder}: not a folder")
    stops = _read(folder, "stops.txt")
    route_rows = _read(folder, "routes.txt")
    trips = _read(folder, "trips.txt")
    stop_times = _read(folder, "stop_times.txt")
    key_of, display = _station_keys(stops)

    trip_route = {t["trip_id"]: t["route_id"] for t in trips}
    by_trip: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in stop_times:
        if row["trip_id"] not in trip_route:
            continue  # stop times of a trip not in trips.txt: not part of any route
        try:
            position = int(row["stop_sequence"])
        except ValueError:
            raise GeoevalError(
                f"GTFS stop_times.txt: trip {row['trip_id']!r} has stop_sequence "
                f"{row['stop_sequence']!r}, not an integer"
            ) from None
        by_trip[row["trip_id"]].append((position, row["stop_id"]))
    trips_of_route: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(dict)
    for trip_id, route_id in trip_route.items():
        if trip_id in by_trip:
            trips_of_route[route_id][trip_id] = by_trip[trip_id]

    wanted = set(routes) if routes else None
    lines: list[RealLine] = []
    used_names: set[str] = set()
    for r in route_rows:
        names = {r["route_id"], r.get("route_short_name", ""), r.get("route_long_name", "")}
        if wanted is not None and not (names & wanted):
            continue
        patterns, oriented = _patterns(trips_of_route.get(r["route_id"], {}), key_of)
        if not patterns:
            continue
        # most trips, then most stations, then the smallest pattern: independent of file order
        best = min(patterns, key=lambda p: (-patterns[p], -len(p), p))
        seq = list(oriented[best])
        loop = len(seq) > 3 and seq[0] == seq[-1]
        if loop:
            seq = seq[:-1]
        if len(seq) < 2 or len(set(seq)) != len(seq):
            continue  # a pattern that visits a station twice (other than a loop's close) is no line
        name = r.get("route_long_name") or r.get("route_short_name") or r["route_id"]
        if name in used_names:  # two routes with one name stay two lines
            name = f"{name} ({r['route_id']})"
        used_names.add(name)
        color = r.get("route_color", "")
        color = f"#{color.upper()}" if len(color) == 6 else ""
        lines.append(RealLine(name=name, color=color, stations=tuple(display[k] for k in seq), loop=loop))
    if not lines:
        raise GeoevalError(
            f"GTFS feed {folder}: no route with a trip of two or more stations"
            + (f" among {sorted(wanted)}" if wanted else "")
        )
    return lines
