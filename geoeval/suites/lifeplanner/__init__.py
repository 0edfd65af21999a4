"""LifePlanner (paper: `../shared/seeds/000_99f3c0004c86cdcd.txt`): agentic geo-spatial planning over a
city database of places, roads and social-media notes.

The suite (`suite.py`, registered with the core when `geoeval.suites` is imported) evaluates an
agent on cases of the 11 task × level combinations:

- `city/`: the city database: the seeded synthetic city in one DuckDB file (`environment`, with
  its schema, layout, notes and vocabulary), opening hours, access separation, and the
  OpenStreetMap city (`city/osm/`);
- `tools/`: the city handle the tools read (`city`), the standard agent toolset (Table 7) and the
  data-engine toolset (Table 8) (`toolsets`), and the tools over MCP (`mcp_server`);
- `cases/`: the deterministic case engine (Figure 10 with templates), τ* replay;
- `scoring/`: reading and checking answers (`answers`, `trajectory`, `judging`) and judge
  calibration (`calibration`, appendix B.2);
- `baseline/`: the heuristic baseline;
- the files at the top: `task`, `scorers`, `prompts`: the Figure 9 scaffold and the Table 11
  metrics with the judge ensemble; `agents`: the oracle and the heuristic baseline as policies;
  `metrics`: every metric of section 3.2 as a pure function; `cli`: `geoeval env build
  lifeplanner`; `reports`: Tables 2/3 and Figures 5/6 after a run; `meta_eval`: answers of known
  quality; `phrasing`, `paraphrase`: LLM phrasing and offline rewordings of case queries.

See `README.md` in this folder for the departures from the paper and what is still to do.
"""

#: The version of this suite's references, metrics and environments. It is part of the run
#: identity and of the environment cache keys: bump it whenever any of them changes, so that no
#: stored score or cached environment is reused across the change.
# 6 (issue 39): answers are read on the core's reading layer (records in JSON, tables, sections,
# field lines; the core's roles and one-answer rule); a reply without submit_answer is read (robust)
# 7: a conclusion cue commits to the candidate it leads to, not every later one in its sentence
SCORING_VERSION = "7"
