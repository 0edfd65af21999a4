"""Stage timers: where a job's seconds go.

    from geoeval.core.timing import stage
    with stage("env_build"):
        env = suite.build_env(spec)

Every process accumulates seconds and counts per stage name in `STAGE_TIMES` (nested stages
count in both: a stage's share is of the wall time around it, not exclusive). Nothing is
written unless asked:

- `GEOEVAL_PROFILE_DIR=DIR`: every stage exit appends one JSON line
  `{"stage", "seconds", "pid", "t"}` to `DIR/stages-<pid>.jsonl`. The variable starts with
  `GEOEVAL_`, so the runner hands it to Ray workers too; `bench/profile_main.py` sets it and
  adds the lines of every process up (`read_stage_events`, `summarize`).
- `GEOEVAL_PROFILE=1`: the process prints its totals to stderr once, when it exits (an `atexit`
  hook the first stage registers; a process killed by a signal prints nothing, and Ray's workers
  are better read through `GEOEVAL_PROFILE_DIR`).

The cost when neither is set is two `perf_counter` calls and a dict update per stage.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROFILE_DIR_ENV = "GEOEVAL_PROFILE_DIR"
PROFILE_ENV = "GEOEVAL_PROFILE"

#: seconds per stage name in this process, and how many times it ran
STAGE_TIMES: dict[str, float] = {}
STAGE_COUNTS: dict[str, int] = {}
_exit_report_registered = False


def record(name: str, seconds: float) -> None:
    """Add `seconds` to stage `name` (for time measured elsewhere, e.g. a cache's hit path)."""
    STAGE_TIMES[name] = STAGE_TIMES.get(name, 0.0) + seconds
    STAGE_COUNTS[name] = STAGE_COUNTS.get(name, 0) + 1
    folder = os.environ.get(PROFILE_DIR_ENV)
    if folder:
        _append_event(Path(folder), name, seconds)


def _append_event(folder: Path, name: str, seconds: float) -> None:
    # one short append per line: concurrent processes each write their own file anyway
    try:
        folder.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"stage": name, "seconds": seconds, "pid": os.getpid(), "t": time.time()})
        with open(folder / f"stages-{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:  # profiling must never fail a job
        pass


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage `name` (also when it raises)."""
    global _exit_report_registered
    if not _exit_report_registered and os.environ.get(PROFILE_ENV) == "1":
        # once per process at its exit: a job has several top-level stages, and printing after
        # each (as a nesting count once did) repeated the growing table 4-11 times a run
        _exit_report_registered = True
        atexit.register(print_stage_table)
    started = time.perf_counter()
    try:
        yield
    finally:
        record(name, time.perf_counter() - started)


def print_stage_table() -> None:
    """The process's stage totals to stderr (what `GEOEVAL_PROFILE=1` prints at exit)."""
    print(
        format_table(dict(STAGE_TIMES), dict(STAGE_COUNTS), title=f"[geoeval] stage times (pid {os.getpid()})"),
        file=sys.stderr,
    )


def reset() -> None:
    STAGE_TIMES.clear()
    STAGE_COUNTS.clear()


def read_stage_events(folder: str | Path) -> list[dict]:
    """Every stage line written under `folder` (all processes), oldest first."""
    events: list[dict] = []
    for path in sorted(Path(folder).glob("stages-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a killed process
                continue
    return sorted(events, key=lambda e: e["t"])


def summarize(events: list[dict]) -> tuple[dict[str, float], dict[str, int]]:
    """Seconds and counts per stage, summed over processes."""
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for e in events:
        seconds[e["stage"]] = seconds.get(e["stage"], 0.0) + float(e["seconds"])
        counts[e["stage"]] = counts.get(e["stage"], 0) + 1
    return seconds, counts


def format_table(
    seconds: dict[str, float], counts: dict[str, int], *, total: float | None = None, title: str = "stage times"
) -> str:
    """Stages, slowest first, as seconds and shares of `total` (default: the largest stage)."""
    if not seconds:
        return f"{title}: none recorded"
    total = total or max(seconds.values()) or 1.0
    width = max(len(k) for k in seconds)
    lines = [f"{title} (shares of {total:.2f} s)"]
    for name in sorted(seconds, key=lambda k: -seconds[k]):
        lines.append(
            f"  {name:<{width}}  {seconds[name]:9.2f} s  {100 * seconds[name] / total:6.1f} %  x{counts.get(name, 0)}"
        )
    return "\n".join(lines)
