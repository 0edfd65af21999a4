"""The MLflow tracking store: where it is (`tracking_uri_for`; by default a SQLite database under
`mlruns/`), a client on it with its schema created or migrated (`client_for`), the experiment
(`ensure_experiment`), and the cross-process lock that serialises store creation, experiment
creation and claiming a run (`store_lock`; see `geoeval.core.tracking.runs`, "Concurrency").
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import sqlite3
import sys
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from geoeval.core.cache.disk import DiskCache, installed_versions
from geoeval.core.config.home import project_home
from geoeval.core.config.secrets import redact_url, redact_urls
from geoeval.core.errors import GeoevalError
from geoeval.core.warehouse.lock import first_line

LOCK_FILE = ".geoeval.lock"


def geoeval_root() -> Path:
    """Where everything a run writes lives: the project home (`geoeval.core.config.home`)."""

    return project_home()


def default_tracking_uri() -> str:
    return f"sqlite:///{geoeval_root() / 'mlruns' / 'mlflow.db'}"


def default_artifact_location() -> str:
    return (geoeval_root() / "mlruns" / "artifacts").as_uri()


def tracking_uri_for(tracking: Any) -> str:
    """Where runs go: `tracking.tracking_uri`, else MLflow's own `MLFLOW_TRACKING_URI`, else the
    local store under `mlruns/`."""
    return getattr(tracking, "tracking_uri", None) or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def server_request(uri: str, path: str) -> Any:
    """A `urllib` request for `path` on the tracking server at `uri`, sending the credentials
    MLflow would: `MLFLOW_TRACKING_TOKEN` (bearer), else `MLFLOW_TRACKING_USERNAME`/`_PASSWORD`,
    else the `user:password@` of the URI itself (basic auth, as `requests` sends it for MLflow).
    The URL requested never holds the credentials (`urllib` would read them as the host name)."""

    parts = urllib.parse.urlsplit(uri)
    netloc = parts.netloc.rpartition("@")[2]
    bare = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    request = urllib.request.Request(bare.rstrip("/") + path)
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    if not token and not (user and password) and parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    elif user and password is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    return request


def check_tracking_server(tracking: Any, timeout_s: float = 5.0) -> None:
    """Before any work: an MLflow tracking server (an http(s) URI) that does not answer, or
    refuses the credentials MLflow's variables or the URI's `user:password@` give
    (`MLFLOW_TRACKING_TOKEN`, `MLFLOW_TRACKING_USERNAME`/`_PASSWORD`), is one `GeoevalError`
    naming the key (the URI's credentials redacted), in seconds (MLflow's own retries take
    minutes). Other stores are checked when opened."""

    if not getattr(tracking, "enabled", True):
        return
    uri = tracking_uri_for(tracking)
    if not uri.startswith(("http://", "https://")):
        return

    where = redact_url(uri)
    key = "tracking.tracking_uri" if getattr(tracking, "tracking_uri", None) else "MLFLOW_TRACKING_URI"
    request = server_request(uri, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=Default")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise GeoevalError(
                f"the MLflow tracking server at {where} ({key}) refused the credentials (HTTP {exc.code}): set "
                "MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD (or user:password@ "
                "in the URI), or run with tracking=none"
            ) from None
        if exc.code < 500:
            return  # it answered as an MLflow server does (e.g. 404 for a store without "Default")
        reason = f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = redact_urls(str(getattr(exc, "reason", exc)))
    raise GeoevalError(
        f"the MLflow tracking server at {where} ({key}) does not answer ({reason}, waited {timeout_s:g} s): start "
        "it, fix the address, or run with tracking=none"
    )


#: MLflow's own first experiment (id 0), which every store has; geoeval's `experiment_name:
#: default` is that experiment, so that a store never holds both "Default" and "default"
MLFLOW_DEFAULT_EXPERIMENT = "Default"


def experiment_name_for(tracking: Any, experiment_name: str) -> str:
    """The MLflow experiment: `tracking.experiment_name`, else MLflow's own
    `MLFLOW_EXPERIMENT_NAME`, else the run's `experiment_name`."""
    name = getattr(tracking, "experiment_name", None) or os.environ.get("MLFLOW_EXPERIMENT_NAME") or experiment_name
    return MLFLOW_DEFAULT_EXPERIMENT if name.lower() == "default" else name


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` URI (None for any other store)."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///") :].split("?", 1)[0])


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
    # MLflow prints "View run ... at: <the tracking URI>" on ending a run, credentials included;
    # geoeval prints its own links, with them redacted (`view.ui_url`)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    # alembic and the SQLite migrations chat on INFO at the first use of a store
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="mlflow")
    import mlflow

    return mlflow


def import_mlflow(tracking: Any) -> None:
    """Import MLflow, and for a database store its SQL store's modules, without opening anything:
    nearly all of what opening the first run costs (~2.3 s of CPU on 2 cores: `import mlflow`
    ~1.3 s, SQLAlchemy, alembic and the store's models ~1 s), for a caller to pay while it waits
    on something else anyway (the preflight's probes wait on the network, without the GIL). Never
    raises: opening the store reports whatever is wrong."""
    try:
        _mlflow()
        if not tracking_uri_for(tracking).startswith(("http://", "https://")):
            import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
    except Exception:  # noqa: BLE001 -- only an optimisation
        pass


_held = threading.local()


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive across processes for a SQLite store (flock on `<store dir>/.geoeval.lock`);
    re-entrant within a thread; a no-op for other stores or where `fcntl` is missing."""
    db = sqlite_path(uri)
    try:
        import fcntl  # POSIX only: the lock is skipped where it is missing
    except ImportError:  # Windows: no flock; MLflow's own behaviour applies
        has_flock = False
    else:
        has_flock = True
    if db is None or not has_flock:
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


def _create_sqlite_in_wal_mode(uri: str, *, existing: bool = False) -> None:
    """A new SQLite store starts in WAL mode: readers (the UI, a second job) never block the
    writer, and a commit appends to the log instead of rewriting a journal, which makes the
    per-trace commits of `traces` cheaper where the disk is busy (about 25 -> 10 ms measured on
    a shared machine). A store that exists is left in the mode it has (`existing`: the file was
    just copied from the schema template, and is new)."""
    db = sqlite_path(uri)
    if db is None or db.name == ":memory:" or "mode=memory" in uri or (db.exists() and not existing):
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")


def _schema_template() -> bytes | None:
    """An empty SQLite store with every MLflow table migrated to the installed MLflow's head, and
    no experiment in it: the bytes of the file. Building it runs MLflow's ~50 alembic migrations
    (about a second); it is built once per MLflow version and kept in geoeval's disk cache, so a run
    from a fresh directory copies it instead. None when it cannot be built (the store is then built
    in place, as MLflow would)."""

    cache = DiskCache(
        "mlflow-store-schema", "-".join(installed_versions("mlflow-skinny", "sqlalchemy", "alembic")) or "unknown"
    )
    template = cache.get("sqlite")
    if template is not None:
        return template
    try:
        import sqlalchemy
        from mlflow.store.db.utils import _initialize_tables  # what SqlAlchemyStore runs on an empty db

        with tempfile.TemporaryDirectory(prefix="geoeval-mlflow-schema-") as tmp:
            path = Path(tmp) / "mlflow.db"
            engine = sqlalchemy.create_engine(f"sqlite:///{path}")
            try:
                _initialize_tables(engine)
            finally:
                engine.dispose()
            template = path.read_bytes()
    except Exception:  # noqa: BLE001 -- an optimisation only: MLflow builds the store itself
        return None
    cache.put("sqlite", template)
    return template


def _create_sqlite_store(uri: str, artifact_root: str | None) -> None:
    """Build a new SQLite store with geoeval's artifact root, so that MLflow's own "Default"
    experiment (geoeval's `experiment_name: default`) keeps its artifacts beside the store too: a
    store MlflowClient creates puts them under `./mlruns/0` of whatever directory the first process
    ran in. The tables come from `_schema_template()` when it is there (MLflow then finds them all
    and only adds its Default experiment, as on any store it did not create)."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    db = sqlite_path(uri)
    template = _schema_template() if db is not None else None
    if db is not None and template is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
        db.write_bytes(template)
    _create_sqlite_in_wal_mode(uri, existing=True)
    SqlAlchemyStore(uri, artifact_root or "./mlruns")


#: Stores this process has opened (built or migrated) under the lock: later clients skip the lock and
#: the schema check, which MLflow does once per process and store anyway.
_READY: set[str] = set()


def client_for(tracking: Any) -> Any:
    """An `MlflowClient` on the configured store, its schema created or migrated under the
    store lock (MLflow caches the store per URI, so only the first call per process migrates)."""
    _mlflow()
    from mlflow import MlflowClient

    uri = tracking_uri_for(tracking)
    db = sqlite_path(uri)
    if uri in _READY and db is not None and db.exists():  # this process built or migrated it already
        return MlflowClient(tracking_uri=uri)
    with store_lock(uri):
        new_store = db is not None and not db.exists()
        try:
            if new_store:
                _create_sqlite_store(uri, _artifact_location(tracking, uri))
            else:
                _create_sqlite_in_wal_mode(uri)
            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)  # builds (and migrates) the store now, locked
        except Exception as error:
            if db is None or not _damaged_sqlite(error):
                raise
            raise GeoevalError(
                f"the MLflow store {db} is damaged ({first_line(getattr(error, 'orig', None) or error)}): move it aside (a new one is made "
                "there), or point tracking.tracking_uri elsewhere, or run with tracking=none"
            ) from None
    _READY.add(uri)
    return client


def _damaged_sqlite(error: BaseException) -> bool:
    """Whether `error` (or what it was raised from) is SQLite saying the file is not a database."""

    current: BaseException | None = error
    while current is not None:
        orig = getattr(current, "orig", None)  # SQLAlchemy keeps the driver's error here
        for candidate in (current, orig):
            if isinstance(candidate, sqlite3.DatabaseError) and not isinstance(candidate, sqlite3.OperationalError):
                return True
            text = str(candidate or "")
            if "file is not a database" in text or "database disk image is malformed" in text:
                return True
        current = current.__cause__ or current.__context__
    return False


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
