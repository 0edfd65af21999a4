"""The sweep's progress line: one line on stderr each time a job ends (jobs done of all, failed,
ETA, and that job's result in a few metrics).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

_COUNTS = {"n_samples", "n_scored", "n_errors", "http_retries"}


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
    text += (
        f" (n={point.get('n', 0)}" + (f", {int(counts['n_errors'])} errored" if counts.get("n_errors") else "") + ")"
    )
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
        print(
            f"[geoeval] sweep {self.done}/{self.total} done{failed}{self.eta()} | job {num} {label}: "
            f"{point_summary(point, headline)} [{_duration(seconds)}]",
            file=self.stream,
            flush=True,
        )
