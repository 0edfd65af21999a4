"""The one result shape shared by every suite.

A suite's scorer turns one evaluated sample into a `SampleResult`: the answer, the metric values
and the sample's dimensions. The runner collects them, the warehouse stores them (one row per
sample and one per (sample, metric)), aggregation groups them along any dimension, and tracking
and reports read the aggregates. Nothing downstream special-cases a suite.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field


class Dimensions(BaseModel):
    """What a score can be split by. `extra` holds suite-specific dimensions
    (e.g. MapTab's `query_level` or `resolution`), all as strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str
    task_family: str = ""  # e.g. "rp" or "qa" (MapTab), "place" (LifePlanner)
    task: str = ""  # e.g. the MapTab RP category "map_only"
    level: str = ""  # difficulty level, lowercase: "easy" | "medium" | "hard", or "l0".."l2"
    setting: str = ""  # input setting, e.g. "map", "edge_tab", "map+edge_tab+vertex_tab"
    capabilities: tuple[str, ...] = ()
    extra: dict[str, str] = Field(default_factory=dict)

    def columns(self) -> dict[str, object]:
        """The dimension columns of a warehouse or Parquet row (`extra` as sorted JSON text)."""
        return {
            "suite": self.suite,
            "task_family": self.task_family,
            "task": self.task,
            "level": self.level,
            "setting": self.setting,
            "capabilities": list(self.capabilities),
            "extra": json.dumps(self.extra, sort_keys=True),
        }


class SampleResult(BaseModel):
    """One evaluated sample (one epoch) of one run."""

    model_config = ConfigDict(extra="forbid")

    run_hash: str
    sample_id: str
    epoch: int = 1
    model: str = ""
    answer: str = ""
    # why a score is what it is (e.g. "no route found in the answer"); recorded, never raised
    explanation: str = ""
    scores: dict[str, float]
    dims: Dimensions
    input_tokens: int = 0
    output_tokens: int = 0
    # set when the sample errored (model or tool failure); its scores are then 0
    error: str | None = None
