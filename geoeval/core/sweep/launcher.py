"""geoeval's Hydra launcher: runs the jobs of a sweep (`-m`), at most `runner.max_concurrent_jobs`
at a time, with one progress line for the sweep.

- `max_concurrent_jobs: 1` (the default) runs the jobs one after another in this process, as
  Hydra's basic launcher does.
- `max_concurrent_jobs: N > 1` starts N worker processes, each the same sweep again
  (`python -m geoeval.cli.app --multirun <the sweep's overrides> hydra.sweep.dir=<this sweep's
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
import os
import sys
import traceback
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import (
    JobReturn,
    JobStatus,
    configure_log,
    run_job,
    setup_globals,
)
from hydra.plugins.launcher import Launcher
from omegaconf import DictConfig, OmegaConf, open_dict

from geoeval.core.errors import GeoevalError, JobExit
from geoeval.core.run.sweep_job import SweepJob, read_points, running_sweep_job
from geoeval.core.stop import raise_if_stopped

# A sweep's points, its progress line and the fan-out to worker processes have modules of their
# own.
from geoeval.core.sweep.fanout import (
    SWEEP_WORKER_ENV,
    _claim,
    _FanOut,
    _output_to,
    _stopping,
    _worker_batch,
)
from geoeval.core.sweep.points import Job, _completed, append_point, crash_point, job_labels
from geoeval.core.sweep.progress import SweepProgress
from geoeval.core.tracking import background_ends

JOB_LOG = "job.log"  # a fanned-out job's stdout and stderr, in its own folder
# Hydra instantiates launchers only from `hydra_plugins.*`; `register()` puts this one there
HYDRA_MODULE = "hydra_plugins.geoeval_launcher"


# --- the launcher -------------------------------------------------------------------------------


def _quote(value: str) -> str:
    """A value for Hydra's override grammar, whatever characters a path has."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _headline(config: DictConfig) -> tuple[str, ...]:
    from geoeval.core.registry import get_suite

    try:
        return tuple(get_suite(str(config.suite.name)).headline_metrics)
    except GeoevalError:  # the progress line falls back to the first metrics
        return ()


def in_sweep_worker() -> bool:
    """True in a worker process of a fanned-out sweep (the sweep's own process does the rest)."""
    return bool(os.environ.get(SWEEP_WORKER_ENV))


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
        where = f"runner={runner.get('name', 'local')}" + (
            f" at {runner.get('address')}" if runner.get("address") else ""
        )
        how = "one after another" if concurrency == 1 else f"{concurrency} at a time ({concurrency} worker processes)"
        print(
            f"[geoeval] sweep: {len(jobs)} job(s), {how}, {where}; outputs in {sweep_dir}", file=sys.stderr, flush=True
        )
        if concurrency > 1 and runner.get("name") == "ray" and not runner.get("address"):
            print(
                "[geoeval] note: runner=ray without runner.address: each worker process starts its own local Ray; "
                "for one shared Ray, `ray start --head` and pass runner.address=auto",
                file=sys.stderr,
            )
        progress = SweepProgress(len(jobs), concurrency)
        headline = _headline(self.config)
        if concurrency == 1:
            returns = []
            with _tracking_ends_sent():
                for job in jobs:
                    raise_if_stopped()  # a stop between jobs starts no other
                    ret, point = self._run_job(job, sweep_dir)
                    raise_if_stopped()  # a job whose interrupt became another error still stops the sweep
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
        with running_sweep_job(context):
            try:
                ret = run_job(
                    hydra_context=self.hydra_context,
                    task_function=self.task_function,
                    config=sweep_config,
                    job_dir_key="hydra.sweep.dir",
                    job_subdir_key="hydra.sweep.subdir",
                )
                why = _failure(ret)
            except SystemExit as exc:  # geoeval's own error for this job was printed; the others go on
                why = (exc.reason if isinstance(exc, JobExit) else None) or f"exit code {exc.code}"
            finally:
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
        with _tracking_ends_sent():
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
        hydra_overrides = [
            str(o)
            for o in (self.config.hydra.overrides.hydra or [])
            if not str(o).lstrip("+~").startswith(("hydra.mode", "hydra.sweep.dir"))
        ]
        return [
            sys.executable,
            "-m",
            "geoeval.cli.app",
            "--multirun",
            *hydra_overrides,
            f"hydra.sweep.dir={_quote(str(sweep_dir))}",
            *map(str, self.config.hydra.overrides.task),
        ]


@contextlib.contextmanager
def _tracking_ends_sent() -> Iterator[None]:
    """The jobs run inside; at the end (an interrupt too) every job's MLflow end, sent in the
    background while the next job ran (`tracking/background_ends.py`), is sent before the sweep
    reports: its points then say which ends were kept for later or failed."""

    try:
        yield
    finally:
        if not background_ends.wait_all(timeout_s=2.0):
            print(
                f"[geoeval] sending the MLflow end of {background_ends.in_flight()} job(s) ...",
                file=sys.stderr,
                flush=True,
            )
            background_ends.wait_all()


def _failure(ret: JobReturn) -> str | None:
    """Why an in-process job failed with an exception (printed here, as Hydra would), else None."""
    if ret.status != JobStatus.FAILED:
        return None
    exc = ret._return_value
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return f"{type(exc).__name__}: {exc}"


# --- registration with Hydra --------------------------------------------------------------------


def register() -> None:
    """Make `GeoevalLauncher` a Hydra plugin. Hydra instantiates a launcher only if its class is
    in the `hydra_plugins` namespace (hydra.core.plugins.Plugins._instantiate), which an editable
    install of geoeval does not provide, so the class is registered under that name through
    Hydra's public `Plugins.register` instead of shipping a `hydra_plugins/` package."""

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
        vars(module)["GeoevalLauncher"] = type("GeoevalLauncher", (GeoevalLauncher,), {"__module__": HYDRA_MODULE})
        sys.modules[HYDRA_MODULE] = module
        package.geoeval_launcher = module
    Plugins.instance().register(module.GeoevalLauncher)
