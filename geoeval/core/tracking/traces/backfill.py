"""One trace per stored sample: what a run's traces lack, logged at the job's end (`backfill_traces`).

Traces are written while samples finish (`writer.TraceStream`), but some never arrive that way:
a job killed before its trace writer flushed, a tracking server down while samples finished, a
resume (the first invocation's samples were traced by a process that is gone, or not at all), a
Ray job (its samples finish in the workers), and a job that reuses stored samples (a sweep point
whose samples another point already evaluated, a colleague's rerun on a shared warehouse): it runs
nothing, so nothing streams. At the end every job therefore compares the samples the warehouse
holds for it with the traces its MLflow run holds, and logs the missing ones: from the Inspect
logs of the run (every invocation's, the killed ones' included) where the sample is there, else
from the warehouse's row (answer, raw output, scores, error; no spans, tagged
`geoeval.trace_source=warehouse`). `tracking.traces` (all | errors) chooses the samples and
`tracking.max_traces` caps the run's traces, errors first; what the cap leaves out is counted
(`traces_skipped`), never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoeval.core.records import SampleResult
from geoeval.core.tracking.traces.build import sample_key
from geoeval.core.tracking.traces.selection import _candidates, select_samples
from geoeval.core.tracking.traces.writer import TraceCounts, _existing_traces, _report, _Writer

TRACE_SOURCE_TAG = "geoeval.trace_source"


@dataclass
class _Error:
    message: str


@dataclass
class _Score:
    value: dict[str, float]
    explanation: str | None = None


@dataclass
class _Output:
    completion: str


@dataclass
class StoredSample:
    """A warehouse row in the shape `build.build_trace` reads (an Inspect `EvalSample`'s fields):
    the trace of a sample whose Inspect log is gone. No prompt, target or events are stored, so
    the trace has the answer, the scores and the error, and no spans below its root."""

    id: str
    epoch: int
    output: _Output
    scores: dict[str, _Score]
    metadata: dict[str, Any]
    error: _Error | None = None
    input: str = "(not kept: this trace was rebuilt from the results warehouse; the Inspect log holds the prompt)"
    target: Any = None
    events: list[Any] = field(default_factory=list)
    started_at: Any = None
    completed_at: Any = None
    total_time: float = 0.0

    @classmethod
    def of(cls, result: SampleResult) -> StoredSample:
        return cls(
            id=result.sample_id,
            epoch=int(result.epoch),
            output=_Output(result.completion or result.answer),
            scores={"geoeval": _Score(dict(result.scores), result.explanation or None)},
            metadata={"dims": result.dims.model_dump(mode="json")},
            error=_Error(result.error) if result.error is not None else None,
        )


def _chosen(results: Sequence[SampleResult], mode: str) -> list[SampleResult]:
    """The samples the mode wants, errors first (what the cap keeps first), then in order."""
    wanted = [r for r in results if mode == "all" or r.status == "error"]
    return sorted(wanted, key=lambda r: (r.status != "error", r.sample_id, r.epoch))


def backfill_traces(
    tracking_spec: Any,
    run_id: str,
    results: Sequence[SampleResult],
    log_paths: Iterable[str | Path],
    *,
    mode: str,
    cap: int | None,
    dataset_name: str,
    model: str = "",
) -> TraceCounts:
    """Logs a trace for every sample of `results` that `mode` wants and the run has none of (up
    to `cap` traces on the run); returns the run's trace counts (the caller logs them with the
    run's end). Raises when the tracking server cannot be read (the caller keeps the work for
    later); write failures of single traces are counted and warned, as everywhere."""
    if mode == "none":
        return TraceCounts()
    writer = _Writer(tracking_spec, run_id, dataset_name=dataset_name, model=model)
    existing = _existing_traces(writer.client, writer.experiment_id, run_id)
    chosen = _chosen(results, mode)
    keyed = [(sample_key(dataset_name, r.sample_id, r.epoch), r) for r in chosen]
    have = sum(1 for key, _ in keyed if key in existing)
    missing = [r for key, r in keyed if key not in existing]
    room = len(missing) if cap is None or cap < 0 else max(0, cap - have)
    todo, skipped = missing[:room], len(missing) - min(room, len(missing))
    warnings: list[str] = []
    if todo:
        wanted = {(r.sample_id, int(r.epoch)) for r in todo}
        candidates = _candidates(log_paths, warnings)
        # a sample in several logs (retried by a later invocation) is read from its last one
        in_logs = [c for c in select_samples(candidates, "all", None)[0] if c.key in wanted]
        # a killed run's log may be cut short: what cannot be read comes from the warehouse
        found, _ = writer.add_from_logs(in_logs, warnings)
        writer.flush()
        for result in todo:
            if (result.sample_id, int(result.epoch)) not in found:
                writer.add(StoredSample.of(result), tags={TRACE_SOURCE_TAG: "warehouse"})
        writer.flush()
    counts = TraceCounts(
        logged=have + len(writer.written),
        skipped=skipped,
        failed=writer.failed,
        warnings=tuple(warnings + writer.warnings),
    )
    return _report(counts, writer.client, run_id, log_counts=False)  # the caller logs them with the run's end
