"""Screenshot the MLflow UI of a sweep in headless Chromium, so that what geoeval logs can be
looked at (and attached to a review) without opening a browser: the parent run's page (its
description is the sweep table, its plot below), the experiment's runs table (the parent's
headline metric columns, its children named by their swept values) and the first child's page.

    python scripts/mlflow_screenshot.py                          # newest sweep in mlruns/mlflow.db
    python scripts/mlflow_screenshot.py --store /tmp/run/mlruns/mlflow.db --out shots/ --experiment maptab_resolution_sweep

It starts `mlflow server` on a free 127.0.0.1 port, finds the newest sweep parent run (tag
`geoeval.kind=sweep`) and writes `sweep_parent.png`, `runs_table.png` and `child_run.png`.
With Playwright installed (`pip install playwright`) each page is waited for until the texts it
should show have rendered (checked: exit status 1 when one is missing) and shot whole; without
it, Chromium's own `--screenshot` takes the window after a fixed rendering time. Chromium:
`--chromium PATH`, else one on PATH (Debian: `apt-get install chromium`), else Playwright's own
(`python -m playwright install chromium`). Everything stays on this machine.
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


def find_chromium(given: str | None) -> str | None:
    """A Chromium binary: `given`, else the first on PATH; None when there is none."""
    for name in [given] if given else CHROMIUM_NAMES:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def newest_sweep(store_uri: str, experiment: str | None) -> tuple[str, str, list[str], list[str]]:
    """(experiment id, parent run id, child run ids, the parent's headline metrics) of the newest sweep."""
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
    headline = [m for m in parent.data.tags.get("geoeval.headline_metrics", "").split(",") if m]
    return parent.info.experiment_id, parent.info.run_id, [c.info.run_id for c in children], headline


def shoot_with_playwright(chromium: str | None, pages: list[tuple], size: str) -> list[str]:
    """Each (url, png, texts, prepare) shot whole once `prepare(page)` has run and its texts
    show; returns what was missing."""
    from playwright.sync_api import sync_playwright

    width, height = (int(v) for v in size.split(","))
    missing = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(headless=True, executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": width, "height": height})
        for url, out, texts, prepare in pages:
            page.goto(url)
            if texts:
                page.get_by_text(texts[0], exact=False).first.wait_for(timeout=30_000)
            prepare(page)
            for text in texts:
                try:
                    page.get_by_text(text, exact=False).first.wait_for(timeout=30_000)
                except Exception:  # noqa: BLE001 - a text that never showed is reported, not raised
                    missing.append(f"{out.name}: {text!r}")
            page.wait_for_timeout(1500)  # charts and images finish drawing
            page.screenshot(path=str(out), full_page=True)
            print(f"wrote {out}")
        browser.close()
    return missing


def _close_assistant(page) -> None:
    """MLflow 3's assistant panel takes a third of the window: closed when it shows."""
    close = page.get_by_role("button", name="Close")
    if close.count():
        close.first.click()


def _expand_description(page) -> None:
    _close_assistant(page)
    more = page.get_by_text("Show more", exact=True)
    if more.count():
        more.first.click()


def _show_columns(metrics: list[str]):
    """What a reader does on the runs table: show the headline metric columns (MLflow 3 lists no
    metric column until one is chosen, a choice kept in the browser) and open the sweep's row."""

    def prepare(page) -> None:
        _close_assistant(page)
        page.get_by_text("Columns", exact=True).first.click()
        for metric in metrics:
            page.get_by_placeholder("Search columns").fill(metric)
            page.get_by_text(metric, exact=True).first.click()
        page.keyboard.press("Escape")
        toggle = page.locator("[data-component-id$='runnamecellrenderer.tsx_46']")  # the parent's tree toggle
        if toggle.count():
            toggle.first.click()

    return prepare


def shoot_with_chromium(chromium: str, url: str, out: Path, size: str) -> None:
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
    p.add_argument("--size", default="1600,1800", help="window size, WIDTH,HEIGHT (MLflow pages scroll inside it)")
    args = p.parse_args(argv)
    if not args.store.exists():
        raise SystemExit(f"no MLflow store at {args.store}")
    store_uri = f"sqlite:///{args.store.resolve()}"
    chromium = find_chromium(args.chromium)
    try:
        import playwright.sync_api  # noqa: F401 - only whether it is installed
    except ImportError:
        if chromium is None:
            raise SystemExit("no Chromium found: install it (apt install chromium) or pass --chromium PATH") from None
        playwright = False
    else:
        playwright = True
    experiment_id, parent_id, children, headline = newest_sweep(store_uri, args.experiment)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store_uri]
        + ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/#/experiments/{experiment_id}"
    pages = [
        (f"{base}/runs/{parent_id}", args.out / "sweep_parent.png", ["Sweep:", *headline[:1]], _expand_description),
        (f"{base}/runs", args.out / "runs_table.png", ["sweep:", *headline], _show_columns(headline)),
    ]
    if children:
        pages.append((f"{base}/runs/{children[0]}", args.out / "child_run.png", [], _close_assistant))
    try:
        wait_for(f"http://127.0.0.1:{port}/health")
        args.out.mkdir(parents=True, exist_ok=True)
        if playwright:
            missing = shoot_with_playwright(chromium, pages, args.size)
        else:
            missing = []
            for url, out, _, _ in pages:
                shoot_with_chromium(chromium, url, out, args.size)
    finally:
        server.terminate()
        server.wait(timeout=30)
    for what in missing:
        print(f"not shown: {what}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
