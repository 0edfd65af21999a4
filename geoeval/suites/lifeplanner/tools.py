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




