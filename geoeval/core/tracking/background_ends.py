"""The MLflow ends of a sweep's jobs, sent on one background thread while the next job runs.

A job's end (its traces, one per sample, read back from the Inspect logs of a Ray job; its
metrics, artifacts and status) took ~0.2 s of the driver per job, between two jobs whose shards
left the driver idle: in a sweep of 30 jobs, 6 s in which no sample ran. A sweep's jobs hand
their ends here (`submit`) and the next job starts at once; the ends are sent one at a time, in
the order the jobs ended, on a thread of their own, once the next job's evaluation has started
(`driver_busy`, `driver_waits`).

- The sweep waits for every end before it reports (`wait_all`, in the launcher): the sweep's
  table, the parent run and the exit status see each job's end as they did before.
- A job that opens the MLflow run of an end still in flight (the same run key: a sweep whose jobs
  share a config) waits for that end first (`wait_for`), so one run is never ended and reused at
  once.
- An end that fails marks its run FAILED (as the job itself did) and its future carries the
  error; a tracking server that stays down keeps the end for later, as before
  (`delivery.end_job_run`). What the caller does with either: `geoeval.cli.app`, which records it
  in the job's point.
- A process that exits waits for the thread (Python joins a `ThreadPoolExecutor`'s threads at
  exit), so an end is not lost to a normal exit; a kill leaves the run RUNNING, as a kill during
  the job does, and the stale-run check ends it (`tracking/stale.py`).

A single run (no sweep) sends its end itself, before it returns: it has nothing to overlap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
#: the ends not yet sent, by the run key of their MLflow run
_in_flight: dict[str, Future] = {}
#: set while the driver waits on an evaluation (`driver_waits`), or on the ends themselves: an end
#: starts only then, so that it overlaps the next job's shards instead of the next job's start,
#: whose MLflow run would wait for the store behind the end's trace commits (SQLite lets one
#: writer in at a time, and a waiting one sleeps in steps of up to 100 ms)
_driver_idle = threading.Event()


def driver_busy() -> None:
    """The driver prepares a job (its environment, samples and MLflow run): ends wait."""
    _driver_idle.clear()


def driver_waits() -> None:
    """The driver waits on an evaluation: ends may go."""
    _driver_idle.set()


#: what the submitter learns when its end is done: where it was kept (a server that stayed down),
#: or the error that stopped it
EndDone = Callable[[Path | None, BaseException | None], None]


def submit(run_key: str, send: Callable[[], Path | None], then: EndDone) -> Future:
    """Send an end (`send`, returning where it was kept when the server was down) after the ends
    submitted before it, then tell `then` on the same thread (before `wait_all` and `wait_for`
    return: a future's done-callbacks would run after its waiters wake). Returns its future."""
    global _executor
    submitted: list[Future] = []  # this end's own future, for the thread to take it off the list

    def send_then_tell() -> Path | None:
        _driver_idle.wait()
        try:
            try:
                kept = send()
            except BaseException as exc:
                then(None, exc)
                raise
            then(kept, None)
            return kept
        finally:
            with _lock:
                if submitted and _in_flight.get(run_key) is submitted[0]:
                    del _in_flight[run_key]

    with _lock:  # the thread's `finally` takes the lock too: it finds `submitted` filled
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="geoeval-tracking-end")
        future = _executor.submit(send_then_tell)
        submitted.append(future)
        _in_flight[run_key] = future
    return future


def wait_for(run_key: str) -> None:
    """Wait until the end of the run `run_key` (if one is in flight) is sent or has failed."""
    _driver_idle.set()
    with _lock:
        future = _in_flight.get(run_key)
    if future is not None:
        wait_futures([future])


def wait_all(timeout_s: float | None = None) -> bool:
    """Wait for every end submitted so far; whether they all finished within `timeout_s`."""
    _driver_idle.set()
    with _lock:
        futures = list(_in_flight.values())
    if not futures:
        return True
    _, not_done = wait_futures(futures, timeout=timeout_s)
    return not not_done


def in_flight() -> int:
    """How many ends are not sent yet."""
    with _lock:
        return len(_in_flight)
