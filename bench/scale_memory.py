"""Scale and memory of whole runs against a latency-bound model (run by hand, not in CI):

    .venv/bin/python bench/scale_memory.py [--sizes 1000 10000] [--latency-ms 50] [--connections 64]
        [--runner local|ray] [--workers 2] [--tracking mlflow|none] [--lifeplanner] [--keep]

Each size N runs `python -m geoeval` as a user types it, in a fresh folder, on N MapTab `edge_only`
samples (`--per-map` per map) against `bench/latency_server.py` (answers MapTab correctly, L ms a
request, `model.config.max_connections=C`). `--lifeplanner` adds `+experiment=lifeplanner` (paper
scale: ~3,600 places, ~200,000 notes, 667 cases) with the same latency model in place of its
offline agent (the model's replies are no plan, so every case ends after one turn: the harness's
and the environment's cost, not an agent's).

While a run goes, its process tree is sampled every `--interval` s (psutil): the peak RSS of the
driver, of each Ray worker (`ray::` processes), of other Python children (OCR pool workers, MCP
servers) and of Ray's own services, and the most the whole tree held at one moment. Printed per
run: wall and CPU seconds (the process and its reaped children) per sample, the floor
ceil(N/C) x L, and the peaks. Targets: cost per sample flat (10k's wall and CPU per sample <= 1.10 x
1k's) and the driver under 1 GB.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from latency_phases import LatencyServer  # noqa: E402  (bench/ is no package)

GB = 2**30


def kind(proc: psutil.Process, driver_pid: int) -> str:
    if proc.pid == driver_pid:
        return "driver"
    try:
        cmd = " ".join(proc.cmdline())
        name = proc.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "other"
    if name.startswith("ray::") or "default_worker.py" in cmd:
        return "ray worker"
    if any(s in cmd for s in ("gcs_server", "raylet", "dashboard", "log_monitor", "monitor.py", "ray/_private")):
        return "ray services"
    if "python" in name or "python" in cmd:
        return "python child"  # OCR pool workers, MCP tool servers, ...
    return "other"


class TreeSampler(threading.Thread):
    """Peak RSS per process of a tree, and of the whole tree at one moment."""

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak: dict[int, tuple[str, int]] = {}
        self.tree_peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self.stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0
            for p in procs:
                try:
                    rss = p.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                total += rss
                label, best = self.peak.get(p.pid, (None, 0))
                self.peak[p.pid] = (label or kind(p, self.pid), max(best, rss))
            self.tree_peak = max(self.tree_peak, total)
            self.stop.wait(self.interval)

    def by_kind(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for label, rss in self.peak.values():
            out.setdefault(label, []).append(rss)
        return out


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(cmd: list[str], folder: Path, interval: float) -> tuple[float, float, TreeSampler]:
    env = {**os.environ, "LOCAL_API_KEY": "bench", "PYTHONUNBUFFERED": "1"}
    cpu0, t0 = children_cpu(), time.perf_counter()
    with open(folder / "stderr.txt", "w") as err:
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=err)
        sampler = TreeSampler(proc.pid, interval)
        sampler.start()
        rc = proc.wait()
    sampler.stop.set()
    sampler.join()
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if rc != 0:
        raise SystemExit(f"run failed ({rc}): {' '.join(cmd)}\n{(folder / 'stderr.txt').read_text()[-3000:]}")
    return wall, cpu, sampler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--per-map", type=int, default=50)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--runner", choices=["local", "ray"], default="local")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tracking", choices=["mlflow", "none"], default="mlflow")
    ap.add_argument("--lifeplanner", action="store_true", help="add LifePlanner at paper scale")
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    server = LatencyServer(args.latency_ms)
    root = Path(tempfile.mkdtemp(prefix="geoeval-scale-"))
    model = [
        "model=openai_api",
        "model.name=openai-api/local/x",
        f"model.base_url={server.url}/v1",
        f"model.config.max_connections={args.connections}",
        f"tracking={args.tracking}",
    ]
    runner = [f"runner={args.runner}"] + ([f"runner.num_workers={args.workers}"] if args.runner == "ray" else [])
    runs: list[tuple[str, int, list[str]]] = [
        (
            f"maptab {n}",
            n,
            [
                *model,
                *runner,
                "suite.categories=[edge_only]",
                f"env.n_maps={math.ceil(n / args.per_map)}",
                f"suite.n_per_category={args.per_map}",
                f"limit={n}",
            ],
        )
        for n in args.sizes
    ]
    if args.lifeplanner:  # its experiment runs on Ray with 2 workers; 667 cases
        runs.append(("lifeplanner paper", 667, ["+experiment=lifeplanner", *model]))
    rows = []
    try:
        for label, n, overrides in runs:
            folder = Path(tempfile.mkdtemp(prefix=label.replace(" ", "-") + "-", dir=root))
            server.reset()
            wall, cpu, sampler = measure([sys.executable, "-m", "geoeval", *overrides], folder, args.interval)
            stats = server.stats()
            kinds = sampler.by_kind()
            rows.append((label, n, wall, cpu, stats, kinds, sampler.tree_peak))
            print(
                f"{label}: wall {wall:.1f} s, cpu {cpu:.1f} s, {stats['requests']} requests, "
                f"{stats['max_in_flight']} in flight",
                flush=True,
            )
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    report(rows, args)


def report(rows: list, args) -> None:
    c, latency = args.connections, args.latency_ms / 1000
    print(f"\nL = {args.latency_ms:.0f} ms, C = {c}, runner={args.runner}, tracking={args.tracking}")
    print(
        f"{'run':<18} {'N':>6} {'wall s':>7} {'floor':>6} {'ms/sample':>9} {'cpu ms/s.':>9} {'driver':>7} "
        f"{'ray wkr':>7} {'py kids':>7} {'ray svc':>7} {'tree':>6}  (peak RSS, GB; workers: the largest, xcount)"
    )
    for label, n, wall, cpu, _, kinds, tree in rows:

        def peak(k: str) -> str:
            values = kinds.get(k)
            return f"{max(values) / GB:5.2f}x{len(values)}" if values else "-"

        print(
            f"{label:<18} {n:6d} {wall:7.1f} {math.ceil(n / c) * latency:6.1f} {wall / n * 1000:9.1f} "
            f"{cpu / n * 1000:9.1f} {max(kinds.get('driver', [0])) / GB:7.2f} {peak('ray worker'):>7} "
            f"{peak('python child'):>7} {sum(kinds.get('ray services', [])) / GB:7.2f} {tree / GB:6.2f}"
        )
    maptab = [r for r in rows if r[0].startswith("maptab")]
    print("\ntargets:")
    for label, _, _, _, _, kinds, _ in rows:
        driver = max(kinds.get("driver", [0])) / GB
        print(f"  {label}: driver peak RSS {driver:.2f} GB < 1 GB: {'met' if driver < 1 else 'NOT met'}")
    if len(maptab) >= 2:
        (_, n0, w0, c0, *_), (_, n1, w1, c1, *_) = maptab[0], maptab[-1]
        wall, cpu = (w1 / n1) / (w0 / n0), (c1 / n1) / (c0 / n0)
        print(
            f"  cost per sample flat ({n1} vs {n0}, <= 1.10): wall {wall:.2f} {'met' if wall <= 1.1 else 'NOT met'},"
            f" cpu {cpu:.2f} {'met' if cpu <= 1.1 else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
