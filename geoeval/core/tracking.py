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
job keeps one MLflow run. A FINISHED run is never reused: it is the complete record of an
invocation, and a later invocation of the same identity (say a full run after `limit=5`, which
shares the hash and resumes the scored prefix from the warehouse) gets a run of its own.
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

import contextlib
import hashlib
import logging
import os
import posixpath
import re
import socket
import sqlite3
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoeval.core.text import clean_text

PARENT_RUN_ENV = "GEOEVAL_MLFLOW_PARENT_RUN_ID"
LOCK_FILE = ".geoeval.lock"

# MLflow's limits (mlflow.utils.validation): 100 params or tags per batch, 1000 metrics per
# batch, 6000 characters per param value, 8000 per tag value, 250 per key.
PARAMS_PER_BATCH = 100
METRICS_PER_BATCH = 1000
MAX_PARAM_CHARS = 6000
MAX_TAG_CHARS = 8000
MAX_KEY_CHARS = 250
# room for clean_text's truncation marker ("…[123456 more characters cut]")
_MARKER_ROOM = 40

RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")
PROGRESS_INTERVAL_S = 2.0

TAG_KIND = "geoeval.kind"
TAG_RUN_HASH = "geoeval.run_hash"
TAG_RUN_KEY = "geoeval.run_key"  # the run hash and the warehouse: one MLflow run per run of a config in a warehouse
TAG_SWEEP_HASH = "geoeval.sweep_hash"
TAG_HOST = "geoeval.host"
TAG_PID = "geoeval.pid"
TAG_PID_START = "geoeval.pid_start"
TAG_ATTEMPT = "geoeval.attempt"
TAG_PARENT = "mlflow.parentRunId"
TAG_PARAM_CHANGED = "geoeval.param_changed."

_log = logging.getLogger(__name__)


# --- store ----------------------------------------------------------------------------------


def default_tracking_uri() -> str:
    return f"sqlite:///{(Path.cwd() / 'mlruns' / 'mlflow.db').resolve()}"


def default_artifact_location() -> str:
    return (Path.cwd() / "mlruns" / "artifacts").resolve().as_uri()


def tracking_uri_for(tracking: Any) -> str:
    return getattr(tracking, "tracking_uri", None) or default_tracking_uri()


def run_description(metrics: Mapping[str, float], headline: Iterable[str], note: str = "") -> str:
    """The run page's description (MLflow's `mlflow.note.content`): the headline metrics with
    their 95% intervals and n, where a reader looks first, then the provenance note if any."""
    parts = []
    for name in headline:
        value = metrics.get(name)
        if value is None or value != value:  # absent or NaN
            continue
        low, high, n = metrics.get(f"{name}/ci95_low"), metrics.get(f"{name}/ci95_high"), metrics.get(f"{name}/n")
        interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        parts.append(f"**{name}** {value:.3f}{interval}" + (f" (n={int(n)})" if n else ""))
    text = " · ".join(parts)
    return "\n\n".join(p for p in (text, f"> {note}" if note else "") if p)


#: MLflow's own first experiment (id 0), which every store has; geoeval's `experiment_name:
#: default` is that experiment, so that a store never holds both "Default" and "default"
MLFLOW_DEFAULT_EXPERIMENT = "Default"


def experiment_name_for(tracking: Any, experiment_name: str) -> str:
    name = getattr(tracking, "experiment_name", None) or experiment_name
    return MLFLOW_DEFAULT_EXPERIMENT if name.lower() == "default" else name


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI (None for any other store)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):].split("?", 1)[0])


def _artifact_location(tracking: Any, uri: str) -> str | None:
    if getattr(tracking, "artifact_location", None):
        return tracking.artifact_location
    db = sqlite_path(uri)
    # next to the database, so that a store moved or named elsewhere keeps its artifacts
    return (db.parent.resolve() / "artifacts").as_uri() if db is not None else None


def _mlflow():
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
    # geoeval runs offline by default; MLflow 3 otherwise posts usage telemetry
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # alembic and the SQLite migrations chat on INFO at the first use of a store
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="mlflow")
    import mlflow

    return mlflow


_held = threading.local()


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive across processes for a SQLite store (flock on `<store dir>/.geoeval.lock`);
    re-entrant within a thread; a no-op for other stores or where `fcntl` is missing."""
    db = sqlite_path(uri)
    try:
        import fcntl
    except ImportError:  # Windows: no flock; MLflow's own behaviour applies
        fcntl = None
    if db is None or fcntl is None:
        yield
        return
    lock_path = str(db.parent.resolve() / LOCK_FILE)
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if lock_path in held:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        held.add(lock_path)
        try:
            yield
        finally:
            held.discard(lock_path)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _create_sqlite_in_wal_mode(uri: str) -> None:
    """A new SQLite store starts in WAL mode: readers (the UI, a second job) never block the
    writer, and a commit appends to the log instead of rewriting a journal, which makes the
    per-trace commits of `traces` cheaper where the disk is busy (about 25 -> 10 ms measured on
    a shared machine). A store that exists is left in the mode it has."""
    db = sqlite_path(uri)
    if db is None or db.name == ":memory:" or "mode=memory" in uri or db.exists():
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")


def _create_sqlite_store(uri: str, artifact_root: str | None) -> None:
    """Build a new SQLite store's tables with geoeval's artifact root, so that MLflow's own
    "Default" experiment (geoeval's `experiment_name: default`) keeps its artifacts beside the
    store too: a store MlflowClient creates puts them under `./mlruns/0` of whatever directory
    the first process ran in."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    SqlAlchemyStore(uri, artifact_root or "./mlruns")


def client_for(tracking: Any) -> Any:
    """An `MlflowClient` on the configured store, its schema created or migrated under the
    store lock (MLflow caches the store per URI, so only the first call per process migrates)."""
    _mlflow()
    from mlflow import MlflowClient

    uri = tracking_uri_for(tracking)
    with store_lock(uri):
        db = sqlite_path(uri)
        new_store = db is not None and not db.exists()
        _create_sqlite_in_wal_mode(uri)
        if new_store:
            _create_sqlite_store(uri, _artifact_location(tracking, uri))
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)  # builds (and migrates) the store now, locked
    return client


def ensure_experiment(client: Any, tracking: Any, experiment_name: str) -> str:
    """The id of the experiment, created if missing (safe against a concurrent creator)."""
    from mlflow.exceptions import MlflowException

    name = experiment_name_for(tracking, experiment_name)
    uri = tracking_uri_for(tracking)
    with store_lock(uri):
        exp = client.get_experiment_by_name(name)
        if exp is not None:
            if exp.lifecycle_stage == "deleted":  # a run cannot be created in a deleted experiment
                client.restore_experiment(exp.experiment_id)
                print(f"[geoeval] MLflow experiment {name!r} was deleted: restored", file=sys.stderr)
            return exp.experiment_id
        try:
            return client.create_experiment(name, artifact_location=_artifact_location(tracking, uri))
        except MlflowException:  # created meanwhile by a process that does not take our lock
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
            return exp.experiment_id


def setup(tracking: Any, experiment_name: str) -> Any:
    """Point MLflow's global state at the configured store and experiment; returns the mlflow
    module (for callers that use the fluent API; geoeval's own runs do not)."""
    mlflow = _mlflow()
    client = client_for(tracking)
    experiment_id = ensure_experiment(client, tracking, experiment_name)
    mlflow.set_tracking_uri(tracking_uri_for(tracking))
    mlflow.set_experiment(experiment_id=experiment_id)
    return mlflow


# --- names and values -------------------------------------------------------------------------


def flatten(d: Any, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into MLflow params (`suite.resolution` -> "0.5")."""
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(d, (list, tuple)):
        out[prefix[:-1]] = ",".join(str(x) for x in d)
    else:
        out[prefix[:-1]] = "" if d is None else str(d)
    return out


_BAD_KEY_CHARS = re.compile(r"[^/\w.\- :]")


def mlflow_key(name: str) -> str:
    """`name` as a valid MLflow param/metric/tag key: characters MLflow refuses become `_`, and a
    key that would resolve to another path (`a//b`, `./a`) has its slashes replaced."""
    key = _BAD_KEY_CHARS.sub("_", clean_text(str(name))) or "_"
    if posixpath.normpath(key) != key or key.startswith("/"):
        key = key.replace("/", "_")
    if len(key) > MAX_KEY_CHARS:
        key = key[: MAX_KEY_CHARS - 9] + "_" + hashlib.sha256(str(name).encode("utf-8", "replace")).hexdigest()[:8]
    return key


def param_value(value: Any) -> str:
    """A param value within MLflow's limit; a longer one is cut with a visible marker."""
    return clean_text("" if value is None else str(value), max_chars=MAX_PARAM_CHARS - _MARKER_ROOM)


def tag_value(value: Any) -> str:
    return clean_text("" if value is None else str(value), max_chars=MAX_TAG_CHARS - _MARKER_ROOM)


def status_for_exception(exc: BaseException | None) -> str:
    """The MLflow status a job ends with: KILLED for an interrupt (Ctrl-C, a signal turned into
    KeyboardInterrupt or SystemExit), FAILED for any other exception, FINISHED for none."""
    if exc is None:
        return "FINISHED"
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return "KILLED"
    return "FAILED"


# --- owners -----------------------------------------------------------------------------------


def _process_start(pid: int) -> str:
    """The kernel's start time of `pid` (clock ticks since boot), which tells a live owner from an
    unrelated process that reused its pid; "" where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields and fields[0] == "Z":  # a zombie has exited
        return "zombie"
    return fields[19] if len(fields) > 19 else ""


def owner_tags() -> dict[str, str]:
    pid = os.getpid()
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(pid), TAG_PID_START: _process_start(pid)}


def owner_is_dead(tags: Mapping[str, str]) -> bool:
    """True only when the run's owner is known to be gone: it ran on this host and its pid is not
    alive (or is now another process). An owner on another host, or a run without owner tags,
    counts as alive: nothing can be checked, so nothing is taken from it."""
    if tags.get(TAG_HOST) != socket.gethostname():
        return False
    try:
        pid = int(tags.get(TAG_PID, ""))
    except ValueError:
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    except OSError:
        return False
    started = _process_start(pid)
    if started == "zombie":
        return True
    recorded = tags.get(TAG_PID_START, "")
    return bool(recorded and started and recorded != started)


# --- runs -------------------------------------------------------------------------------------


def _search_identity(client: Any, experiment_id: str, tag: str, value: str, parent_run_id: str | None) -> list[Any]:
    from mlflow.entities import ViewType

    value = value.replace("'", "")
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.`{tag}` = '{value}'", run_view_type=ViewType.ACTIVE_ONLY,
        max_results=200, order_by=["attributes.start_time DESC"],
    )
    return [r for r in runs if r.data.tags.get(TAG_PARENT) == parent_run_id]


def claim_reusable_run(client: Any, experiment_id: str, tag: str, value: str, parent_run_id: str | None,
                       statuses: tuple[str, ...] = ("KILLED", "FAILED")) -> Any | None:
    """Marks every RUNNING run of this identity whose owner is dead KILLED, and returns the most
    recent one whose status is in `statuses` (None when there is none). Call under `store_lock`."""
    reusable = None
    for run in _search_identity(client, experiment_id, tag, value, parent_run_id):
        status = run.info.status
        if status == "RUNNING" and owner_is_dead(run.data.tags):
            client.set_terminated(run.info.run_id, status="KILLED")
            status = "KILLED"
            print(f"[geoeval] MLflow run {run.info.run_id} was left RUNNING by a process that is gone: marked KILLED",
                  file=sys.stderr)
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
            print(f"[geoeval] warning: MLflow metric {name!r} is not a number ({metrics[name]!r}); not logged",
                  file=sys.stderr)
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
    _last_progress: float = field(default=0.0, repr=False)
    _progress_failed: bool = field(default=False, repr=False)
    _finished: bool = field(default=False, repr=False)

    @classmethod
    def start(
        cls, tracking: Any, experiment_name: str, *, run_hash: str, run_name: str,
        params: Mapping[str, Any] | None = None, tags: Mapping[str, Any] | None = None,
        parent_run_id: str | None = None, run_key: str | None = None, reuse_finished: bool = False,
    ) -> JobRun:
        """Opens the job's run (RUNNING), reusing a killed or failed one (and, with
        `reuse_finished`, a finished one) of the same identity and parent; returns at once. The
        identity is `run_key` when given (geoeval's jobs pass the run hash and the warehouse, so
        that one run of one config in one warehouse is one MLflow run however often it resumes),
        else `run_hash`."""
        identity = (TAG_RUN_KEY, run_key) if run_key else (TAG_RUN_HASH, run_hash)
        statuses = ("KILLED", "FAILED", "FINISHED") if reuse_finished else ("KILLED", "FAILED")
        return cls._open(tracking, experiment_name, kind="job", identity=identity, run_name=run_name,
                         params=params, tags={TAG_RUN_HASH: run_hash, **(tags or {})}, parent_run_id=parent_run_id,
                         statuses=statuses)

    @classmethod
    def attach(cls, tracking: Any, run_id: str) -> JobRun:
        """A handle on an existing run (for example a sweep parent opened by another call)."""
        client = client_for(tracking)
        run = client.get_run(run_id)
        return cls(client=client, run_id=run_id, experiment_id=run.info.experiment_id,
                   tracking_uri=tracking_uri_for(tracking))

    @classmethod
    def _open(
        cls, tracking: Any, experiment_name: str, *, kind: str, identity: tuple[str, str] | None, run_name: str,
        params: Mapping[str, Any] | None, tags: Mapping[str, Any] | None, parent_run_id: str | None,
        statuses: tuple[str, ...] = ("KILLED", "FAILED"),
    ) -> JobRun:
        client = client_for(tracking)
        experiment_id = ensure_experiment(client, tracking, experiment_name)
        uri = tracking_uri_for(tracking)
        run_tags: dict[str, str] = {TAG_KIND: kind, **{k: tag_value(v) for k, v in (tags or {}).items()}, **owner_tags()}
        if identity is not None:
            run_tags[identity[0]] = identity[1]
        if parent_run_id:
            run_tags[TAG_PARENT] = parent_run_id
        with store_lock(uri):
            previous = claim_reusable_run(client, experiment_id, *identity, parent_run_id, statuses) if identity else None
            if previous is not None:
                run_id = previous.info.run_id
                client.update_run(run_id, status="RUNNING", name=clean_text(run_name, max_chars=200))
                attempt = previous.data.tags.get(TAG_ATTEMPT, "1")
                attempt = int(attempt) + 1 if attempt.isdigit() else 2
                _log_tags(client, run_id, {**run_tags, TAG_ATTEMPT: str(attempt)})
                existing = dict(previous.data.params)
            else:
                run_tags[TAG_ATTEMPT] = "1"
                run = client.create_run(experiment_id, run_name=clean_text(run_name, max_chars=200),
                                        tags=_context_tags({mlflow_key(k): v for k, v in run_tags.items()}))
                run_id = run.info.run_id
                existing = {}
        job_run = cls(client=client, run_id=run_id, experiment_id=experiment_id, tracking_uri=uri, reused=previous is not None)
        if params:
            job_run.changed_params = _log_params(client, run_id, params, existing)
            if job_run.changed_params:
                print(f"[geoeval] warning: resumed MLflow run {run_id} had other values for "
                      f"{', '.join(job_run.changed_params)}; the new ones are in tags {TAG_PARAM_CHANGED}*",
                      file=sys.stderr)
        return job_run

    def progress(self, done: int, errors: int, total: int, *, force: bool = False) -> None:
        """Logs `progress/samples_done`, `progress/errors` and `progress/samples_total` at step
        `done`, at most once per PROGRESS_INTERVAL_S unless `force`. Thread-safe; never raises
        (a tracking failure must not stop the job: it is reported once)."""
        now = time.monotonic()
        with self._progress_lock:
            if self._finished or (not force and now - self._last_progress < PROGRESS_INTERVAL_S):
                return
            self._last_progress = now
            try:
                log_metrics(self.client, self.run_id, {
                    "progress/samples_done": done, "progress/errors": errors, "progress/samples_total": total,
                }, step=int(done))
            except Exception as exc:
                if not self._progress_failed:
                    self._progress_failed = True
                    print(f"[geoeval] warning: MLflow progress not logged: {clean_text(str(exc), max_chars=300)}",
                          file=sys.stderr)

    def log_metrics(self, metrics: Mapping[str, float], *, step: int = 0) -> None:
        log_metrics(self.client, self.run_id, metrics, step=step)

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        _log_tags(self.client, self.run_id, tags)

    def finish(self, metrics: Mapping[str, float] | None = None, artifacts: Iterable[Path | str] = (),
               status: str = "FINISHED", tags: Mapping[str, Any] | None = None) -> None:
        """Logs the final metrics, tags and the artifacts, then ends the run with `status`. The run
        is ended even if logging fails (the failure is re-raised after); a second call is a no-op."""
        if status not in RUN_STATUSES:
            raise ValueError(f"status must be one of {RUN_STATUSES}, not {status!r}")
        with self._progress_lock:
            if self._finished:
                return
            self._finished = True
        try:
            if tags:
                _log_tags(self.client, self.run_id, tags)
            if metrics:
                log_metrics(self.client, self.run_id, metrics)
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


# --- sweeps -----------------------------------------------------------------------------------


def start_parent_run(
    tracking: Any, experiment_name: str, run_name: str, params: Mapping[str, Any] | None = None, *,
    sweep_hash: str | None = None, tags: Mapping[str, Any] | None = None,
) -> str:
    """Opens a sweep's parent run and leaves it RUNNING (end it with `end_parent_run`). With a
    `sweep_hash` (the sweep's identity, chosen by the caller), a parent of the same identity that
    was killed, failed or left RUNNING by a dead process is reused, so a rerun sweep keeps one
    parent (and its jobs, which reuse their own runs under it)."""
    run = JobRun._open(tracking, experiment_name, kind="sweep", identity=(TAG_SWEEP_HASH, sweep_hash) if sweep_hash else None,
                       run_name=run_name, params=params, tags=tags, parent_run_id=None)
    return run.run_id


def end_parent_run(
    tracking: Any, experiment_name: str, run_id: str, *, metrics: Mapping[str, float] | None = None,
    artifacts: Iterable[Path | str] = (), status: str = "FINISHED",
) -> None:
    """Logs the sweep's summary metrics and artifacts (table, plot) to its parent and ends it."""
    JobRun.attach(tracking, run_id).finish(metrics=metrics, artifacts=artifacts, status=status)


def log_parent_artifacts(tracking: Any, experiment_name: str, run_id: str, artifacts: Iterable[Path],
                         metrics: dict[str, float] | None = None) -> None:
    """The former name of `end_parent_run` (logs, then ends the parent FINISHED), kept for
    callers written before the parent stayed open."""
    end_parent_run(tracking, experiment_name, run_id, metrics=metrics, artifacts=artifacts, status="FINISHED")


def log_job(outcome: Any, *, parent_run_id: str | None, artifacts: Iterable[Path], run_name: str) -> str:
    """Logs a finished job in one go (start and finish at once): params (the flattened resolved
    config), metrics and artifacts. Jobs that track their run live use `JobRun` instead."""
    spec = outcome.spec
    run = JobRun.start(
        spec.tracking, spec.experiment_name, run_hash=outcome.run_hash, run_name=run_name,
        params=flatten(spec.to_dict()), tags={"geoeval.suite": spec.suite.name, "geoeval.model": spec.model.name},
        parent_run_id=parent_run_id,
    )
    metrics = {k: float(v) for k, v in outcome.metrics.items()}
    metrics.setdefault("n_samples", float(len(outcome.results)))
    metrics["wall_seconds"] = float(outcome.seconds)
    run.finish(metrics=metrics, artifacts=artifacts, status="FINISHED")
    return run.run_id
