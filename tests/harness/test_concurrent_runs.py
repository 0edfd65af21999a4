"""Several runs at once: two `python -m geoeval` processes started together on a fresh `mlruns/`
(each with its own warehouse) both finish, and the MLflow store stays readable for a third; and
four runs of different configs on ONE warehouse, while `geoeval results` polls it, store every
sample exactly once."""

from __future__ import annotations

import subprocess
import time

import duckdb
import pytest

from tests.conftest import geoeval_cmd

SMALL = ("model=oracle", "suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=2")


@pytest.mark.slow
def test_two_runs_on_a_fresh_mlflow_store_both_finish(tmp_path):
    procs = [
        subprocess.Popen(
            geoeval_cmd(*SMALL, f"seed={i}", f"results_db=results/r{i}.duckdb"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    # geoeval's `experiment_name: default` is MLflow's own "Default": one experiment, not two
    # that differ by case, and its artifacts live beside the store, not in the directory run from
    [experiment] = client.search_experiments()
    assert experiment.name == "Default"
    assert experiment.artifact_location.startswith((tmp_path / "mlruns" / "artifacts").as_uri())
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]
    # the store still takes a new run
    third = subprocess.run(geoeval_cmd(*SMALL, "seed=7"), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr[-2000:]


@pytest.mark.slow
def test_four_runs_share_one_warehouse_while_results_reads_it(tmp_path):
    procs = [
        subprocess.Popen(
            geoeval_cmd(*SMALL, f"seed={i}", "tracking=none"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    answered = 0
    while any(p.poll() is None for p in procs):
        if (tmp_path / "results" / "geoeval.duckdb").exists():
            reader = subprocess.run(geoeval_cmd("results"), cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert reader.returncode == 0, reader.stderr[-2000:]
            answered += 1
        time.sleep(0.5)
    outputs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err[-2000:] for _, err in outputs]
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        per_run = con.execute("SELECT run_hash, count(*), count(DISTINCT sample_id) FROM samples GROUP BY 1").fetchall()
    finally:
        con.close()
    assert len(per_run) == 4 and all(n == distinct == 2 for _, n, distinct in per_run)
    assert answered >= 1  # `geoeval results` answered while the runs wrote


@pytest.mark.slow
def test_the_same_config_started_twice_on_one_warehouse_evaluates_each_sample_once(tmp_path):
    """Two researchers start the same config at once on a shared warehouse, against a paid
    (here: a counting local OpenAI-compatible) model: the second waits for the first's claimed
    samples and reads them; the model is asked once per sample, and both runs report them all."""
    import os
    import threading

    from tests.cost.policy_server import PolicyServer

    args = (
        "model=openai_api",
        "model.name=openai-api/local/policy",
        "suite=maptab",
        "suite.categories=[map_edge]",
        "env.n_maps=1",
        "limit=4",
        "runner.max_samples=1",
        f"results_db={tmp_path / 'shared.duckdb'}",
        "tracking=none",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCAL_", "GEOEVAL_"))}
    env["LOCAL_API_KEY"] = "test-key"
    with PolicyServer("table_baseline", "maptab") as server:
        real, lock, calls = server.policy, threading.Lock(), [0]
        arrived, gate, second_call, bob_waits = (threading.Event() for _ in range(4))

        def gated(*a):  # model calls wait until bob has decided; a second one before that is bob's
            with lock:
                calls[0] += 1
                if calls[0] >= 2 and not gate.is_set():
                    second_call.set()
            arrived.set()
            gate.wait(300)
            return real(*a)

        server.policy = gated
        cmd = geoeval_cmd(*args, f"model.base_url={server.base_url}")
        procs, errs = [], {0: [], 1: []}
        for name in ("alice", "bob"):
            (tmp_path / name).mkdir()
            procs.append(
                subprocess.Popen(
                    cmd, cwd=tmp_path / name, env={**env, "GEOEVAL_USER": name}, stderr=subprocess.PIPE, text=True
                )
            )
            if name == "alice":
                assert arrived.wait(300), "alice's first model call never came"  # her claims are in

        def read(i: int) -> None:
            for line in procs[i].stderr:
                errs[i].append(line)
                if i == 1 and "being evaluated by another process" in line:
                    bob_waits.set()

        readers = [threading.Thread(target=read, args=(i,), daemon=True) for i in (0, 1)]
        for t in readers:
            t.start()
        while not (bob_waits.is_set() or second_call.is_set() or procs[1].poll() is not None):
            bob_waits.wait(1)  # whichever comes first: bob waits for alice, or bob calls the model
        gate.set()
        codes = [p.wait(300) for p in procs]
        for t in readers:
            t.join(60)
        assert not second_call.is_set(), "bob called the model for a sample alice was evaluating"
        assert bob_waits.is_set(), "".join(errs[1])[-3000:]
        assert codes == [0, 0], ["".join(e)[-2000:] for e in errs.values()]
        assert server.requests == 4  # one model call per sample (table_baseline answers in one), none twice
    con = duckdb.connect(str(tmp_path / "shared.duckdb"), read_only=True)
    try:
        who = con.execute("SELECT researcher, n_evaluated, n_reused FROM invocations ORDER BY researcher").fetchall()
        assert con.execute("SELECT count(*) FROM samples").fetchall() == [(4,)]
        assert con.execute("SELECT count(*) FROM claims").fetchall() == [(0,)]  # both let go
    finally:
        con.close()
    assert who == [("alice", 4, 0), ("bob", 0, 4)]
