"""A tiny sweep end to end through `python -m geoeval`: a point per row and an MLflow child per
point, named by its own values, points that share samples marked "reused, not re-run" in the
table, the console and `geoeval results`; the console output within 120 columns; the parent run
opens on the result (description = the sweep table, an MLflow table, the plot as an image,
headline metrics logged first, traces, the points as its dataset)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import geoeval_cmd

# 2 resolutions x 2 settings; the edge_tab points share one run (resolution does not change them)
SWEEP = (
    "+experiment=maptab_resolution_sweep",
    "runner=local",
    "env.n_maps=1",
    "suite.n_per_category=1",
    "suite.categories=[edge_only,map_only]",
    "suite.resolution=1,0.03125",
    "suite.setting=map,edge_tab",
)


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    cwd = tmp_path_factory.mktemp("sweep")
    proc = subprocess.run(geoeval_cmd(*SWEEP), cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return cwd, proc


def sweep_dir(cwd: Path) -> Path:
    (found,) = list((cwd / "multirun").glob("*/*"))
    return found


@pytest.mark.slow
def test_every_point_has_its_row_and_the_table_says_what_was_reused(swept):
    cwd, proc = swept
    folder = sweep_dir(cwd)
    points = [json.loads(line) for line in (folder / "sweep_points.jsonl").read_text().splitlines()]
    assert len(points) == 4
    table = (folder / "sweep_table.md").read_text()
    every_point = table.split("## Every point")[1]
    names = ["resolution=1 setting=map", "resolution=0.03125 setting=map", "resolution=1 setting=edge_tab"]
    for name in [*names, "resolution=0.03125 setting=edge_tab"]:
        assert f"| {name} " in every_point, name
    assert "reused, not re-run: resolution=1 setting=edge_tab" in every_point
    assert "## ema: resolution across" in table and "- **ema**: Exact Match Accuracy" in table
    assert "n = 2 samples per point" in table and "Offline stand-ins" in table
    # the console: the grids, the legend, the offline note and where everything is, 120 columns wide
    assert "## ema: resolution across" in proc.stdout and "Reused, not re-run" in proc.stdout
    assert "[geoeval] sweep outputs:\n  table (every point, one row each): " in proc.stdout
    assert "mlflow ui --backend-store-uri" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 120
    assert "warning" not in proc.stderr.lower()  # a clean first run
    from inspect_ai.log import read_eval_log

    tags = [tuple(read_eval_log(str(log), header_only=True).eval.tags) for log in (cwd / "logs").rglob("*.eval")]
    points = {next(t for t in found if t.startswith("sweep:")) for found in tags}  # inspect view tells them apart
    assert points == {f"sweep:{name}" for name in [*names, "resolution=0.03125 setting=edge_tab"]} - {
        "sweep:resolution=0.03125 setting=edge_tab"  # reused: no log of its own
    }, tags
    assert all("model=geoeval/perception_baseline" in found for found in tags)
    results = subprocess.run(geoeval_cmd("results"), cwd=cwd, capture_output=True, text=True, check=False)
    edge = [line for line in results.stdout.splitlines() if "edge_tab" in line]
    assert len(edge) == 1 and "1x, not re-run" in edge[0], results.stdout + results.stderr


@pytest.mark.slow
def test_the_parent_run_opens_on_the_sweep_table(swept):
    from mlflow.tracking import MlflowClient

    cwd, _ = swept
    client = MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlruns' / 'mlflow.db'}")
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, max_results=100)
    (parent,) = [r for r in runs if r.data.tags.get("geoeval.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.info.run_name for r in children) == sorted(
        f"resolution={r} setting={s}" for r in ("1", "0.03125") for s in ("map", "edge_tab")
    )
    description = parent.data.tags["mlflow.note.content"]
    assert description.startswith("# Sweep: maptab_resolution_sweep") and "## ema: resolution across" in description
    assert f"get-artifact?path=sweep_plot.png&run_uuid={parent.info.run_id}" in description
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"sweep_table.md", "sweep_plot.png", "sweep_points.json", "images"} <= artifacts
    table = json.loads(Path(client.download_artifacts(parent.info.run_id, "sweep_points.json", str(cwd))).read_text())
    assert len(table["data"]) == 4 and "reused" in table["columns"]
    history = client.get_metric_history(parent.info.run_id, "ema")
    assert len(history) == 1
    jobs = client.get_metric_history(parent.info.run_id, "sweep/jobs")
    assert history[0].timestamp <= jobs[0].timestamp  # the headline metrics first
    assert [d.dataset.name for d in parent.inputs.dataset_inputs] == ["maptab_resolution_sweep-sweep-points"]
    traces = client.search_traces(locations=experiments, max_results=100)
    assert len(traces) >= 4  # the sweep traces its samples by default (tracking.max_traces per job)
