"""Sweep fan-out and Ray scaling, measured in one run (run by hand, not in CI):

    .venv/bin/python bench/sweep_fanout.py [--jobs 12] [--maps 3] [--per-category 4] [--skip-ray]

1. A sweep of `--jobs` jobs (`seed=0..N-1`: each job its own maps, so no job reuses another's
   OCR) with a CPU-bound offline agent (the OCR perception baseline, MapTab's map-only setting),
   run as `python -m geoeval -m ...` twice: one job at a time (`runner.max_concurrent_jobs=1`, the
   jobs in the sweep's process) and two at a time (`runner.max_concurrent_jobs=2`, two worker
   processes). Target: >= 1.8 x faster. The per-job metrics of the two sweeps must be identical.
2. Within one job, `runner=ray` with 2 workers against 1 (warm workers, as in
   bench/harness_overhead.py, whose measurement this reuses). Target: >= 1.8 x faster.

OCR is pinned to one thread per job (`GEOEVAL_OCR_THREADS=1`, `OMP_NUM_THREADS=1`) in both
sweeps, so that one job uses one core and the comparison is one core against two, and the disk
cache of OCR reads is off (`GEOEVAL_NO_CACHE=1`), or the second variant would read what the first
computed. Prints the wall
time and the CPU time of each variant: on a machine that other work shares, the CPU times show
how much of the ratio is the machine's load rather than the fan-out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_sweep(root: Path, concurrency: int, args: argparse.Namespace) -> tuple[float, float, dict[int, dict]]:
    """(wall seconds, CPU seconds, per-job metrics) of the whole sweep as a user runs it."""
    cwd = root / f"concurrency{concurrency}"
    cwd.mkdir(parents=True)
    cmd = [
        sys.executable,
        "-m",
        "geoeval",
        "-m",
        "model=perception_baseline",
        "suite.setting=map",
        "suite.categories=[map_only]",
        f"env.n_maps={args.maps}",
        f"suite.n_per_category={args.per_category}",
        "runner=local",
        "tracking=none",
        f"runner.max_concurrent_jobs={concurrency}",
        "seed=" + ",".join(str(s) for s in range(args.jobs)),
    ]
    env = {
        **os.environ,
        "GEOEVAL_OCR_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "INSPECT_DISPLAY": "none",
        "GEOEVAL_NO_CACHE": "1",
    }
    cpu, started = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"sweep with max_concurrent_jobs={concurrency} failed:\n{proc.stderr[-3000:]}")
    (points_file,) = list(cwd.glob("multirun/*/*/sweep_points.jsonl"))
    points = {p["job"]: p for p in map(json.loads, points_file.read_text().splitlines())}
    return wall, _children_cpu() - cpu, {job: p["metrics"] for job, p in points.items()}


def sweep_fanout(root: Path, args: argparse.Namespace) -> None:
    one = run_sweep(root, 1, args)
    two = run_sweep(root, 2, args)
    same = one[2] == two[2] and len(one[2]) == args.jobs
    print(
        f"sweep of {args.jobs} jobs (OCR agent, {args.maps} map(s) x {args.per_category} per job), one at a time : "
        f"{one[0]:7.1f} s wall, {one[1]:7.1f} s CPU"
    )
    print(
        f"sweep of {args.jobs} jobs, runner.max_concurrent_jobs=2              : "
        f"{two[0]:7.1f} s wall, {two[1]:7.1f} s CPU   speed-up = {one[0] / two[0]:.2f}x  (target >= 1.8)"
    )
    print(
        f"  per-job metrics identical: {'yes' if same else 'NO'}; CPU of 2-at-a-time / one-at-a-time = "
        f"{two[1] / one[1]:.2f} (the worker processes' own start-up and imports)"
    )
    if not same:
        raise SystemExit("the two sweeps disagree")


def ray_scaling(root: Path, args: argparse.Namespace) -> None:
    """harness_overhead's second part: one job, Ray with 1 and with 2 warm workers."""
    sys.path.insert(0, str(HERE))
    import harness_overhead as ho
    import ray

    from geoeval.core.registry import get_suite
    from geoeval.core.run.job import run_job
    from geoeval.core.run.ray_session import ensure_ray

    ho._warm_worker = ho._warm_worker_fn()  # a module global, as harness_overhead keeps it
    suite = get_suite("maptab")
    ocr = [
        "model=perception_baseline",
        "suite.setting=map",
        "suite.categories=[map_only]",
        f"env.n_maps={args.ray_maps}",
        f"suite.n_per_category={args.per_category}",
    ]
    times = {}
    for workers in (1, 2):
        spec = ho.spec_for(
            root,
            *ocr,
            "runner=ray",
            f"runner.num_workers={workers}",
            "runner.num_cpus=2",
            f"results_db={root}/ray{workers}.duckdb",
            f"log_dir={root}/rlogs{workers}",
        )
        suite.build_samples(spec, suite.build_env(spec))  # images rendered before timing
        ensure_ray(spec)  # Ray's own start-up is not the runner's work
        ray.get([ho._warm_worker.remote() for _ in range(workers)])
        times[workers] = ho.timed(lambda spec=spec: run_job(spec, progress=False))
        ray.shutdown()  # fresh workers for each variant: no OCR cache carried over
    print(f"one job, ray 1 worker  (OCR agent, {args.ray_maps} maps)       : {times[1]:7.1f} s")
    print(
        f"one job, ray 2 workers                                : {times[2]:7.1f} s   "
        f"speed-up = {times[1] / times[2]:.2f}x  (target >= 1.8)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=12, help="jobs in the sweep (>= 12 for the issue's measurement)")
    ap.add_argument("--maps", type=int, default=3, help="maps per job (one OCR read each)")
    ap.add_argument("--per-category", type=int, default=4)
    ap.add_argument("--ray-maps", type=int, default=16, help="maps for the Ray part (one job)")
    ap.add_argument("--skip-ray", action="store_true", help="measure the sweep fan-out only")
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ["GEOEVAL_NO_CACHE"] = "1"  # every OCR read computed (Ray workers get it: GEOEVAL_*)
    root = Path(tempfile.mkdtemp(prefix="geoeval-fanout-"))
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}; work in {root}")
    sweep_fanout(root, args)
    if not args.skip_ray:
        ray_scaling(root, args)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
