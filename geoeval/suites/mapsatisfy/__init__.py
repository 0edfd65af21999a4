"""MapSatisfyBench (seed 002): satisfaction-aware map-service agents.

The instance schema and loaders (`schema`), instance generation (`generate/`), the replay sandbox
(`replay/`), the per-case metrics (`metrics`), the simulated user (`user/`), the dialogue solver
(`solver`), the judges (`judging/`), the offline agents (`agents`) and the suite registration
(`suite`, imported by `geoeval.suites`). See README.md.
"""

#: The version of this suite's references, metrics and environments. It is part of the run
#: identity and of the environment cache keys: bump it whenever any of them changes, so that no
#: stored score or cached environment is reused across the change.
# 3: the rules judge reads the answer; paper judge defaults; generator fixes
# 4: answer protocols (issue 22): robust reading (default) and paper (the v3 judge); one answer in the reference
# 5 (issue 39): answers are read on the core's reading layer (record mentions as candidates, the
# core's roles and one-answer rule)
# 6: the generated store answers search_poi by the city's name too; clarify_baseline searches the
#    place, then around the user (issue 40)
# 7: a conclusion cue commits to the record it leads to ("为您推荐「X」，地址：Y区…": Y is not a
#    second recommendation); a passage whose records are all set aside asserts nothing
SCORING_VERSION = "7"
