"""Runs left RUNNING by a job that is gone are ended KILLED (issue 25): at the next job's start
when their process on this host is gone, and by `geoeval runs --clean` when a job on another host
has beaten no heartbeat for the lease; a run that is still going is left alone."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from geoeval.cli.runs import main as runs_main
from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking.owners import TAG_HOST, TAG_PID, TAG_PID_START, owner_tags
from geoeval.core.tracking.stale import TAG_HEARTBEAT, TAG_KILLED_REASON
from tests.core.conftest import spec_for


def _client(store: Path):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{store / 'mlflow.db'}")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running(store: Path, experiment: str, tags: dict[str, str]) -> str:
    client = _client(store)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    return client.create_run(experiment_id, tags={"geoeval.kind": "job", **tags}).info.run_id


def test_a_run_whose_process_is_gone_is_killed_at_the_next_jobs_start(store):
    dead = _running(store, "exp", {**owner_tags(), TAG_PID: str(_dead_pid()), TAG_PID_START: "1"})
    alive = _running(store, "exp", owner_tags())  # this test's own process: still going
    job = tracking.JobRun.start(spec_for(store), "exp", run_hash="h1", run_name="job")
    client = _client(store)
    assert client.get_run(dead).info.status == "KILLED"
    assert "is gone" in client.get_run(dead).data.tags[TAG_KILLED_REASON]
    assert client.get_run(alive).info.status == "RUNNING"
    assert TAG_HEARTBEAT in client.get_run(job.run_id).data.tags  # the new job beats its heartbeat
    job.finish()


def test_geoeval_runs_lists_and_cleans_runs_of_other_hosts_by_their_heartbeat(store, capsys):
    old = str(int(time.time()) - 3600)
    silent = _running(store, "exp", {TAG_HOST: "other-host", TAG_PID: "4242", TAG_HEARTBEAT: old})
    beating = _running(store, "exp", {TAG_HOST: "other-host", TAG_PID: "4243", TAG_HEARTBEAT: str(int(time.time()))})
    uri = f"sqlite:///{store / 'mlflow.db'}"
    assert runs_main(["--tracking-uri", uri]) == 0
    listing = capsys.readouterr().out
    assert "no heartbeat from other-host for 60 min" in listing and "running" in listing
    client = _client(store)
    assert client.get_run(silent).info.status == "RUNNING"  # listing changes nothing
    assert runs_main(["--tracking-uri", uri, "--clean", "--lease-minutes", "30"]) == 0
    assert "1 stale run(s) marked KILLED" in capsys.readouterr().out
    assert client.get_run(silent).info.status == "KILLED"
    assert client.get_run(beating).info.status == "RUNNING"


def test_geoeval_runs_with_the_tracking_server_down_is_one_line(tmp_path, capsys, monkeypatch):
    """`geoeval runs --sync` with the tracking server down: one line, no traceback (issue 43.9);
    exit 4 while something is still waiting for the server, else 2."""
    import socket

    from geoeval.core.tracking.delivery import EXIT_TRACKING_PENDING, PENDING_DIR

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    work = tmp_path / "work"
    assert runs_main(["--sync", "--work-dir", str(work)]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("geoeval: error:")]
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0] and "does not answer" in errors[0], err
    assert "Traceback" not in err
    (work / PENDING_DIR).mkdir(parents=True)
    (work / PENDING_DIR / "kept.json").write_text("{}")  # an end still waiting
    assert runs_main(["--sync", "--work-dir", str(work)]) == EXIT_TRACKING_PENDING
    assert len([line for line in capsys.readouterr().err.splitlines() if line.startswith("geoeval: error:")]) == 1
