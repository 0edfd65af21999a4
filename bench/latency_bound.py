"""geoeval against a latency-bound model, whole processes as a user types them (run by hand, not
in CI):

    .venv/bin/python bench/latency_bound.py [--quick] [--samples 256] [--latency-ms 200 1000]
        [--connections 32 128] [--repeats 3] [--workers 2] [--no-ray] [--no-tracking] [--no-sweep] [--warm]

The model is `bench/latency_server.py` in its own process: an OpenAI-compatible server that answers
MapTab correctly (the table baseline) and takes L ms per request. At C connections N samples cannot
finish in less than the floor ceil(N/C) x L. Each variant is the command a user types, in a fresh
directory of its own (so nothing resumes: results/, logs/, the environment's work folder are new),
with no setting the user would not type (no `runner.max_samples`):

- `inspect`: bare `inspect eval geoeval/maptab -T categories=edge_only ... --max-connections C`
  (Inspect's defaults: as many samples at once as connections);
- `geoeval`: `python -m geoeval model=openai_api ... model.config.max_connections=C tracking=none`;
- `mlflow`: the same with `tracking=mlflow tracking.traces=none` (MLflow, no traces);
- `traces`: the same with `tracking=mlflow` (its default: every sample a trace, up to 500);
- `ray`: `geoeval` with `runner=ray runner.num_workers=W` (the C connections split among them), at
  every point: issue 45's "Ray as fast as one process" compares it with `geoeval`;
- `sweep`: the main command, `python -m geoeval +experiment=maptab_resolution_sweep` (30 jobs of 24
  samples, Ray, MLflow with traces) with the model swapped for the latency server: its first
  request is the sweep's start-up (at the first L and C only; its wall and CPU are of 720 samples
  and compare with nothing here).

Every variant finds the environment a first run built (`results/work`, copied into its fresh
folder before the clock starts; bare Inspect's task builds its own there too) and the MLflow
variants the store it created: what a user's second run in a project finds ("warm").

Besides the latency-bound points, a CPU-bound pair (`--offline-samples`, default 4,096; 0 leaves
it out): the offline table baseline (`model=table_baseline`, `tracking=none`) on one process
(`offline`) and on Ray's W workers (`offline-ray`), its environment warm as well. Variants run interleaved,
`--repeats` times; medians are printed, with wall seconds, CPU seconds of the process and its
reaped children (`getrusage(RUSAGE_CHILDREN)`: Ray's workers are counted when the driver reaps
them, so a Ray run's CPU is a lower bound), the most requests in flight the server saw, and the
seconds from the command's start to the first model request (start-up). Targets, each printed
"met"/"NOT met" by wall and by CPU:

- `geoeval` >= 0.97 x the throughput of `inspect` (each L and C);
- `ray` with 2 workers >= `inspect` at C = 128;
- `mlflow` <= 1.05 x `geoeval`, and `traces` <= 1.05 x `mlflow`;
- start-up: the first model request of `geoeval`, `mlflow` and `traces` (geoeval as typed) within
  1 s of `inspect`'s, and the sweep's within 5 s of it (medians).

`--warm` adds each geoeval variant started from a warm server (`geoeval warm`, one the bench
starts for itself): `geoeval+warm`, `mlflow+warm`, `traces+warm`, `ray+warm`. A warm run's CPU
adds the server's own and that of the runs it reaped (from /proc), since its runs are not the
bench's children.

Issue 45's goals, printed last as ratios of medians measured in this one run (cold, and with
`--warm` from the warm server as well):

- Ray (W workers) >= 0.9 x the throughput of one process (`geoeval`), each latency-bound point;
- Ray >= 1.5 x one process where the work is CPU-bound (`offline-ray` against `offline`);
- MLflow without traces <= 1.05 x `tracking=none`, and traces <= 1.05 x without, in CPU;
- start to first request (warm) <= 5 s, for `geoeval` and `ray`, beside bare Inspect's.

The harness's overhead like for like (<= 1.10) is `bench/harness_overhead.py`'s. `--quick` (a few
minutes): 128 samples, C = 32 at L = 200 and 1000 ms, and `inspect` against `ray` at C = 128.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from latency_phases import LatencyServer  # noqa: E402  (bench/ is no package)

PER_MAP = 16  # MapTab samples per map (suite.n_per_category with the one category)
TRACKING = {
    "geoeval": ["tracking=none"],
    "mlflow": ["tracking=mlflow", "tracking.traces=none"],
    "traces": ["tracking=mlflow"],
}


def command(variant: str, url: str, n: int, c: int, workers: int, limit: int | None = None) -> list[str]:
    """The command line of `variant` for `n` samples (`limit`: run only that many of them); a
    `+warm` variant is the same command, started from the warm server (`run_once`)."""
    variant = variant.removesuffix(WARM)
    maps = math.ceil(n / PER_MAP)
    n = limit or n
    if variant == "inspect":
        inspect = shutil.which("inspect", path=str(Path(sys.executable).parent)) or "inspect"
        return [
            inspect,
            "eval",
            "geoeval/maptab",
            "-T",
            "categories=edge_only",
            "-T",
            f"n_maps={maps}",
            "-T",
            f"n_per_category={PER_MAP}",
            "--model",
            "openai-api/local/x",
            "--model-base-url",
            f"{url}/v1",
            "--max-connections",
            str(c),
            "--limit",
            str(n),
            "--display",
            "none",
        ]
    runner = ["runner=ray", f"runner.num_workers={workers}"] if variant in ("ray", "offline-ray") else []
    if variant.startswith("offline"):  # CPU-bound: the offline table baseline, nothing to wait on
        return [
            sys.executable,
            "-m",
            "geoeval",
            "model=table_baseline",
            "suite.categories=[edge_only]",
            f"env.n_maps={maps}",
            f"suite.n_per_category={PER_MAP}",
            f"limit={n}",
            "tracking=none",
            *runner,
        ]
    if variant == "sweep":  # the main command as typed, the model swapped for the server
        return [
            sys.executable,
            "-m",
            "geoeval",
            "+experiment=maptab_resolution_sweep",
            "model=openai_api",
            "model.name=openai-api/local/x",
            f"model.base_url={url}/v1",
            f"model.config.max_connections={c}",
        ]
    return [
        sys.executable,
        "-m",
        "geoeval",
        "model=openai_api",
        "model.name=openai-api/local/x",
        f"model.base_url={url}/v1",
        f"model.config.max_connections={c}",
        "suite.categories=[edge_only]",
        f"env.n_maps={maps}",
        f"suite.n_per_category={PER_MAP}",
        f"limit={n}",
        *TRACKING.get(variant, ["tracking=none"]),
        *runner,
    ]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


WARM = "+warm"


class WarmServer:
    """`geoeval warm start --foreground`, a child of the bench with a socket folder of its own: the
    `+warm` variants are its forks. Its CPU (its own and its reaped runs', from /proc) is added to
    a warm run's: a run it starts is not the bench's child, and the server is reaped only at the end."""

    def __init__(self, root: Path) -> None:
        self.env = {**os.environ, "GEOEVAL_WARM_DIR": str(root / "warm"), "GEOEVAL_WARM": "1"}
        self.log = (root / "warm-server.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "geoeval", "warm", "start", "--foreground", "--idle-minutes", "600"],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        status = [sys.executable, "-m", "geoeval", "warm", "status"]
        while subprocess.run(status, env=self.env, capture_output=True).returncode != 0:
            if self.proc.poll() is not None:
                raise SystemExit(f"the warm server did not start: {root / 'warm-server.log'}")
            time.sleep(0.5)

    def cpu(self) -> float:
        """CPU seconds of the server and of the runs it has reaped (utime, stime, cutime, cstime)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


_WARM: list[WarmServer] = []


class Runs:
    """The measured runs of one variant at one (L, C)."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.peak: list[int] = []
        self.start_up: list[float] = []

    def med(self, what: str) -> float:
        values = getattr(self, what)
        return statistics.median(values) if values else float("nan")


def run_once(
    variant: str, server: LatencyServer, args, n: int, c: int, root: Path, seed: Path | None, limit: int | None = None
) -> tuple:
    """One run of `variant` in a fresh folder; `seed`: a first run's folder, whose environment (and
    MLflow store, for the MLflow variants) the run finds; `limit`: a first run's few samples."""
    folder = Path(tempfile.mkdtemp(prefix=f"{variant}-", dir=root))
    if seed is not None and (seed / "results" / "work").is_dir():
        shutil.copytree(seed / "results" / "work", folder / "results" / "work")  # the environment built
    if seed is not None and (seed / "mlruns").is_dir() and variant.removesuffix(WARM) in ("mlflow", "traces", "sweep"):
        shutil.copytree(seed / "mlruns", folder / "mlruns")  # the store a first run created
    env = {**os.environ, "LOCAL_API_KEY": "bench", "PYTHONUNBUFFERED": "1", "GEOEVAL_WARM": "0"}
    warm = _WARM[0] if variant.endswith(WARM) and _WARM else None
    if warm is not None:
        env = {**env, **warm.env}
    server.reset()
    warm_cpu0 = warm.cpu() if warm else 0.0
    cpu0, started, wall0 = children_cpu(), time.time(), time.perf_counter()
    proc = subprocess.run(
        command(variant, server.url, n, c, args.workers, limit), cwd=folder, env=env, capture_output=True, text=True
    )
    wall, cpu = time.perf_counter() - wall0, children_cpu() - cpu0 + (warm.cpu() - warm_cpu0 if warm else 0.0)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stats = server.stats()
    first = stats.get("first_request_at")
    start_up = (first - started) if first else float("nan")
    return folder, wall, cpu, stats["max_in_flight"], start_up


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="128 samples, C=32 at both L, Ray at C=128 only")
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--latency-ms", type=float, nargs="+", default=[200.0, 1000.0])
    ap.add_argument("--connections", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-tracking", action="store_true", help="leave out the mlflow and traces variants")
    ap.add_argument("--no-sweep", action="store_true", help="leave out the main command's start-up")
    ap.add_argument("--keep", action="store_true", help="keep the run folders")
    ap.add_argument("--offline-samples", type=int, default=4096, help="samples of the CPU-bound pair (0: leave it out)")
    ap.add_argument("--warm", action="store_true", help="each geoeval variant also started from a warm server (+warm)")
    args = ap.parse_args()
    n = 128 if args.quick else args.samples
    points = []  # (L, C, variants)
    for latency in args.latency_ms:
        for c in args.connections:
            if args.quick and c != 32:
                continue
            variants = ["inspect", "geoeval"] + ([] if args.no_tracking else ["mlflow", "traces"])
            if not args.no_ray:
                variants.append("ray")
            if args.warm:
                variants += [v + WARM for v in variants if v != "inspect"]
            points.append((latency, c, variants))
    if not args.no_sweep and points:  # the main command's start-up, at the first point
        points[0][2].append("sweep")
    if args.quick and not args.no_ray:
        points.append((1000.0, 128, ["inspect", "ray"]))
    offline = args.offline_samples

    root = Path(tempfile.mkdtemp(prefix="geoeval-latency-"))
    results: dict[tuple, Runs] = {}
    if args.warm:
        _WARM.append(WarmServer(root))
    try:
        for latency in dict.fromkeys(p[0] for p in points):
            server = LatencyServer(latency)
            try:
                # the environment and the MLflow store as a project has them after its first run
                seed = run_once("mlflow", server, args, n, 32, root, None, limit=PER_MAP)[0]
                for rep in range(args.repeats):
                    for lat, c, variants in points:
                        if lat != latency:
                            continue
                        for variant in variants:  # interleaved: each repeat runs every variant once
                            _, wall, cpu, peak, start_up = run_once(variant, server, args, n, c, root, seed)
                            runs = results.setdefault((lat, c, variant), Runs())
                            runs.wall.append(wall)
                            runs.cpu.append(cpu)
                            runs.peak.append(peak)
                            runs.start_up.append(start_up)
                            print(
                                f"  L={lat:.0f} C={c} {variant:<13} run {rep + 1}: wall {wall:6.1f} s  cpu {cpu:6.1f} s"
                                f"  in flight {peak:4d}  first request after {start_up:5.1f} s",
                                flush=True,
                            )
                    if offline and latency == args.latency_ms[-1]:  # the CPU-bound pair, once a repeat
                        if rep == 0:
                            offline_seed = run_once("offline", server, args, offline, 1, root, None, limit=PER_MAP)[0]
                        for variant in ["offline"] + ([] if args.no_ray else ["offline-ray"]):
                            _, wall, cpu, _, _ = run_once(variant, server, args, offline, 1, root, offline_seed)
                            runs = results.setdefault((0.0, 0, variant), Runs())
                            runs.wall.append(wall)
                            runs.cpu.append(cpu)
                            print(
                                f"  offline {variant:<11} run {rep + 1}: wall {wall:6.1f} s  cpu {cpu:6.1f} s",
                                flush=True,
                            )
            finally:
                server.stop()
    finally:
        for warm in _WARM:
            warm.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    report(results, points, n, args)
    goals(results, points, n, args)


def report(results: dict[tuple, Runs], points: list, n: int, args) -> None:
    print(f"\n{n} samples, medians of {args.repeats} interleaved runs (wall and CPU in s; ratios of medians)")
    print(f"{'L ms':>5} {'C':>4} {'variant':<13} {'wall':>6} {'cpu':>6} {'floor':>6} {'/floor':>6} "
          f"{'flight':>6} {'1st req':>7} {'wall/insp':>9} {'cpu/insp':>8}")  # fmt: skip
    for latency, c, variants in points:
        floor = math.ceil(n / c) * latency / 1000
        base = results.get((latency, c, "inspect"))
        for variant in variants:
            r = results[(latency, c, variant)]
            wall, cpu = r.med("wall"), r.med("cpu")
            if variant == "sweep":  # 720 samples in 30 jobs: only its start-up compares
                print(f"{latency:5.0f} {c:4d} {variant:<13} {wall:6.1f} {cpu:6.1f} {'':>6} {'':>6} "
                      f"{max(r.peak):6d} {r.med('start_up'):7.1f}")  # fmt: skip
                continue
            rel = f"{wall / base.med('wall'):9.2f} {cpu / base.med('cpu'):8.2f}" if base else ""
            print(
                f"{latency:5.0f} {c:4d} {variant:<13} {wall:6.1f} {cpu:6.1f} {floor:6.1f} {wall / floor:6.2f} "
                f"{max(r.peak):6d} {r.med('start_up'):7.1f} {rel}"
            )
    print("\ntargets (wall, CPU):")

    def target(label: str, a: Runs | None, b: Runs | None, bound: float) -> None:
        if a is None or b is None:
            return
        wall, cpu = a.med("wall") / b.med("wall"), a.med("cpu") / b.med("cpu")
        print(
            f"  {label:<60} wall {wall:5.2f} {verdict(wall <= bound):<8} cpu {cpu:5.2f} {verdict(cpu <= bound):<8}"
            f" (<= {bound:.2f})"
        )

    for latency, c, _ in points:
        at = lambda v: results.get((latency, c, v))  # noqa: E731
        # >= 0.97 x the throughput: time (and CPU) <= 1 / 0.97 x Inspect's
        target(f"L={latency:.0f} C={c}: geoeval >= 0.97 x inspect throughput", at("geoeval"), at("inspect"), 1 / 0.97)
        # CPU: the Ray workers' is counted only as far as the driver reaps them (a lower bound)
        target(
            f"L={latency:.0f} C={c}: ray ({args.workers} workers) >= inspect (cpu: lower bound)",
            at("ray"),
            at("inspect"),
            1.0,
        )
        target(f"L={latency:.0f} C={c}: mlflow, traces off <= 1.05 x tracking=none", at("mlflow"), at("geoeval"), 1.05)
        target(f"L={latency:.0f} C={c}: traces all <= 1.05 x traces off", at("traces"), at("mlflow"), 1.05)
    print("\nstart-up: seconds from the command's start to its first model request, medians, minus inspect's:")
    for latency, c, _ in points:
        at = lambda v: results.get((latency, c, v))  # noqa: E731
        base = at("inspect")
        if base is None:
            continue
        for variant, label, bound in (
            ("geoeval", "geoeval, tracking=none", 1.0),
            ("mlflow", "geoeval, MLflow, traces off", 1.0),
            ("traces", "geoeval as typed (MLflow, traces all)", 1.0),
            ("sweep", "the main command's first job", 5.0),
        ):
            r = at(variant)
            if r is None:
                continue
            late = r.med("start_up") - base.med("start_up")
            print(
                f"  L={latency:.0f} C={c}: {label:<38} {r.med('start_up'):5.1f} s, {late:+5.1f} s"
                f" {verdict(late <= bound):<8} (<= +{bound:.0f} s)"
            )
    print("  harness overhead like for like (<= 1.10): bench/harness_overhead.py")


def goals(results: dict[tuple, Runs], points: list, n: int, args) -> None:
    """Issue 45's goals, as ratios of medians of this run."""
    print(f"\nissue 45 (ratios of medians of this run, {args.workers} Ray workers):")

    def line(label: str, value: float, ok: bool, goal: str) -> None:
        print(f"  {label:<78} {value:6.2f} {verdict(ok):<8} ({goal})")

    for latency, c, _ in points:
        for suffix, how in (("", "cold"), (WARM, "warm server")):
            at = lambda v: results.get((latency, c, v + suffix))  # noqa: E731
            local, ray, mlflow, traces = at("geoeval"), at("ray"), at("mlflow"), at("traces")  # local: tracking=none
            where = f"L={latency:.0f} C={c}, {n} samples, {how}:"
            if local and ray:
                ratio = local.med("wall") / ray.med("wall")
                line(f"{where} ray throughput / one process", ratio, ratio >= 0.9, ">= 0.90")
            if local and mlflow:
                ratio = mlflow.med("cpu") / local.med("cpu")
                line(f"{where} MLflow (traces off) CPU / tracking=none", ratio, ratio <= 1.05, "<= 1.05")
            if mlflow and traces:
                ratio = traces.med("cpu") / mlflow.med("cpu")
                line(f"{where} traces all CPU / traces off", ratio, ratio <= 1.05, "<= 1.05")
            base = results.get((latency, c, "inspect"))
            if base is not None and not suffix:
                print(f"  {where} bare inspect's first request after {base.med('start_up'):.1f} s (warm)")
            for variant in ("geoeval", "mlflow", "traces", "ray"):
                r = at(variant)
                if r is not None:
                    first = r.med("start_up")
                    line(f"{where} start to first request, {variant}, s", first, first <= 5.0, "<= 5 s")
    local, ray = results.get((0.0, 0, "offline")), results.get((0.0, 0, "offline-ray"))
    if local and ray:
        ratio = local.med("wall") / ray.med("wall")
        line(
            f"offline (CPU-bound), {args.offline_samples} samples: ray throughput / one process",
            ratio,
            ratio >= 1.5,
            ">= 1.50",
        )
        print(f"  (offline wall: one process {local.med('wall'):.1f} s, ray {ray.med('wall'):.1f} s)")


if __name__ == "__main__":
    main()
