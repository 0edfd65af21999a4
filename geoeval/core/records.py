"""The one result shape shared by every suite.

A suite's scorer turns one evaluated sample into a `SampleResult`: the answer, the metric values
and the sample's dimensions. The runner collects them, the warehouse stores them (one row per
sample and one per (sample, metric)), aggregation groups them along any dimension, and tracking
and reports read the aggregates. Nothing downstream special-cases a suite.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec  # a type only: the config sits above the records

#: A sample's outcome. `scored`: the model answered (well or badly) and every metric has its value.
#: `error`: the sample could not be evaluated (the provider failed or timed out after its retries,
#: a tool or the harness crashed, every judge failed); its metrics are NaN, never 0, so means skip
#: it, and it is counted in `n_errors` and retried on resume.
SampleStatus = Literal["scored", "error"]


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
    # what the model wrote last, as it wrote it (the answer is what the scorer extracted from it),
    # and why it stopped (Inspect's stop reason: stop, max_tokens, model_length, tool_calls, ...)
    completion: str = ""
    stop_reason: str = ""
    # why a score is what it is (e.g. "no route found in the answer"); recorded, never raised
    explanation: str = ""
    scores: dict[str, float]
    dims: Dimensions
    input_tokens: int = 0
    output_tokens: int = 0
    # set when the sample errored; its scores are then NaN (see `SampleStatus`)
    error: str | None = None
    status: SampleStatus = "scored"
    # per-sample facts worth keeping beside the scores, e.g. every judge vote with its raw reply
    details: dict[str, Any] = Field(default_factory=dict)
    # what the sample's model calls cost in this invocation, in USD (replayed and cached calls are
    # free); None: a model without a price was called (`pricing`). `judge_cost_usd`: its judges' share
    cost_usd: float | None = None
    judge_cost_usd: float | None = None
    # model calls answered from Inspect's cache, and from the stored trajectory (`run/replay.py`)
    cache_hits: int = 0
    replayed_calls: int = 0
    # tokens by model: {model: {"role": "agent"|"judge", "input", "output", "cache_read",
    # "replayed_input", "replayed_output", "cached_input", "cached_output", "calls"}} (see `core.cost.pricing`)
    usage: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # the model calls recorded for the trajectory store, on their way to the warehouse (not a column)
    trajectory: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _error_means_no_scores(self) -> SampleResult:
        # one rule, wherever a result is built: an error is never scored
        if self.error is not None and self.status != "error":
            object.__setattr__(self, "status", "error")
        if self.status == "error":
            if self.error is None:
                object.__setattr__(self, "error", "sample errored")
            object.__setattr__(self, "scores", {k: math.nan for k in self.scores})
        return self


def error_counts(results: list[SampleResult]) -> dict[str, float]:
    """`n_samples`, `n_scored` and `n_errors` of a set of results (the MLflow metric names)."""
    n_errors = sum(1 for r in results if r.status == "error")
    return {"n_samples": float(len(results)), "n_scored": float(len(results) - n_errors), "n_errors": float(n_errors)}


# ------------------------------------------------- meta-evaluation (`geoeval.core.analysis.meta_eval`)


@dataclass(frozen=True)
class Tier:
    """A kind of constructed answer: `name` (e.g. "reference", "defect:wrong_station", "empty",
    "refusal", "invented"), its quality `level` (0 reference, 1 one defect, 2 worthless) and the
    metrics its defect must lower against the reference (None: every metric).

    `family` groups the tiers a meta-evaluation reports together: `tiers` (the reference, one
    defect, worthless), `surface` (the right answer written another way: level 0, must score as
    the reference), `gaming` (answers that game the reader: hedges, self-corrections, negations,
    keyword stuffing), `partial` (partly right: between the reference and worthless) and
    `trajectory` (tool-use probes)."""

    name: str
    level: int
    affects: frozenset[str] | None = None
    family: str = "tiers"
    #: the tier of the answer's worst candidate (a hedge between the reference and a wrong
    #: answer): this answer scores no higher than that one on each metric it lowers, and strictly
    #: below the reference where that one does (None: strictly below the reference)
    worst: str | None = None

    def lowers(self, metric: str) -> bool:
        return self.affects is None or metric in self.affects


@dataclass(frozen=True)
class MetaEvalAnswer:
    """One answer of known quality to one sample, for the meta-evaluation (`Suite.meta_eval_tiers`):
    `level` 0 for the reference (and the right answer written another way), 1 for the reference
    with one defect (`lowers`: the metrics the defect must lower; None = every metric), 2 for a
    worthless answer (empty, a refusal, invented entities). `family` groups answers in the report
    (docs/meta-eval.md); `messages` is the trajectory (Inspect chat messages as dicts) for a
    tool-using suite whose scorer reads it."""

    tier: str
    level: int
    answer: str
    lowers: tuple[str, ...] | None = None
    family: str = "tiers"
    messages: list[dict[str, Any]] | None = None
    #: the tier of the answer's worst candidate, for a hedge (`Tier.worst`)
    worst: str | None = None

    @classmethod
    def of_tier(cls, tier: Any, answer: str) -> MetaEvalAnswer:
        """An answer of a `Tier` (the core's reading families: `core.analysis.answer_families`)."""
        lowers = tuple(sorted(tier.affects)) if tier.affects is not None else None
        return cls(tier.name, tier.level, answer, lowers, tier.family, worst=tier.worst)

    @classmethod
    def reference(cls, answer: str, messages: list[dict[str, Any]] | None = None) -> MetaEvalAnswer:
        return cls("reference", 0, answer, messages=messages)

    @classmethod
    def defect(
        cls, name: str, answer: str, lowers: tuple[str, ...] | list[str] | None = None, family: str = "tiers"
    ) -> MetaEvalAnswer:
        return cls(f"defect:{name}", 1, answer, tuple(lowers) if lowers is not None else None, family)

    @classmethod
    def worthless(cls, name: str, answer: str) -> MetaEvalAnswer:
        return cls(name, 2, answer)


@dataclass
class ScoredAnswer:
    """One constructed answer to one sample and its scores from the suite's real scorers."""

    sample_id: str
    tier: Tier
    answer: str
    scores: dict[str, float] = field(default_factory=dict)


# ------------------------------------------------- the public scoring entry point (`geoeval.core.scoring`)


@dataclass(frozen=True)
class AnswerToScore:
    """One answer to score outside a run (`geoeval score <suite> --answers`, `score_answers`):
    the sample it answers, the model's final answer as it wrote it (the completion), and for a
    tool-using suite the trajectory as Inspect chat messages (`ChatMessage.model_dump()` dicts;
    None: the answer alone, as if no tool had been called)."""

    sample_id: str
    answer: str
    messages: list[dict[str, Any]] | None = None
    epoch: int = 1


@dataclass
class AnswerScore:
    """What the suite's scorer made of one `AnswerToScore`: the metric values under the run's
    protocol, the answer as read (`answer`), the reading's facts (`reading`: what was extracted,
    which rules fired, the judges' verdicts), the explanation the scorer gives, and where the
    other protocol scores differently."""

    sample_id: str
    scores: dict[str, float]
    answer: str = ""
    reading: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    protocol_disagreement: dict[str, dict[str, float]] = field(default_factory=dict)
    epoch: int = 1


# ------------------------------------------------------------ what one job returns


@dataclass
class JobOutcome:
    """What one job returns: its run identity, spec, per-sample results, aggregated metrics, logs
    and counts. A record, so that the reports and the MLflow logging that read an outcome (below
    the job in the core's layers) need not import the job that makes one."""

    run_hash: str
    spec: RunSpec
    results: list[SampleResult]
    metrics: dict[str, float]
    log_paths: list[str]  # Inspect logs written by this invocation
    resumed: int  # samples found already scored
    ran: int  # samples (x epochs) this invocation evaluated and stored
    out_dir: Path
    artifacts: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the suite's lines under the summary (`summary_notes`)
    mlflow_run_id: str | None = None
    mlflow_url: str | None = None  # the run's page in the MLflow UI
    log_paths_all: list[str] = field(default_factory=list)  # this run's logs, earlier (resumed) invocations too
    seconds: float = 0.0
    counts: dict[str, float] = field(default_factory=dict)  # n_samples, n_scored, n_errors
    failed: str | None = None  # why the run counts as failed (errors past `fail_on_error`)
    budget_exceeded: str | None = None  # why the budget stopped the run (BUDGET_EXCEEDED, exit status 3)
    # where the run's end waits for a tracking server that was down (`tracking/delivery.py`, exit status 4)
    tracking_pending: Path | None = None
