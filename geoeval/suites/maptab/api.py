"""MapTab's public interface for plugins: what a plugin may build on without reaching into the
suite's modules, which change as the suite does. Everything else in `geoeval.suites.maptab` is
internal (`tests/core/test_architecture.py` checks that the example plugins use only this).

- `generate_metro_map(seed, ...) -> MetroMap`: a seeded synthetic Metromap (appendix E.1 ranges);
- `MetroMap`, `Station`, `Edge`: its graph model;
- `edge_table(m, columns=None)` / `format_table(rows, "csv" | "json")`: the Edge_tab rows and
  their text as MapTab's prompts show them;
- `station_neighbors(db_path, map_name, station)`: a station's neighbours and lines, read from a
  built MapTab environment with parameterised SQL (the environment handle's `db_path`).
"""

from __future__ import annotations

from geoeval.suites.maptab.env.environment import station_neighbors
from geoeval.suites.maptab.env.tables import edge_table, format_table
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.graph import Edge, MetroMap, Station

__all__ = ["Edge", "MetroMap", "Station", "edge_table", "format_table", "generate_metro_map", "station_neighbors"]
