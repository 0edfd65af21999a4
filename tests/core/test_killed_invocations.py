"""An invocation whose process was killed with SIGKILL stays `running` in the warehouse: nothing
could mark it. The next run's start marks it `killed`, and its run `interrupted` (issue 43.9),
when its process on this host is gone; a live one, and another host's, are left alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

from geoeval.core.processes import process_is_gone, process_started_at
from geoeval.core.run.invocation import KILLED, mark_killed
from geoeval.core.warehouse.invocations import invocations, start_invocation
from geoeval.core.warehouse.store import Warehouse


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running(wh: Warehouse, run_hash: str, invocation: str, *, host: str, pid: int) -> None:
    if not wh.query("SELECT 1 FROM runs WHERE run_hash = ?", [run_hash])[1]:
        wh.register_run(run_hash, suite="maptab", model="geoeval/oracle", config={}, experiment="e")
        wh.set_run_status(run_hash, "running")
    start_invocation(wh, invocation, run_hash, researcher="r", host=host, pid=pid, n_reused=0)


def test_a_killed_invocation_is_marked_at_the_next_start_and_a_live_one_is_not(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    here, dead = socket.gethostname(), _dead_pid()
    _running(wh, "killed_run", "gone", host=here, pid=dead)
    _running(wh, "live_run", "live", host=here, pid=os.getpid())
    _running(wh, "far_run", "far", host="another-host", pid=dead)
    # a run with a killed invocation and a live one goes on: it stays running
    _running(wh, "shared_run", "shared_gone", host=here, pid=dead)
    _running(wh, "shared_run", "shared_live", host=here, pid=os.getpid())

    assert mark_killed(wh) == ["killed_run", "shared_run"]
    status = {i["invocation_id"]: i["status"] for i in invocations(wh)}
    assert status == {
        "gone": KILLED,
        "live": "running",
        "far": "running",
        "shared_gone": KILLED,
        "shared_live": "running",
    }
    assert all(i["ended_at"] is not None for i in invocations(wh) if i["status"] == KILLED)
    runs = dict(wh.query("SELECT run_hash, status FROM runs")[1])
    assert runs == {"killed_run": "interrupted", "live_run": "running", "far_run": "running", "shared_run": "running"}
    assert mark_killed(wh) == []  # marked once


def test_a_reused_pid_is_told_from_the_process_that_recorded_it():
    here = socket.gethostname()
    started = process_started_at(os.getpid())
    assert started is not None
    now = time.time()  # a moment these processes are known to be alive at (no time is measured)
    assert not process_is_gone(here, os.getpid(), alive_at=now)  # this process, now
    # recorded an hour before this process started: that pid was another process's then
    earlier = (datetime.fromtimestamp(started, timezone.utc) - timedelta(hours=1)).timestamp()
    assert process_is_gone(here, os.getpid(), alive_at=earlier)
    assert process_is_gone(here, _dead_pid(), alive_at=now)
    assert not process_is_gone("another-host", _dead_pid(), alive_at=now)
