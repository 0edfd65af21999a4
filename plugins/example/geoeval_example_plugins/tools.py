"""A tool plugin: the agent asks which stations are adjacent to a station on the current map.
It really queries the environment's DuckDB file, with parameterised SQL."""

from __future__ import annotations

import json

from inspect_ai.tool import Tool, ToolError, tool

from geoeval.api import register_tool, sample_state
from geoeval.suites.maptab.api import station_neighbors


@register_tool("station_neighbors", suites=["maptab"], description="Adjacent stations of a station")
def station_neighbors_tool(env) -> Tool:
    @tool(name="station_neighbors")
    def factory() -> Tool:
        async def execute(station: str) -> str:
            """List the stations adjacent to a station on the current map, with their lines.

            Args:
                station: The exact station name.
            """
            state = sample_state()
            map_name = (state.metadata or {}).get("map") if state else None
            if not map_name:
                raise ToolError("no map is associated with this sample")
            rows = station_neighbors(env.db_path, map_name, station)
            if not rows:
                raise ToolError(f"unknown station {station!r} (names are case-sensitive)")
            return json.dumps(rows)

        return execute

    return factory()


@register_tool("lines_of_station", suites=["station_lines"], description="The lines serving a station")
def lines_of_station_tool(env) -> Tool:
    """The station_lines suite's tool: `env` is its handle (`suite.StationLinesTables`), whose
    absolute paths are valid wherever the tool runs; the sample's map comes from its metadata."""
    from geoeval_example_plugins.suite import read_table

    @tool(name="lines_of_station")
    def factory() -> Tool:
        async def execute(station: str) -> str:
            """The metro lines that serve a station on the current map.

            Args:
                station: The exact station name.
            """
            state = sample_state()
            map_name = (state.metadata or {}).get("map") if state else None
            if map_name not in env.tables:
                raise ToolError("no map is associated with this sample")
            lines = read_table(env.tables[map_name]).get(station.strip())
            if not lines:
                raise ToolError(f"unknown station {station!r} (names are case-sensitive)")
            return ", ".join(sorted(lines))

        return execute

    return factory()
