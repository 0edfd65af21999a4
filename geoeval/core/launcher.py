"""geoeval's Hydra launcher: runs the jobs of a sweep (`-m`), at most `runner.max_concurrent_jobs`
at a time, with one progress line for the sweep.

- `max_concurrent_jobs: 1` (the default) runs the jobs one after another in this process, as
  Hydra's basic launcher does.
- `max_concurrent_jobs: N > 1` starts N worker processes, each the same sweep again
  (`python -m geoeval.app --multirun <the sweep's overrides> hydra.sweep.dir=<this sweep's
  folder>` with `GEOEVAL_SWEEP_WORKER` set). A worker takes each job that no other worker has
  taken (an O_EXCL claim file per job) and runs it in-process, as the sequential path does, so
  imports and warm-up are paid once per worker, not per job. Each job writes to the warehouse
  and the MLflow store itself (both take concurrent writers); this process reports each job as
  its point appears and replaces a worker that dies. Why not Hydra's Ray or joblib launchers:
  docs/cluster.md ("Sweeps").

Either way a job learns that it belongs to a sweep from `current_sweep_job()` (its number, the
sweep folder, its run name), appends its point to `<sweep dir>/sweep_points.jsonl` and leaves its
tables to `hydra.launcher.job_tables`; the launcher prints one line per job. A job that crashes
(no point of its own) gets a point with `crashed: true`, the other jobs go on, and the sweep
ends FAILED (exit 1).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.utils import (
    JobReturn,
    JobStatus,
    configure_log,
    filter_overrides,
    run_job,
    setup_globals,
)
from hydra.plugins.launcher import Launcher
from omegaconf import DictConfig, OmegaConf, open_dict

SWEEP_POINTS = "sweep_points.jsonl"
# in a fanned-out sweep's workers: "<the sweep process's pid>:<first job>:<jobs>" (the batch it launches)
SWEEP_WORKER_ENV = "GEOEVAL_SWEEP_WORKER"
JOB_LOG = "job.log"  # a fanned-out job's stdout and stderr, in its own folder
CLAIMS = ".claims"  # <sweep dir>/.claims/<job>: which worker took which job (its pid)
STOP = "stop"  # <sweep dir>/.claims/stop: the sweep was interrupted, take no further job
WORKERS = ".workers"  # <sweep dir>/.workers/worker<i>.log: a worker's output outside its jobs
# Hydra instantiates launchers only from `hydra_plugins.*`; `register()` puts this one there
HYDRA_MODULE = "hydra_plugins.geoeval_launcher"
STOP_GRACE_S = 20.0  # after Ctrl-C, how long a worker's job may take to mark its run KILLED before it is killed
_POLL_S = 0.2
_COUNTS = {"n_samples", "n_scored", "n_errors", "http_retries"}


@dataclass(frozen=True)
class SweepJob:
    """What a job of a sweep needs to know about the sweep."""

    num: int
    sweep_dir: str
    label: str  # its run name: the swept values, e.g. "resolution=0.25 setting=map"
    job_tables: bool = False  # print the job's own summary tables (off: one line per job)

    @property
    def points_path(self) -> Path:
        return Path(self.sweep_dir) / SWEEP_POINTS


# the job this process runs now; a module global rather than an environment variable, which Ray
# would copy into each job's runtime env (GEOEVAL_*), making every job's workers new ones
_CURRENT: list[SweepJob] = []


def current_sweep_job() -> SweepJob | None:
    """The sweep job this process runs, as the launcher announced it (None outside a sweep)."""
    return _CURRENT[-1] if _CURRENT else None


# --- run names ----------------------------------------------------------------------------------


def _pairs(overrides: Sequence[str]) -> dict[str, str]:
    return {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides if "=" in o}


def job_labels(job_overrides: Sequence[Sequence[str]]) -> list[str]:
    """Each job's name: the values that differ between the jobs, by the last part of their key
    (`resolution=0.25 setting=map`), the whole key where two swept keys end alike."""
    pairs = [_pairs(o) for o in job_overrides]
    keys = list(dict.fromkeys(k for p in pairs for k in p))
    swept = [k for k in keys if len({p.get(k) for p in pairs}) > 1]
    tails = [k.rsplit(".", 1)[-1] for k in swept]
    names = {k: t if tails.count(t) == 1 else k for k, t in zip(swept, tails)}
    if not swept:  # a sweep of one job: what it overrides
        return [" ".join(filter_overrides(o)) or "base" for o in job_overrides]
    return [" ".join(f"{names[k]}={p[k]}" for k in swept if k in p) for p in pairs]


# --- the sweep's points -------------------------------------------------------------------------


def append_point(path: Path, point: dict) -> None:
    """One line for one job. Concurrent jobs append to the same file: each line is one write()
    to a file opened with O_APPEND, under an exclusive lock, so lines never interleave."""
    data = (json.dumps(point) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)
    finally:
        os.close(fd)  # closing releases the lock


def read_points(path: Path) -> list[dict]:
    """The sweep's points by job number; a job that appears twice (a rerun into the same sweep
    folder, a crash recorded after the job's own point) counts once, with its last line."""
    if not path.exists():
        return []
    by_job: dict[int, dict] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            point = json.loads(line)
            by_job[int(point["job"])] = point
    return [by_job[k] for k in sorted(by_job)]


def crash_point(num: int, overrides: Sequence[str], why: str) -> dict:
    return {"job": num, "overrides": _pairs(overrides), "metrics": {}, "counts": {}, "failed": why,
            "crashed": True, "run_hash": None, "mlflow_run_id": None, "n": 0}


# --- progress -----------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def point_summary(point: dict | None, headline: Sequence[str] = ()) -> str:
    """`ema=0.812 pma=0.500 ds=1.200 (n=24)`, `FAILED: ...` or `CRASHED: ...` for one job."""
    if point is None:
        return "no result"
    if point.get("crashed"):
        return f"CRASHED: {point.get('failed')}"
    metrics = point.get("metrics") or {}
    names = [m for m in headline if m in metrics] or sorted(m for m in metrics if "/" not in m and m not in _COUNTS)[:3]
    text = " ".join(f"{m}={metrics[m]:.3f}" for m in names if isinstance(metrics[m], (int, float)))
    counts = point.get("counts") or {}
    text += f" (n={point.get('n', 0)}" + (f", {int(counts['n_errors'])} errored" if counts.get("n_errors") else "") + ")"
    return f"FAILED: {point['failed']} · {text}" if point.get("failed") else text


class SweepProgress:
    """One line on stderr each time a job ends: jobs done of all, failed, ETA, and that job's result."""

    def __init__(self, total: int, concurrency: int, stream: Any = None) -> None:
        self.total, self.concurrency = total, concurrency
        self.done = self.failed = 0
        self.seconds: list[float] = []
        self.stream = stream if stream is not None else sys.stderr

    def eta(self) -> str:
        """The jobs left times the mean job time so far, over the jobs that run at once."""
        left = self.total - self.done
        if not self.seconds or left <= 0:
            return ""
        mean = sum(self.seconds) / len(self.seconds)
        return f", ETA {_duration(mean * left / min(self.concurrency, left))}"

    def job_done(self, num: int, label: str, point: dict | None, seconds: float, headline: Sequence[str] = ()) -> None:
        self.done += 1
        if point is not None and not point.get("crashed"):  # a crash's 0 s says nothing about the others
            self.seconds.append(seconds)
        self.failed += int(point is None or bool(point.get("failed")))
        failed = f", {self.failed} failed" if self.failed else ""
        print(f"[geoeval] sweep {self.done}/{self.total} done{failed}{self.eta()} | job {num} {label}: "
              f"{point_summary(point, headline)} [{_duration(seconds)}]", file=self.stream, flush=True)


# --- the launcher -------------------------------------------------------------------------------


def _quote(value: str) -> str:
    """A value for Hydra's override grammar, whatever characters a path has."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _headline(config: DictConfig) -> tuple[str, ...]:
    from geoeval.core.errors import GeoevalError
    from geoeval.core.registry import get_suite

    try:
        return tuple(getattr(get_suite(str(config.suite.name)), "headline_metrics", ()))
    except GeoevalError:  # the progress line falls back to the first metrics
        return ()


def in_sweep_worker() -> bool:
    """True in a worker process of a fanned-out sweep (the sweep's own process does the rest)."""
    return bool(os.environ.get(SWEEP_WORKER_ENV))


Job = tuple[int, list[str], str]  # number, overrides, label


class GeoevalLauncher(Launcher):
    def __init__(self, job_tables: bool = False) -> None:
        super().__init__()
        self.job_tables = bool(job_tables)
        self.config: DictConfig | None = None
        self.hydra_context: Any = None
        self.task_function: Any = None

    def setup(self, *, hydra_context: Any, task_function: Any, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).resolve()  # the jobs may chdir (hydra.job.chdir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        labels = job_labels(job_overrides)
        jobs = [(initial_job_idx + i, list(o), labels[i]) for i, o in enumerate(job_overrides)]
        if in_sweep_worker():
            return self._work(jobs, sweep_dir)
        runner = self.config.get("runner") or {}
        concurrency = max(1, min(int(runner.get("max_concurrent_jobs", 1) or 1), len(jobs)))
        where = f"runner={runner.get('name', 'local')}" + (f" at {runner.get('address')}" if runner.get("address") else "")
        how = "one after another" if concurrency == 1 else f"{concurrency} at a time ({concurrency} worker processes)"
        print(f"[geoeval] sweep: {len(jobs)} job(s), {how}, {where}; outputs in {sweep_dir}", file=sys.stderr, flush=True)
        if concurrency > 1 and runner.get("name") == "ray" and not runner.get("address"):
            print("[geoeval] note: runner=ray without runner.address: each worker process starts its own local Ray; "
                  "for one shared Ray, `ray start --head` and pass runner.address=auto", file=sys.stderr)
        progress = SweepProgress(len(jobs), concurrency)
        headline = _headline(self.config)
        if concurrency == 1:
            returns = []
            for job in jobs:
                ret, point = self._run_job(job, sweep_dir)
                progress.job_done(job[0], job[2], point, (point or {}).get("seconds", 0.0), headline)
                returns.append(ret)
            return returns
        return _FanOut(self, sweep_dir, progress, headline).run(jobs, concurrency)

    def _run_job(self, job: Job, sweep_dir: Path) -> tuple[JobReturn, dict | None]:
        """One job in this process, as Hydra's basic launcher runs it, told that it is part of a
        sweep. A job that raises is recorded as crashed and the sweep goes on."""
        num, overrides, label = job
        sweep_config = self._job_config(num, overrides)
        context = SweepJob(num, str(sweep_dir), label, self.job_tables)
        _CURRENT.append(context)
        try:
            ret = run_job(hydra_context=self.hydra_context, task_function=self.task_function, config=sweep_config,
                          job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")
            why = _failure(ret)
        except SystemExit as exc:  # geoeval's own error for this job was printed; the others go on
            why = getattr(exc, "reason", None) or f"exit code {exc.code}"
        finally:
            _CURRENT.remove(context)
            assert self.config is not None
            configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        if why:
            append_point(context.points_path, crash_point(num, overrides, why))
        point = next((p for p in read_points(context.points_path) if p["job"] == num), None)
        return _completed(sweep_config, overrides, (point or {}).get("metrics")), point

    def _job_config(self, num: int, overrides: Sequence[str]) -> DictConfig:
        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(config):
            config.hydra.job.id = num
            config.hydra.job.num = num
        return config

    def job_log(self, sweep_dir: Path, num: int, overrides: Sequence[str]) -> Path:
        """Where a fanned-out job's console output goes: job.log in its own folder."""
        return sweep_dir / str(OmegaConf.select(self._job_config(num, overrides), "hydra.sweep.subdir")) / JOB_LOG

    def _work(self, jobs: list[Job], sweep_dir: Path) -> list[JobReturn]:
        """A worker process: take each job that no other worker has taken, run it here with its
        output in its own folder's job.log, until none is left."""
        returns = []
        _, first, count = _worker_batch()
        for job in jobs:
            num, overrides, _ = job
            # Hydra's sweeper may launch in batches (max_batch_size): only this batch's jobs
            if not first <= num < first + count or _stopping(sweep_dir) or not _claim(sweep_dir, num):
                returns.append(_completed(OmegaConf.create(), overrides))
                continue
            log = self.job_log(sweep_dir, num, overrides)
            log.parent.mkdir(parents=True, exist_ok=True)
            with _output_to(log):
                ret, _ = self._run_job(job, sweep_dir)
            returns.append(ret)
        return returns

    def worker_command(self, sweep_dir: Path) -> list[str]:
        """A worker: this very sweep (its overrides, its folder) as a multirun of its own."""
        assert self.config is not None
        hydra_overrides = [str(o) for o in (self.config.hydra.overrides.hydra or [])
                           if not str(o).lstrip("+~").startswith(("hydra.mode", "hydra.sweep.dir"))]
        return [sys.executable, "-m", "geoeval.app", "--multirun", *hydra_overrides,
                f"hydra.sweep.dir={_quote(str(sweep_dir))}", *map(str, self.config.hydra.overrides.task)]


def _failure(ret: JobReturn) -> str | None:
    """Why an in-process job failed with an exception (printed here, as Hydra would), else None."""
    if ret.status != JobStatus.FAILED:
        return None
    exc = ret._return_value
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return f"{type(exc).__name__}: {exc}"


def _completed(config: DictConfig, overrides: Sequence[str], value: Any = None) -> JobReturn:
    ret = JobReturn(overrides=list(overrides), cfg=config, hydra_cfg=None, working_dir=os.getcwd())
    ret.status, ret.return_value = JobStatus.COMPLETED, value
    return ret


def _claim(sweep_dir: Path, num: int) -> bool:
    """Take job `num` for this process; False if another worker has it (O_EXCL: exactly one wins)."""
    try:
        fd = os.open(sweep_dir / CLAIMS / str(num), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def _stopping(sweep_dir: Path) -> bool:
    """The sweep was interrupted (its process wrote the stop file) or its process is gone: a
    worker takes no further job. Inspect turns a SIGINT into cancelled samples, so the signal
    alone would not stop a worker between jobs."""
    return (sweep_dir / CLAIMS / STOP).exists() or os.getppid() != _worker_batch()[0]


def _worker_batch() -> tuple[int, int, int]:
    """(the sweep process's pid, the first job, the number of jobs) this worker may take."""
    parent, first, count = (int(x) for x in os.environ[SWEEP_WORKER_ENV].split(":"))
    return parent, first, count


def _claimant(sweep_dir: Path, num: int) -> int | None:
    try:
        return int((sweep_dir / CLAIMS / str(num)).read_text() or 0)
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def _output_to(path: Path):
    """Everything this process writes to stdout and stderr (Python, Inspect, subprocesses) goes to
    `path` while one job runs: the sweep's console shows one line per job instead."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


@dataclass
class _Worker:
    index: int
    proc: subprocess.Popen
    log: Path


class _FanOut:
    """The sweep's own process when jobs run concurrently: starts `concurrency` worker processes,
    each a copy of this sweep that takes jobs no other worker has taken (claim files), and
    reports each job as its point appears. A worker that dies is replaced while jobs remain."""

    def __init__(self, launcher: GeoevalLauncher, sweep_dir: Path, progress: SweepProgress,
                 headline: Sequence[str]) -> None:
        self.launcher, self.sweep_dir, self.progress, self.headline = launcher, sweep_dir, progress, headline
        self.workers: list[_Worker] = []
        self.started = 0
        self.reported: set[int] = set()

    def run(self, jobs: list[Job], concurrency: int) -> list[JobReturn]:
        claims = self.sweep_dir / CLAIMS
        if claims.exists():
            shutil.rmtree(claims)  # a rerun into the same folder runs every job again
        claims.mkdir(parents=True)
        (self.sweep_dir / WORKERS).mkdir(exist_ok=True)
        labels = {num: label for num, _, label in jobs}
        self.batch = (jobs[0][0], len(jobs))
        with _sigterm_as_interrupt():
            try:
                self.workers = [self._start() for _ in range(concurrency)]
                while self.workers:
                    time.sleep(_POLL_S)
                    self._report(labels)
                    for worker in [w for w in self.workers if w.proc.poll() is not None]:
                        self.workers.remove(worker)
                        self._ended(worker, jobs, concurrency)
            except KeyboardInterrupt:
                self._stop_all()
                raise
        self._never_ran(jobs)
        self._report(labels)
        points = {p["job"]: p for p in read_points(self.sweep_dir / SWEEP_POINTS)}
        return [_completed(OmegaConf.create(), o, (points.get(n) or {}).get("metrics")) for n, o, _ in jobs]

    def _start(self) -> _Worker:
        index = self.started
        self.started += 1
        log = self.sweep_dir / WORKERS / f"worker{index}.log"
        first, count = self.batch
        env = {**os.environ, SWEEP_WORKER_ENV: f"{os.getpid()}:{first}:{count}"}
        with open(log, "ab") as out:
            proc = subprocess.Popen(self.launcher.worker_command(self.sweep_dir), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        return _Worker(index, proc, log)

    def _report(self, labels: dict[int, str]) -> None:
        for point in read_points(self.sweep_dir / SWEEP_POINTS):
            num = int(point["job"])
            if num in self.reported or num not in labels:
                continue
            self.reported.add(num)
            if self.launcher.job_tables and point.get("out_dir"):
                summary = Path(point["out_dir"]) / "summary.md"
                if summary.exists():
                    print(f"## job {num}: {labels[num]}\n\n{summary.read_text()}", flush=True)
            self.progress.job_done(num, labels[num], point, point.get("seconds") or 0.0, self.headline)

    def _ended(self, worker: _Worker, jobs: list[Job], concurrency: int) -> None:
        """A worker exited: its unfinished job (if it died in one) is recorded as crashed, and a
        new worker takes its place while jobs are left that nobody took."""
        rc = worker.proc.returncode
        done = {p["job"] for p in read_points(self.sweep_dir / SWEEP_POINTS)}
        lost = [(n, o, self.launcher.job_log(self.sweep_dir, n, o)) for n, o, _ in jobs
                if n not in done and _claimant(self.sweep_dir, n) == worker.proc.pid]
        for num, overrides, log in lost:
            append_point(self.sweep_dir / SWEEP_POINTS, crash_point(
                num, overrides, f"its worker process died (exit code {rc}); log: {log}"))
        for log in [log for _, _, log in lost] or ([worker.log] if rc != 0 else []):
            print(f"[geoeval] sweep worker {worker.index} exited with code {rc}; the end of {log}:\n{_tail(log)}",
                  file=sys.stderr)
        unclaimed = any(not (self.sweep_dir / CLAIMS / str(n)).exists() for n, _, _ in jobs)
        # a worker that failed before taking any job would fail again: no replacement for it
        if unclaimed and (rc == 0 or lost) and self.started < concurrency + len(jobs):
            self.workers.append(self._start())

    def _never_ran(self, jobs: list[Job]) -> None:
        done = {p["job"] for p in read_points(self.sweep_dir / SWEEP_POINTS)}
        for num, overrides, _ in jobs:
            if num not in done:
                append_point(self.sweep_dir / SWEEP_POINTS, crash_point(
                    num, overrides, f"never ran: no worker process could start (see {self.sweep_dir / WORKERS})"))

    def _stop_all(self) -> None:
        """Ctrl-C: each worker gets SIGINT (its job marks its MLflow run KILLED), then SIGKILL."""
        if not self.workers:
            return
        print(f"[geoeval] sweep interrupted: stopping {len(self.workers)} worker process(es)", file=sys.stderr, flush=True)
        (self.sweep_dir / CLAIMS / STOP).touch()
        for worker in self.workers:
            _signal_group(worker.proc, signal.SIGINT)
        deadline = time.monotonic() + STOP_GRACE_S
        for worker in self.workers:
            try:
                worker.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(worker.proc, signal.SIGKILL)
                worker.proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the worker and what it started in its session (start_new_session)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """A SIGTERM to the sweep stops its workers as Ctrl-C does, instead of leaving them running."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- registration with Hydra --------------------------------------------------------------------


def register() -> None:
    """Make `GeoevalLauncher` a Hydra plugin. Hydra instantiates a launcher only if its class is
    in the `hydra_plugins` namespace (hydra.core.plugins.Plugins._instantiate), which an editable
    install of geoeval does not provide, so the class is registered under that name through
    Hydra's public `Plugins.register` instead of shipping a `hydra_plugins/` package."""
    import types

    from hydra.core.plugins import Plugins

    module = sys.modules.get(HYDRA_MODULE)
    if module is None:
        try:
            import hydra_plugins as package  # other Hydra plugins are installed
        except ImportError:
            package = types.ModuleType("hydra_plugins")
            package.__path__ = []  # an empty namespace: Hydra's scan finds nothing more in it
            sys.modules["hydra_plugins"] = package
        module = types.ModuleType(HYDRA_MODULE, __doc__)
        module.GeoevalLauncher = type("GeoevalLauncher", (GeoevalLauncher,), {"__module__": HYDRA_MODULE})
        sys.modules[HYDRA_MODULE] = module
        package.geoeval_launcher = module
    Plugins.instance().register(module.GeoevalLauncher)
