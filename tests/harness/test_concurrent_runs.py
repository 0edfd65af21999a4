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
