"""Screenshot the first screens of a sweep's results in headless Chromium: the MLflow runs table
(the headline metric columns shown, through geoeval's shared view), the sweep's parent run page,
and `inspect view`'s list of the sweep's logs (told apart by their sweep points). What
docs/results.md shows is made by this script (`--sweep`), and tests/harness/test_first_screens.py
runs it.

    python scripts/first_screens.py --sweep --out docs/images     # a small sweep first, in a temp folder
    python scripts/first_screens.py --store mlruns/mlflow.db --logs logs --out shots/

It starts `mlflow server` and `inspect view` on free 127.0.0.1 ports, finds the newest sweep
parent run (tag `geoeval.kind=sweep`), writes `mlflow_runs_table.png`, `mlflow_sweep_parent.png`
and `inspect_view.png`, and checks that each page shows what it should (the metric columns, the
sweep table, two sweep points told apart): exit status 1 when one is missing. With Playwright (in the
`test` extra; it drives the Chromium found here, it downloads no browser) each page is waited
for, MLflow's assistant panel closed and the sweep's row opened; without it, Chromium's own
`--screenshot` takes the page after a rendering budget and `--dump-dom` is checked (best
effort: `inspect view` may not have loaded every log's header by then). Chromium: `--chromium
PATH`, else one on PATH (Debian: `apt-get install chromium`). Everything stays on this machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell")
#: what headless Chromium needs on a machine without a desktop session or network
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
#: the small sweep `--sweep` runs: two resolutions x two input settings (one point reused)
SWEEP = (
    "+experiment=maptab_resolution_sweep",
    "runner=local",
    "model=oracle",
    "env.n_maps=1",
    "suite.n_per_category=1",
    "suite.categories=[edge_only,map_only]",
    "suite.resolution=1,0.5",
    "suite.setting=map,edge_tab",
)
SIZE = (1600, 900)


@dataclass
class Page:
    url: str
    out: Path
    texts: list[str]  # what the page must show
    prepare: Callable[[object], None] | None = None  # Playwright: what a reader does first
    missing: list[str] = field(default_factory=list)
    enough: int | None = None  # this many of `texts` suffice (None: all of them)

    def failed(self) -> list[str]:
        """The texts missing, when too many are (`enough`)."""
        shown = len(self.texts) - len(self.missing)
        return [] if self.enough is not None and shown >= self.enough else self.missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, timeout_s: float = 180.0) -> None:
    """Until `url` answers 200 (a wait bound for servers starting on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server for {url} exited ({proc.returncode}) before it answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"no answer at {url} within {timeout_s:.0f} s")


def find_chromium(given: str | None) -> str | None:
    for name in [given] if given else CHROMIUM_NAMES:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def run_sweep(folder: Path) -> None:
    """The small sweep the docs' screenshots show, run in `folder` (its own results and store)."""
    proc = subprocess.run(
        [sys.executable, "-m", "geoeval", *SWEEP], cwd=folder, capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        raise SystemExit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def newest_sweep(store_uri: str, experiment: str | None) -> tuple[str, str, list[str], list[str]]:
    """(experiment id, parent run id, the children's names, the parent's headline metrics)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=store_uri)
    ids = [e.experiment_id for e in client.search_experiments() if experiment in (None, e.name)]
    if not ids:
        raise SystemExit(f"no experiment {experiment!r} in {store_uri}")
    parents = client.search_runs(
        ids, filter_string="tags.`geoeval.kind` = 'sweep'", order_by=["start_time DESC"], max_results=1
    )
    if not parents:
        raise SystemExit(f"no sweep parent run in {store_uri} (run a sweep first, or pass --sweep)")
    parent = parents[0]
    children = client.search_runs(
        [parent.info.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'"
    )
    headline = [m for m in parent.data.tags.get("geoeval.headline_metrics", "").split(",") if m]
    return parent.info.experiment_id, parent.info.run_id, [c.info.run_name for c in children], headline


def sweep_tags(logs: Path) -> list[str]:
    """The sweep points the logs are tagged with (a point that reused another's samples has no
    log of its own), each once: what `inspect view` must show."""
    from inspect_ai.log import read_eval_log

    found = []
    for log in sorted(logs.rglob("*.eval")):
        found += [t for t in read_eval_log(str(log), header_only=True).eval.tags or [] if t.startswith("sweep:")]
    if not found:
        raise SystemExit(f"no log in {logs} is tagged with a sweep point")
    return list(dict.fromkeys(found))


def _close_assistant(page) -> None:
    """MLflow 3's assistant panel takes a third of the window: closed when it shows."""
    close = page.get_by_role("button", name="Close")
    if close.count():
        close.first.click()


def _expand_description(page) -> None:
    """The parent run's description is the sweep table: shown whole."""
    _close_assistant(page)
    more = page.get_by_text("Show more", exact=True)
    try:
        more.first.wait_for(timeout=30_000)
        more.first.click()
    except Exception:  # noqa: BLE001 - a short description shows whole without it
        pass


def _open_sweep_row(page) -> None:
    _close_assistant(page)
    toggle = page.locator("[data-component-id$='runnamecellrenderer.tsx_46']")  # the parent's tree toggle
    if toggle.count():
        toggle.first.click()


def shoot_with_playwright(chromium: str, pages: list[Page]) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            headless=True, executable_path=chromium, args=[f for f in CHROMIUM_FLAGS if f != "--headless=new"]
        )
        tab = browser.new_page(viewport={"width": SIZE[0], "height": SIZE[1]})
        for page in pages:
            tab.goto(page.url)
            if page.texts:
                try:  # the page has rendered once its first text shows
                    tab.get_by_text(page.texts[0], exact=False).first.wait_for(timeout=60_000)
                except Exception:  # noqa: BLE001 - reported below with the others
                    pass
            if page.prepare is not None:
                page.prepare(tab)
            page.missing = list(page.texts)
            for attempt in range(4):  # the viewer fetches each log's header once: a slow one, again on a reload
                if attempt:
                    tab.reload()
                    if page.prepare is not None:
                        page.prepare(tab)
                deadline = time.monotonic() + 60  # a wait bound on a busy machine, not a check
                while page.missing and time.monotonic() < deadline:
                    shown = tab.inner_text("body")
                    page.missing = [text for text in page.texts if text not in shown]
                    tab.wait_for_timeout(500)
                if not page.failed() and (not page.missing or attempt):
                    break
            tab.wait_for_timeout(1500)  # charts and images finish drawing (not a check)
            tab.screenshot(path=str(page.out), full_page=False)
            print(f"wrote {page.out}")
        browser.close()


def shoot_with_chromium(chromium: str, pages: list[Page]) -> None:
    for page in pages:
        with tempfile.TemporaryDirectory(prefix="geoeval-chromium-") as profile:
            common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=30000"]
            subprocess.run(
                [*common, f"--window-size={SIZE[0]},{SIZE[1]}", f"--screenshot={page.out}", page.url],
                check=True,
                capture_output=True,
                timeout=300,
            )
            dom = subprocess.run([*common, "--dump-dom", page.url], capture_output=True, text=True, timeout=300)
        page.missing = [text for text in page.texts if text not in dom.stdout]
        print(f"wrote {page.out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", action="store_true", help="run the small sweep the docs show first, in a temp folder")
    p.add_argument("--store", type=Path, default=Path("mlruns/mlflow.db"), help="the SQLite MLflow store")
    p.add_argument("--logs", type=Path, default=Path("logs"), help="the Inspect logs folder")
    p.add_argument("--experiment", help="experiment name (default: the newest sweep of any)")
    p.add_argument("--out", type=Path, default=Path("first_screens"), help="folder for the PNGs")
    p.add_argument("--chromium", help="path of a Chromium binary")
    args = p.parse_args(argv)
    chromium = find_chromium(args.chromium)
    if chromium is None:
        raise SystemExit("no Chromium found: install it (apt-get install chromium) or pass --chromium PATH")
    with tempfile.TemporaryDirectory(prefix="geoeval-first-screens-") as tmp:
        if args.sweep:
            run_sweep(Path(tmp))
            args.store, args.logs = Path(tmp) / "mlruns" / "mlflow.db", Path(tmp) / "logs"
        if not args.store.exists():
            raise SystemExit(f"no MLflow store at {args.store}")
        return shoot(chromium, args)


def shoot(chromium: str, args: argparse.Namespace) -> int:
    from geoeval.core.tracking.view import ui_url

    store_uri = f"sqlite:///{args.store.resolve()}"
    experiment_id, parent_id, _points, headline = newest_sweep(store_uri, args.experiment)
    try:
        import playwright.sync_api  # noqa: F401 - only whether it is installed
    except ImportError:
        playwright = False
    else:
        playwright = True
    mlflow_port, inspect_port = free_port(), free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
    servers = [
        subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store_uri]
            + ["--host", "127.0.0.1", "--port", str(mlflow_port), "--workers", "1"],
            **quiet,
        ),
        subprocess.Popen(
            [str(Path(sys.executable).with_name("inspect")), "view", "--log-dir", str(args.logs.resolve())]
            + ["--recursive", "--host", "127.0.0.1", "--port", str(inspect_port)],
            **quiet,
            env={**os.environ, "INSPECT_VIEW_NO_BROWSER": "1"},
        ),
    ]
    base = f"http://127.0.0.1:{mlflow_port}"
    args.out.mkdir(parents=True, exist_ok=True)
    pages = [
        # the link the console prints: the runs table in geoeval's view, metric columns shown
        Page(ui_url(base, experiment_id), args.out / "mlflow_runs_table.png", ["sweep:", *headline], _open_sweep_row),
        Page(
            ui_url(base, experiment_id, parent_id),
            args.out / "mlflow_sweep_parent.png",
            ["Sweep", *headline[:1]],
            _expand_description,
        ),
        # two points told apart (the viewer fetches the headers of a few logs at a time, and
        # sometimes leaves one for later)
        Page(f"http://127.0.0.1:{inspect_port}/", args.out / "inspect_view.png", sweep_tags(args.logs), enough=2),
    ]
    try:
        wait_for(f"{base}/health", servers[0])
        wait_for(f"http://127.0.0.1:{inspect_port}/", servers[1])
        (shoot_with_playwright if playwright else shoot_with_chromium)(chromium, pages)
    finally:
        for server in servers:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    missing = [f"{page.out.name}: {text!r}" for page in pages for text in page.failed()]
    for what in missing:
        print(f"not shown: {what}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
