"""What writing a sample's MLflow trace costs, on the two paths of `traces/writer.py` (run by hand,
not in CI):

    .venv/bin/python bench/trace_writes.py [--samples 128] [--repeats 3]

The samples: an Inspect eval of `--samples` samples on Inspect's mockllm, each a model turn that
calls a tool, the tool's result and a second turn (three spans and a root), scored with two
metrics (two feedback assessments and the target as an expectation): what a MapTab or LifePlanner
sample becomes as a trace. The store: a fresh SQLite store per repeat, as a project has it.

Each repeat writes the same samples to two new runs, interleaved: (a) MLflow's public
`start_trace`, one transaction per trace (the baseline; the writer's path before), (b) a batch's
traces in one transaction (`_start_in_one_transaction`, the writer's path on a SQL store). Both
include building the traces and one `log_spans` per batch. Printed: CPU and wall ms per trace for
each, medians over the repeats, and the ratio (b)/(a).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def eval_samples(n: int, log_dir: Path) -> list:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def route():
        async def execute(start: str, end: str):
            """The stations from start to end.

            Args:
                start: the first station
                end: the last station
            """
            return f"{start} -> Central -> {end}"

        return execute

    def reply(messages, tools, tool_choice, config):
        last = messages[-1]
        if last.role == "user":
            out = ModelOutput.for_tool_call("mockllm/model", "route", {"start": "A", "end": "B"})
        else:
            out = ModelOutput.from_content("mockllm/model", f"The route is {last.text}")
        out.usage = ModelUsage(input_tokens=900, output_tokens=40, total_tokens=940)
        return out

    @scorer(metrics=[mean()])
    def two_metrics():
        async def score(state, target):
            answer = state.output.completion
            return Score(value={"ema": float(target.text in answer), "pma": 0.5}, answer=answer)

        return score

    samples = [
        Sample(id=f"s{i}", input=f"Plan a route from A to B ({i}).", target="A -> Central -> B") for i in range(n)
    ]
    task = Task(dataset=samples, solver=[use_tools(route()), generate()], scorer=two_metrics(), name="bench")
    model = get_model("mockllm/model", custom_outputs=reply, memoize=False)
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    return list(read_eval_log(log.location).samples or [])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from geoeval.core.tracking import runs as tracking
    from geoeval.core.tracking.traces import writer as traces

    root = Path(tempfile.mkdtemp(prefix="geoeval-trace-writes-"))
    samples = eval_samples(args.samples, root / "logs")
    one_transaction = traces._start_in_one_transaction
    results: dict[str, list[tuple[float, float]]] = {"public": [], "one transaction": []}
    for rep in range(args.repeats):
        store = root / f"store{rep}"
        spec = SimpleNamespace(
            enabled=True,
            tracking_uri=f"sqlite:///{store}/mlflow.db",
            artifact_location=str(store / "artifacts"),
            traces="all",
            max_traces=None,
        )
        warm = tracking.JobRun.start(spec, "bench", run_hash="warm", run_name="warm")
        traces.log_samples(spec, warm.run_id, samples[:4], dataset_name="bench")  # imports, first queries
        for variant in results:
            run = tracking.JobRun.start(spec, "bench", run_hash=f"{variant}-{rep}", run_name=variant)
            traces._start_in_one_transaction = one_transaction if variant != "public" else (lambda *a: set())
            try:
                cpu0, wall0 = cpu_s(), time.perf_counter()
                counts = traces.log_samples(spec, run.run_id, samples, dataset_name="bench")
                cpu, wall = cpu_s() - cpu0, time.perf_counter() - wall0
            finally:
                traces._start_in_one_transaction = one_transaction
            if counts.logged != len(samples):
                raise SystemExit(f"{variant}: {counts.logged} of {len(samples)} traces written: {counts.warnings}")
            results[variant].append((1000 * cpu / len(samples), 1000 * wall / len(samples)))
            print(f"  repeat {rep + 1} {variant:<16} {results[variant][-1][0]:6.2f} ms CPU / trace", flush=True)

    med = {v: (statistics.median(c for c, _ in r), statistics.median(w for _, w in r)) for v, r in results.items()}
    print(f"\n{args.samples} traces, medians of {args.repeats} interleaved repeats (ms per trace)")
    for variant, (c, w) in med.items():
        print(f"  {variant:<16} CPU {c:6.2f}  wall {w:6.2f}")
    ratio = med["one transaction"][0] / med["public"][0]
    print(f"  one transaction / public: CPU {ratio:.2f}, wall {med['one transaction'][1] / med['public'][1]:.2f}")


if __name__ == "__main__":
    main()
