"""MLflow tracking: one run per job, opened when the job starts; a sweep is one parent run.

The default store is a SQLite database under `mlruns/` (`sqlite:///<cwd>/mlruns/mlflow.db`, with
artifacts next to it in `mlruns/artifacts`): MLflow 3's plain file store refuses to start unless
`MLFLOW_ALLOW_FILE_STORE=true`, and SQLite needs no server. Browse it with
`mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db`.

Lifecycle. `JobRun.start` creates the job's run in status RUNNING and returns at once; the job
reports `progress` while it runs and `finish`es the run FINISHED, FAILED or KILLED. Every call
names its run id through an `MlflowClient`, never MLflow's global active-run stack, so several
runs (a sweep parent and its child, or two jobs) can be open in one process.

Owner and reuse. A run records its owner (`geoeval.host`, `geoeval.pid`, `geoeval.pid_start`).
When a job starts, an earlier run of the same identity (tag `geoeval.run_hash`, same parent; for a
sweep parent, `geoeval.sweep_hash`) that is RUNNING with a dead owner (a killed job) is marked
KILLED, and a KILLED or FAILED one is reused: set RUNNING again under the new owner, so a resumed
job keeps one MLflow run. A FINISHED run is reused only with `reuse_finished`: geoeval's jobs pass
it with their `run_key` (the run hash and the warehouse), so a full run after `limit=5`, which
resumes the scored prefix from the warehouse, goes on in that run and ends with every sample; a
rerun that asks for fewer samples than the warehouse holds (`limit=4` after the full run) has a
key of its own and is a run of its own, tagged `geoeval.subset` (`run.invocation.stored_beyond`),
so the whole run's record never shrinks below what the warehouse says.
A RUNNING run whose owner is alive (or on another host, where liveness cannot be checked) is left
alone: a concurrent job of the same identity gets its own run.

Concurrency. A SQLite store geoeval creates is put in WAL mode (readers never block the writer).
On a fresh SQLite store, MLflow's schema migration is not safe against a second
process doing the same (both crash and leave the store half-migrated), and `create_experiment`
races. Store creation, experiment creation and the find-and-claim of a reusable run are therefore
serialised across processes by `fcntl.flock` on `<store dir>/.geoeval.lock`. Other writes rely on
SQLite's own locking. A remote tracking server (`http://...`) needs no lock.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.core.config.secrets import redact_urls
from geoeval.core.text import clean_text
from geoeval.core.tracking.delivery import outage_explains
from geoeval.core.tracking.owners import (
    owner_is_dead,
    owner_tags,
)

# The store, the names and values, and the run owners have modules of their own.
from geoeval.core.tracking.stale import TAG_KILLED_REASON, Heartbeat, end_stale_runs, running_runs
from geoeval.core.tracking.store import (
    client_for,
    ensure_experiment,
    store_lock,
    tracking_uri_for,
)
from geoeval.core.tracking.values import (
    METRICS_PER_BATCH,
    PARAMS_PER_BATCH,
    flatten,
    mlflow_key,
    param_value,
    status_for_exception,
    tag_value,
)
from geoeval.core.tracking.view import show_metrics, ui_url

if TYPE_CHECKING:
    from geoeval.core.records import JobOutcome

PARENT_RUN_ENV = "GEOEVAL_MLFLOW_PARENT_RUN_ID"

RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")
PROGRESS_INTERVAL_S = 2.0

TAG_KIND = "geoeval.kind"
TAG_RUN_HASH = "geoeval.run_hash"
TAG_RUN_KEY = "geoeval.run_key"  # the run hash and the warehouse: one MLflow run per run of a config in a warehouse
TAG_SWEEP_HASH = "geoeval.sweep_hash"
TAG_ATTEMPT = "geoeval.attempt"
TAG_PARENT = "mlflow.parentRunId"
TAG_PARAM_CHANGED = "geoeval.param_changed."
TAG_SUBSET = "geoeval.subset"  # "4 of 48 stored": a run of fewer samples than the warehouse holds for its hash

_log = logging.getLogger(__name__)


# --- runs -------------------------------------------------------------------------------------


def _search_identity(client: Any, experiment_id: str, tag: str, value: str, parent_run_id: str | None) -> list[Any]:
    from mlflow.entities import ViewType

    value = value.replace("'", "")
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"tags.`{tag}` = '{value}'",
        run_view_type=ViewType.ACTIVE_ONLY,
        max_results=200,
        order_by=["attributes.start_time DESC"],
    )
    return [r for r in runs if r.data.tags.get(TAG_PARENT) == parent_run_id]


def claim_reusable_run(
    client: Any,
    experiment_id: str,
    tag: str,
    value: str,
    parent_run_id: str | None,
    statuses: tuple[str, ...] = ("KILLED", "FAILED"),
) -> Any | None:
    """Marks every RUNNING run of this identity whose owner is dead KILLED, and returns the most
    recent one whose status is in `statuses` (None when there is none). Call under `store_lock`."""
    reusable = None
    for run in _search_identity(client, experiment_id, tag, value, parent_run_id):
        status = run.info.status
        if status == "RUNNING" and owner_is_dead(run.data.tags):
            client.set_terminated(run.info.run_id, status="KILLED")
            status = "KILLED"
            print(
                f"[geoeval] MLflow run {run.info.run_id} was left RUNNING by a process that is gone: marked KILLED",
                file=sys.stderr,
            )
        if reusable is None and status in statuses:
            reusable = run
    return reusable


def _log_params(client: Any, run_id: str, params: Mapping[str, Any], existing: Mapping[str, str]) -> list[str]:
    """Logs every param (batched); MLflow params cannot change, so a value that differs from the
    one a reused run already holds goes to a tag `geoeval.param_changed.<key>`. Returns the keys
    that changed."""
    from mlflow.entities import Param, RunTag

    new: list[Any] = []
    changed: list[str] = []
    changed_tags: list[Any] = []
    for name in sorted(params):
        key, value = mlflow_key(name), param_value(params[name])
        if key not in existing:
            new.append(Param(key, value))
        elif existing[key] != value:
            changed.append(key)
            changed_tags.append(RunTag(mlflow_key(TAG_PARAM_CHANGED + key), tag_value(value)))
    for i in range(0, len(new), PARAMS_PER_BATCH):
        client.log_batch(run_id, params=new[i : i + PARAMS_PER_BATCH])
    for i in range(0, len(changed_tags), PARAMS_PER_BATCH):
        client.log_batch(run_id, tags=changed_tags[i : i + PARAMS_PER_BATCH])
    return changed


def _log_tags(client: Any, run_id: str, tags: Mapping[str, Any]) -> None:
    from mlflow.entities import RunTag

    items = [RunTag(mlflow_key(k), tag_value(v)) for k, v in tags.items()]
    for i in range(0, len(items), PARAMS_PER_BATCH):
        client.log_batch(run_id, tags=items[i : i + PARAMS_PER_BATCH])


def _context_tags(tags: dict[str, str]) -> dict[str, str]:
    """MLflow's usual run context (user, source, git commit), as `mlflow.start_run` adds it."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        return dict(resolve_tags(tags))
    except Exception:
        return dict(tags)


def progress_metrics(done: int, errors: int, total: int) -> dict[str, float]:
    return {"progress/samples_done": done, "progress/errors": errors, "progress/samples_total": total}


def log_metrics(client: Any, run_id: str, metrics: Mapping[str, float], *, step: int = 0) -> None:
    """Logs `metrics` in batches of MLflow's limit. NaN is logged as NaN (an errored sample's
    metric is missing, not 0); a value that is not a number is skipped with a warning."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    items = []
    for name in sorted(metrics):
        try:
            value = float(metrics[name])
        except (TypeError, ValueError):
            print(
                f"[geoeval] warning: MLflow metric {name!r} is not a number ({metrics[name]!r}); not logged",
                file=sys.stderr,
            )
            continue
        items.append(Metric(mlflow_key(name), value, now, step))
    for i in range(0, len(items), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=items[i : i + METRICS_PER_BATCH])


def log_artifacts(client: Any, run_id: str, artifacts: Iterable[Path | str]) -> None:
    """Files at the run's root, Inspect `.eval` logs under `inspect_logs/`, a directory as a
    directory of its name. Missing paths are skipped."""
    for path in artifacts:
        path = Path(path)
        if path.is_dir():
            client.log_artifacts(run_id, str(path), artifact_path=path.name)
        elif path.is_file():
            client.log_artifact(run_id, str(path), artifact_path="inspect_logs" if path.suffix == ".eval" else None)


@dataclass
class JobRun:
    """One open MLflow run, addressed by id (see the module docstring for the lifecycle)."""

    client: Any
    run_id: str
    experiment_id: str
    tracking_uri: str
    reused: bool = False
    changed_params: list[str] = field(default_factory=list)
    _progress_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _progress_now: threading.Event = field(default_factory=threading.Event, repr=False)
    _pending_progress: tuple[int, int, int] | None = field(default=None, repr=False)
    _courier: threading.Thread | None = field(default=None, repr=False)
    _progress_failed: bool = field(default=False, repr=False)
    _finished: bool = field(default=False, repr=False)
    _heartbeat: Any = field(default=None, repr=False)
    #: a run of a subset of the samples its run hash has in the warehouse (`run.invocation.stored_beyond`)
    subset: bool = False

    @classmethod
    def start(
        cls,
        tracking: Any,
        experiment_name: str,
        *,
        run_hash: str,
        run_name: str,
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, Any] | None = None,
        parent_run_id: str | None = None,
        run_key: str | None = None,
        reuse_finished: bool = False,
    ) -> JobRun:
        """Opens the job's run (RUNNING), reusing a killed or failed one (and, with
        `reuse_finished`, a finished one) of the same identity and parent; returns at once. The
        identity is `run_key` when given (geoeval's jobs pass the run hash and the warehouse, so
        that one run of one config in one warehouse is one MLflow run however often it resumes),
        else `run_hash`."""
        identity = (TAG_RUN_KEY, run_key) if run_key else (TAG_RUN_HASH, run_hash)
        statuses = ("KILLED", "FAILED", "FINISHED") if reuse_finished else ("KILLED", "FAILED")
        job_run = cls._open(
            tracking,
            experiment_name,
            kind="job",
            identity=identity,
            run_name=run_name,
            params=params,
            tags={TAG_RUN_HASH: run_hash, **(tags or {})},
            parent_run_id=parent_run_id,
            statuses=statuses,
        )

        job_run._heartbeat = Heartbeat(job_run.client, job_run.run_id)  # how other hosts tell it is alive
        return job_run

    @classmethod
    def attach(cls, tracking: Any, run_id: str) -> JobRun:
        """A handle on an existing run (for example a sweep parent opened by another call)."""
        client = client_for(tracking)
        run = client.get_run(run_id)
        return cls(
            client=client, run_id=run_id, experiment_id=run.info.experiment_id, tracking_uri=tracking_uri_for(tracking)
        )

    @classmethod
    def _open(
        cls,
        tracking: Any,
        experiment_name: str,
        *,
        kind: str,
        identity: tuple[str, str] | None,
        run_name: str,
        params: Mapping[str, Any] | None,
        tags: Mapping[str, Any] | None,
        parent_run_id: str | None,
        statuses: tuple[str, ...] = ("KILLED", "FAILED"),
    ) -> JobRun:
        client = client_for(tracking)
        experiment_id = ensure_experiment(client, tracking, experiment_name)
        uri = tracking_uri_for(tracking)
        _end_dead_runs(client, experiment_id)
        run_tags: dict[str, str] = {
            TAG_KIND: kind,
            **{k: tag_value(v) for k, v in (tags or {}).items()},
            **owner_tags(),
        }
        if identity is not None:
            run_tags[identity[0]] = identity[1]
        if parent_run_id:
            run_tags[TAG_PARENT] = parent_run_id
        with store_lock(uri):
            previous = (
                claim_reusable_run(client, experiment_id, *identity, parent_run_id, statuses) if identity else None
            )
            if previous is not None:
                run_id = previous.info.run_id
                client.update_run(run_id, status="RUNNING", name=clean_text(run_name, max_chars=200))
                attempt = previous.data.tags.get(TAG_ATTEMPT, "1")
                attempt = int(attempt) + 1 if attempt.isdigit() else 2
                _log_tags(client, run_id, {**run_tags, TAG_ATTEMPT: str(attempt)})
                if TAG_KILLED_REASON in previous.data.tags:  # it goes on: no longer killed (a new kill says so again)
                    client.delete_tag(run_id, TAG_KILLED_REASON)
                existing = dict(previous.data.params)
            else:
                run_tags[TAG_ATTEMPT] = "1"
                run = client.create_run(
                    experiment_id,
                    run_name=clean_text(run_name, max_chars=200),
                    tags=_context_tags({mlflow_key(k): v for k, v in run_tags.items()}),
                )
                run_id = run.info.run_id
                existing = {}
        job_run = cls(
            client=client, run_id=run_id, experiment_id=experiment_id, tracking_uri=uri, reused=previous is not None
        )
        if params:
            job_run.changed_params = _log_params(client, run_id, params, existing)
            if job_run.changed_params:
                print(
                    f"[geoeval] warning: resumed MLflow run {run_id} had other values for "
                    f"{', '.join(job_run.changed_params)}; the new ones are in tags {TAG_PARAM_CHANGED}*",
                    file=sys.stderr,
                )
        return job_run

    def show_in_runs_table(self, metrics: Iterable[str]) -> None:
        """The experiment opens on its runs table, `metrics` among its columns (`tracking.view`);
        a view that cannot be set is a warning: the run is recorded either way."""

        try:
            show_metrics(self.client, self.experiment_id, list(metrics))
        except Exception as exc:  # noqa: BLE001 -- how the UI opens, not what it records
            print(
                f"[geoeval] warning: MLflow's runs-table view not set: {clean_text(str(exc), max_chars=200)}",
                file=sys.stderr,
            )

    def ui_url(self) -> str:
        """This run's page in the MLflow UI."""

        return ui_url(self.tracking_uri, self.experiment_id, self.run_id)

    def progress(self, done: int, errors: int, total: int, *, force: bool = False) -> None:
        """Logs `progress/samples_done`, `progress/errors` and `progress/samples_total` at step
        `done`, at most once per PROGRESS_INTERVAL_S unless `force`. Never blocks and never raises:
        the caller is the path that stores finished samples, which must not wait on the tracking
        server (a server that is slow or down only delays this metric). The values go to a
        courier thread that sends the newest ones; a failure is reported once."""
        with self._progress_lock:
            if self._finished:
                return
            self._pending_progress = (int(done), int(errors), int(total))
            if self._courier is None:
                self._courier = threading.Thread(
                    target=self._send_progress, name="geoeval-mlflow-progress", daemon=True
                )
                self._courier.start()
        if force:
            self._progress_now.set()

    def _send_progress(self) -> None:
        while True:
            self._progress_now.wait(PROGRESS_INTERVAL_S)
            self._progress_now.clear()
            with self._progress_lock:
                values, self._pending_progress = self._pending_progress, None
                stopping = self._finished
            if values is not None:
                self._log_progress(*values)
            if stopping:
                return

    def _log_progress(self, done: int, errors: int, total: int) -> None:
        try:
            log_metrics(self.client, self.run_id, progress_metrics(done, errors, total), step=done)
        except Exception as exc:
            if not self._progress_failed and not outage_explains(self.tracking_uri, [exc]):  # said once
                self._progress_failed = True
                print(
                    f"[geoeval] warning: MLflow progress not logged: {clean_text(redact_urls(str(exc)), max_chars=300)}",
                    file=sys.stderr,
                )

    def _stop_progress(self) -> None:
        """The last progress point goes with the run's end (sent here, before the final metrics)."""
        courier = self._courier
        if courier is not None:
            self._progress_now.set()
            courier.join(timeout=PROGRESS_INTERVAL_S + 30)

    def log_metrics(self, metrics: Mapping[str, float], *, step: int = 0) -> None:
        log_metrics(self.client, self.run_id, metrics, step=step)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        _log_tags(self.client, self.run_id, tags)

    def finish(
        self,
        metrics: Mapping[str, float] | None = None,
        artifacts: Iterable[Path | str] = (),
        status: str = "FINISHED",
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        """Logs the final metrics, tags and the artifacts, then ends the run with `status`. The run
        is ended even if logging fails (the failure is re-raised after); a second call is a no-op."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, not {status!r}")
        if self.stop_background():
            self.send_end(metrics, artifacts, status=status, tags=tags)

    def stop_background(self) -> bool:
        """Stops the heartbeat and sends the last progress point; False when the run was ended
        already (the first call wins)."""
        with self._progress_lock:
            if self._finished:
                return False
            self._finished = True
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self._stop_progress()
        return True

    def send_end(
        self,
        metrics: Mapping[str, float] | None = None,
        artifacts: Iterable[Path | str] = (),
        *,
        status: str = "FINISHED",
        tags: Mapping[str, Any] | None = None,
        progress: Sequence[int] | None = None,
    ) -> None:
        """The end of the run on the server: tags, metrics, the last progress point (`progress`:
        done, errors, total; its live point may have been lost to an outage), artifacts, then the
        status (set even if logging fails; the failure is re-raised after). Safe to call again
        after a failure (a tracking server that was down): each part is idempotent, a metric is
        logged again."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, not {status!r}")
        try:
            if tags:
                _log_tags(self.client, self.run_id, tags)
            if metrics:
                log_metrics(self.client, self.run_id, metrics)
            if progress is not None:
                log_metrics(self.client, self.run_id, progress_metrics(*progress), step=int(progress[0]))
            log_artifacts(self.client, self.run_id, artifacts)
        finally:
            self.client.set_terminated(self.run_id, status=status)

    @property
    def status(self) -> str:
        return self.client.get_run(self.run_id).info.status

    def __enter__(self) -> JobRun:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.finish(status=status_for_exception(exc))


def _end_dead_runs(client: Any, experiment_id: str) -> None:
    """Runs of the experiment left RUNNING by a process of this host that is gone: ended KILLED
    now, not left RUNNING until someone reruns them (`tracking/stale.py`). Never raises."""

    try:
        for run, reason in end_stale_runs(client, running_runs(client, [experiment_id]), lease_s=None):
            print(f"[geoeval] MLflow run {run.info.run_id} was left RUNNING ({reason}): marked KILLED", file=sys.stderr)
    except Exception:  # noqa: BLE001 - housekeeping must not stop a job
        pass


# --- sweeps -----------------------------------------------------------------------------------


def start_parent_run(
    tracking: Any,
    experiment_name: str,
    run_name: str,
    params: Mapping[str, Any] | None = None,
    *,
    sweep_hash: str | None = None,
    tags: Mapping[str, Any] | None = None,
    headline_metrics: Sequence[str] = (),
) -> str:
    """Opens a sweep's parent run and leaves it RUNNING (end it with `end_parent_run`). With a
    `sweep_hash` (the sweep's identity, chosen by the caller), a parent of the same identity that
    was killed, failed or left RUNNING by a dead process is reused, so a rerun sweep keeps one
    parent (and its jobs, which reuse their own runs under it). `headline_metrics`: the runs
    table's columns (`JobRun.show_in_runs_table`)."""
    run = JobRun._open(
        tracking,
        experiment_name,
        kind="sweep",
        identity=(TAG_SWEEP_HASH, sweep_hash) if sweep_hash else None,
        run_name=run_name,
        params=params,
        tags=tags,
        parent_run_id=None,
    )
    if headline_metrics:
        run.show_in_runs_table(headline_metrics)
    return run.run_id


def end_parent_run(
    tracking: Any,
    experiment_name: str,
    run_id: str,
    *,
    metrics: Mapping[str, float] | None = None,
    artifacts: Iterable[Path | str] = (),
    status: str = "FINISHED",
    tags: Mapping[str, str] | None = None,
) -> None:
    """Logs the sweep's summary metrics and artifacts (table, plot) to its parent and ends it."""
    JobRun.attach(tracking, run_id).finish(metrics=metrics, artifacts=artifacts, status=status, tags=tags)


def log_parent_artifacts(
    tracking: Any, experiment_name: str, run_id: str, artifacts: Iterable[Path], metrics: dict[str, float] | None = None
) -> None:
    """The former name of `end_parent_run` (logs, then ends the parent FINISHED), kept for
    callers written before the parent stayed open."""
    end_parent_run(tracking, experiment_name, run_id, metrics=metrics, artifacts=artifacts, status="FINISHED")


def log_job(outcome: JobOutcome, *, parent_run_id: str | None, artifacts: Iterable[Path], run_name: str) -> str:
    """Logs a finished job in one go (start and finish at once): params (the flattened resolved
    config), metrics and artifacts. Jobs that track their run live use `JobRun` instead."""
    spec = outcome.spec
    run = JobRun.start(
        spec.tracking,
        spec.experiment_name,
        run_hash=outcome.run_hash,
        run_name=run_name,
        params=flatten(spec.to_dict()),
        tags={"geoeval.suite": spec.suite.name, "geoeval.model": spec.model.name},
        parent_run_id=parent_run_id,
    )
    metrics = {k: float(v) for k, v in outcome.metrics.items()}
    metrics.setdefault("n_samples", float(len(outcome.results)))
    metrics["wall_seconds"] = float(outcome.seconds)
    run.finish(metrics=metrics, artifacts=artifacts, status="FINISHED")
    return run.run_id
