"""The LifePlanner tools declared once (issue 9): `TOOL_TABLE` holds one `ToolSpec` per tool, with
its parameters (name, type, default), the pure function that runs it, and per toolset the
description and parameter descriptions the model sees (Table 7: standard, Table 8: data engine).

Everything else is built from it: the Inspect tools (`agent_tools`, `data_engine_tools`,
`toolset_tools`), which the MCP server (`mcp_server.py`) serves as they are, and the description
views `STANDARD_SCHEMA` / `DATA_ENGINE_SCHEMA`. Each call is appended to the sample store under
`TOOL_LOG_KEY` with its failure class (`record_call`)."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geoeval.api import clean_text
from geoeval.suites.lifeplanner.tools.arguments import (
    MAX_LOGGED_TEXT,
    TOOL_LOG_KEY,
    ToolResult,
)
from geoeval.suites.lifeplanner.tools.city import City, open_city
from geoeval.suites.lifeplanner.tools.nearby import nearby_search
from geoeval.suites.lifeplanner.tools.notes import note_detail, search_notes
from geoeval.suites.lifeplanner.tools.places import (
    place_detail,
    place_search,
    sample_place,
)
from geoeval.suites.lifeplanner.tools.routing import multi_stop_routing, routing

TOOLSETS = ("standard", "data_engine")
# full records and every permutation are long: the data engine gets them whole
TOOLSET_MAX_OUTPUT: dict[str, int | None] = {"standard": None, "data_engine": 0}
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Param:
    """One tool parameter: its name, the type Inspect turns into its JSON schema, its default
    (`REQUIRED`: none), and the data engine's type where that toolset accepts more."""

    name: str
    type: Any
    default: Any = REQUIRED
    data_engine_type: Any = None

    def type_in(self, toolset: str) -> Any:
        return self.data_engine_type if toolset == "data_engine" and self.data_engine_type is not None else self.type


@dataclass(frozen=True)
class ToolSpec:
    """One tool. `surfaces[toolset]` is (description, {parameter: description}) for each toolset
    that has the tool; a toolset takes the parameters its descriptions name, in `params` order.
    `impl(city, **arguments)` gets `toolset=` when `takes_toolset` and `seed=` when `seeded`
    (the k-th call of one tool list uses seed + k)."""

    name: str
    impl: Callable[..., ToolResult]
    params: tuple[Param, ...]
    surfaces: dict[str, tuple[str, dict[str, str]]]
    takes_toolset: bool = False
    seeded: bool = False


# Table 7 documents the route object's start, end and vehicle; its route also depends on the mode
# (fastest and shortest routes differ), which reference paths use, so the description names it too.
_CENTER_DESC = (
    "Center: POI place_id (str) OR Route object {'start': 'ID', 'end': 'ID', 'vehicle': 'driving', "
    "'mode': 'time'} (vehicle: 'walking', 'cycling' or 'driving', default 'driving'; mode: 'time' for "
    "the fastest route or 'distance' for the shortest, default 'time')"
)
_PLACE_FILTERS = (
    Param("place_types", list[str] | None, None, data_engine_type=list[str] | str | None),
    Param("min_rating", float | None, None),
    Param("max_rating", float | None, None),
    Param("min_cost", float | None, None),
    Param("max_cost", float | None, None),
    Param("geo_tag", list[str] | None, None),
    Param("social_mem", list[str] | str | None, None),  # data engine only (hidden memory)
)
_PLACE_DETAIL = (
    "Get full POI information for one place, including name, type, address, hours, rating, cost, tags, and alias.",
    {"place_id": "POI place_id (from place_search or nearby_search)"},
)
_ROUTING_DESC = (
    "Calculate an optimal route between two POIs and return total distance/time, geometry, and turn instructions."
)
_KEYWORD_DESC = {"keyword": "Search keyword; multiple keywords must be separated by 'AND'/'OR'/'NOT' logic"}
_NOTE_DETAIL = (
    "Get full post details for one social media note, including description and comments.",
    {"note_id": "Post ID (from search_notes result)"},
)

TOOL_TABLE: tuple[ToolSpec, ...] = (
    ToolSpec(
        "place_search",
        place_search,
        (Param("query_name", str), *_PLACE_FILTERS),
        takes_toolset=True,
        surfaces={
            "standard": (
                "Search places by name with lightweight POI output (place_id, name, type, rating, cost). Supports "
                "type, rating, cost, and geo-tag filtering.",
                {
                    "query_name": "REQUIRED: Place name in local language",
                    "place_types": "POI types list",
                    "min_rating": "Min rating (1-5)",
                    "max_rating": "Max rating (1-5)",
                    "min_cost": "Min cost per capita (CNY)",
                    "max_cost": "Max cost per capita (CNY)",
                    "geo_tag": "Filter by tag/name keywords list in local language, matches if ANY keyword hits",
                },
            ),
            "data_engine": (
                "Search places by name with enhanced filters and return full POI records. Data Engine version can "
                "filter by both static geo tags and social-memory keywords.",
                {
                    "query_name": "REQUIRED: Place name in local language",
                    "place_types": "POI types list, separated by commas (,)",
                    "min_rating": "Min rating (1-5)",
                    "max_rating": "Max rating (1-5)",
                    "min_cost": "Min cost per capita",
                    "max_cost": "Max cost per capita",
                    "geo_tag": "Filter by tag/name keywords list",
                    "social_mem": "Filter by social insights in local language",
                },
            ),
        },
    ),
    ToolSpec(
        "place_detail",
        place_detail,
        (Param("place_id", str),),
        surfaces={"standard": _PLACE_DETAIL, "data_engine": _PLACE_DETAIL},
    ),
    ToolSpec(
        "nearby_search",
        nearby_search,
        (Param("center", str | dict[str, str]), Param("radius_meters", float, 100), *_PLACE_FILTERS),
        takes_toolset=True,
        surfaces={
            "standard": (
                "Search nearby places around a POI or along a route buffer. Standard agent version returns a "
                "lightweight POI list with distance.",
                {
                    "center": _CENTER_DESC,
                    "radius_meters": "Search radius/buffer in meters (default 100)",
                    "place_types": "POI types list",
                    "min_rating": "Min rating (1-5)",
                    "max_rating": "Max rating (1-5)",
                    "min_cost": "Min cost per capita (CNY)",
                    "max_cost": "Max cost per capita (CNY)",
                    "geo_tag": "Filter by tag/name keywords list in local language, matches if ANY keyword hits",
                },
            ),
            "data_engine": (
                "Search nearby places around a POI or along a route buffer and return full POI records, including "
                "address, opentime_week, tag, alias, long_mem, and short_mem.",
                {
                    "center": _CENTER_DESC,
                    "radius_meters": "Search radius/buffer in meters",
                    "place_types": "POI types list, separated by commas",
                    "min_rating": "Min rating (1-5)",
                    "max_rating": "Max rating (1-5)",
                    "min_cost": "Min cost per capita",
                    "max_cost": "Max cost per capita",
                    "geo_tag": "Filter by tag/name keywords list",
                    "social_mem": "Filter by long_mem/short_mem keywords (social media insights) in local language",
                },
            ),
        },
    ),
    ToolSpec(
        "routing",
        routing,
        (
            Param("start_place_id", str),
            Param("end_place_id", str),
            Param("avoid_way_ids", list[int] | None, None),
            Param("mode", str, "time"),
            Param("vehicle", str, "driving"),
        ),
        surfaces={
            "standard": (
                _ROUTING_DESC,
                {
                    "start_place_id": "Start POI place_id",
                    "end_place_id": "End POI place_id",
                    "avoid_way_ids": "Way IDs to avoid (ways.gid)",
                    "mode": "Route mode: 'time' (shortest time) or 'distance' (shortest distance)",
                    "vehicle": "Travel mode: 'walking', 'cycling', or 'driving'",
                },
            ),
            "data_engine": (
                _ROUTING_DESC,
                {
                    "start_place_id": "Start POI place_id",
                    "end_place_id": "End POI place_id",
                    "avoid_way_ids": "Way IDs to avoid (ways.gid)",
                    "mode": "Route mode: 'time' or 'distance'",
                    "vehicle": "Travel mode: 'walking', 'cycling', 'driving'",
                },
            ),
        },
    ),
    ToolSpec(
        "sample_place",
        sample_place,
        (Param("num_samples", int, 10),),
        seeded=True,
        surfaces={
            "data_engine": (
                "Randomly sample POIs from the map database for prompt initialization. Returns full POI information "
                "including memory fields.",
                {"num_samples": "Number of random POIs to sample (typically 1-50)"},
            ),
        },
    ),
    ToolSpec(
        "multi_stop_routing",
        multi_stop_routing,
        (
            Param("stop_ids", list[str]),
            Param("start_id", str | None, None),
            Param("end_id", str | None, None),
            Param("vehicle", str, "driving"),
            Param("mode", str, "time"),
        ),
        surfaces={
            "data_engine": (
                "Enumerate and score route permutations for multi-stop trip planning. Supports open trips and fixed "
                "start/end settings.",
                {
                    "stop_ids": "List of POI place_ids to visit (typically 2-6 stops)",
                    "start_id": "Fixed start place_id (must be in stop_ids)",
                    "end_id": "Fixed end place_id (must be in stop_ids)",
                    "vehicle": "Travel mode: 'walking', 'cycling', 'driving'",
                    "mode": "Optimize: 'time' or 'distance'",
                },
            ),
        },
    ),
    ToolSpec(
        "search_notes",
        search_notes,
        (Param("keyword", str),),
        takes_toolset=True,
        surfaces={
            "standard": (
                "Search social media posts by keyword logic and return a lightweight post list (note_id, title, time, "
                "counts).",
                _KEYWORD_DESC,
            ),
            "data_engine": (
                "Search social media posts and return full post information with comments. Required when generated "
                "data cites social-memory evidence.",
                _KEYWORD_DESC,
            ),
        },
    ),
    ToolSpec(
        "note_detail",
        note_detail,
        (Param("note_id", str),),
        surfaces={"standard": _NOTE_DETAIL, "data_engine": _NOTE_DETAIL},
    ),
)


def toolset_schema(toolset: str) -> dict[str, tuple[str, dict[str, str]]]:
    """{tool: (description, {parameter: description})} of `toolset`, in table order."""
    return {spec.name: spec.surfaces[toolset] for spec in TOOL_TABLE if toolset in spec.surfaces}


STANDARD_SCHEMA = toolset_schema("standard")
DATA_ENGINE_SCHEMA = toolset_schema("data_engine")


def loggable(value: Any, depth: int = 0) -> Any:
    """`value` as the tool log keeps it: strings cleaned and cut at `MAX_LOGGED_TEXT` characters,
    lists cut at 50 items and nesting at 8 levels (marked), so that any argument can be stored."""
    if isinstance(value, str):
        return clean_text(value, max_chars=MAX_LOGGED_TEXT)
    if not isinstance(value, (dict, list, tuple)):
        return value
    if depth >= 8:
        return "…[nested deeper than 8 levels]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {loggable(str(k), depth + 1): loggable(v, depth + 1) for k, v in items[:50]}
        if len(items) > 50:
            out["…"] = f"[{len(items) - 50} more keys cut]"
        return out
    out_list = [loggable(v, depth + 1) for v in value[:50]]
    if len(value) > 50:
        out_list.append(f"…[{len(value) - 50} more items cut]")
    return out_list


def record_call(tool: str, arguments: dict[str, Any], result: ToolResult) -> None:
    """Append the call and its failure class to the sample store (for Figure 6)."""
    try:
        from inspect_ai.util import store

        s = store()
        log = list(s.get(TOOL_LOG_KEY, []))
        log.append(
            {
                "tool": tool,
                "arguments": {k: loggable(v) for k, v in arguments.items() if v is not None},
                "failure_class": result.failure_class,
            }
        )
        s.set(TOOL_LOG_KEY, log)
    except Exception:  # no sample context (direct use): nothing to record into
        pass


def _run(db_path: str, tool: str, arguments: dict[str, Any], call: Callable[[City], ToolResult]) -> str:
    from inspect_ai.tool import ToolError

    result = call(open_city(db_path))
    record_call(tool, arguments, result)
    if result.failure_class == "parameter_error":
        raise ToolError(" ".join(result.payload["error"].splitlines()))  # messages are one line already
    return result.text()


def _inspect_tool(spec: ToolSpec, toolset: str, path: str, next_seed: Callable[[], int]) -> Any:
    """`spec` as an Inspect tool of `toolset`: the signature built from the table (Inspect derives
    the JSON schema from it), the call logged and a parameter error raised as `ToolError`."""
    from inspect_ai.tool import ToolDef

    description, docs = spec.surfaces[toolset]
    unknown = set(docs) - {p.name for p in spec.params}
    if unknown:
        raise ValueError(f"{spec.name} ({toolset}) describes parameters it does not have: {sorted(unknown)}")
    params = [p for p in spec.params if p.name in docs]
    signature = inspect.Signature(
        [
            inspect.Parameter(
                p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default, annotation=p.type_in(toolset)
            )
            for p in params
        ],
        return_annotation=str,
    )

    async def execute(*args: Any, **kwargs: Any) -> str:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        extra: dict[str, Any] = {}
        if spec.takes_toolset:
            extra["toolset"] = toolset
        if spec.seeded:
            extra["seed"] = next_seed()
        return _run(path, spec.name, arguments, lambda c: spec.impl(c, **arguments, **extra))

    execute.__signature__ = signature  # type: ignore[attr-defined]
    execute.__annotations__ = {**{p.name: p.type_in(toolset) for p in params}, "return": str}
    execute.__name__ = execute.__qualname__ = f"{spec.name}_tool"
    return ToolDef(
        execute, name=spec.name, description=description, parameters=docs, max_output=TOOLSET_MAX_OUTPUT[toolset]
    ).as_tool()


def toolset_tools(db_path: str | Path, toolset: str, *, seed: int = 0) -> list[Any]:
    """The Inspect tools of `toolset` over the city at `db_path`, in table order. `sample_place`
    (data engine) draws seed, seed+1, ... per call over this tool list's lifetime."""
    if toolset not in TOOLSETS:
        raise ValueError(f"toolset must be one of {', '.join(TOOLSETS)}, got {toolset!r}.")
    path = str(Path(db_path).resolve())
    calls = itertools.count()
    return [
        _inspect_tool(spec, toolset, path, lambda: seed + next(calls))
        for spec in TOOL_TABLE
        if toolset in spec.surfaces
    ]


def agent_tools(db_path: str | Path) -> list[Any]:
    """The standard agent toolset (Table 7) as Inspect tools over the city at `db_path`
    (submit_answer belongs to the solver)."""
    return toolset_tools(db_path, "standard")


def data_engine_tools(db_path: str | Path, *, seed: int = 0) -> list[Any]:
    """The data-engine toolset (Table 8) as Inspect tools: full records with memory, social_mem
    filters, sample_place (seeded: the k-th call uses seed + k) and multi_stop_routing."""
    return toolset_tools(db_path, "data_engine", seed=seed)
