"""Runs left RUNNING by a job that is gone (killed, its machine lost), told apart from runs that
are still going, and marked KILLED.

A job's run records its owner (host, pid, process start: `owners.owner_tags`) and, while it is
open, beats a heartbeat: the tag `geoeval.heartbeat` (Unix seconds) every `HEARTBEAT_S`. A RUNNING
run is stale when

- its owner ran on this host and its process is gone (certain: checked at every job's start, on
  every run of the job's experiment, and by `geoeval runs`), or
- it is a job's run on another host whose last heartbeat (or start, for a run from before
  heartbeats) is older than the lease (`geoeval runs --lease-minutes`, 10 by default): nothing can
  check another host's processes, so a job that has not beaten for a lease is taken as gone.

A sweep's parent run beats no heartbeat (its jobs do): only a dead owner on this host makes it
stale. A stale run is ended KILLED with the tag `geoeval.killed_reason`.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

from geoeval.core.tracking.owners import TAG_HOST, TAG_PID, owner_is_dead

TAG_HEARTBEAT = "geoeval.heartbeat"
TAG_KILLED_REASON = "geoeval.killed_reason"
HEARTBEAT_S = 60.0
DEFAULT_LEASE_S = 600.0


class Heartbeat:
    """Beats `TAG_HEARTBEAT` on a run every `interval_s` until stopped; a failed beat is skipped
    (tracking must never stop the job)."""

    def __init__(self, client: Any, run_id: str, interval_s: float = HEARTBEAT_S) -> None:
        self._client, self._run_id, self._interval_s = client, run_id, interval_s
        self._stop = threading.Event()
        self._beat()
        self._thread = threading.Thread(target=self._loop, name="geoeval-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        try:
            self._client.set_tag(self._run_id, TAG_HEARTBEAT, str(int(time.time())))
        except Exception:  # noqa: BLE001 - the next beat tries again; the job goes on regardless
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._beat()

    def stop(self) -> None:
        self._stop.set()


def stale_reason(run: Any, *, now: float | None = None, lease_s: float | None = DEFAULT_LEASE_S) -> str | None:
    """Why a RUNNING run is stale (see the module doc), or None while it may still be going.
    `lease_s=None`: only a dead owner on this host counts."""
    tags = run.data.tags
    if owner_is_dead(tags):
        return f"its process ({tags.get(TAG_HOST)} pid {tags.get(TAG_PID)}) is gone"
    if lease_s is None or tags.get("geoeval.kind") != "job" or tags.get(TAG_HOST) == socket.gethostname():
        return None
    now = time.time() if now is None else now
    try:
        last = float(tags.get(TAG_HEARTBEAT) or run.info.start_time / 1000)
    except (TypeError, ValueError):
        return None
    if now - last > lease_s:
        return f"no heartbeat from {tags.get(TAG_HOST) or 'its host'} for {(now - last) / 60:.0f} min (lease {lease_s / 60:g} min)"
    return None


def running_runs(client: Any, experiment_ids: Iterable[str]) -> list[Any]:
    """The RUNNING runs of the experiments."""
    ids = list(experiment_ids)
    if not ids:
        return []
    return list(client.search_runs(ids, filter_string="attributes.status = 'RUNNING'", max_results=5000))


def end_stale_runs(
    client: Any, runs: Iterable[Any], *, lease_s: float | None = DEFAULT_LEASE_S
) -> list[tuple[Any, str]]:
    """End each stale run of `runs` KILLED, with its reason in `TAG_KILLED_REASON`; returns (run, reason)."""
    ended = []
    now = time.time()
    for run in runs:
        reason = stale_reason(run, now=now, lease_s=lease_s)
        if reason is None:
            continue
        client.set_tag(run.info.run_id, TAG_KILLED_REASON, reason)
        client.set_terminated(run.info.run_id, status="KILLED")
        ended.append((run, reason))
    return ended
