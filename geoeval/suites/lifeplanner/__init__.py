"""LifePlanner (paper: `../shared/seeds/000_99f3c0004c86cdcd.txt`): agentic geo-spatial planning over a
city database of places, roads and social-media notes.

This package is not registered with the core yet (the suite, case engine and MCP server come
later). What exists:

- `environment`: the seeded synthetic city in one DuckDB file, the opening-hours parser and the
  access separation of Table 9 (what the evaluated agent may see);
- `tools`: the standard agent toolset (Table 7) and the data-engine toolset (Table 8), as pure
  functions returning `ToolResult(payload, failure_class)` plus thin Inspect tool wrappers;
- `metrics`: every metric of section 3.2 as a pure function, with Table 11's applicability.

See `README.md` in this folder for the departures from the paper and what is still to do.
"""
