"""A resolution sweep: parent + child MLflow runs, read back over the REST API of a real MLflow
server; the sweep table and plot; EMA falling with resolution for the perception baseline."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import geoeval_cmd


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rest(base: str, path: str, payload: dict | None = None) -> dict:
    if payload is None:
        with urllib.request.urlopen(f"{base}{path}", timeout=10) as r:
            return json.loads(r.read())
    req = urllib.request.Request(
        f"{base}{path}", data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.mark.slow
def test_resolution_sweep_tracked_in_mlflow(tmp_path):
    proc = subprocess.run(
        geoeval_cmd(
            "+experiment=maptab_resolution_sweep",
            "runner=local",
            "suite.resolution=1,0.03125",
            "suite.setting=map",
            "env.n_maps=1",
            "suite.n_per_category=4",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "MLflow parent run:" in proc.stdout
    sweep_dirs = list((tmp_path / "multirun").glob("*/*"))
    assert len(sweep_dirs) == 1
    table = (sweep_dirs[0] / "sweep_table.md").read_text()
    assert "resolution" in table
    assert (sweep_dirs[0] / "sweep_plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = [json.loads(x) for x in (sweep_dirs[0] / "sweep_points.jsonl").read_text().splitlines()]
    ema = {float(p["overrides"]["suite.resolution"]): p["metrics"]["ema"] for p in points}
    assert ema[1.0] > ema[0.03125], ema
    # job_plots=auto: a sweep's jobs write their tables but no plots (the sweep plots its curves once)
    for p in points:
        job_files = {f.name for f in Path(p["out_dir"]).rglob("*") if f.is_file()}
        assert {"summary.md", "maptab_rp_report.md"} <= job_files, job_files
        assert not {f for f in job_files if f.endswith(".png")}, job_files

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path}/mlruns/mlflow.db",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2)
                break
            except Exception:
                if time.time() > deadline or server.poll() is not None:
                    raise AssertionError("MLflow server did not start") from None
                time.sleep(1)
        exp = rest(base, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=maptab_resolution_sweep")
        exp_id = exp["experiment"]["experiment_id"]
        runs = rest(base, "/api/2.0/mlflow/runs/search", {"experiment_ids": [exp_id], "max_results": 100})["runs"]
        tags = [{t["key"]: t["value"] for t in r["data"].get("tags", [])} for r in runs]
        parents = [r for r, t in zip(runs, tags) if t.get("geoeval.kind") == "sweep"]
        assert len(parents) == 1
        parent_id = parents[0]["info"]["run_id"]
        children = [r for r, t in zip(runs, tags) if t.get("mlflow.parentRunId") == parent_id]
        assert len(children) == 2
        # named by the swept values (the fixed overrides and the job number are not part of the name)
        assert sorted(c["info"]["run_name"] for c in children) == ["resolution=0.03125", "resolution=1"]
        for child in children:
            keys = {m["key"] for m in child["data"]["metrics"]}
            assert {"ema", "pma", "ds"} <= keys
        arts = rest(base, f"/api/2.0/mlflow/artifacts/list?run_id={parent_id}")
        names = {f["path"] for f in arts.get("files", [])}
        assert {"sweep_table.md", "sweep_plot.png"} <= names
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
