"""One job: a validated RunSpec taken from environment to tracked, aggregated results.

environment -> samples -> skip what the warehouse already holds (resume) -> runner (local|ray)
-> results streamed into the warehouse -> aggregation -> reports and MLflow.

`run_job` takes the steps in order: `prepare` (environment, samples, the run identity),
`start_mlflow_run` and `trace_stream` (when tracking is on), `evaluate.evaluate` (resume,
dispatch, status: `evaluate.py`), then `reports_and_end` (reports and the MLflow run's end).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.core import registry
from geoeval.core.analysis import provenance
from geoeval.core.config.scrub import remember_secrets
from geoeval.core.config.secrets import collect_secret_values, env_secret_values, redact
from geoeval.core.records import JobOutcome
from geoeval.core.run import job_end
from geoeval.core.run.evaluate import evaluate
from geoeval.core.run.invocation import mlflow_run_key, stored_beyond
from geoeval.core.stop import clear_halt
from geoeval.core.timing import stage
from geoeval.core.tracking import background_ends, delivery
from geoeval.core.tracking import values as tracking_values
from geoeval.core.warehouse.store import Warehouse

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec
    from geoeval.core.tracking.runs import JobRun
    from geoeval.core.tracking.traces.writer import TraceStream


@dataclass
class Prepared:
    """A job made ready: its environment, samples and run identity, and where its files go."""

    spec: RunSpec  # with the environment's fingerprint
    suite: SuiteSpec
    warehouse: Warehouse
    env: Any
    samples: list[Any]
    wanted: set[tuple[str, int]]  # (sample id, epoch)
    run_hash: str
    out_dir: Path
    config: dict[str, Any]  # redacted


def prepare(spec: RunSpec, out_dir: Path | None, progress: bool, started: float) -> Prepared:
    """The environment (built or cached), the samples, the run identity and its folder."""
    suite = registry.get_suite(spec.suite.name)
    # a bad results_db fails before any work (a damaged file is named now, not after the
    # evaluation); the object holds the file only per operation
    warehouse = Warehouse(spec.results_db, config_key="results_db=", check_readable=True)
    env_name = getattr(spec.env, "name", "") or suite.name
    if progress:  # the first minute of a cold run is building: say so instead of going silent
        print(
            f"[geoeval] {suite.name}: building the environment ({env_name}; cached for later runs) ...",
            file=sys.stderr,
            flush=True,
        )
    with stage("env_build"):
        env = suite.build_env(spec)
    fingerprint = getattr(env, "fingerprint", "")
    if fingerprint:  # external inputs are part of what the scores depend on
        spec = spec.model_copy(update={"env_fingerprint": fingerprint})
    run_hash = spec.config_hash()
    out_dir = Path(out_dir or Path(spec.work_dir) / "runs" / run_hash)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = redact(spec.to_dict())
    (out_dir / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))

    with stage("sample_build"):
        samples = suite.build_samples(spec, env)
    if spec.limit:
        samples = samples[: spec.limit]
    if progress:
        print(
            f"[geoeval] {suite.name}: {len(samples)} sample(s) ready after {time.time() - started:.1f} s; "
            f"evaluating with {spec.model.name} (runner={spec.runner.name})",
            file=sys.stderr,
            flush=True,
        )
    wanted = {(str(s.id), e) for s in samples for e in range(1, spec.epochs + 1)}
    from geoeval.core.run.models import concurrency_warning  # Inspect's model API: slow

    warning = concurrency_warning(spec)
    if warning:
        print(f"[geoeval] warning: {warning}", file=sys.stderr)
    return Prepared(spec, suite, warehouse, env, samples, wanted, run_hash, out_dir, config)


def start_mlflow_run(job: Prepared, run_name: str, parent_run_id: str | None) -> tuple[JobRun, str]:
    """The job's MLflow run, RUNNING from now (a subset of what the warehouse holds is a run of
    its own), and its run key."""
    from geoeval.core.tracking import runs as tracking  # MLflow: slow
    from geoeval.core.tracking import store as tracking_store  # MLflow: slow

    spec, suite = job.spec, job.suite
    delivery.shorten_mlflow_retries()
    # what this tracking store missed while it was down (an earlier job's end) goes first
    delivery.send_pending(spec.work_dir, tracking_store.tracking_uri_for(spec.tracking))
    # a subset of what the warehouse holds for this run (limit=4 after a full run) is an
    # MLflow run of its own: the whole run's record keeps agreeing with the warehouse
    beyond = stored_beyond(job.warehouse, job.run_hash, job.wanted)
    subset = job.wanted if beyond else None
    run_key = mlflow_run_key(
        job.run_hash, spec.results_db, parent_run_id=parent_run_id, run_name=run_name, subset=subset
    )
    background_ends.wait_for(run_key)  # this run's earlier end, if a job of the sweep sends it still
    subset_tags = {tracking.TAG_SUBSET: f"{len(job.wanted)} of {len(job.wanted) + beyond} stored"} if subset else {}
    with stage("mlflow"):
        mlflow_run = tracking.JobRun.start(
            spec.tracking,
            spec.experiment_name,
            run_hash=job.run_hash,
            run_name=f"{run_name} (subset: {subset_tags[tracking.TAG_SUBSET]})" if subset else run_name,
            params=tracking_values.flatten(job.config),
            parent_run_id=parent_run_id,
            run_key=run_key,
            reuse_finished=True,
            tags={
                "geoeval.suite": suite.name,
                "geoeval.model": spec.model.name,
                **provenance.mlflow_tags(spec, suite),
                **subset_tags,
            },
        )
    mlflow_run.subset = subset is not None
    mlflow_run.show_in_runs_table(suite.headline_metrics)  # the experiment opens on them
    return mlflow_run, run_key


def trace_stream(job: Prepared, mlflow_run: JobRun | None) -> TraceStream | None:
    """Traces of samples that finish in this process are written while the job runs (the cost
    overlaps the evaluation); a Ray job's are read from its logs at the end."""
    spec = job.spec
    if mlflow_run is None or spec.tracking.traces == "none" or spec.runner.name != "local":
        return None
    from geoeval.core.tracking.traces.writer import TraceStream  # MLflow: slow

    return TraceStream(
        spec.tracking,
        mlflow_run.run_id,
        mode=spec.tracking.traces,
        cap=spec.tracking.max_traces,
        dataset_name=job.suite.name,
        model=spec.model.name,
    )


def reports_and_end(job: Prepared, outcome: JobOutcome, mlflow_run: JobRun | None) -> Callable[[], Any] | None:
    """The job's reports, and (when tracking is on) the sending of its MLflow run's end, made
    ready: the caller sends it now, or a sweep's background thread does."""
    from geoeval.core.analysis.job_reports import write_job_reports  # plots: slow

    if mlflow_run is None:
        with stage("reports"):
            write_job_reports(outcome)
        return None
    outcome.mlflow_run_id = mlflow_run.run_id
    outcome.mlflow_url = mlflow_run.ui_url()
    with stage("reports"):
        artifacts = write_job_reports(outcome) + [Path(p) for p in outcome.log_paths_all]
    end = job_end.job_end(job.spec, job.suite, outcome, mlflow_run.run_id, artifacts, keys=sorted(job.wanted))
    return partial(job_end.send_end, mlflow_run, end, job.spec, job.samples, outcome.results)


def run_job(
    spec: RunSpec,
    *,
    out_dir: Path | None = None,
    progress: bool = True,
    run_name: str = "run",
    parent_run_id: str | None = None,
    end_in_background: background_ends.EndDone | None = None,
) -> JobOutcome:
    """Run one job to the end: its MLflow run (when tracking is on) is RUNNING from the start,
    shows progress while samples finish, and ends FINISHED, FAILED (errors past
    `fail_on_error`, or an exception) or KILLED (interrupted). With `end_in_background` (a
    sweep's jobs) the run's end is sent on a background thread while the caller goes on
    (`tracking/background_ends.py`), and `end_in_background` is told how it went; otherwise it
    is sent before this returns."""
    started = time.time()
    background_ends.driver_busy()  # an earlier job's MLflow end waits until this one evaluates
    # what a model, tool or provider writes is scrubbed of these by value (results, traces, logs)
    remember_secrets(collect_secret_values(spec.to_dict()) | env_secret_values())
    clear_halt()
    job = prepare(spec, out_dir, progress, started)
    mlflow_run: JobRun | None = None
    run_key = ""
    if job.spec.tracking.enabled:
        mlflow_run, run_key = start_mlflow_run(job, run_name, parent_run_id)
    stream = trace_stream(job, mlflow_run)
    try:
        try:
            outcome = evaluate(
                job.spec,
                job.warehouse,
                job.config,
                job.suite,
                job.env,
                job.samples,
                job.wanted,
                job.run_hash,
                job.out_dir,
                progress,
                mlflow_run,
                stream.put if stream is not None else None,
            )
        finally:  # a halt stops this job's model calls, never a later job's or shard's in this process
            clear_halt()
        if stream is not None:
            closing, stream = stream, None  # closed once, even if what follows raises
            closing.close()
        outcome.seconds = time.time() - started
        send = reports_and_end(job, outcome, mlflow_run)
        if send is not None and end_in_background is None:
            outcome.tracking_pending = send()
        elif send is not None and end_in_background is not None:
            live_run, mlflow_run = mlflow_run, None  # the background thread ends it, whatever happens here
            background_ends.submit(run_key, partial(job_end.failed_run_marked, live_run, send), end_in_background)
    except BaseException as exc:
        if stream is not None:
            stream.close()
        if mlflow_run is not None:
            job_end.end_run_after(mlflow_run, exc)
        raise
    return outcome
