"""One job: a validated RunSpec taken from environment to tracked, aggregated results.

environment -> samples -> skip what the warehouse already holds (resume) -> runner (local|ray)
-> results streamed into the warehouse -> aggregation -> reports and MLflow.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from geoeval.core import registry
from geoeval.core.analysis import provenance
from geoeval.core.analysis.aggregate import aggregate
from geoeval.core.analysis.stats import interval_metrics
from geoeval.core.config.scrub import known_secrets, remember_secrets, scrub_known, scrub_zip
from geoeval.core.config.secrets import collect_secret_values, env_secret_values, redact
from geoeval.core.cost.budget import BUDGET_EXCEEDED, BudgetGuard, has_limit, stored_spending
from geoeval.core.cost.pricing import price_result, run_costs
from geoeval.core.records import JobOutcome, SampleResult, error_counts
from geoeval.core.run import job_end
from geoeval.core.run.inspect_bridge import undelivered_error
from geoeval.core.run.invocation import begin_invocation, log_files, mark_killed, mlflow_run_key, stored_beyond
from geoeval.core.run.journal import Journal, journal_dir, journaling, settle
from geoeval.core.run.replay import NEVER_GENERATED, load_stored, stored_keys, stored_warnings
from geoeval.core.run.runner import replay_for, run_samples
from geoeval.core.run.sample_claims import claimed_samples
from geoeval.core.run.sweep_job import current_sweep_job, read_points
from geoeval.core.run.writer import GroupCommitWriter
from geoeval.core.scoring import PROTOCOL_DISAGREEMENT_KEY
from geoeval.core.stop import clear_halt
from geoeval.core.timing import stage
from geoeval.core.tracking import background_ends, delivery
from geoeval.core.tracking import values as tracking_values
from geoeval.core.warehouse.claims import release as release_claims
from geoeval.core.warehouse.invocations import end_invocation
from geoeval.core.warehouse.store import Warehouse

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec


def error_threshold_exceeded(n_errors: int, n_samples: int, fail_on_error: bool | int | float) -> bool:
    """Inspect's `fail_on_error` convention: True fails on any error, False never, a fraction
    0 < x < 1 fails when more than that share of the samples errored, a count >= 1 when more than
    that many did."""
    if fail_on_error is False or n_errors == 0:
        return False
    if fail_on_error is True:
        return True
    if isinstance(fail_on_error, float) and fail_on_error < 1:
        return n_errors / max(1, n_samples) > fail_on_error
    return n_errors > int(fail_on_error)


def scrub_result(result: SampleResult) -> None:
    """`result`'s text (answer, raw output, explanation, error, details, recorded calls) with the
    job's secrets scrubbed by value, in place: a model or a provider's error can echo a key."""
    result.answer = scrub_known(result.answer)
    result.completion = scrub_known(result.completion)
    result.explanation = scrub_known(result.explanation)
    if result.error is not None:
        result.error = scrub_known(result.error)
    result.details = scrub_known(result.details)
    if result.trajectory:
        result.trajectory = scrub_known(result.trajectory)


def sweep_spent() -> dict[str, float]:
    """What the finished jobs of the sweep this job belongs to spent ({"usd", "tokens"}), from the
    sweep's points file (empty outside a sweep)."""

    job = current_sweep_job()
    if job is None:
        return {}
    usd = tokens = 0.0
    for point in read_points(job.points_path):
        if point.get("job") == job.num:
            continue
        metrics = point.get("metrics") or {}
        usd += float(metrics.get("cost_usd", 0.0) or 0.0)
        tokens += float(metrics.get("tokens_in", 0.0) or 0.0) + float(metrics.get("tokens_out", 0.0) or 0.0)
    return {"usd": usd, "tokens": tokens}


def batch_size(spec: RunSpec) -> int:
    """Samples that may start together under a budget: what the runner runs at once
    (`runner.max_samples` per worker), fewer when the budget has room for fewer (`BudgetGuard.admit`)."""
    from geoeval.core.run.models import samples_in_flight, shard_count

    return max(1, sum(samples_in_flight(spec, shard) for shard in range(shard_count(spec))))


def _run_within_budget(
    spec: RunSpec,
    env: Any,
    todo: list[Any],
    sink: Any,
    log_dir: Path,
    on_sample: Any,
    stored: dict[tuple[str, int], list[dict[str, Any]]],
    guard: BudgetGuard,
) -> tuple[list[str], str | None]:
    """Run `todo` a start at a time: before each, the guard says how many of the next samples fit
    in the budget with what they are expected to cost (at most what the runner runs at once), and
    those start together; returns the log paths and, when the budget stopped the run, why."""
    log_paths: list[str] = []
    size = batch_size(spec)
    left = list(todo)
    while left:
        candidates = [
            (
                sum(1 for e in range(1, spec.epochs + 1) if (str(s.id), e) not in stored),
                sum(1 for e in range(1, spec.epochs + 1) if (str(s.id), e) in stored),
            )
            for s in left[:size]
        ]
        n = guard.admit(candidates)
        if n == 0:
            print(f"[geoeval] budget: no new sample starts: {guard.reason}", file=sys.stderr)
            return log_paths, guard.reason
        batch, left = left[:n], left[n:]
        log_paths += run_samples(spec, env, batch, sink, log_dir, on_sample, replay_for(stored, batch))
    return log_paths, None


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
    from geoeval.core.analysis.job_reports import write_job_reports
    from geoeval.core.tracking import runs as tracking
    from geoeval.core.tracking import store as tracking_store
    from geoeval.core.tracking.traces import writer as traces

    started = time.time()
    background_ends.driver_busy()  # an earlier job's MLflow end waits until this one evaluates
    # what a model, tool or provider writes is scrubbed of these by value (results, traces, logs)
    remember_secrets(collect_secret_values(spec.to_dict()) | env_secret_values())
    clear_halt()
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
    from geoeval.core.run.models import concurrency_warning

    warning = concurrency_warning(spec)
    if warning:
        print(f"[geoeval] warning: {warning}", file=sys.stderr)

    mlflow_run = None
    if spec.tracking.enabled:
        delivery.shorten_mlflow_retries()
        # what this tracking store missed while it was down (an earlier job's end) goes first
        delivery.send_pending(spec.work_dir, tracking_store.tracking_uri_for(spec.tracking))
        # a subset of what the warehouse holds for this run (limit=4 after a full run) is an
        # MLflow run of its own: the whole run's record keeps agreeing with the warehouse
        beyond = stored_beyond(warehouse, run_hash, wanted)
        subset = wanted if beyond else None
        run_key = mlflow_run_key(
            run_hash, spec.results_db, parent_run_id=parent_run_id, run_name=run_name, subset=subset
        )
        background_ends.wait_for(run_key)  # this run's earlier end, if a job of the sweep sends it still
        subset_tags = {tracking.TAG_SUBSET: f"{len(wanted)} of {len(wanted) + beyond} stored"} if subset else {}
        with stage("mlflow"):
            mlflow_run = tracking.JobRun.start(
                spec.tracking,
                spec.experiment_name,
                run_hash=run_hash,
                run_name=f"{run_name} (subset: {subset_tags[tracking.TAG_SUBSET]})" if subset else run_name,
                params=tracking_values.flatten(config),
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
    # traces of samples that finish in this process are written while the job runs (the cost
    # overlaps the evaluation); a Ray job's are read from its logs at the end
    trace_stream: traces.TraceStream | None = None
    if mlflow_run is not None and spec.tracking.traces != "none" and spec.runner.name == "local":
        trace_stream = traces.TraceStream(
            spec.tracking,
            mlflow_run.run_id,
            mode=spec.tracking.traces,
            cap=spec.tracking.max_traces,
            dataset_name=suite.name,
            model=spec.model.name,
        )
    try:
        try:
            outcome = _evaluate(
                spec,
                warehouse,
                config,
                suite,
                env,
                samples,
                wanted,
                run_hash,
                out_dir,
                progress,
                mlflow_run,
                trace_stream.put if trace_stream is not None else None,
            )
        finally:  # a halt stops this job's model calls, never a later job's or shard's in this process
            clear_halt()
        if trace_stream is not None:
            stream, trace_stream = trace_stream, None  # closed once, even if what follows raises
            stream.close()
        outcome.seconds = time.time() - started
        if mlflow_run is not None:
            outcome.mlflow_run_id = mlflow_run.run_id
            outcome.mlflow_url = mlflow_run.ui_url()
            with stage("reports"):
                artifacts = write_job_reports(outcome) + [Path(p) for p in outcome.log_paths_all]
            end = job_end.job_end(spec, suite, outcome, mlflow_run.run_id, artifacts, keys=sorted(wanted))
            send = partial(job_end.send_end, mlflow_run, end, spec, samples, outcome.results)
            if end_in_background is None:
                outcome.tracking_pending = send()
            else:
                live_run, mlflow_run = mlflow_run, None  # the background thread ends it, whatever happens here
                background_ends.submit(run_key, partial(job_end.failed_run_marked, live_run, send), end_in_background)
        else:
            with stage("reports"):
                write_job_reports(outcome)
    except BaseException as exc:
        if trace_stream is not None:
            trace_stream.close()
        if mlflow_run is not None:
            job_end.end_run_after(mlflow_run, exc)
        raise
    return outcome


def _evaluate(
    spec: RunSpec,
    wh: Warehouse,
    config: dict[str, Any],
    suite: SuiteSpec,
    env: Any,
    samples: list[Any],
    wanted: set[tuple[str, int]],
    run_hash: str,
    out_dir: Path,
    progress: bool,
    mlflow_run: Any,
    on_sample: Any = None,
) -> JobOutcome:
    """Resume from the warehouse, run what is left, and aggregate. `config` is the redacted config.
    Samples another process is evaluating now (the same config on a shared warehouse) are waited
    for, then read (`sample_claims`): each sample is evaluated once."""
    include_errors = not spec.retry_errors_on_resume
    with wh, claimed_samples(wh, run_hash, wanted, include_errors=include_errors) as claim_owner:
        # one open of the file for the job's start: its bookkeeping, what resuming reads, and the
        # writer's first commits (the writer keeps the file open, `GroupCommitWriter`)
        with wh.held():
            killed = mark_killed(wh)  # what a process killed with SIGKILL left `running`, said
            if killed:
                print(
                    f"[geoeval] {len(killed)} run(s) of this warehouse were left running by a process of this host that "
                    f"is gone (killed): marked interrupted ({', '.join(killed)})",
                    file=sys.stderr,
                )
            wh.register_run(
                run_hash, suite=suite.name, model=spec.model.name, config=config, experiment=spec.experiment_name
            )
            # errored samples are not finished: a rerun retries them (unless told not to)
            done = wh.finished_keys(run_hash, include_errors=include_errors) & wanted
            # the warehouse's run keeps the MLflow run of the whole run, not of a subset's
            whole_run = mlflow_run is not None and not mlflow_run.subset
            wh.set_run_status(run_hash, "running", mlflow_run_id=mlflow_run.run_id if whole_run else None)
            invocation = begin_invocation(wh, run_hash, n_reused=len(done))
            todo = [s for s in samples if any((str(s.id), e) not in done for e in range(1, spec.epochs + 1))]
            if done:
                print(
                    f"[geoeval] resuming run {run_hash}: {len(done)} sample(s) already scored, {len(todo)} to run",
                    file=sys.stderr,
                )
            generation_hash = spec.generation_hash()
            todo_keys = {(str(s.id), e) for s in todo for e in range(1, spec.epochs + 1)} - done
            journal_folder = journal_dir(spec.work_dir, generation_hash)
            found = load_stored(wh, generation_hash, todo_keys, journal_folder) if spec.generation != "fresh" else None
            stored = found.calls if found is not None else {}
            if stored:
                print(
                    f"[geoeval] {len(stored)} of {len(todo_keys)} sample(s) to run have a stored trajectory "
                    f"(generation {generation_hash}): replayed, with no call to the evaluated model"
                    + ("" if spec.generation == "replay_only" else "; generation=fresh generates them anew"),
                    file=sys.stderr,
                )
            # samples whose stored calls fail their integrity check are errors, never replayed or paid again
            refused = dict(found.refused) if found is not None else {}
            for line in stored_warnings(found):
                print(f"[geoeval] {line}", file=sys.stderr)
            if spec.generation == "replay_only":
                refused.update(
                    {key: NEVER_GENERATED.format(generation_hash) for key in todo_keys - set(stored) - set(refused)}
                )
            guard = (
                BudgetGuard(spec.budget, stored_spending(wh.sample_costs(run_hash)), sweep_spent())
                if has_limit(spec.budget)
                else None
            )
            bar = tqdm(
                total=len(wanted),
                initial=len(done),
                desc=f"{suite.name} {spec.model.name}",
                unit="sample",
                disable=not progress,
                file=sys.stderr,
                dynamic_ncols=True,
            )
            n_errors = n_retries = 0
            # what this invocation stored: the console's "evaluated now" and its `invocations` row
            written: set[tuple[str, int]] = set()

            def on_written(batch: list[SampleResult]) -> None:
                nonlocal n_errors, n_retries
                written.update((r.sample_id, r.epoch) for r in batch)
                n_errors += sum(1 for r in batch if r.status == "error")
                n_retries += sum(int(r.details.get("http_retries", 0)) for r in batch)
                if n_errors or n_retries:
                    bar.set_postfix_str(f"errors={n_errors} retries={n_retries}", refresh=False)
                bar.update(len(batch))
                if mlflow_run is not None:
                    mlflow_run.progress(done=bar.n, errors=n_errors, total=len(wanted))

            writer = GroupCommitWriter(wh, on_written, generation_hash=generation_hash)

            def sink(result: SampleResult) -> None:
                if (result.sample_id, result.epoch) in wanted:
                    scrub_result(result)
                    price_result(spec.pricing, result)
                    if guard is not None:
                        guard.add(result)
                    writer.put(result)

            if refused:  # errors now: a rescore never calls the model, and a refused trajectory is never replayed
                runnable = todo_keys - set(refused)
                todo = [s for s in todo if any((str(s.id), e) in runnable for e in range(1, spec.epochs + 1))]
                for s in samples:
                    for e in range(1, spec.epochs + 1):
                        if (str(s.id), e) in refused:
                            sink(
                                undelivered_error(
                                    s,
                                    epoch=e,
                                    run_hash=run_hash,
                                    model=spec.model.name,
                                    metric_names=spec.metrics.metrics,
                                    reason=refused[(str(s.id), e)],
                                )
                            )

            # one folder per invocation: a run lists and logs only its own logs (recorded per run in
            # the warehouse), never another warehouse's run of the same config
            log_dir = Path(spec.log_dir).resolve() / run_hash / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
            # recorded before anything runs, so that a killed invocation's partial log is found too
            wh.add_run_logs(run_hash, [str(log_dir)])
        budget_stop: str | None = None
        background_ends.driver_waits()  # an earlier job's MLflow end goes while this one evaluates
        # each answered call is journaled before Inspect sees it (a kill loses none); Ray's workers do not
        own_journal = Journal(journal_folder) if spec.runner.name == "local" else None
        try:
            with stage("evaluate"), journaling(own_journal):
                if guard is None:
                    log_paths = run_samples(spec, env, todo, sink, log_dir, on_sample, stored)
                else:
                    log_paths, budget_stop = _run_within_budget(
                        spec, env, todo, sink, log_dir, on_sample, stored, guard
                    )
            with stage("warehouse"):
                rest = writer.close(keep_rest=True)
        except BaseException:
            try:
                writer.close()
            except BaseException:  # noqa: S110 - the error being raised is the one to report
                pass
            finally:
                bar.close()
                try:
                    wh.set_run_status(run_hash, "interrupted")
                    end_invocation(wh, invocation, status="interrupted", n_evaluated=len(written))
                except Exception:  # noqa: BLE001 - a full disk may refuse this too; the error raised says why
                    pass
            raise
        # Inspect writes the model's base URL and args into its logs, and a model can echo a key:
        # blank every secret of the config and the environment
        config_secrets = known_secrets() | collect_secret_values(spec.to_dict())
        if config_secrets:
            for path in log_paths:
                if Path(path).exists():
                    scrub_zip(path, config_secrets)
        with stage("warehouse"), wh.held():
            wh.keep_open(False)  # the writer left the file open for this block, which closes it
            try:  # the writer's last batch and the job's bookkeeping share one open of the file
                writer.write(rest)
            except BaseException:
                wh.set_run_status(run_hash, "interrupted")
                raise
            finally:
                bar.close()
            wh.add_run_logs(run_hash, log_paths)
            results = [r for r in wh.results(run_hash) if (r.sample_id, r.epoch) in wanted]
            counts = error_counts(results)
            missing = len(wanted) - len(results)
            failed = None
            if budget_stop is not None:
                failed = f"{BUDGET_EXCEEDED}: {budget_stop}; {missing} sample(s) not started (raise the budget and rerun to resume)"
            elif missing:
                failed = f"{missing} sample(s) missing from the warehouse"
            elif error_threshold_exceeded(int(counts["n_errors"]), len(results), spec.fail_on_error):
                failed = (
                    f"{int(counts['n_errors'])} of {len(results)} sample(s) errored, past "
                    f"fail_on_error={spec.fail_on_error}"
                )
            status = "finished" if failed is None else "failed"
            if budget_stop is not None:
                status = BUDGET_EXCEEDED.lower()
            elif missing:
                status = f"incomplete ({missing} missing)"
            wh.set_run_status(run_hash, status)
            settle(journal_folder, partial(stored_keys, wh, generation_hash), own_journal)  # now in the warehouse
            end_invocation(
                wh,
                invocation,
                status=status,
                n_evaluated=len(written),
                mlflow_run_id=mlflow_run.run_id if mlflow_run is not None else None,
            )
            log_paths_all = wh.run_logs(run_hash)
            release_claims(wh, claim_owner)  # stored: nobody need wait for them any more
    if mlflow_run is not None:  # the last progress point, whatever the rate limit skipped
        mlflow_run.progress(done=len(results), errors=int(counts["n_errors"]), total=len(wanted), force=True)

    retries = sum(int(r.details.get("http_retries", 0)) for r in results)
    with stage("scoring"):
        metrics = {
            **aggregate(
                results,
                sum_metrics=frozenset(spec.metrics.sum_metrics),
                report_dimensions=tuple(suite.report_dimensions),
            ),
            **counts,
            "http_retries": float(retries),
            **run_costs(results),
            "n_replayed": float(sum(1 for r in results if r.replayed_calls)),
            # samples whose model could not take the input (scored as empty answers, with that reason)
            "n_context_exceeded": float(sum(1 for r in results if r.stop_reason == "model_length")),
            "n_protocol_disagreements": float(
                sum(1 for r in results if r.details.get(PROTOCOL_DISAGREEMENT_KEY) and r.status != "error")
            ),
        }
        # every overall metric's interval and n beside it, as the summary tables show them
        metrics.update(
            interval_metrics(results, list(spec.metrics.metrics), sum_metrics=frozenset(spec.metrics.sum_metrics))
        )
    outcome = JobOutcome(
        run_hash=run_hash,
        spec=spec,
        results=results,
        metrics=metrics,
        log_paths=log_paths,
        resumed=len(done),
        ran=len(written),  # stored by this invocation, as its `invocations` row says
        out_dir=out_dir,
        counts=counts,
        failed=failed,
        budget_exceeded=budget_stop,
    )
    outcome.log_paths_all = log_files(log_paths_all)
    with stage("reports_suite"):
        outcome.artifacts = suite.after_run(spec, env, results, out_dir)
        try:  # notes explain the numbers; a failing one must not fail a run whose results are stored
            outcome.notes = suite.summary_notes(spec, env, results)
        except Exception as exc:  # noqa: BLE001 -- shown as a warning line
            print(f"[geoeval] warning: the suite's summary notes failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return outcome
