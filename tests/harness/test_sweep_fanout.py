"""Sweep fan-out (`runner.max_concurrent_jobs`): the same per-job results as one job at a time,
one MLflow parent with a child per job named by its swept values, one point per job; a job whose
worker process dies, or that stops with an error, makes the sweep exit 1 while the other jobs
finish."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
from pathlib import Path

import pytest

from geoeval.core.run import sweep_job
from geoeval.core.sweep import launcher
from geoeval.core.sweep import points as sweep_points
from geoeval.core.sweep import progress as sweep_progress
from tests.conftest import geoeval_cmd

# 4 jobs of the quickest honest offline config: the table baseline's scores differ by seed and setting
SWEEP = (
    "-m",
    "runner=local",
    "env.n_maps=1",
    "suite.n_per_category=1",
    "seed=0,1",
    "suite.setting=edge_tab,map",
    "tracking.traces=none",
)


def run_sweep(cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        geoeval_cmd(*SWEEP, *extra), cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def sweep_dir(cwd: Path) -> Path:
    (found,) = list((cwd / "multirun").glob("*/*"))
    return found


def mlflow_runs(cwd: Path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlruns' / 'mlflow.db'}")
    return client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=100)


@pytest.mark.slow
def test_two_at_a_time_gives_the_results_of_one_at_a_time(tmp_path):
    one = run_sweep(tmp_path / "one")
    two = run_sweep(tmp_path / "two", "runner.max_concurrent_jobs=2")
    assert one.returncode == 0, one.stderr[-3000:]
    assert two.returncode == 0, two.stderr[-3000:]
    assert "4 job(s), 2 at a time" in two.stderr
    assert "Launching" not in two.stderr + two.stdout  # Hydra's basic launcher's message is gone
    assert two.stderr.count("[geoeval] sweep ") >= 4 and "sweep 4/4 done" in two.stderr
    assert "## By setting" not in two.stdout  # per-job tables are off inside a sweep

    points = {}
    for name in ("one", "two"):
        lines = (sweep_dir(tmp_path / name) / "sweep_points.jsonl").read_text().splitlines()
        assert len(lines) == 4
        points[name] = {p["job"]: p for p in map(json.loads, lines)}
    assert sorted(points["two"]) == [0, 1, 2, 3]
    for job, p in points["one"].items():
        q = points["two"][job]
        assert q["overrides"].pop("runner.max_concurrent_jobs") == "2"
        assert (q["overrides"], q["run_hash"], q["metrics"], q["counts"]) == (
            p["overrides"],
            p["run_hash"],
            p["metrics"],
            p["counts"],
        )
    assert len({json.dumps(p["metrics"], sort_keys=True) for p in points["one"].values()}) > 1  # not all alike
    assert (sweep_dir(tmp_path / "two") / "sweep_table.md").read_text() == (
        sweep_dir(tmp_path / "one") / "sweep_table.md"
    ).read_text()

    for name in ("one", "two"):
        runs = mlflow_runs(tmp_path / name)
        parents = [r for r in runs if r.data.tags.get("geoeval.kind") == "sweep"]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
        assert sorted(r.info.run_name for r in children) == [
            "seed=0 setting=edge_tab",
            "seed=0 setting=map",
            "seed=1 setting=edge_tab",
            "seed=1 setting=map",
        ]
        assert all(r.info.status == "FINISHED" for r in children)


@pytest.mark.slow
def test_a_job_whose_worker_dies_fails_the_sweep_and_the_others_finish(tmp_path):
    marker = tmp_path / "crashed-once"  # the agent kills its process on its first call, once
    proc = run_sweep(tmp_path / "run", "runner.max_concurrent_jobs=2", f"+model.args.crash_once_marker={marker}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert marker.exists()
    points = sweep_job.read_points(sweep_dir(tmp_path / "run") / "sweep_points.jsonl")
    assert [p["job"] for p in points] == [0, 1, 2, 3]
    crashed = [p for p in points if p.get("crashed")]
    assert len(crashed) == 1 and "worker process died" in crashed[0]["failed"]
    assert all(p["counts"]["n_scored"] == p["n"] > 0 for p in points if not p.get("crashed"))
    assert f"sweep job {crashed[0]['job']} FAILED" in proc.stderr
    parent = [r for r in mlflow_runs(tmp_path / "run") if r.data.tags.get("geoeval.kind") == "sweep"]
    assert [r.info.status for r in parent] == ["FAILED"]


# --- the pieces, without running a sweep --------------------------------------------------------


def test_run_names_are_the_swept_values():
    jobs = [
        ["suite.resolution=0.25", "suite.setting=map", "runner=local"],
        ["suite.resolution=0.5", "suite.setting=map", "runner=local"],
        ["suite.resolution=0.25", "suite.setting=edge_tab", "runner=local"],
    ]
    assert sweep_points.job_labels(jobs) == [
        "resolution=0.25 setting=map",
        "resolution=0.5 setting=map",
        "resolution=0.25 setting=edge_tab",
    ]
    # two swept keys that end alike keep their whole names; a one-job sweep is named by its overrides
    assert sweep_points.job_labels([["env.seed=1", "seed=1"], ["env.seed=2", "seed=3"]]) == [
        "env.seed=1 seed=1",
        "env.seed=2 seed=3",
    ]
    assert sweep_points.job_labels([["+experiment=x", "seed=1"]]) == ["+experiment=x seed=1"]
    assert sweep_points.job_labels([[]]) == ["base"]
    # the parent run: the experiment and what it sweeps (not `sweep:default` for every sweep)
    assert sweep_points.sweep_run_name("default", jobs) == "sweep:default over resolution, setting"
    assert sweep_points.sweep_run_name("study", [["seed=1"]]) == "sweep:study"


def _append_many(path: str, worker: int) -> None:
    for i in range(200):
        sweep_points.append_point(Path(path), {"job": worker * 1000 + i, "pad": "x" * 5000})


def test_points_appended_by_concurrent_processes_stay_whole_lines(tmp_path):
    path = tmp_path / "sweep_points.jsonl"
    procs = [multiprocessing.get_context("spawn").Process(target=_append_many, args=(str(path), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 600
    assert sorted(json.loads(line)["job"] for line in lines) == sorted(
        w * 1000 + i for w in range(3) for i in range(200)
    )


def test_read_points_keeps_each_jobs_last_line_in_job_order(tmp_path):
    path = tmp_path / "sweep_points.jsonl"
    for point in ({"job": 2, "v": 1}, {"job": 0, "v": 1}, {"job": 2, "v": 2}):
        sweep_points.append_point(path, point)
    assert sweep_job.read_points(path) == [{"job": 0, "v": 1}, {"job": 2, "v": 2}]
    assert sweep_job.read_points(tmp_path / "missing.jsonl") == []


def test_progress_line_counts_jobs_and_estimates_the_rest(capsys):
    import sys

    progress = sweep_progress.SweepProgress(total=5, concurrency=2, stream=sys.stderr)
    progress.job_done(
        0, "seed=0", {"job": 0, "metrics": {"ema": 0.5, "pma": 0.25, "n_samples": 4}, "n": 4}, 10.0, headline=("ema",)
    )
    progress.job_done(
        1, "seed=1", {"job": 1, "failed": "errors past fail_on_error", "metrics": {"ema": 0.0}, "n": 4}, 30.0
    )
    progress.job_done(2, "seed=2", sweep_points.crash_point(2, ["seed=2"], "exit code 2"), 0.0)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[geoeval] sweep 1/5 done, ETA 20s | job 0 seed=0: ema=0.500 (n=4) [10s]"
    # mean 20 s a job, 3 left, 2 at a time: 30 s
    assert lines[1] == (
        "[geoeval] sweep 2/5 done, 1 failed, ETA 30s | job 1 seed=1: "
        "FAILED: errors past fail_on_error · ema=0.000 (n=4) [30s]"
    )
    # a crash's 0 s is left out of the mean: still 20 s a job, 2 left, 2 at a time
    assert lines[2] == "[geoeval] sweep 3/5 done, 2 failed, ETA 20s | job 2 seed=2: CRASHED: exit code 2 [0s]"


def test_the_shipped_config_selects_geoevals_launcher_and_hydra_accepts_it():
    from hydra import compose, initialize_config_module
    from hydra.core.plugins import Plugins

    import geoeval.cli.app  # noqa: F401  registers the launcher with Hydra

    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=["runner.max_concurrent_jobs=3"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_ == f"{launcher.HYDRA_MODULE}.GeoevalLauncher"
    assert cfg.runner.max_concurrent_jobs == 3
    instance = Plugins.instance()._instantiate(cfg.hydra.launcher)  # what Hydra's instantiate_launcher does
    assert isinstance(instance, launcher.GeoevalLauncher) and instance.job_tables is False


def test_max_concurrent_jobs_is_validated(tmp_path):
    from geoeval.core.errors import GeoevalError
    from tests.conftest import compose_spec

    assert compose_spec(tmp_path).runner.max_concurrent_jobs == 1
    assert compose_spec(tmp_path, "runner=ray", "runner.max_concurrent_jobs=4").runner.max_concurrent_jobs == 4
    with pytest.raises(GeoevalError, match="runner.max_concurrent_jobs"):
        compose_spec(tmp_path, "runner.max_concurrent_jobs=0")


@pytest.mark.slow
def test_a_job_that_stops_with_an_error_fails_the_sweep_one_at_a_time_too(tmp_path):
    # valid for the schema, so the sweep starts; the map_edge_tab job finds none of its categories
    # when it builds its samples and stops with geoeval's error, the other job still runs
    cwd = tmp_path / "run"
    cwd.mkdir()
    proc = subprocess.run(
        geoeval_cmd(
            "-m",
            "runner=local",
            "tracking=none",
            "env.n_maps=1",
            "suite.n_per_category=1",
            "suite.categories=[edge_only]",
            "suite.setting=map_edge_tab,edge_tab",
        ),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    points = sweep_job.read_points(sweep_dir(cwd) / "sweep_points.jsonl")
    assert [(p["job"], bool(p.get("crashed"))) for p in points] == [(0, True), (1, False)]
    assert "keeps none of suite.categories" in points[0]["failed"]
    assert points[1]["counts"]["n_scored"] == points[1]["n"] > 0
    assert "sweep job 0 FAILED: Invalid config: suite.setting='map_edge_tab'" in proc.stderr
    table = (sweep_dir(cwd) / "sweep_table.md").read_text()
    every_point = table.split("## Every point")[1].splitlines()
    rows = [line for line in every_point if line.startswith("| ") and not line.startswith(("| point", "| ---"))]
    assert len(rows) == 1 and "setting=edge_tab" in rows[0]  # the job that ran, not the crashed one
    assert "map_edge_tab" not in table and "| 1.00" in table
