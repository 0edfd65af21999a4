"""A sweep's jobs and their points: each job's
run name (`job_labels`), the points file every job appends its result to
(`<sweep dir>/sweep_points.jsonl`), and the Hydra `JobReturn` a job's point becomes.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from omegaconf import DictConfig

Job = tuple[int, list[str], str]  # number, overrides, label


# --- run names ----------------------------------------------------------------------------------


def _pairs(overrides: Sequence[str]) -> dict[str, str]:
    return {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides if "=" in o}


def _swept_names(pairs: Sequence[dict[str, str]]) -> dict[str, str]:
    """The keys whose values differ between the jobs, each named by the last part of its key,
    the whole key where two swept keys end alike."""
    keys = list(dict.fromkeys(k for p in pairs for k in p))
    swept = [k for k in keys if len({p.get(k) for p in pairs}) > 1]
    tails = [k.rsplit(".", 1)[-1] for k in swept]
    return {k: t if tails.count(t) == 1 else k for k, t in zip(swept, tails)}


def sweep_run_name(experiment_name: str, job_overrides: Sequence[Sequence[str]]) -> str:
    """The sweep's parent run name: its experiment and what it sweeps
    (`sweep:maptab_resolution_sweep over resolution, setting`), so that a store's sweeps are told
    apart in MLflow's runs table even when they share the default experiment."""
    names = list(_swept_names([_pairs(o) for o in job_overrides]).values())
    return f"sweep:{experiment_name}" + (f" over {', '.join(names)}" if names else "")


def job_labels(job_overrides: Sequence[Sequence[str]]) -> list[str]:
    """Each job's name: the values that differ between the jobs, by the last part of their key
    (`resolution=0.25 setting=map`), the whole key where two swept keys end alike."""
    pairs = [_pairs(o) for o in job_overrides]
    names = _swept_names(pairs)
    swept = list(names)
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


class JobPoint:
    """One job's point, appended when the job returns (`job_done`) and once more if its MLflow
    end, sent in the background while the next job runs (`tracking/background_ends.py`), was kept
    for a server that is down or failed (`end_done`): the last line of a job is the one that
    counts (`read_points`). Either may come first; a lock keeps the lines in order. `clean` is
    applied to each line (the secrets' redaction)."""

    def __init__(self, path: Path, clean: Callable[[dict], dict]) -> None:
        self.path, self.clean = path, clean
        self._lock = threading.Lock()
        self._point: dict | None = None
        self._end: tuple[Path | None, BaseException | None] | None = None

    def job_done(self, point: dict) -> None:
        with self._lock:
            self._point = point
            append_point(self.path, self.clean(self._with_end()))

    def end_done(self, kept: Path | None, error: BaseException | None) -> None:
        with self._lock:
            self._end = (kept, error)
            if error is not None:
                print(
                    f"[geoeval] sweep job {(self._point or {}).get('job', '?')}: its MLflow end failed: "
                    f"{type(error).__name__}: {error}",
                    file=sys.stderr,
                )
            if self._point is not None and (kept is not None or error is not None):
                append_point(self.path, self.clean(self._with_end()))

    def _with_end(self) -> dict:
        point = dict(self._point or {})
        kept, error = self._end or (None, None)
        if kept is not None:
            point["tracking_pending"] = str(kept)
        if error is not None:
            point["failed"] = f"its MLflow end failed: {type(error).__name__}: {error}"
        return point


def crash_point(num: int, overrides: Sequence[str], why: str) -> dict:
    return {
        "job": num,
        "overrides": _pairs(overrides),
        "metrics": {},
        "counts": {},
        "failed": why,
        "crashed": True,
        "run_hash": None,
        "mlflow_run_id": None,
        "n": 0,
    }


def _completed(config: DictConfig, overrides: Sequence[str], value: Any = None) -> JobReturn:
    ret = JobReturn(overrides=list(overrides), cfg=config, hydra_cfg=None, working_dir=os.getcwd())
    ret.status, ret.return_value = JobStatus.COMPLETED, value
    return ret
