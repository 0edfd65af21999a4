"""This process's Ray: a local Ray started for a job, or the cluster it joins (`runner.address`,
else `$RAY_ADDRESS`, which `ray job submit` sets), and what the workers get of the driver's
environment (geoeval's, Inspect's and the providers' variables; secrets apart from Ray's runtime env).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from geoeval.core.config.secrets import is_secret_key
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import ray_local_node_processes
from geoeval.core.run.cluster import shipped_env_vars, shipped_modules

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec


#: Ray appends ~70 characters (`session_<date>_<time>_<micros>_<pid>/sockets/plasma_store`) to
#: its temp dir, and a unix socket path must fit in 107 bytes.
#: set by Ray in a `ray job submit` driver: the job's config, runtime env included
RAY_JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"
RAY_TEMP_DIR_MAX = 36


def _ray_temp_dir(spec: RunSpec) -> str:
    """Ray's temp dir: under the work dir when its path is short enough for Ray's sockets, else a
    short folder under /tmp (wherever geoeval runs from, however deep)."""
    preferred = Path(spec.work_dir).resolve() / "ray"
    if len(str(preferred)) <= RAY_TEMP_DIR_MAX:
        preferred.mkdir(parents=True, exist_ok=True)
        return str(preferred)
    short = Path("/tmp") / f"geoeval-ray-{os.getuid()}"
    short.mkdir(mode=0o700, exist_ok=True)
    return str(short)


_CONNECTED: dict[str, Any] = {}  # the address this process's Ray is connected to ("local" for its own)


def shutdown_ray() -> None:
    """Stop this process's Ray as Ray's own exit handler does, ~1.5 s sooner (a 30-job sweep
    takes ~30 s on 2 cores). That handler sleeps 0.5 s so that worker output reaches the console
    (geoeval's workers write to Ray's log files, `log_to_driver=False`, so there is nothing to
    wait for), and stopping a local Ray waits 1 s for its autoscaler monitor, which ignores
    SIGTERM, before it kills it; a local Ray of geoeval's never autoscales, so the monitor is
    killed at once. A connection to a cluster is only closed: the cluster goes on. A local Ray
    still starting (`start_local_ray_soon`) is stopped once it is up: one ended half-way left
    its raylet's agents running."""
    _wait_for_early_start()
    if "ray" not in sys.modules:  # nothing started Ray in this process
        return
    import ray

    if not ray.is_initialized():
        return
    if _CONNECTED.get("address") == "local":
        for process in ray_local_node_processes().get("monitor", []):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
    ray.shutdown()
    _release_starter()
    _CONNECTED.clear()


#: the variable a local Ray's raylet reads its workers' nice value from (`ray_constants.RAY_WORKER_NICENESS`)
RAY_WORKER_NICENESS_ENV = "RAY_worker_niceness"


def worker_niceness(spec: RunSpec) -> int:
    """The nice value of a local Ray's workers: `runner.worker_niceness`, else the driver's own.
    Ray's default (15) let every other process on a shared machine go first: runs starved until
    their requests timed out. (`os.nice(0)` reads the value without changing it.)"""
    return spec.runner.worker_niceness if spec.runner.worker_niceness is not None else os.nice(0)


def _init_local_ray(spec: RunSpec) -> None:
    import ray

    _ray_env_defaults()
    os.environ[RAY_WORKER_NICENESS_ENV] = str(worker_niceness(spec))  # the raylet this starts reads it once
    ray.init(
        num_cpus=spec.runner.num_cpus or os.cpu_count() or 1,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=_ray_temp_dir(spec),
        runtime_env=worker_runtime_env(spec),
        configure_logging=False,
    )
    _CONNECTED["address"] = "local"


def _ray_env_defaults() -> None:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


#: A local Ray that `start_local_ray_soon` is starting: set once it is up (or failed to start),
#: with the SIGTERM handler to put back then.
_STARTING: list[tuple[threading.Event, Any]] = []
#: Set when this process's Ray stops: the thread that started it may end (`start_local_ray_soon`).
_STARTER_RELEASE: list[threading.Event] = []
#: Whether `shutdown_ray` is registered to run at the interpreter's exit.
_STOP_AT_EXIT: list[bool] = []


class _NotMainThreadWarning(logging.Filter):
    """`ray.init` outside the main thread warns that it set no SIGTERM handler: the driver keeps
    its own, as `sigterm_handler_kept` makes it do in the main thread."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("SIGTERM handler is not set")


logging.getLogger("ray._private.worker").addFilter(_NotMainThreadWarning())


def start_local_ray_soon(spec: RunSpec, then: Callable[[], None] | None = None) -> bool:
    """Start the local Ray of a `runner=ray` job or sweep in a thread, then run `then` there
    (the workers' warm-up): Ray's services come up on the other core while the driver goes on
    (a sweep's compositions and checks, a run's MLflow run, environment and samples), and
    `ensure_ray` waits for them. Ray ties its services to the thread that starts them
    (`PR_SET_PDEATHSIG`: they are killed when it ends), so the thread stays until Ray stops.
    Does nothing for a cluster, `runner=local` or a Ray already up; a failed start is left to
    `ensure_ray`, which starts again in the main thread and reports the error. True when it
    started one."""
    if spec.runner.name != "ray" or cluster_address(spec) is not None or _STARTING:
        return False
    if _CONNECTED or ("ray" in sys.modules and sys.modules["ray"].is_initialized()):
        return False
    up, release = threading.Event(), threading.Event()
    handler = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None

    def start() -> None:
        try:
            _init_local_ray(spec)
        except BaseException:  # noqa: BLE001 -- ensure_ray starts it again and shows the error
            up.set()
            return
        _STARTER_RELEASE.append(release)
        up.set()
        try:
            if then is not None:
                then()
        except Exception:  # noqa: BLE001 -- a warm-up only; the job's shards import what they need
            pass
        release.wait()

    _STARTING.append((up, handler))
    if not _STOP_AT_EXIT:  # an exit while Ray starts (a config or preflight error) stops it too
        atexit.register(shutdown_ray)
        _STOP_AT_EXIT.append(True)
    threading.Thread(target=start, name="geoeval-ray-start", daemon=True).start()
    return True


def local_ray_starting() -> bool:
    """Whether `start_local_ray_soon`'s thread is starting this process's local Ray (or has, and
    nothing has waited for it yet)."""
    return bool(_STARTING)


def _wait_for_early_start() -> None:
    """Wait for `start_local_ray_soon`'s Ray, and put back the SIGTERM handler its core worker
    replaced (`sigterm_handler_kept`): the Python handler in force now, which may have been set
    after the start (a run's Ray starts before the command line's stop handler is installed:
    `cli.main`'s precheck). Ray's core worker replaced it in C only, so Python still knows it."""
    while _STARTING:
        up, handler = _STARTING[0]
        up.wait()
        _STARTING.pop(0)
        if handler is not None and threading.current_thread() is threading.main_thread():
            current = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, current if current is not None else handler)


def _release_starter() -> None:
    while _STARTER_RELEASE:
        _STARTER_RELEASE.pop().set()


def cluster_address(spec: RunSpec) -> str | None:
    """The Ray cluster a `runner=ray` job uses: `runner.address`, else `$RAY_ADDRESS` (Ray sets it
    inside a job submitted with `ray job submit`, so such a job joins the cluster it was submitted
    to), else None: a local Ray of its own."""
    return spec.runner.address or os.environ.get("RAY_ADDRESS") or None


def ensure_ray(spec: RunSpec) -> None:
    """Start a local Ray, or connect to `runner.address` (else `$RAY_ADDRESS`, which Ray sets
    inside a job submitted with `ray job submit`). A job whose address differs from the
    one this process is connected to (a sweep over clusters) reconnects: each job honours its own
    `runner.address`. An unreachable cluster gives one clear error after
    `runner.connect_timeout_s` instead of retrying forever."""
    _wait_for_early_start()
    import ray

    address = cluster_address(spec)
    wanted = address or "local"
    if ray.is_initialized():
        if _CONNECTED.get("address", wanted) == wanted:
            return
        ray.shutdown()
        _release_starter()
    _ray_env_defaults()
    if address is None:
        with sigterm_handler_kept():
            _init_local_ray(spec)
        return
    runtime_env = worker_runtime_env(spec)
    _warn_about_loopback_endpoints(spec)
    if spec.runner.ship_code:
        runtime_env = dict(runtime_env or {})
        runtime_env["py_modules"] = shipped_modules()
        runtime_env["env_vars"] = {**runtime_env.get("env_vars", {}), **shipped_env_vars()}

    runtime_env = without_job_runtime_env(runtime_env)
    failure: list[BaseException] = []

    def connect() -> None:
        try:
            ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        except BaseException as exc:  # reported below with the address
            failure.append(exc)

    t = threading.Thread(target=connect, daemon=True)
    with sigterm_handler_kept():  # the connection's core worker installs its crash handler for SIGTERM too
        t.start()
        t.join(spec.runner.connect_timeout_s)
    if t.is_alive() or failure:
        why = (
            f"{type(failure[0]).__name__}: {failure[0]}"
            if failure
            else f"no answer within {spec.runner.connect_timeout_s:g} s"
        )
        raise GeoevalError(
            f"Cannot reach the Ray cluster at runner.address={address!r} ({why}). "
            "Start the cluster, fix the address, or use runner.address=null for a local Ray."
        )
    _CONNECTED["address"] = wanted


@contextlib.contextmanager
def sigterm_handler_kept() -> Iterator[None]:
    """Put back the driver's SIGTERM handler after `ray.init`. Ray replaces it twice: in Python with
    one that calls `sys.exit(15)`, and in C with its core worker's crash handler, which prints a
    stack. A SIGTERM to a `runner=ray` run then ended the process with SIGABRT: no stop line, exit
    -6 instead of 143 (`cli.main._stop_signals`). Only the main thread can set a handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is not None:  # None: set outside Python, nothing to put back
            signal.signal(signal.SIGTERM, handler)


def _warn_about_loopback_endpoints(spec: RunSpec) -> None:
    """On a cluster, 127.0.0.1 means each worker's own machine, not the driver's."""

    urls = [("model.base_url", spec.model.base_url)] + [
        (k, v) for k, v in worker_env().items() if k.endswith("_BASE_URL")
    ]
    for key, url in urls:
        host = (urlsplit(url).hostname or "") if url else ""
        if host in ("127.0.0.1", "localhost", "::1") or host.startswith("127."):
            print(
                f"[geoeval] warning: {key}={url} is a loopback address: on a cluster each worker reaches "
                "its own machine there, not the driver's; use an address the workers can reach",
                file=sys.stderr,
            )


_WORKER_ENV_PREFIXES = ("GEOEVAL_", "INSPECT_", "OPENAI_", "ANTHROPIC_")


def worker_env(spec: RunSpec | None = None) -> dict[str, str]:
    """The driver's environment variables that the shards need: geoeval's, Inspect's and the
    providers' (keys and base URLs: `OPENAI_*`, `ANTHROPIC_*`, and `<SERVICE>_API_KEY` /
    `<SERVICE>_BASE_URL` of `openai-api/<service>/...` models), plus `runner.env_vars` (names, or
    prefixes ending in `*`)."""
    extra = list(spec.runner.env_vars) if spec is not None else []
    names = {e for e in extra if not e.endswith("*")}
    prefixes = tuple(e[:-1] for e in extra if e.endswith("*"))
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith(_WORKER_ENV_PREFIXES)
        or k.endswith(("_API_KEY", "_BASE_URL"))
        or k in names
        or (prefixes and k.startswith(prefixes))
    }


def without_job_runtime_env(runtime_env: dict[str, Any] | None) -> dict[str, Any] | None:
    """`runtime_env` less what the Ray job this driver runs in already sets: inside `ray job
    submit`, Ray merges the job's runtime env with `ray.init`'s and refuses the driver when both
    set one key (an env var such as `GEOEVAL_ROOT` given with `--runtime-env-json`, even with the
    same value). The job's settings already reach every worker of the job."""

    injected = os.environ.get(RAY_JOB_CONFIG_ENV)
    if not runtime_env or not injected:
        return runtime_env
    try:
        job_env = json.loads(injected).get("runtime_env") or {}
    except (ValueError, AttributeError):
        return runtime_env
    kept = {k: v for k, v in runtime_env.items() if k != "env_vars" and k not in job_env}
    env_vars = {
        k: v for k, v in (runtime_env.get("env_vars") or {}).items() if k not in (job_env.get("env_vars") or {})
    }
    if env_vars:
        kept["env_vars"] = env_vars
    return kept or None


def worker_runtime_env(spec: RunSpec | None = None) -> dict[str, Any] | None:
    """The runtime env given to Ray. Ray keeps it in its control store, readable through the
    dashboard and the state API, so only non-secret variables travel there; secrets go with each
    task call (`worker_secrets`)."""
    env_vars = {k: v for k, v in worker_env(spec).items() if not is_secret_key(k)}
    return {"env_vars": env_vars} if env_vars else None


def worker_secrets(spec: RunSpec | None = None) -> dict[str, str]:
    """The secret variables of `worker_env`: passed to each shard as a task argument, set in the
    worker's environment for that shard only, and never put in Ray's runtime env."""
    return {k: v for k, v in worker_env(spec).items() if is_secret_key(k)}


def job_without_root_warning(results_db: str | Path) -> str | None:
    """Inside a Ray job without `GEOEVAL_ROOT`: where its results really go, which is the
    driver's working directory on the node that runs it: Ray's temporary copy of `--working-dir`
    (deleted with the job's runtime resources), or, for a job submitted without one, the directory
    the Ray head was started from. None outside a Ray job, or with a root set."""

    if not os.environ.get(RAY_JOB_CONFIG_ENV) or os.environ.get("GEOEVAL_ROOT"):
        return None
    cwd = Path.cwd().resolve()
    temporary = "runtime_resources" in cwd.parts or "working_dir_files" in str(cwd)
    what = (
        "Ray's temporary copy of the job's --working-dir, deleted with the job's runtime resources"
        if temporary
        else "the directory the Ray head was started from (the job was given no --working-dir)"
    )
    return (
        f"this Ray job has no GEOEVAL_ROOT: its results go to {Path(results_db).resolve()} on {socket.gethostname()}, "
        f"under {cwd}, {what}; set GEOEVAL_ROOT to a persistent folder (ray job submit --runtime-env-json "
        '\'{"env_vars": {"GEOEVAL_ROOT": "/shared/geoeval"}}\') so that resume and `geoeval results` find what it '
        "wrote (docs/cluster.md)"
    )
