"""Screenshot the MLflow UI of a sweep in headless Chromium, so that a change to what geoeval logs
can be looked at (and attached to a review) without opening a browser.

    python scripts/mlflow_screenshot.py                          # newest sweep in mlruns/mlflow.db
    python scripts/mlflow_screenshot.py --store mlruns/mlflow.db --out shots/ --experiment maptab_resolution_sweep

It starts `mlflow server` on a free 127.0.0.1 port, finds the newest sweep parent run (tag
`geoeval.kind=sweep`) of the experiment, and writes three PNGs: the experiment's runs table
(children named by their swept values), the parent run's page (sweep metrics, table, plot) and
its first child's page. Needs a Chromium binary (`apt install chromium`, or `--chromium PATH`);
everything stays on this machine.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout_s: float = 90.0) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"mlflow server did not answer at {url} within {timeout_s:.0f} s")


def find_chromium(given: str | None) -> str:
    for name in [given] if given else CHROMIUM_NAMES:
        path = shutil.which(name) if name else None
        if path:
            return path
    raise SystemExit("no Chromium found: install it (apt install chromium) or pass --chromium PATH")


def newest_sweep(store_uri: str, experiment: str | None) -> tuple[str, str, list[str]]:
    """(experiment id, parent run id, child run ids) of the newest sweep."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=store_uri)
    experiments = [e for e in client.search_experiments() if experiment in (None, e.name)]
    if not experiments:
        raise SystemExit(f"no experiment {experiment!r} in {store_uri}")
    ids = [e.experiment_id for e in experiments]
    parents = client.search_runs(
        ids, filter_string="tags.`geoeval.kind` = 'sweep'", order_by=["start_time DESC"], max_results=1
    )
    if not parents:
        raise SystemExit(
            f"no sweep parent run in {store_uri} (run a sweep first, e.g. +experiment=maptab_resolution_sweep)"
        )
    parent = parents[0]
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'", max_results=1
    )
    return parent.info.experiment_id, parent.info.run_id, [c.info.run_id for c in children]


def screenshot(chromium: str, url: str, out: Path, size: str) -> None:
    subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={size}",
            "--virtual-time-budget=20000",
            f"--screenshot={out}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", type=Path, default=Path("mlruns/mlflow.db"), help="the SQLite MLflow store")
    p.add_argument("--experiment", help="experiment name (default: the newest sweep of any)")
    p.add_argument("--out", type=Path, default=Path("mlflow_screenshots"), help="folder for the PNGs")
    p.add_argument("--chromium", help="path of a Chromium binary")
    p.add_argument("--size", default="1600,1000", help="window size, WIDTH,HEIGHT")
    args = p.parse_args(argv)
    if not args.store.exists():
        raise SystemExit(f"no MLflow store at {args.store}")
    store_uri = f"sqlite:///{args.store.resolve()}"
    chromium = find_chromium(args.chromium)
    experiment_id, parent_id, children = newest_sweep(store_uri, args.experiment)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            store_uri,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/health")
        args.out.mkdir(parents=True, exist_ok=True)
        screenshot(chromium, f"{base}/#/experiments/{experiment_id}/runs", args.out / "runs_table.png", args.size)
        screenshot(
            chromium, f"{base}/#/experiments/{experiment_id}/runs/{parent_id}", args.out / "sweep_parent.png", args.size
        )
        if children:
            screenshot(
                chromium,
                f"{base}/#/experiments/{experiment_id}/runs/{children[0]}",
                args.out / "child_run.png",
                args.size,
            )
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
