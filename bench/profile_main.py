"""The time budget of the main command, stage by stage (run by hand, not in CI):

    .venv/bin/python bench/profile_main.py job  [--runner local|ray] [--setting map] [--resolution 1]
    .venv/bin/python bench/profile_main.py main [--cache-off-baseline]

`job`: one job of the main command's sweep, in this process, twice: with a cold perception cache
and again (fresh work dir) with the warm one. Prints each stage's seconds and share of the job.

`main`: `python -m geoeval +experiment=maptab_resolution_sweep` (30 jobs) as a whole process, from a
fresh directory with an empty perception cache (cold), then again from another fresh directory
with the cache the first run filled (warm). Every process (the driver and each Ray worker) writes
its stage lines under `GEOEVAL_PROFILE_DIR` (`geoeval/core/timing.py`); the stages are added up
over processes, so worker stages (inspect_eval, perception) can sum past the wall time with two
workers. Then it checks that both runs stored byte-identical per-sample answers and scores.

Targets (issue 12), printed with measured values and ratios:
- main command, fresh directory: <= 60 s; rerun with a warm perception cache: <= 30 s;
- the same run's baselines: `calibration` (one full-size map read by the perception baseline,
  cold OCR engine excluded: the unit of work the cache saves, so the ratios compare machines) and,
  with `--cache-off-baseline`, the main command with `GEOEVAL_NO_CACHE=1` (the pre-cache cost;
  a third full run, so off by default).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAIN = [sys.executable, "-m", "geoeval", "+experiment=maptab_resolution_sweep"]
SWEEP_OVERRIDES = [
    "model=perception_baseline",
    "env.n_maps=3",
    "suite.scenario=both",
    "suite.categories=[map_only,edge_only,map_edge,T,mix]",
    "suite.n_per_category=4",
]


def calibration() -> float:
    """Seconds for the perception baseline to read one full-size map once (engine warm)."""
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.perception.ocr import get_ocr_engine
    from geoeval.suites.maptab.perception.reader import read_map_image
    from geoeval.suites.maptab.render.image import render_map

    img = render_map(generate_metro_map(0, n_lines=3))
    get_ocr_engine()
    t = time.perf_counter()
    read_map_image(img)
    return time.perf_counter() - t


# ---------------------------------------------------------------- one job


def profile_job(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from harness_overhead import spec_for

    from geoeval.core import timing
    from geoeval.core.registry import load_plugins
    from geoeval.core.run.job import run_job
    from geoeval.suites.maptab import agents

    load_plugins()
    cache = Path(tempfile.mkdtemp(prefix="geoeval-cache-"))
    os.environ["GEOEVAL_CACHE_DIR"] = str(cache)
    # one folder for both runs: Ray's workers keep the environment they started with
    profile_dir = Path(tempfile.mkdtemp(prefix="geoeval-profile-"))
    os.environ[timing.PROFILE_DIR_ENV] = str(profile_dir)
    for label in ("cold cache", "warm cache"):
        work = Path(tempfile.mkdtemp(prefix="geoeval-job-"))
        spec = spec_for(
            work,
            *SWEEP_OVERRIDES,
            f"runner={args.runner}",
            f"suite.setting={args.setting}",
            f"suite.resolution={args.resolution}",
            f"results_db={work}/r.duckdb",
            f"log_dir={work}/logs",
        )
        timing.reset()
        agents._PERCEIVED.clear()  # as in a new process: the warm run reads the disk cache, not the memo
        t, since = time.perf_counter(), time.time()
        outcome = run_job(spec, progress=False)
        wall = time.perf_counter() - t
        if args.runner == "ray":  # a rerun is a new process: new workers, no in-process memo
            import ray

            from geoeval.core.run import ray_session

            ray.shutdown()
            ray_session._CONNECTED.clear()
        events = [e for e in timing.read_stage_events(profile_dir) if e["t"] >= since]
        seconds, counts = timing.summarize(events)
        print(
            timing.format_table(
                seconds,
                counts,
                total=wall,
                title=f"one job ({label}, runner={args.runner}, {len(outcome.results)} samples)",
            )
        )
    os.environ.pop(timing.PROFILE_DIR_ENV, None)


# ---------------------------------------------------------------- the main command


def _run_main(label: str, cache: Path, extra_env: dict[str, str] | None = None) -> dict:
    from geoeval.core import timing

    cwd = Path(tempfile.mkdtemp(prefix=f"geoeval-main-{label}-"))
    profile_dir = cwd / "profile"
    env = {
        **os.environ,
        "GEOEVAL_CACHE_DIR": str(cache),
        timing.PROFILE_DIR_ENV: str(profile_dir),
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(extra_env or {}),
    }
    env.pop("RAY_ADDRESS", None)
    t, t_epoch = time.perf_counter(), time.time()
    proc = subprocess.run(MAIN, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-6000:], sep="\n")
        raise SystemExit(f"{label}: the main command failed (exit {proc.returncode})")
    seconds, counts = timing.summarize(timing.read_stage_events(profile_dir))
    return {
        "label": label,
        "wall": wall,
        "cwd": cwd,
        "seconds": seconds,
        "counts": counts,
        "first_stage_end": _first_stage_end(profile_dir, t_epoch),
    }


def _first_stage_end(profile_dir: Path, started: float) -> float | None:
    """Seconds from the command's start to the end of its first timed stage (start-up cost)."""
    from geoeval.core import timing

    events = timing.read_stage_events(profile_dir)
    return events[0]["t"] - started if events else None


def score_digest(results_db: Path) -> tuple[str, int]:
    """sha256 over every stored sample's (run, id, epoch, status, answer, scores), canonical order."""
    from geoeval.core.warehouse.store import Warehouse

    rows = []
    with Warehouse(results_db, read_only=True) as wh:
        for run in wh.runs():
            for r in wh.results(run["run_hash"]):
                rows.append(
                    [
                        run["run_hash"],
                        r.sample_id,
                        r.epoch,
                        r.status,
                        r.answer,
                        sorted((k, repr(v)) for k, v in r.scores.items()),
                    ]
                )
    rows.sort()
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest(), len(rows)


def _peak_child_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def profile_main(args: argparse.Namespace) -> None:
    from geoeval.core import timing

    calib = calibration()
    cache = Path(tempfile.mkdtemp(prefix="geoeval-cache-"))
    runs = []
    if args.cache_off_baseline:
        runs.append(_run_main("nocache", Path(tempfile.mkdtemp(prefix="geoeval-cache-")), {"GEOEVAL_NO_CACHE": "1"}))
    runs.append(_run_main("cold", cache))
    rss = _peak_child_rss_mb()
    runs.append(_run_main("warm", cache))
    for r in runs:
        print(
            timing.format_table(
                r["seconds"], r["counts"], total=r["wall"], title=f"main command, {r['label']} ({r['cwd']})"
            )
        )
        if r["first_stage_end"] is not None:
            print(f"  start-up: first stage ended {r['first_stage_end']:.1f} s after launch")
    digests = {r["label"]: score_digest(r["cwd"] / "results" / "geoeval.duckdb") for r in runs}
    by = {r["label"]: r for r in runs}
    print(f"\ncalibration (one full-size map perceived, engine warm): {calib:.2f} s")
    rows = [
        ("main command, fresh dir, cold cache", by["cold"]["wall"], 60.0),
        ("main command, fresh dir, warm cache", by["warm"]["wall"], 30.0),
    ]
    if "nocache" in by:
        rows.insert(0, ("main command, cache off (baseline)", by["nocache"]["wall"], None))
    for name, wall, target in rows:
        vs_target = f"{wall / target:5.2f} x target ({target:.0f} s)" if target else ""
        vs_off = f"{wall / by['nocache']['wall']:5.2f} x cache-off" if "nocache" in by else ""
        print(f"{name:<38} {wall:7.1f} s  {wall / calib:7.1f} x calibration  {vs_off}  {vs_target}")
    print(f"peak RSS of the cold run's driver: {rss:.0f} MB")
    for label, (digest, n) in digests.items():
        print(f"scores {label}: {n} samples, sha256 {digest[:16]}")
    same = len({d for d, _ in digests.values()}) == 1
    print("per-sample answers and scores, cold vs warm: " + ("IDENTICAL" if same else "DIFFERENT"))
    if not same:
        raise SystemExit(1)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    job = sub.add_parser("job")
    job.add_argument("--runner", default="local", choices=("local", "ray"))
    job.add_argument("--setting", default="map")
    job.add_argument("--resolution", default="1")
    m = sub.add_parser("main")
    m.add_argument("--cache-off-baseline", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    profile_job(args) if args.what == "job" else profile_main(args)


if __name__ == "__main__":
    main()
