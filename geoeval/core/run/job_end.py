"""The end of a job's MLflow run: what it sends (`job_end`: its metrics, status, description,
artifacts and the keys of its samples), and sending it with the run's dataset and one trace per
sample (`send_end`), by the job itself or, in a sweep, on the background thread of
`tracking/background_ends.py` (`failed_run_marked` then marks a run whose end failed, as the job
would have)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.core.analysis import provenance
from geoeval.core.config.secrets import redact_urls
from geoeval.core.cost.budget import BUDGET_EXCEEDED
from geoeval.core.records import JobOutcome, SampleResult
from geoeval.core.text import clean_text
from geoeval.core.timing import stage
from geoeval.core.tracking import delivery
from geoeval.core.tracking import values as tracking_values

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec
    from geoeval.core.tracking.delivery import JobEnd


def job_end(
    spec: RunSpec, suite: SuiteSpec, outcome: JobOutcome, run_id: str, artifacts: list[Path], *, keys: list
) -> JobEnd:
    """What the end of the job's run `run_id` sends. Its paths are absolute: an end sent in the
    background must not depend on where a later job of the sweep runs."""
    from geoeval.core.tracking import store as tracking_store

    resolved = outcome.out_dir / "resolved_config.yaml"
    description = tracking_values.run_description(
        outcome.metrics, suite.headline_metrics, provenance.provenance(spec, suite)["note"]
    )
    tags = {"mlflow.note.content": description} if description else {}
    status = "FAILED" if outcome.failed else "FINISHED"
    if outcome.budget_exceeded is not None:  # stopped on purpose, resumable: not a failure
        status = "KILLED"
        tags["geoeval.status"] = BUDGET_EXCEEDED
    return delivery.JobEnd(
        tracking_uri=tracking_store.tracking_uri_for(spec.tracking),
        artifact_location=spec.tracking.artifact_location,
        run_id=run_id,
        status=status,
        metrics={**outcome.metrics, "wall_seconds": outcome.seconds},
        tags=tags,
        artifacts=[str(Path(p).absolute()) for p in artifacts + ([resolved] if resolved.exists() else [])],
        traces=spec.tracking.traces,
        max_traces=spec.tracking.max_traces,
        dataset_name=suite.name,
        model=spec.model.name,
        run_hash=outcome.run_hash,
        results_db=str(Path(spec.results_db).resolve()),
        log_paths=outcome.log_paths_all,
        keys=keys,
        # the live progress point an outage lost: a FINISHED run shows what it did
        progress=[len(outcome.results), sum(1 for r in outcome.results if r.error), len(keys)],
    )


def send_end(
    mlflow_run: Any, end: JobEnd, spec: RunSpec, samples: list[Any], results: list[SampleResult]
) -> Path | None:
    """The run's dataset (`samples`), one trace per stored sample (those a kill, an outage or a
    resume left out, and a reused sample's), then the run's metrics, artifacts and status. A
    server that stays down gets the end later: returns where it was kept (None when sent)."""
    from geoeval.core.tracking.traces import writer as traces

    with stage("mlflow"):
        try:
            traces.log_dataset(
                spec.tracking,
                spec.experiment_name,
                end.run_id,
                dataset_rows(samples),
                name=f"{end.dataset_name}-{end.run_hash}",
                digest=end.run_hash,
            )
        except Exception as exc:  # noqa: BLE001 - the dataset is a view of the run, not its record
            if not delivery.outage_explains(end.tracking_uri, [exc]):  # an outage is said once
                print(
                    f"[geoeval] warning: MLflow dataset not logged: {clean_text(redact_urls(str(exc)), max_chars=200)}",
                    file=sys.stderr,
                )
    with stage("mlflow_traces"):
        return delivery.end_job_run(
            mlflow_run,
            end,
            wait_s=spec.tracking.outage_wait_s,
            work_dir=Path(spec.work_dir).resolve(),
            results=results,
        )


def failed_run_marked(mlflow_run: Any, send: Callable[[], Path | None]) -> Path | None:
    """`send()`, and a run whose end raised marked as `run_job` marks it: for an end sent in the
    background, after the job has returned."""
    try:
        return send()
    except BaseException as exc:
        end_run_after(mlflow_run, exc)
        raise


def end_run_after(mlflow_run: Any, exc: BaseException) -> None:
    """End the job's run as `exc` leaves it (FAILED, or KILLED for an interrupt); a run that
    cannot be ended is a warning, since `exc` is the error to report."""

    try:
        mlflow_run.finish(status=tracking_values.status_for_exception(exc))
    except Exception as tracking_exc:  # noqa: BLE001 - the error being raised is the one to report
        print(
            f"[geoeval] warning: MLflow run not ended: {clean_text(redact_urls(str(tracking_exc)), max_chars=200)}",
            file=sys.stderr,
        )


def dataset_rows(samples: list[Any]) -> Any:
    """The evaluated dataset as MLflow shows it beside the run: one row per sample, with its
    reference and dimensions (the prompts stay in the traces and Inspect logs)."""
    import pandas as pd

    rows = []
    for s in samples:
        dims = (s.metadata or {}).get("dims") or {}
        target = s.target if isinstance(s.target, str) else "\n".join(s.target or [])
        rows.append(
            {
                "sample_id": str(s.id),
                "target": clean_text(target, max_chars=2000),
                **{k: str(dims.get(k, "")) for k in ("task_family", "task", "level", "setting")},
            }
        )
    return pd.DataFrame(rows, dtype=object)
