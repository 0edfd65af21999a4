"""The sweep job this process runs (`current_sweep_job`, announced by the launcher with
`running_sweep_job`) and the points file its sweep's jobs append their results to
(`<sweep dir>/sweep_points.jsonl`, `read_points`). Here, below the sweep, because a job reads
both: the sweep (`core/sweep/points.py`) writes them.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SWEEP_POINTS = "sweep_points.jsonl"


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


@contextlib.contextmanager
def running_sweep_job(job: SweepJob) -> Iterator[SweepJob]:
    """`job` is the sweep job this process runs while inside (the launcher's one job at a time)."""
    _CURRENT.append(job)
    try:
        yield job
    finally:
        _CURRENT.remove(job)


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
