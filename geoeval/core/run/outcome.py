"""What one job returns (`JobOutcome`): its run identity, spec, per-sample results, aggregated
metrics, logs and counts. Its own module, so that the reports and the MLflow logging that read an
outcome need not import the job that makes one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from geoeval.core.records import SampleResult

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec


@dataclass
class JobOutcome:
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
