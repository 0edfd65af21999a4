"""MapTab: route planning and diagnostic QA over metro / scenic-area maps plus attribute tables."""

#: The version of this suite's references, metrics and environments. It is part of the run
#: identity and of the environment cache keys: bump it whenever any of them changes, so that no
#: stored score or cached environment is reused across the change.
#: 4 (issue 22): the robust answer protocol (`reading/`, the default `scoring.protocol`) and its
#: one-answer rule change how answers are read; RP samples carry their map's station names.
#: 5 (issue 39): answers are read on the core's reading layer (`core/reading/`: candidates in lines,
#: lists, tables and JSON, their roles, the one-answer rule once for every suite).
#: 6: a conclusion cue commits to the candidate it leads to, not every later one in its sentence
#: (core/reading/candidates.py).
SCORING_VERSION = "6"
