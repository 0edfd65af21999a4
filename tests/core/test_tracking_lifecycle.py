"""The MLflow run lifecycle (geoeval.core.tracking.runs) against a real SQLite store in tmp_path:
RUNNING while open, the final status, reuse of killed/failed runs, sweep parents, concurrency."""

from __future__ import annotations

import multiprocessing
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from geoeval.core.tracking import owners as tracking_owners
from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking import store as tracking_store
from geoeval.core.tracking import values as tracking_values
from tests.core.conftest import spec_for


def client_for(store: Path):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{store / 'mlflow.db'}")


def start(store: Path, run_hash: str = "h1", **kw) -> tracking.JobRun:
    kw.setdefault("run_name", "job0:base")
    kw.setdefault("params", {"suite.name": "maptab", "limit": "5"})
    return tracking.JobRun.start(spec_for(store), "exp", run_hash=run_hash, **kw)


def metric_history(store: Path, run_id: str, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client_for(store).get_metric_history(run_id, key)]


# --- a job's run --------------------------------------------------------------------------------


def wait_for_history(store, run_id, key, done, wait_s=30.0):
    """The metric's history once `done(history)` holds (the courier thread sends it soon), else
    the last history seen (the assertion then fails showing it)."""
    deadline = time.monotonic() + wait_s
    while True:
        history = metric_history(store, run_id, key)
        if done(history) or time.monotonic() > deadline:
            return history
        time.sleep(0.05)


def test_run_is_running_while_open_and_finished_with_metrics_and_artifacts(tmp_path, store):
    params = {f"p.{i:03d}": str(i) for i in range(250)}  # more than one batch of 100
    params["suite.long"] = "x" * 10_000
    params["weird key=1"] = "v"
    run = start(store, params=params, tags={"geoeval.suite": "maptab"})
    client = client_for(store)
    info = client.get_run(run.run_id)
    assert info.info.status == "RUNNING"
    assert info.info.run_name == "job0:base"
    assert info.data.tags["geoeval.run_hash"] == "h1"
    assert info.data.tags["geoeval.kind"] == "job"
    assert info.data.tags["geoeval.suite"] == "maptab"
    assert info.data.tags["geoeval.pid"] == str(os.getpid())
    assert info.data.tags["geoeval.host"] == socket.gethostname()
    logged = info.data.params
    assert len(logged) == 252  # no param hidden
    assert logged["p.249"] == "249"
    assert logged["weird key_1"] == "v"
    assert len(logged["suite.long"]) <= tracking_values.MAX_PARAM_CHARS
    assert logged["suite.long"].endswith("more characters cut]")

    # progress: sent by a courier thread (the caller never waits on the server), at once when
    # forced, the newest values otherwise (points in between may be coalesced, the last never)
    run.progress(3, 1, 10, force=True)
    assert wait_for_history(store, run.run_id, "progress/samples_done", lambda h: h[-1:] == [(3, 3.0)])
    run.progress(4, 1, 10)
    run.progress(7, 2, 10, force=True)
    history = wait_for_history(store, run.run_id, "progress/samples_done", lambda h: h[-1:] == [(7, 7.0)])
    assert history[0] == (3, 3.0) and set(history) <= {(3, 3.0), (4, 4.0), (7, 7.0)}
    assert metric_history(store, run.run_id, "progress/errors")[-1] == (7, 2.0)

    eval_log = tmp_path / "2026_task_x.eval"
    eval_log.write_bytes(b"PK fake")
    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    (report_dir / "table.md").write_text("| a |")
    config = tmp_path / "resolved_config.yaml"
    config.write_text("seed: 0\n")
    run.finish(
        {"pass_rate": 0.5, "n_errors": 1, "ds/level=1": float("nan")},
        [eval_log, report_dir, config, tmp_path / "missing.png"],
        "FINISHED",
    )
    done = client.get_run(run.run_id)
    assert done.info.status == "FINISHED"
    assert done.data.metrics["pass_rate"] == 0.5
    assert done.data.metrics["n_errors"] == 1.0
    assert str(done.data.metrics["ds/level_1"]) == "nan"  # an errored metric is missing, not 0
    paths = {f.path for f in client.list_artifacts(run.run_id)}
    assert paths == {"inspect_logs", "reports", "resolved_config.yaml"}
    assert [f.path for f in client.list_artifacts(run.run_id, "inspect_logs")] == ["inspect_logs/2026_task_x.eval"]
    assert [f.path for f in client.list_artifacts(run.run_id, "reports")] == ["reports/table.md"]
    run.progress(10, 2, 10, force=True)  # after the end: ignored, not an error
    run.finish({}, [], "FAILED")  # a second finish is a no-op
    assert client.get_run(run.run_id).info.status == "FINISHED"


@pytest.mark.parametrize("status", ["FAILED", "KILLED"])
def test_finish_status(store, status):
    run = start(store)
    run.finish({"n_samples": 2}, [], status)
    assert client_for(store).get_run(run.run_id).info.status == status


def test_context_manager_ends_with_the_exception_status(tmp_path, store):
    with pytest.raises(RuntimeError), start(store, "a") as failed:
        raise RuntimeError("boom")
    with pytest.raises(KeyboardInterrupt), start(store, "b") as killed:
        raise KeyboardInterrupt
    with start(store, "c") as fine:
        pass
    client = client_for(store)
    assert [client.get_run(r.run_id).info.status for r in (failed, killed, fine)] == ["FAILED", "KILLED", "FINISHED"]


def test_finish_rejects_an_unknown_status(store):
    run = start(store)
    with pytest.raises(ValueError):
        run.finish({}, [], "DONE")
    assert run.status == "RUNNING"


def test_two_open_runs_in_one_process_do_not_touch_the_global_active_run(tmp_path, store):
    import mlflow

    first, second = start(store, "a"), start(store, "b")
    assert mlflow.active_run() is None
    second.finish({"m": 2.0}, [], "FINISHED")
    assert first.status == "RUNNING"
    first.finish({"m": 1.0}, [], "FINISHED")
    assert client_for(store).get_run(first.run_id).data.metrics == {"m": 1.0}


# --- reuse --------------------------------------------------------------------------------------


KILLED_JOB = textwrap.dedent("""
    import os, signal, sys
    from types import SimpleNamespace
    from geoeval.core.tracking import runs as tracking
    spec = SimpleNamespace(tracking_uri=sys.argv[1], artifact_location=None, experiment_name=None)
    run = tracking.JobRun.start(spec, "exp", run_hash="h1", run_name="job0:base", params={"limit": "5"})
    run.progress(2, 0, 4, force=True)
    while not run.client.get_metric_history(run.run_id, "progress/samples_done"):  # sent by its courier thread
        pass
    print(run.run_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # as a kill -9 or an OOM kill: no chance to end the run
""")


def test_killed_job_is_marked_killed_and_its_run_reused_by_the_next_start(store, capsys):
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_JOB, spec_for(store).tracking_uri],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    killed_id = proc.stdout.split()[0]
    client = client_for(store)
    assert client.get_run(killed_id).info.status == "RUNNING"  # what a kill leaves behind

    resumed = start(store, "h1")
    assert "marked KILLED" in capsys.readouterr().err
    assert resumed.reused and resumed.run_id == killed_id  # one MLflow run per resumed job
    run = client.get_run(killed_id)
    assert run.info.status == "RUNNING"
    assert run.data.tags["geoeval.pid"] == str(os.getpid())  # the new owner
    assert run.data.tags["geoeval.attempt"] == "2"
    assert metric_history(store, killed_id, "progress/samples_done") == [(2, 2.0)]  # earlier progress kept
    resumed.finish({"n_samples": 4}, [], "FINISHED")
    assert len(client.search_runs([resumed.experiment_id])) == 1
    # the kill's reason went with the resume: a FINISHED run does not say it was killed
    assert "geoeval.killed_reason" not in client.get_run(killed_id).data.tags

    # a FINISHED run is a complete record: a later job of the same hash gets its own run
    again = start(store, "h1")
    assert not again.reused and again.run_id != killed_id


def test_failed_run_reused_and_a_changed_param_kept_visible(tmp_path, store):
    first = start(store, params={"limit": "5", "seed": "0"})
    first.finish({}, [], "FAILED")
    second = start(store, params={"limit": "9", "seed": "0", "new.key": "x"})
    assert second.reused and second.run_id == first.run_id
    assert second.changed_params == ["limit"]
    run = client_for(store).get_run(second.run_id)
    assert run.data.params == {"limit": "5", "seed": "0", "new.key": "x"}
    assert run.data.tags["geoeval.param_changed.limit"] == "9"


def test_running_run_of_a_live_owner_is_not_taken(tmp_path, store):
    first = start(store)  # owned by this (live) process
    second = start(store)
    assert not second.reused and second.run_id != first.run_id
    assert first.status == "RUNNING"


def test_reuse_needs_the_same_parent(tmp_path, store):
    child = start(store, parent_run_id="parentA")
    child.finish({}, [], "KILLED")
    assert not start(store, parent_run_id="parentB").reused
    assert not start(store).reused
    assert start(store, parent_run_id="parentA").run_id == child.run_id


def test_owner_liveness():
    me = tracking_owners.owner_tags()
    assert not tracking_owners.owner_is_dead(me)
    assert not tracking_owners.owner_is_dead({**me, "geoeval.host": "another-host"})  # cannot check: alive
    assert not tracking_owners.owner_is_dead({})
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert tracking_owners.owner_is_dead({**me, "geoeval.pid": str(gone.pid)})
    # the pid alive but started at another time: an unrelated process reused it
    if me["geoeval.pid_start"]:
        assert tracking_owners.owner_is_dead({**me, "geoeval.pid_start": "1"})


def test_status_for_exception():
    assert tracking_values.status_for_exception(None) == "FINISHED"
    assert tracking_values.status_for_exception(KeyboardInterrupt()) == "KILLED"
    assert tracking_values.status_for_exception(SystemExit(1)) == "KILLED"
    assert tracking_values.status_for_exception(ValueError()) == "FAILED"


def test_keys_and_values_fit_mlflow():
    assert tracking_values.mlflow_key("suite.resolution") == "suite.resolution"
    assert tracking_values.mlflow_key("pass_rate/level=2") == "pass_rate/level_2"
    assert tracking_values.mlflow_key("a//b") == "a__b"
    assert len(tracking_values.mlflow_key("k" * 400)) == tracking_values.MAX_KEY_CHARS
    assert tracking_values.mlflow_key("k" * 400) != tracking_values.mlflow_key("k" * 399)
    assert tracking_values.param_value(None) == ""
    assert tracking_values.param_value("a\ud800b") == "a\ufffdb"


# --- sweeps -------------------------------------------------------------------------------------


def test_parent_stays_running_until_ended_then_carries_metrics_and_artifacts(tmp_path, store):
    spec = spec_for(store)
    parent_id = tracking.start_parent_run(spec, "exp", "sweep:exp", {"sweep.jobs": "2"}, sweep_hash="sw1")
    client = client_for(store)
    assert client.get_run(parent_id).info.status == "RUNNING"
    for i in range(2):
        child = start(store, f"h{i}", run_name=f"job{i}", parent_run_id=parent_id)
        child.finish({"pass_rate": 0.5 * i}, [], "FINISHED")
        assert client.get_run(parent_id).info.status == "RUNNING"
    table = tmp_path / "sweep_table.md"
    table.write_text("| job | pass_rate |")
    plot = tmp_path / "sweep_plot.png"
    plot.write_bytes(b"\x89PNG")
    tracking.end_parent_run(
        spec,
        "exp",
        parent_id,
        metrics={"best/pass_rate": 0.5, "sweep.n_jobs": 2},
        artifacts=[table, plot],
        status="FINISHED",
    )
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics == {"best/pass_rate": 0.5, "sweep.n_jobs": 2.0}
    assert parent.data.params == {"sweep.jobs": "2"}
    assert parent.data.tags["geoeval.kind"] == "sweep"
    assert {f.path for f in client.list_artifacts(parent_id)} == {"sweep_table.md", "sweep_plot.png"}
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent_id}'"
    )
    assert len(children) == 2


def test_rerun_of_a_killed_sweep_keeps_one_parent(tmp_path, store):
    spec = spec_for(store)
    parent_id = tracking.start_parent_run(spec, "exp", "sweep:exp", sweep_hash="sw1")
    child = start(store, "h0", parent_run_id=parent_id)
    # the sweep was killed: both left as a kill leaves them, then marked by the rerun's start
    client = client_for(store)
    client.set_terminated(child.run_id, status="KILLED")
    client.set_terminated(parent_id, status="KILLED")
    again = tracking.start_parent_run(spec, "exp", "sweep:exp", sweep_hash="sw1")
    assert again == parent_id
    assert client.get_run(parent_id).info.status == "RUNNING"
    assert start(store, "h0", parent_run_id=again).run_id == child.run_id
    # another sweep identity, or none, gets its own parent
    assert tracking.start_parent_run(spec, "exp", "sweep:exp", sweep_hash="sw2") != parent_id
    assert tracking.start_parent_run(spec, "exp", "sweep:exp") != parent_id


def test_log_parent_artifacts_still_ends_the_parent(tmp_path, store):
    """The call app.py made before the parent stayed open: it must still end the parent."""
    spec = spec_for(store)
    parent_id = tracking.start_parent_run(spec, "exp", "sweep:exp")
    table = tmp_path / "sweep_table.md"
    table.write_text("x")
    tracking.log_parent_artifacts(spec, "exp", parent_id, [table], metrics={"n": 1.0})
    run = client_for(store).get_run(parent_id)
    assert run.info.status == "FINISHED" and run.data.metrics == {"n": 1.0}
    assert [f.path for f in client_for(store).list_artifacts(parent_id)] == ["sweep_table.md"]


def test_log_job_still_logs_a_whole_job_in_one_call(tmp_path, store):
    spec = SimpleNamespace(
        tracking=spec_for(store),
        experiment_name="exp",
        suite=SimpleNamespace(name="maptab"),
        model=SimpleNamespace(name="oracle"),
        to_dict=lambda: {"suite": {"name": "maptab", "resolution": 0.5}, "limit": None},
    )
    outcome = SimpleNamespace(spec=spec, run_hash="abc", metrics={"ds": 3.0}, results=[1, 2], seconds=1.5)
    run_id = tracking.log_job(outcome, parent_run_id=None, artifacts=[], run_name="run")
    run = client_for(store).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params == {"suite.name": "maptab", "suite.resolution": "0.5", "limit": ""}
    assert run.data.metrics == {"ds": 3.0, "n_samples": 2.0, "wall_seconds": 1.5}


# --- concurrency --------------------------------------------------------------------------------


def _job_in_a_fresh_process(store: str, index: int, barrier) -> tuple[str, str]:
    import mlflow  # noqa: F401  (imported before the barrier: the race is in the store, not imports)

    from geoeval.core.tracking import runs as tr

    barrier.wait(timeout=120)
    spec = SimpleNamespace(tracking_uri=f"sqlite:///{store}/mlflow.db", artifact_location=None, experiment_name=None)
    run = tr.JobRun.start(spec, "exp", run_hash=f"h{index}", run_name=f"job{index}", params={"i": str(index)})
    run.progress(1, 0, 1, force=True)
    run.finish({"m": float(index)}, [], "FINISHED")
    return run.run_id, run.experiment_id


@pytest.mark.slow
def test_runs_started_at_once_on_a_fresh_store_all_succeed(tmp_path):
    """Without the store lock, all of them crash in MLflow's schema migration (reproduced with
    MLflow 3: `alembic ... CommandError` / `table _alembic_tmp_... already exists`)."""
    store = tmp_path / "mlruns"
    n = 3
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(n)
        with ctx.Pool(n) as pool:
            pending = [pool.apply_async(_job_in_a_fresh_process, (str(store), i, barrier)) for i in range(n)]
            results = [p.get(timeout=300) for p in pending]
    assert len({run_id for run_id, _ in results}) == n
    assert len({exp for _, exp in results}) == 1  # one experiment, however the creation raced
    client = client_for(store)
    runs = client.search_runs([results[0][1]])
    assert sorted(r.data.metrics["m"] for r in runs) == [0.0, 1.0, 2.0]
    assert {r.info.status for r in runs} == {"FINISHED"}
    # the store is still readable and writable by a later run
    later = start(store, "later")
    later.finish({}, [], "FINISHED")
    assert len(client.search_runs([results[0][1]])) == n + 1


def test_store_lock_is_exclusive_across_processes(tmp_path):
    store = tmp_path / "mlruns"
    uri = spec_for(store).tracking_uri
    released = tmp_path / "released"
    holder = textwrap.dedent("""
        import pathlib, sys, time
        from geoeval.core.tracking import store as tracking_store
        with tracking_store.store_lock(sys.argv[1]):
            print("locked", flush=True)
            time.sleep(1.5)  # long enough for the test to be waiting on the lock (not timed)
            pathlib.Path(sys.argv[2]).write_text("released")  # the last thing it does holding it
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder, uri, str(released)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with tracking_store.store_lock(uri):
            held_after_the_holder = released.exists()  # the lock was ours only once the holder let go
            with tracking_store.store_lock(uri):  # re-entrant in one thread
                pass
    finally:
        proc.wait(timeout=30)
    assert held_after_the_holder
    assert (store / ".geoeval.lock").exists()


def _schema(db: Path) -> list[tuple]:
    """Every table and index with its definition's lines (MLflow itself writes a table's CHECK
    constraints in a different order from one build to the next), and the migration head."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        objects = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    return [
        (kind, name, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines()))
        for kind, name, sql in objects
    ] + revision


def test_a_fresh_store_from_the_schema_template_is_the_store_mlflow_builds(tmp_path, monkeypatch):
    """The second fresh store of a machine is a copy of the cached empty schema: the same tables,
    indexes and migration head as the store MLflow builds itself, in WAL mode, with MLflow's
    Default experiment keeping its artifacts beside the store."""
    import sqlite3

    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from geoeval.core.tracking import store as tracking_store

    monkeypatch.setenv("GEOEVAL_CACHE_DIR", str(tmp_path / "cache"))
    by_mlflow = tmp_path / "by_mlflow" / "mlflow.db"
    by_mlflow.parent.mkdir()
    SqlAlchemyStore(f"sqlite:///{by_mlflow}", str(tmp_path / "by_mlflow" / "artifacts")).engine.dispose()

    first, second = tmp_path / "first" / "mlruns", tmp_path / "second" / "mlruns"
    tracking_store.client_for(spec_for(first))  # builds the template, then the store from it
    assert tracking_store._schema_template() is not None
    built = []
    monkeypatch.setattr(
        "mlflow.store.db.utils._initialize_tables", lambda engine: built.append(engine) or pytest.fail("migrated again")
    )
    client = tracking_store.client_for(spec_for(second))
    assert built == []
    for store in (first, second):
        db = store / "mlflow.db"
        assert _schema(db) == _schema(by_mlflow)
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    default = client.get_experiment("0")
    assert default.name == "Default"
    assert default.artifact_location.startswith((second / "artifacts").as_uri())
    run = client.create_run("0")
    client.set_terminated(run.info.run_id)
    assert client.get_run(run.info.run_id).info.status == "FINISHED"


def test_a_fresh_store_is_built_in_place_without_the_cache(tmp_path, monkeypatch):
    from geoeval.core.tracking import store as tracking_store

    monkeypatch.setenv("GEOEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GEOEVAL_NO_CACHE", "1")
    client = tracking_store.client_for(spec_for(tmp_path / "mlruns"))
    assert client.get_experiment("0").name == "Default"
    assert not (tmp_path / "cache").exists()


DAMAGED_STORE = textwrap.dedent("""
    import sys
    from types import SimpleNamespace
    from geoeval.core.errors import GeoevalError
    from geoeval.core.tracking import store
    spec = SimpleNamespace(tracking_uri=sys.argv[1], artifact_location=None, experiment_name=None)
    try:
        store.client_for(spec)
    except GeoevalError as exc:
        print(exc)
""")


@pytest.mark.parametrize(
    "damage",
    [lambda data: b"\x8f garbage, not SQLite " * 500, lambda data: data[:100] + b"\0" * (len(data) - 100)],
    ids=["not a database", "header kept, pages zeroed"],
)
def test_a_damaged_store_is_one_error_naming_it(tmp_path, damage):
    store = tmp_path / "mlruns"
    tracking_store.client_for(spec_for(store))  # a real store first
    db = store / "mlflow.db"
    db.write_bytes(damage(db.read_bytes()))
    for extra in store.glob("mlflow.db-*"):  # the WAL could otherwise repair what was damaged
        extra.unlink()
    proc = subprocess.run(  # a new process, as the next run finds the file
        [sys.executable, "-c", DAMAGED_STORE, spec_for(store).tracking_uri], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.match(r"the MLflow store .*mlflow\.db is damaged \(.+\): move it aside", proc.stdout), proc.stdout
    assert "tracking=none" in proc.stdout


def test_mlflow_user_is_the_researcher_the_warehouse_records(tmp_path, store, monkeypatch):
    """MLflow's `mlflow.user` (its runs table's User) is `$GEOEVAL_USER`, on job runs, resumed
    runs and sweep parents alike: the name the warehouse's `invocations` record."""
    monkeypatch.setenv("GEOEVAL_USER", "alice-lab")
    assert tracking_owners.researcher() == "alice-lab"
    client = client_for(store)
    run = start(store, "hu")
    run.finish({}, [], "KILLED")
    resumed = start(store, "hu")  # the killed run goes on
    assert resumed.run_id == run.run_id
    resumed.finish({}, [], "FINISHED")
    parent_id = tracking.start_parent_run(spec_for(store), "exp", "sweep:exp", sweep_hash="swu")
    for run_id in (run.run_id, parent_id):
        got = client.get_run(run_id)
        assert got.data.tags["mlflow.user"] == "alice-lab" and got.info.user_id == "alice-lab"
