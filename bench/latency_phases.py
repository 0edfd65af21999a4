"""geoeval against a latency-bound model, inside one process and phase by phase (run by hand,
not in CI; the whole processes as a user types them are `bench/latency_bound.py`):

    .venv/bin/python bench/latency_phases.py [--samples 256] [--latency-ms 200]
        [--max-connections 32] [--repeats 3] [--workers 2] [--skip-ray] [--skip-traces] [--profile]
        [--keep-work-dir]

The model is `bench/latency_server.py`, started as its own process on 127.0.0.1: an
OpenAI-compatible server that answers MapTab correctly (the table baseline) and takes
`--latency-ms` per request. At C connections and L ms, N samples cannot finish in less than
ceil(N/C) x L (the "floor" printed); what the harness adds shows as lost concurrency (the server
reports the most requests it had in flight at once) or as time around and beside the eval.

The samples: MapTab `edge_only` (the setting a text-only model can answer: the Edge Table is in
the prompt, no image), 16 per map on ceil(N/16) maps, built with the suite's own builders. Every
variant evaluates the same N samples, in this process, through Inspect's `openai-api` provider
(`openai-api/local/x`, `LOCAL_API_KEY`), with the generate settings of `model=openai_api` and
`model.config.max_connections=C`:

(a) bare Inspect `eval()` of the suite's task (environment, samples and task built as
    `inspect eval` would; the model from Inspect's `get_model`, without geoeval's output
    cleaning): the baseline;
(b) geoeval `run_job` with `runner=local tracking=none`: environment, resume check, the
    per-sample warehouse stream, aggregation and the reports; `runner.max_samples=C`
    (geoeval's default of 8 samples at once per worker would cap the concurrency at 8);
(c) geoeval `run_job` with `runner=ray runner.num_workers=W`, the same totals: C/W connections
    and C/W samples at once per worker, workers warmed first (as in a sweep after its first job);
(d) geoeval `run_job` with `runner=local` and MLflow tracking on (one SQLite store, created
    before timing; each run in its own experiment, so none resumes another),
    `tracking.traces=all` with `tracking.max_traces=N` (every sample) vs `tracking.traces=none`:
    the cost of logging each sample as an MLflow trace. The traces found in the store are
    counted and printed.

Targets: (b) >= 0.95 x the samples/s of (a); (d) traces=all <= 1.05 x the wall time of
traces=none. The variants run `--repeats` times, interleaved; samples/s are printed as best and
median, the ratios from the medians (best-of in brackets), beside the CPU seconds this process
spent per run (steadier than wall time where other processes share the cores; Ray's workers
are not counted). `--profile` adds one run of (a), (b) and (d, traces=all) timed by phase (wall
and CPU time of the environment, the eval, the warehouse, the reports, MLflow), and a cProfile
of one (b) run. The whole `python -m geoeval` process (interpreter start, imports) is measured
by `bench/harness_overhead.py`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path

from hydra import compose, initialize_config_module

HERE = Path(__file__).resolve().parent
PER_MAP = 16  # MapTab samples per map (suite.n_per_category with the one category)


class LatencyServer:
    """`latency_server.py` in its own process: its CPU never competes with the measured client
    for the GIL. It stops when this process closes its stdin (or dies)."""

    def __init__(self, latency_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "latency_server.py"), "--latency-ms", str(latency_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.proc.kill()
            raise RuntimeError(f"latency server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def _call(self, path: str, post: bool = False) -> dict:
        req = urllib.request.Request(self.url + path, data=b"{}" if post else None, method="POST" if post else "GET")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        self._call("/stats/reset", post=True)

    def stats(self) -> dict:
        return self._call("/stats")

    def stop(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def overrides_for(args: argparse.Namespace, base_url: str, work: Path, name: str, *extra: str) -> list[str]:
    """The config of one variant's run: its own warehouse and logs, the shared environment."""
    n_maps = math.ceil(args.samples / PER_MAP)
    return [
        f"work_dir={work}/work",
        f"env.n_maps={n_maps}",
        f"suite.n_per_category={PER_MAP}",
        "suite.categories=[edge_only]",
        f"limit={args.samples}",
        "model=openai_api",
        "model.name=openai-api/local/x",
        f"model.base_url={base_url}/v1",
        f"model.config.max_connections={args.max_connections}",
        f"runner.max_samples={args.max_connections}",
        f"results_db={work}/{name}.duckdb",
        f"log_dir={work}/logs-{name}",
        *extra,
    ]


def spec_for(overrides: list[str]):
    from geoeval.core.config.validate import validate_config

    if not any(o.startswith("tracking=") for o in overrides):
        overrides = ["tracking=none", *overrides]
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
    return validate_config(cfg)


def tracking_overrides(uri: str, mode: str, n: int, experiment: str) -> list[str]:
    # `++`: set whether or not the tracking config lists the key
    return [
        "tracking=mlflow",
        f"tracking.tracking_uri={uri}",
        f"++tracking.traces={mode}",
        f"++tracking.max_traces={n}",
        f"experiment_name={experiment}",
    ]


def bare_model(spec):
    """The evaluated model as plain Inspect builds it: the same generate settings as geoeval's
    `build_model` (retries bounded the same way), without geoeval's wrapper around `generate`."""
    from inspect_ai.model import GenerateConfig, get_model

    from geoeval.core.run.preflight import bounded_generate_settings

    settings = bounded_generate_settings({k: v for k, v in spec.model.config.model_dump().items() if v is not None})
    return get_model(spec.model.name, config=GenerateConfig(**settings), base_url=spec.model.base_url, memoize=False)


class Variant:
    def __init__(self, label: str) -> None:
        self.label = label
        self.seconds: list[float] = []
        self.cpu: list[float] = []  # this process's CPU time, all threads (not Ray's workers)
        self.peak: list[int] = []
        self.requests: list[int] = []

    def rate(self, n: int, how=min) -> float:
        return n / how(self.seconds)


def measure(server: LatencyServer, variant: Variant, fn) -> None:
    server.reset()
    t, cpu = time.perf_counter(), time.process_time()
    fn()
    variant.seconds.append(time.perf_counter() - t)
    variant.cpu.append(time.process_time() - cpu)
    stats = server.stats()
    variant.peak.append(stats["max_in_flight"])
    variant.requests.append(stats["requests"])


def _ray_warm_fn():
    import ray

    @ray.remote(num_cpus=1)
    def warm() -> int:
        import os
        import time

        import openai  # noqa: F401  (the provider's SDK: the slowest import of a shard)

        import geoeval.core.run.inspect_bridge  # noqa: F401  (the bridge's imports: the rest of a shard's start)
        from geoeval.core.registry import load_plugins

        load_plugins()  # the built-in suites, as a job loads them

        time.sleep(1.0)  # hold this worker so the next warm-up lands on another process
        return os.getpid()

    return warm


def count_traces(tracking_uri: str, experiment_name: str) -> int | str:
    try:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=tracking_uri)
        exp = client.get_experiment_by_name(experiment_name)
        if exp is None:
            return "no experiment"
        count, token = 0, None
        while True:
            page = client.search_traces(
                locations=[exp.experiment_id], max_results=500, include_spans=False, page_token=token
            )
            count += len(page)
            token = page.token
            if not token:
                return count
    except Exception as exc:  # an MLflow without traces, or a store the run left unreadable
        return f"unreadable ({type(exc).__name__}: {str(exc)[:80]})"


class PhaseClock:
    """Wall time spent in named functions while installed (patched in place, restored after).
    Functions that run on another thread (the warehouse writer) overlap the eval: they are
    listed, not subtracted."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}  # CPU time of the calling thread (Python and native code)
        self.calls: dict[str, int] = {}
        self._undo: list = []

    def wrap(self, owner, attr: str, label: str) -> None:
        original = getattr(owner, attr)

        def timed_call(*a, **k):
            t, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*a, **k)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t
                self.cpu[label] = self.cpu.get(label, 0.0) + time.thread_time() - cpu
                self.calls[label] = self.calls.get(label, 0) + 1

        setattr(owner, attr, timed_call)
        self._undo.append((owner, attr, original))

    def restore(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()


def phase_breakdown(runs: dict[str, object], suite) -> str:
    """Where one run of each variant spends its wall time (and this process's CPU time, per
    thread that ran the phase): the eval itself (Inspect's `eval()`) against everything geoeval
    does around and beside it."""
    from geoeval.core.analysis import job_reports as reports_job
    from geoeval.core.run import inspect_bridge as bridge
    from geoeval.core.run import job
    from geoeval.core.tracking import runs as tracking
    from geoeval.core.tracking.traces import writer as traces
    from geoeval.core.warehouse.store import Warehouse

    def clocked(run) -> tuple[float, PhaseClock]:
        clock = PhaseClock()
        clock.wrap(type(suite), "build_env", "suite.build_env")
        clock.wrap(type(suite), "build_samples", "suite.build_samples")
        clock.wrap(bridge, "inspect_eval", "Inspect eval()")
        clock.wrap(bridge, "sample_to_result", "sample_to_result (hook)")
        for name in (
            "__init__",
            "register_run",
            "finished_keys",
            "set_run_status",
            "add_run_logs",
            "run_logs",
            "results",
            "write_results",
        ):
            clock.wrap(Warehouse, name, f"warehouse.{name}")
        clock.wrap(job, "aggregate", "aggregate")
        clock.wrap(type(suite), "after_run", "suite.after_run (reports)")
        clock.wrap(reports_job, "write_job_reports", "write_job_reports")
        clock.wrap(tracking.JobRun, "start", "MLflow JobRun.start")
        clock.wrap(tracking.JobRun, "progress", "MLflow JobRun.progress")
        clock.wrap(traces, "log_dataset", "MLflow log_dataset")
        for name in ("log_sample_traces", "log_samples"):
            if hasattr(traces, name):
                clock.wrap(traces, name, f"MLflow traces.{name}")
        if hasattr(traces, "TraceStream"):
            clock.wrap(traces.TraceStream, "close", "MLflow TraceStream.close")
            clock.wrap(traces._Writer, "flush", "MLflow trace writer flush")
        clock.wrap(tracking.JobRun, "finish", "MLflow JobRun.finish")
        t = time.perf_counter()
        try:
            run()
        finally:
            clock.restore()
        return time.perf_counter() - t, clock

    clocks = {name: clocked(run) for name, run in runs.items()}
    on_threads = {"warehouse.write_results", "MLflow JobRun.progress"}
    lines = [
        "wall and CPU time by phase, one run each (s): "
        + ", ".join(f"{name} {total:.2f}" for name, (total, _) in clocks.items()),
        f"  {'phase':<32}" + "".join(f"{name[:19]:>20}" for name in clocks) + "   calls",
        f"  {'':<32}" + "".join(f"{'wall    cpu':>20}" for _ in clocks),
    ]
    labels = dict.fromkeys(label for _, clock in clocks.values() for label in clock.seconds)
    for label in labels:
        cells, calls = "", 0
        for _, clock in clocks.values():
            if label in clock.seconds:
                cells += f"{clock.seconds[label]:13.2f} {clock.cpu[label]:6.2f}"
                calls = max(calls, clock.calls[label])
            else:
                cells += f"{'-':>20}"
        note = "  (another thread, overlaps the eval)" if label in on_threads else ""
        if label == "MLflow trace writer flush":
            note = "  (inside the trace logging: on its thread, or in log_sample_traces)"
        lines.append(f"  {label:<32}{cells}   x{calls}{note}")
    return "\n".join(lines)


def profile_run(run, title: str) -> str:
    """cProfile of one run (this thread only): geoeval's own functions by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    try:
        run()
    finally:
        prof.disable()
    out = io.StringIO()
    out.write(f"cProfile of {title}, geoeval's functions by cumulative time:\n")
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(r"/geoeval/(core|suites)/", 20)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--max-connections", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2, help="Ray workers for (c)")
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--skip-traces", action="store_true")
    ap.add_argument(
        "--profile", action="store_true", help="time one run of (a), (b) and (d) by phase, and cProfile one (b) run"
    )
    ap.add_argument(
        "--keep-work-dir",
        action="store_true",
        help="keep the temporary folder (warehouses, Inspect logs, MLflow store)",
    )
    args = ap.parse_args()
    os.environ.setdefault("LOCAL_API_KEY", "x")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

    from geoeval.core.registry import get_suite
    from geoeval.core.run import inspect_bridge as bridge
    from geoeval.core.run.job import run_job

    n, c, lat = args.samples, args.max_connections, args.latency_ms
    work = Path(tempfile.mkdtemp(prefix="geoeval-lb-"))
    uri = f"sqlite:///{work}/mlruns/mlflow.db"
    server = LatencyServer(lat)
    suite = get_suite("maptab")
    started = time.perf_counter()
    experiments: dict[str, list[str]] = {"all": [], "none": []}  # MLflow experiment of each traced run
    try:
        spec = spec_for(overrides_for(args, server.url, work, "warm"))

        def bare_inspect(tag: str) -> None:
            # what `inspect eval` of the suite's task does: environment, dataset, task, eval()
            env = suite.build_env(spec)
            samples = suite.build_samples(spec, env)[:n]
            # `bridge.inspect_eval` is `inspect_ai.eval` itself, looked up at the call so that
            # `--profile`'s phase clock can time it
            logs = bridge.inspect_eval(
                suite.build_task(spec, env, samples),
                model=bare_model(spec),
                display="none",
                log_dir=str(work / f"bare-{tag}"),
                score_display=False,
            )
            done = logs[0].results.completed_samples if logs[0].results else 0
            if logs[0].status != "success" or done != n:
                raise RuntimeError(f"bare Inspect eval: status {logs[0].status}, {done}/{n} samples")

        def geoeval_job(name: str, *extra: str) -> Callable[[], None]:
            """One geoeval job, its config composed now (the bare run's is composed once, untimed)."""
            job_spec = spec_for(overrides_for(args, server.url, work, name, *extra))

            def run() -> None:
                outcome = run_job(job_spec, progress=False)
                m = outcome.metrics
                if outcome.failed or m.get("n_errors", 0) or len(outcome.results) != n or m.get("ema") != 1.0:
                    raise RuntimeError(f"geoeval {name}: failed={outcome.failed} metrics={m}")

            return run

        def traced_job(mode: str, tag: str) -> Callable[[], None]:
            experiment = f"bench-{mode}-{tag}"
            experiments[mode].append(experiment)  # its traces are counted after all timing
            return geoeval_job(f"mlflow-{mode}-{tag}", *tracking_overrides(uri, mode, n, experiment))

        # untimed: the environment on disk, the imports, and every answer in the server's cache
        bare_inspect("warm")
        print(
            f"[bench] warm-up done ({server.stats()['requests']} requests) in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )

        bare = Variant("(a) bare Inspect eval()")
        local = Variant(f"(b) geoeval runner=local, tracking=none (max_samples={c})")
        # (variant, prepare): prepare(tag) composes what the run needs and returns the timed call
        runs = [(bare, lambda tag: partial(bare_inspect, tag)), (local, lambda tag: geoeval_job(f"local-{tag}"))]
        per_worker = max(1, c // args.workers)
        ray_extra = [
            "runner=ray",
            f"runner.num_workers={args.workers}",
            f"runner.num_cpus={args.workers}",
            f"model.config.max_connections={per_worker}",
            f"runner.max_samples={per_worker}",
        ]
        ray_v = None
        if not args.skip_ray:
            import ray

            from geoeval.core.run.ray_session import ensure_ray

            ray_v = Variant(f"(c) geoeval runner=ray x{args.workers} ({per_worker} connections/worker)")
            runs.append((ray_v, lambda tag: geoeval_job(f"ray-{tag}", *ray_extra)))
            ensure_ray(spec_for(overrides_for(args, server.url, work, "ray-init", *ray_extra)))
            warm = _ray_warm_fn()
            ray.get([warm.remote() for _ in range(args.workers)])
            geoeval_job("ray-warm", *ray_extra)()  # the shards' first eval in each worker
        trace_variants: dict[str, Variant] = {}
        if not args.skip_traces:
            for mode in ("none", "all"):
                trace_variants[mode] = Variant(f"(d) geoeval runner=local, MLflow, traces={mode}")
                runs.append((trace_variants[mode], lambda tag, mode=mode: traced_job(mode, tag)))
            traced_job("none", "warm")()  # creates the MLflow store (its schema migration is not timed)
            experiments["none"].clear()
        variants = [v for v, _ in runs]

        for r in range(args.repeats):
            for variant, prepare in runs:
                measure(server, variant, prepare(str(r)))
            print(
                f"[bench] repeat {r + 1}/{args.repeats} done at {time.perf_counter() - started:.0f} s", file=sys.stderr
            )

        profile_text = ""
        if args.profile:
            phases = {"bare Inspect": partial(bare_inspect, "phases"), "geoeval local": geoeval_job("phases-local")}
            if not args.skip_traces:
                phases["geoeval traces=all"] = traced_job("all", "phases")
            profile_text = (
                phase_breakdown(phases, suite)
                + "\n\n"
                + profile_run(geoeval_job("profiled"), "one geoeval runner=local run_job")
            )
        traced = {mode: [count_traces(uri, e) for e in names] for mode, names in experiments.items()}
    finally:
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()  # never leave the local Ray running, even after a failure
        server.stop()
        if not args.keep_work_dir:
            shutil.rmtree(work, ignore_errors=True)

    floor = math.ceil(n / c) * lat / 1000.0
    print(
        f"MapTab edge_only, {n} samples, model latency {lat:g} ms, max_connections {c}, "
        f"{args.repeats} repeat(s), {os.cpu_count()} CPU(s), all in this process"
    )
    print(f"latency floor: ceil({n}/{c}) x {lat:g} ms = {floor:.2f} s = {n / floor:.1f} samples/s")
    # CPU time is the steadier measure on a shared machine: other processes' load stretches
    # wall times, not this process's CPU seconds
    print(f"{'variant':<58} {'best':>7} {'median':>7} samples/s   CPU s (median)   peak in flight   requests")
    for v in variants:
        print(
            f"{v.label:<58} {v.rate(n, min):7.1f} {v.rate(n, statistics.median):7.1f}"
            f"             {statistics.median(v.cpu):6.2f}           {max(v.peak):>6}   {max(v.requests):>8}"
        )

    def ratio(a: Variant, b: Variant) -> str:
        """b's samples/s over a's: median (best-of)."""
        return (
            f"{statistics.median(a.seconds) / statistics.median(b.seconds):.3f} "
            f"(best-of {min(a.seconds) / min(b.seconds):.3f})"
        )

    print(f"geoeval local / bare Inspect, samples/s     : {ratio(bare, local)}   target >= 0.95")
    if ray_v is not None:
        print(f"ray x{args.workers} / bare Inspect, samples/s        : {ratio(bare, ray_v)}")
    if trace_variants:
        none, all_ = trace_variants["none"], trace_variants["all"]
        # a wall-time ratio is the inverse of the samples/s ratio
        print(f"traces=all / traces=none, wall time         : {ratio(all_, none)}   target <= 1.05")
        extra = (statistics.median(all_.seconds) - statistics.median(none.seconds)) / n * 1000
        print(
            f"  trace logging adds {extra:+.2f} ms/sample (medians); traces found per run: "
            f"traces=all {traced['all']}, traces=none {traced['none']}"
        )
        if not any(isinstance(t, int) and t > 0 for t in traced["all"]):
            print(
                "  NOTE: no traces were logged at traces=all: this geoeval does not log traces (yet), "
                "so the ratio above measures nothing but noise"
            )
        print(f"MLflow run (traces=none) / tracking=none, wall time: {ratio(none, local)}")
    if profile_text:
        print()
        print(profile_text)
    kept = f"; work dir kept: {work}" if args.keep_work_dir else ""
    print(f"[bench] total {time.perf_counter() - started:.0f} s{kept}", file=sys.stderr)


if __name__ == "__main__":
    main()
