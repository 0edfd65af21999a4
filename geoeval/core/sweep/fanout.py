"""A sweep fanned out to worker processes (`runner.max_concurrent_jobs` > 1; see
`geoeval.core.sweep.launcher`).

The sweep's own process (`_FanOut`) starts the workers, reports each job as its point appears,
replaces a worker that dies and stops them all on Ctrl-C or SIGTERM. A worker takes each job no
other worker has taken (`_claim`: an O_EXCL file per job under `<sweep dir>/.claims/`), stops
taking jobs once the stop file is there or the sweep's process is gone (`_stopping`), and writes
each job's console output to the job's own log (`_output_to`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hydra.core.utils import JobReturn
from omegaconf import OmegaConf

from geoeval.core.run.sweep_job import SWEEP_POINTS, read_points
from geoeval.core.stop import request_stop
from geoeval.core.sweep.points import Job, _completed, append_point, crash_point

if TYPE_CHECKING:
    from geoeval.core.sweep.progress import SweepProgress


class SweepLauncher(Protocol):
    """What the fan-out needs of the launcher that starts it (`launcher.GeoevalLauncher`): the
    command of one worker process, where a job's log goes, and whether jobs print their tables."""

    job_tables: bool

    def worker_command(self, sweep_dir: Path) -> list[str]: ...

    def job_log(self, sweep_dir: Path, num: int, overrides: Sequence[str]) -> Path: ...


# in a fanned-out sweep's workers: "<the sweep process's pid>:<first job>:<jobs>" (the batch it launches)
SWEEP_WORKER_ENV = "GEOEVAL_SWEEP_WORKER"
CLAIMS = ".claims"  # <sweep dir>/.claims/<job>: which worker took which job (its pid)
STOP = "stop"  # <sweep dir>/.claims/stop: the sweep was interrupted, take no further job
WORKERS = ".workers"  # <sweep dir>/.workers/worker<i>.log: a worker's output outside its jobs
STOP_GRACE_S = 20.0  # after Ctrl-C, how long a worker's job may take to mark its run KILLED before it is killed
_POLL_S = 0.2


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

    def __init__(
        self, launcher: SweepLauncher, sweep_dir: Path, progress: SweepProgress, headline: Sequence[str]
    ) -> None:
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
            proc = subprocess.Popen(
                self.launcher.worker_command(self.sweep_dir),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
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
        lost = [
            (n, o, self.launcher.job_log(self.sweep_dir, n, o))
            for n, o, _ in jobs
            if n not in done and _claimant(self.sweep_dir, n) == worker.proc.pid
        ]
        for num, overrides, log in lost:
            append_point(
                self.sweep_dir / SWEEP_POINTS,
                crash_point(num, overrides, f"its worker process died (exit code {rc}); log: {log}"),
            )
        for log in [log for _, _, log in lost] or ([worker.log] if rc != 0 else []):
            print(
                f"[geoeval] sweep worker {worker.index} exited with code {rc}; the end of {log}:\n{_tail(log)}",
                file=sys.stderr,
            )
        unclaimed = any(not (self.sweep_dir / CLAIMS / str(n)).exists() for n, _, _ in jobs)
        # a worker that failed before taking any job would fail again: no replacement for it
        if unclaimed and (rc == 0 or lost) and self.started < concurrency + len(jobs):
            self.workers.append(self._start())

    def _never_ran(self, jobs: list[Job]) -> None:
        done = {p["job"] for p in read_points(self.sweep_dir / SWEEP_POINTS)}
        for num, overrides, _ in jobs:
            if num not in done:
                append_point(
                    self.sweep_dir / SWEEP_POINTS,
                    crash_point(
                        num, overrides, f"never ran: no worker process could start (see {self.sweep_dir / WORKERS})"
                    ),
                )

    def _stop_all(self) -> None:
        """Ctrl-C: each worker gets SIGINT (its job marks its MLflow run KILLED), then SIGKILL."""
        if not self.workers:
            return
        print(
            f"[geoeval] sweep interrupted: stopping {len(self.workers)} worker process(es)", file=sys.stderr, flush=True
        )
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

        request_stop(signal.Signals(signum).name)
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
