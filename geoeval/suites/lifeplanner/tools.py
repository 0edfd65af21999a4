"""LifePlanner tools (appendix A.2): the standard agent toolset (Table 7) and the data-engine toolset
(Table 8), over one city DuckDB file.

Two layers:

1. Pure functions `fn(city, ...) -> ToolResult(payload, failure_class)`, where `city` is an
   `open_city(db_path)` handle. `payload` is exactly what the agent reads (serialised by
   `ToolResult.text()`), `failure_class` is Figure 6's split of the call: `ok`, `parameter_error`
   (the call could not run as given: missing or ill-typed argument, unknown id, malformed keyword
   logic), `truncated` (more matches than the tool returns: too broad) or `empty` (nothing matched,
   or no route: too narrow).
2. Inspect tools: `agent_tools(db_path)` and `data_engine_tools(db_path, seed=...)` return
   `Tool`s with the paper's names, descriptions and parameter descriptions. A parameter error
   raises `ToolError` with the same message (the agent sees it as a tool error); every call's
   failure class is appended to the sample store under `TOOL_LOG_KEY`.

Access separation (Table 9): the standard tools never return `long_mem`/`short_mem` and cannot
filter on them either (a filter on hidden memory would leak it one bit at a time); only the
data-engine tools can. No tool returns coordinates or the ground-truth tables.

Every value an agent supplies reaches SQL as a bound parameter. SQL text is assembled only from
constant fragments, whose number depends on list lengths, never on their content.

Hostile input (issue 8): an agent may send any JSON, and a tool answers with a result or a
parameter error, never an exception. Before a tool reads its arguments, `_tool` rejects values
nested deeper than `MAX_ARGUMENT_DEPTH` and cleans every string (`geoeval.core.text.clean_value`:
lone surrogates, NUL and other control characters become U+FFFD, which DuckDB and JSON can carry
and which matches nothing); long text, long lists and wrong types are parameter errors; a value
quoted in an error message is cut short and kept on one line (`_quote`, `_brief`).

This module holds no code: it re-exports the names of the modules that do, so that
`from geoeval.suites.lifeplanner import tools as T` keeps working. `tool_arguments` (results,
limits, argument checks), `city_handle` (`open_city`, record shapes), `place_tools`,
`routing_tools`, `nearby_tools`, `keyword_logic`, `note_tools` (the pure functions) and
`toolsets` (the one table the Inspect and MCP tools are built from).
"""

from __future__ import annotations

from geoeval.suites.lifeplanner.city_handle import (  # noqa: F401 (re-exported)
    _CITIES,
    _CITIES_LOCK,
    _SQL_COLS,
    COMMENT_FIELDS,
    NOTE_FULL,
    NOTE_LIGHT,
    PLACE_DETAIL,
    PLACE_FULL,
    PLACE_LIGHT,
    City,
    _clean,
    _list_payload,
    _load_city,
    _place,
    _record,
    _Route,
    _select,
    open_city,
)
from geoeval.suites.lifeplanner.keyword_logic import (  # noqa: F401 (re-exported)
    _OPERATORS,
    _TOKEN_RE,
    MAX_DEPTH,
    MAX_KEYWORD_LEN,
    MAX_TERMS,
    And,
    KeywordSyntaxError,
    Not,
    Or,
    Term,
    _Parser,
    _tokenize,
    keyword_matches,
    keyword_sql,
    parse_keyword_logic,
)
from geoeval.suites.lifeplanner.nearby_tools import (  # noqa: F401 (re-exported)
    _center,
    _point_polyline_distance,
    _route_line,
    nearby_search,
    route_buffer_distances,
)
from geoeval.suites.lifeplanner.note_tools import (  # noqa: F401 (re-exported)
    _NOTE_SQL,
    _comments,
    note_detail,
    search_notes,
)
from geoeval.suites.lifeplanner.place_tools import (  # noqa: F401 (re-exported)
    _Filters,
    _place_filters,
    _where,
    place_detail,
    place_search,
    sample_place,
)
from geoeval.suites.lifeplanner.routing_tools import (  # noqa: F401 (re-exported)
    _avoid_ids,
    _bearing,
    _cardinal,
    _dijkstra,
    _edge_speeds,
    _half_up,
    _route,
    _route_from_labels,
    _route_payload,
    _route_steps,
    _turn,
    multi_stop_routing,
    routing,
)
from geoeval.suites.lifeplanner.tool_arguments import (  # noqa: F401 (re-exported)
    _BRIEF,
    _LINE_BREAKS,
    DATA_ENGINE_LIMITS,
    FAILURE_CLASSES,
    MAX_ARGUMENT_DEPTH,
    MAX_AVOID,
    MAX_CENTER_CHARS,
    MAX_COMMENTS,
    MAX_LIST_ITEMS,
    MAX_LOGGED_TEXT,
    MAX_PERMUTATIONS,
    MAX_RADIUS_M,
    MAX_RAW_LIST_ITEMS,
    MAX_SAMPLES,
    MAX_STOPS,
    MAX_TEXT,
    MODES,
    STANDARD_LIMITS,
    TOOL_LOG_KEY,
    ToolParameterError,
    ToolResult,
    _brief,
    _choice,
    _error,
    _number,
    _quote,
    _range,
    _text,
    _text_list,
    _tool,
)
from geoeval.suites.lifeplanner.toolsets import (  # noqa: F401 (re-exported)
    _CENTER_DESC,
    DATA_ENGINE_SCHEMA,
    REQUIRED,
    STANDARD_SCHEMA,
    TOOL_TABLE,
    TOOLSET_MAX_OUTPUT,
    TOOLSETS,
    Param,
    ToolSpec,
    _inspect_tool,
    _run,
    agent_tools,
    data_engine_tools,
    loggable,
    record_call,
    toolset_schema,
    toolset_tools,
)



