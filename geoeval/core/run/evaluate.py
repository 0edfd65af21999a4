"""A job's evaluation, in the steps it takes against the warehouse: `resume` (what is stored,
what is left, this invocation's row), `stored_calls` (trajectories to replay, ones refused),
`dispatch` (the samples run, within the budget, each result streamed into the warehouse),
`close_run` (the run's status, from what the warehouse holds) and `run_metrics`. `evaluate`
runs them in order for `run_job` (job.py). Samples another process is evaluating now (the same
config on a shared warehouse) are waited for, then read (`sample_claims`): each sample is
evaluated once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from geoeval.core.analysis.aggregate import aggregate
from geoeval.core.analysis.stats import interval_metrics
from geoeval.core.config.scrub import known_secrets, scrub_known, scrub_zip
from geoeval.core.config.secrets import collect_secret_values
from geoeval.core.cost.budget import BUDGET_EXCEEDED, BudgetGuard, has_limit, run_within_budget, stored_spending
from geoeval.core.cost.pricing import price_result, run_costs
from geoeval.core.records import JobOutcome, SampleResult, error_counts
from geoeval.core.run.inspect_bridge import undelivered_error
from geoeval.core.run.invocation import begin_invocation, log_files, mark_killed
from geoeval.core.run.journal import Journal, journal_dir, journaling, settle
from geoeval.core.run.replay import NEVER_GENERATED, load_stored, stored_keys, stored_warnings
from geoeval.core.run.runner import replay_for, run_samples
from geoeval.core.run.sample_claims import claimed_samples
from geoeval.core.run.sweep_job import current_sweep_job, read_points
from geoeval.core.run.writer import GroupCommitWriter
from geoeval.core.scoring import PROTOCOL_DISAGREEMENT_KEY
from geoeval.core.timing import stage
from geoeval.core.tracking import background_ends
from geoeval.core.warehouse.claims import release as release_claims
from geoeval.core.warehouse.invocations import end_invocation
from geoeval.core.warehouse.store import Warehouse

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec

Key = tuple[str, int]  # (sample id, epoch)


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
    from geoeval.core.run.models import samples_in_flight, shard_count  # Inspect's model API: slow

    return max(1, sum(samples_in_flight(spec, shard) for shard in range(shard_count(spec))))


def _keys(spec: RunSpec, sample: Any) -> list[Key]:
    return [(str(sample.id), e) for e in range(1, spec.epochs + 1)]


# ---------------------------------------------------------------- resume: what is left to run


@dataclass
class Resumed:
    """What the warehouse already holds of the run, and what this invocation is to run."""

    done: set[Key]  # finished (scored; errors too unless they are retried)
    todo: list[Any]  # the samples with an epoch not done
    invocation: str  # this invocation's row in `invocations`


def resume(
    spec: RunSpec,
    wh: Warehouse,
    suite: SuiteSpec,
    config: dict[str, Any],
    run_hash: str,
    wanted: set[Key],
    samples: list[Any],
    mlflow_run: Any,
) -> Resumed:
    """Register the run (running), mark what a killed process left running, and find what is left."""
    killed = mark_killed(wh)  # what a process killed with SIGKILL left `running`, said
    if killed:
        print(
            f"[geoeval] {len(killed)} run(s) of this warehouse were left running by a process of this host that "
            f"is gone (killed): marked interrupted ({', '.join(killed)})",
            file=sys.stderr,
        )
    wh.register_run(run_hash, suite=suite.name, model=spec.model.name, config=config, experiment=spec.experiment_name)
    # errored samples are not finished: a rerun retries them (unless told not to)
    done = wh.finished_keys(run_hash, include_errors=not spec.retry_errors_on_resume) & wanted
    # the warehouse's run keeps the MLflow run of the whole run, not of a subset's
    whole_run = mlflow_run is not None and not mlflow_run.subset
    wh.set_run_status(run_hash, "running", mlflow_run_id=mlflow_run.run_id if whole_run else None)
    invocation = begin_invocation(wh, run_hash, n_reused=len(done))
    todo = [s for s in samples if any(k not in done for k in _keys(spec, s))]
    if done:
        print(
            f"[geoeval] resuming run {run_hash}: {len(done)} sample(s) already scored, {len(todo)} to run",
            file=sys.stderr,
        )
    return Resumed(done, todo, invocation)


# ---------------------------------------------------------------- stored trajectories


@dataclass
class StoredCalls:
    """The trajectories this invocation replays, and the samples refused (errors now)."""

    generation_hash: str
    todo_keys: set[Key]
    journal_folder: Path
    stored: dict[Key, list[dict[str, Any]]] = field(default_factory=dict)
    refused: dict[Key, str] = field(default_factory=dict)  # why each one is an error


def stored_calls(spec: RunSpec, wh: Warehouse, todo: list[Any], done: set[Key]) -> StoredCalls:
    """The stored calls of the samples to run (unless `generation=fresh`): replayed, with no call
    to the evaluated model; those failing their integrity check, and under `replay_only` those
    never generated, are refused."""
    generation_hash = spec.generation_hash()
    todo_keys = {k for s in todo for k in _keys(spec, s)} - done
    journal_folder = journal_dir(spec.work_dir, generation_hash)
    found = load_stored(wh, generation_hash, todo_keys, journal_folder) if spec.generation != "fresh" else None
    calls = StoredCalls(generation_hash, todo_keys, journal_folder)
    if found is None:
        return calls
    calls.stored = found.calls
    if calls.stored:
        print(
            f"[geoeval] {len(calls.stored)} of {len(todo_keys)} sample(s) to run have a stored trajectory "
            f"(generation {generation_hash}): replayed, with no call to the evaluated model"
            + ("" if spec.generation == "replay_only" else "; generation=fresh generates them anew"),
            file=sys.stderr,
        )
    # samples whose stored calls fail their integrity check are errors, never replayed or paid again
    calls.refused = dict(found.refused)
    for line in stored_warnings(found):
        print(f"[geoeval] {line}", file=sys.stderr)
    if spec.generation == "replay_only":
        never = todo_keys - set(calls.stored) - set(calls.refused)
        calls.refused.update({key: NEVER_GENERATED.format(generation_hash) for key in never})
    return calls


# ---------------------------------------------------------------- progress


class Progress:
    """The progress bar and what this invocation stored: the console's "evaluated now", its
    `invocations` row and the MLflow run's progress."""

    def __init__(self, spec: RunSpec, suite: SuiteSpec, wanted: set[Key], done: set[Key], shown: bool, mlflow_run: Any):
        self.bar = tqdm(
            total=len(wanted),
            initial=len(done),
            desc=f"{suite.name} {spec.model.name}",
            unit="sample",
            disable=not shown,
            file=sys.stderr,
            dynamic_ncols=True,
        )
        self.total, self.mlflow_run = len(wanted), mlflow_run
        self.n_errors = self.n_retries = 0
        self.written: set[Key] = set()

    def on_written(self, batch: list[SampleResult]) -> None:
        """Told by the writer after each commit."""
        self.written.update((r.sample_id, r.epoch) for r in batch)
        self.n_errors += sum(1 for r in batch if r.status == "error")
        self.n_retries += sum(int(r.details.get("http_retries", 0)) for r in batch)
        if self.n_errors or self.n_retries:
            self.bar.set_postfix_str(f"errors={self.n_errors} retries={self.n_retries}", refresh=False)
        self.bar.update(len(batch))
        if self.mlflow_run is not None:
            self.mlflow_run.progress(done=self.bar.n, errors=self.n_errors, total=self.total)


# ---------------------------------------------------------------- dispatch


@dataclass
class Dispatch:
    """How the samples go: into the warehouse through one sink, within the budget."""

    sink: Callable[[SampleResult], None]
    writer: GroupCommitWriter
    guard: BudgetGuard | None
    log_dir: Path


def prepare_dispatch(
    spec: RunSpec,
    wh: Warehouse,
    run_hash: str,
    wanted: set[Key],
    samples: list[Any],
    calls: StoredCalls,
    progress: Progress,
    resumed: Resumed,
) -> Dispatch:
    """The writer, the sink every result goes through (scrubbed, priced, counted against the
    budget), the refused samples stored as errors (dropped from `resumed.todo`), and this
    invocation's log folder, recorded before anything runs."""
    guard = (
        BudgetGuard(spec.budget, stored_spending(wh.sample_costs(run_hash)), sweep_spent())
        if has_limit(spec.budget)
        else None
    )
    writer = GroupCommitWriter(wh, progress.on_written, generation_hash=calls.generation_hash)

    def sink(result: SampleResult) -> None:
        if (result.sample_id, result.epoch) in wanted:
            scrub_result(result)
            price_result(spec.pricing, result)
            if guard is not None:
                guard.add(result)
            writer.put(result)

    if calls.refused:  # errors now: a rescore never calls the model, and a refused trajectory is never replayed
        runnable = calls.todo_keys - set(calls.refused)
        resumed.todo = [s for s in resumed.todo if any(k in runnable for k in _keys(spec, s))]
        for s in samples:
            for key in _keys(spec, s):
                if key in calls.refused:
                    sink(
                        undelivered_error(
                            s,
                            epoch=key[1],
                            run_hash=run_hash,
                            model=spec.model.name,
                            metric_names=spec.metrics.metrics,
                            reason=calls.refused[key],
                        )
                    )
    # one folder per invocation: a run lists and logs only its own logs (recorded per run in
    # the warehouse), never another warehouse's run of the same config
    log_dir = Path(spec.log_dir).resolve() / run_hash / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    # recorded before anything runs, so that a killed invocation's partial log is found too
    wh.add_run_logs(run_hash, [str(log_dir)])
    return Dispatch(sink, writer, guard, log_dir)


def dispatch(
    spec: RunSpec,
    env: Any,
    todo: list[Any],
    how: Dispatch,
    calls: StoredCalls,
    on_sample: Any,
) -> tuple[list[str], str | None, list[SampleResult], Journal | None]:
    """Run the samples left (within the budget) and stop the writer: returns the Inspect logs,
    why the budget stopped the run (None when it did not), the writer's last batch (written by
    `close_run` in the same open of the file as the bookkeeping) and this process's journal."""
    background_ends.driver_waits()  # an earlier job's MLflow end goes while this one evaluates
    # each answered call is journaled before Inspect sees it (a kill loses none); Ray's workers do not
    own_journal = Journal(calls.journal_folder) if spec.runner.name == "local" else None
    budget_stop: str | None = None
    with stage("evaluate"), journaling(own_journal):
        if how.guard is None:
            log_paths = run_samples(spec, env, todo, how.sink, how.log_dir, on_sample, calls.stored)
        else:
            log_paths, budget_stop = run_within_budget(
                how.guard,
                todo,
                batch_size(spec),
                pending=lambda s: (
                    sum(1 for k in _keys(spec, s) if k not in calls.stored),
                    sum(1 for k in _keys(spec, s) if k in calls.stored),
                ),
                run_batch=lambda batch: run_samples(
                    spec, env, batch, how.sink, how.log_dir, on_sample, replay_for(calls.stored, batch)
                ),
            )
    with stage("warehouse"):
        rest = how.writer.close(keep_rest=True)
    return log_paths, budget_stop, rest, own_journal


def interrupted(wh: Warehouse, run_hash: str, how: Dispatch, progress: Progress, invocation: str) -> None:
    """After an interrupt or an error mid-run: stop the writer and mark the run and this
    invocation interrupted, as far as the disk allows (the error being raised says why)."""
    try:
        how.writer.close()
    except BaseException:  # noqa: S110 - the error being raised is the one to report
        pass
    finally:
        progress.bar.close()
        try:
            wh.set_run_status(run_hash, "interrupted")
            end_invocation(wh, invocation, status="interrupted", n_evaluated=len(progress.written))
        except Exception:  # noqa: BLE001 - a full disk may refuse this too; the error raised says why
            pass


# ---------------------------------------------------------------- the run's status


def run_status(
    n_wanted: int, results: list[SampleResult], counts: dict[str, float], budget_stop: str | None, fail_on_error: Any
) -> tuple[str, str | None]:
    """The warehouse status of a run and why it failed (None when it did not), from what it holds."""
    missing = n_wanted - len(results)
    failed = None
    if budget_stop is not None:
        failed = (
            f"{BUDGET_EXCEEDED}: {budget_stop}; {missing} sample(s) not started (raise the budget and rerun to resume)"
        )
    elif missing:
        failed = f"{missing} sample(s) missing from the warehouse"
    elif error_threshold_exceeded(int(counts["n_errors"]), len(results), fail_on_error):
        failed = f"{int(counts['n_errors'])} of {len(results)} sample(s) errored, past fail_on_error={fail_on_error}"
    status = "finished" if failed is None else "failed"
    if budget_stop is not None:
        status = BUDGET_EXCEEDED.lower()
    elif missing:
        status = f"incomplete ({missing} missing)"
    return status, failed


@dataclass
class Closed:
    """What the warehouse holds of the run once this invocation ends."""

    results: list[SampleResult]
    counts: dict[str, float]
    failed: str | None
    log_paths_all: list[str]


def close_run(
    spec: RunSpec,
    wh: Warehouse,
    run_hash: str,
    wanted: set[Key],
    how: Dispatch,
    rest: list[SampleResult],
    log_paths: list[str],
    budget_stop: str | None,
    calls: StoredCalls,
    own_journal: Journal | None,
    progress: Progress,
    resumed: Resumed,
    claim_owner: Any,
    mlflow_run: Any,
) -> Closed:
    """The writer's last batch and the job's bookkeeping, in one open of the file: the logs, the
    run's status, the journal settled, this invocation's row ended, the claims released."""
    with stage("warehouse"), wh.held():
        wh.keep_open(False)  # the writer left the file open for this block, which closes it
        try:  # the writer's last batch and the job's bookkeeping share one open of the file
            how.writer.write(rest)
        except BaseException:
            wh.set_run_status(run_hash, "interrupted")
            raise
        finally:
            progress.bar.close()
        wh.add_run_logs(run_hash, log_paths)
        results = [r for r in wh.results(run_hash) if (r.sample_id, r.epoch) in wanted]
        counts = error_counts(results)
        status, failed = run_status(len(wanted), results, counts, budget_stop, spec.fail_on_error)
        wh.set_run_status(run_hash, status)
        settle(calls.journal_folder, partial(stored_keys, wh, calls.generation_hash), own_journal)  # now stored
        end_invocation(
            wh,
            resumed.invocation,
            status=status,
            n_evaluated=len(progress.written),
            mlflow_run_id=mlflow_run.run_id if mlflow_run is not None else None,
        )
        log_paths_all = wh.run_logs(run_hash)
        release_claims(wh, claim_owner)  # stored: nobody need wait for them any more
    return Closed(results, counts, failed, log_paths_all)


# ---------------------------------------------------------------- metrics and the outcome


def run_metrics(spec: RunSpec, suite: SuiteSpec, results: list[SampleResult], counts: dict[str, float]) -> dict:
    """The run's metrics: the split aggregates, the counts, costs and replays, and every overall
    metric's interval and n beside it, as the summary tables show them."""
    with stage("scoring"):
        sums = frozenset(spec.metrics.sum_metrics)
        metrics = {
            **aggregate(results, sum_metrics=sums, report_dimensions=tuple(suite.report_dimensions)),
            **counts,
            "http_retries": float(sum(int(r.details.get("http_retries", 0)) for r in results)),
            **run_costs(results),
            "n_replayed": float(sum(1 for r in results if r.replayed_calls)),
            # samples whose model could not take the input (scored as empty answers, with that reason)
            "n_context_exceeded": float(sum(1 for r in results if r.stop_reason == "model_length")),
            "n_protocol_disagreements": float(
                sum(1 for r in results if r.details.get(PROTOCOL_DISAGREEMENT_KEY) and r.status != "error")
            ),
        }
        metrics.update(interval_metrics(results, list(spec.metrics.metrics), sum_metrics=sums))
    return metrics


def scrub_logs(spec: RunSpec, log_paths: list[str]) -> None:
    """Inspect writes the model's base URL and args into its logs, and a model can echo a key:
    blank every secret of the config and the environment."""
    config_secrets = known_secrets() | collect_secret_values(spec.to_dict())
    if config_secrets:
        for path in log_paths:
            if Path(path).exists():
                scrub_zip(path, config_secrets)


def evaluate(
    spec: RunSpec,
    wh: Warehouse,
    config: dict[str, Any],
    suite: SuiteSpec,
    env: Any,
    samples: list[Any],
    wanted: set[Key],
    run_hash: str,
    out_dir: Path,
    progress: bool,
    mlflow_run: Any,
    on_sample: Any = None,
) -> JobOutcome:
    """Resume from the warehouse, run what is left, and aggregate (module docstring). `config`
    is the redacted config."""
    include_errors = not spec.retry_errors_on_resume
    with wh, claimed_samples(wh, run_hash, wanted, include_errors=include_errors) as claim_owner:
        # one open of the file for the job's start: its bookkeeping, what resuming reads, and the
        # writer's first commits (the writer keeps the file open, `GroupCommitWriter`)
        with wh.held():
            resumed = resume(spec, wh, suite, config, run_hash, wanted, samples, mlflow_run)
            calls = stored_calls(spec, wh, resumed.todo, resumed.done)
            shown = Progress(spec, suite, wanted, resumed.done, progress, mlflow_run)
            how = prepare_dispatch(spec, wh, run_hash, wanted, samples, calls, shown, resumed)
        try:
            log_paths, budget_stop, rest, own_journal = dispatch(spec, env, resumed.todo, how, calls, on_sample)
        except BaseException:
            interrupted(wh, run_hash, how, shown, resumed.invocation)
            raise
        scrub_logs(spec, log_paths)
        closed = close_run(
            spec, wh, run_hash, wanted, how, rest, log_paths, budget_stop, calls, own_journal, shown, resumed,
            claim_owner, mlflow_run,
        )  # fmt: skip
    if mlflow_run is not None:  # the last progress point, whatever the rate limit skipped
        mlflow_run.progress(
            done=len(closed.results), errors=int(closed.counts["n_errors"]), total=len(wanted), force=True
        )
    outcome = JobOutcome(
        run_hash=run_hash,
        spec=spec,
        results=closed.results,
        metrics=run_metrics(spec, suite, closed.results, closed.counts),
        log_paths=log_paths,
        resumed=len(resumed.done),
        ran=len(shown.written),  # stored by this invocation, as its `invocations` row says
        out_dir=out_dir,
        counts=closed.counts,
        failed=closed.failed,
        budget_exceeded=budget_stop,
    )
    outcome.log_paths_all = log_files(closed.log_paths_all)
    with stage("reports_suite"):
        outcome.artifacts = suite.after_run(spec, env, closed.results, out_dir)
        try:  # notes explain the numbers; a failing one must not fail a run whose results are stored
            outcome.notes = suite.summary_notes(spec, env, closed.results)
        except Exception as exc:  # noqa: BLE001 -- shown as a warning line
            print(f"[geoeval] warning: the suite's summary notes failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return outcome
