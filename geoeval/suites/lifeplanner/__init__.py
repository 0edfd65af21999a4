"""LifePlanner (paper: `../shared/seeds/000_99f3c0004c86cdcd.txt`): agentic geo-spatial planning over a
city database of places, roads and social-media notes.

The suite (`suite.py`, registered with the core when `geoeval.suites` is imported) evaluates an
agent on cases of the 11 task × level combinations:

- `environment`: the seeded synthetic city in one DuckDB file, opening hours, access separation;
- `tools`: the standard agent toolset (Table 7) and the data-engine toolset (Table 8);
- `cases`: the deterministic case engine (Figure 10 with templates), τ* replay;
- `task`, `scorers`, `judging`, `trajectory`, `answers`, `prompts`: the Figure 9 scaffold and the
  Table 11 metrics with the judge ensemble;
- `agents`, `baseline`: the oracle and the heuristic baseline;
- `metrics`: every metric of section 3.2 as a pure function;
- `mcp_server`, `osm`, `env_cli`: the tools over MCP, the OpenStreetMap city, `geoeval env build lifeplanner`;
- `reports`, `calibration`: Tables 2/3 and Figures 5/6 after a run; judge calibration (appendix B.2).

See `README.md` in this folder for the departures from the paper and what is still to do.
"""

#: The version of this suite's references, metrics and environments. It is part of the run
#: identity and of the environment cache keys: bump it whenever any of them changes, so that no
#: stored score or cached environment is reused across the change.
SCORING_VERSION = "3"
