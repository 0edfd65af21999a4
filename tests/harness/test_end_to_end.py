"""End-to-end runs of `python -m geoeval` on tiny experiments: offline, through Inspect, the
warehouse and MLflow (and Ray where named)."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, geoeval_cmd

TINY = ("env.n_maps=1", "suite.n_per_category=2")


def run_cli(
    tmp_path: Path, *overrides: str, env: dict | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        geoeval_cmd(*overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "GEOEVAL_EXPERIMENTS_DIR": str(REPO / "experiments"), **(env or {})},
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return proc


def sample_rows(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT sample_id, metric, value FROM scores ORDER BY sample_id, metric").fetchall()
    finally:
        con.close()


def mlflow_runs(tmp_path: Path, experiment: str):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no MLflow experiment {experiment}"
    return client, client.search_runs([exp.experiment_id])


def test_oracle_self_check_scores_exactly_one(tmp_path):
    proc = run_cli(
        tmp_path,
        "suite=maptab",
        "model=oracle",
        "runner=local",
        *TINY,
        "suite.categories=[map_only,edge_only,map_edge,T,TPCR]",
    )
    rows = sample_rows(tmp_path / "results" / "geoeval.duckdb")
    assert len(rows) == 3 * 5 * 2  # 3 metrics x 5 categories x 2 queries
    for sample_id, metric, value in rows:
        if metric in ("ema", "pma"):
            assert value == 1.0, (sample_id, metric, value)
        else:  # ds: the difficulty score (2..6) of each exactly matched sample
            assert 2.0 <= value <= 6.0
    assert "MLflow run:" in proc.stdout and "Inspect log:" in proc.stdout
    client, runs = mlflow_runs(tmp_path, "Default")  # experiment_name=default is MLflow's own Default
    assert len(runs) == 1
    run = runs[0]
    assert run.data.metrics["ema"] == 1.0 and run.data.metrics["pma"] == 1.0
    assert any(k.startswith("ema/") and k.count("/") == 1 for k in run.data.metrics)  # ema/<level>
    assert any(k.startswith("ema/capability/") for k in run.data.metrics)
    assert run.data.params["suite.resolution"] == "1.0"
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"summary.md", "per_sample_scores.parquet", "resolved_config.yaml"} <= names
    assert "inspect_logs" in names
    # a single run draws its per-job plots (job_plots=auto); a sweep's jobs do not (test_sweep_mlflow);
    # a chart by level only when there are levels to compare (one group of bars repeats the summary)
    import duckdb

    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        levels = con.execute("SELECT count(DISTINCT level) FROM samples").fetchone()[0]
    finally:
        con.close()
    assert "maptab_rp_report.png" in names
    assert ("metrics_by_level.png" in names) == (levels > 1), levels


@pytest.mark.slow
def test_table_baseline_is_honest_without_tables(tmp_path):
    run_cli(tmp_path, "model=table_baseline", "tracking=none", *TINY, "suite.categories=[map_only,edge_only]")
    rows = sample_rows(tmp_path / "results" / "geoeval.duckdb")
    ema = {sid: v for sid, m, v in rows if m == "ema"}
    assert all(v == 1.0 for sid, v in ema.items() if "edge_only" in sid)
    assert all(v == 0.0 for sid, v in ema.items() if "map_only" in sid)  # it cannot see the map


@pytest.mark.slow
def test_rerun_resumes_without_redoing(tmp_path):
    run_cli(tmp_path, "model=table_baseline", "tracking=none", *TINY)
    proc = run_cli(tmp_path, "model=table_baseline", "tracking=none", *TINY)
    assert "0 sample(s) evaluated now, 8 resumed" in proc.stdout


@pytest.mark.slow
def test_inspect_log_is_a_valid_eval_file(tmp_path):
    run_cli(tmp_path, "model=oracle", "tracking=none", *TINY, "suite.categories=[T]")
    logs = list((tmp_path / "logs").rglob("*.eval"))
    assert logs
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(logs[0]))
    assert log.status == "success"
    assert len(log.samples) == 2
    assert zipfile.is_zipfile(logs[0])


@pytest.mark.slow
def test_results_cli_prints_a_leaderboard(tmp_path):
    run_cli(tmp_path, "model=oracle", "tracking=none", *TINY, "suite.categories=[edge_only]")
    run_cli(tmp_path, "model=table_baseline", "tracking=none", *TINY, "suite.categories=[edge_only]")
    proc = subprocess.run(geoeval_cmd("results"), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "geoeval/oracle" in proc.stdout and "geoeval/table_baseline" in proc.stdout
    proc = subprocess.run(
        geoeval_cmd("results", "--sql", "SELECT count(*) AS n FROM samples"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "4" in proc.stdout


@pytest.mark.slow
def test_example_plugins_tool_and_metric(tmp_path):
    run_cli(tmp_path, "+experiment=plugin_demo", "tracking=none")
    rows = sample_rows(tmp_path / "results" / "geoeval.duckdb")
    ratio = [v for _, m, v in rows if m == "route_length_ratio"]
    assert ratio and all(v == 1.0 for v in ratio)
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(next((tmp_path / "logs").rglob("*.eval"))))
    tools = {t.name for s in log.samples for e in s.events if getattr(e, "event", "") == "model" for t in e.tools}
    assert "station_neighbors" in tools


@pytest.mark.slow
def test_example_plugin_suite(tmp_path):
    run_cli(tmp_path, "+experiment=plugin_suite_demo", "tracking=none")
    rows = sample_rows(tmp_path / "results" / "geoeval.duckdb")
    acc = [v for _, m, v in rows if m == "line_set_acc"]
    assert len(acc) == 8 and all(v == 1.0 for v in acc)


@pytest.mark.slow
def test_inspect_cli_runs_the_registered_task(tmp_path):
    proc = subprocess.run(
        [
            str(Path(os.sys.executable).parent / "inspect"),
            "eval",
            "geoeval/maptab",
            "--model",
            "geoeval/oracle",
            "-T",
            "n_maps=1",
            "-T",
            "n_per_category=1",
            "-T",
            "categories=edge_only,T",
            "--log-dir",
            str(tmp_path / "ilogs"),
            "--display",
            "none",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(next((tmp_path / "ilogs").glob("*.eval"))))
    assert log.status == "success" and len(log.samples) == 2
    assert all(s.scores["geoeval"].value["ema"] == 1.0 for s in log.samples)
