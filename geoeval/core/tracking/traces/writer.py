"""Each evaluated sample as an MLflow trace, so that MLflow's Traces and Evaluation-runs views show
every sample of every run side by side.

A trace per sample, from the run's Inspect `.eval` logs after the samples ran
(`log_sample_traces`), from samples in memory (`log_samples`), or on a background thread while
the job runs, fed by an Inspect hook (`TraceStream`); what none of them logged is filled in at
the job's end (`backfill.backfill_traces`):

- the root span `sample <id>` (type AGENT): the prompt (first user message) in, the final
  completion out, status ERROR with the message when the sample errored;
- a child span per model turn (type LLM): how many messages went in and the newest one, the
  output text and tool calls, the model and its token usage;
- a child span per tool call (type TOOL): the function, its arguments, its result or error;
- the sample's scores as feedback assessments (source CODE `geoeval`; a NaN metric is a feedback
  without a value carrying an error note) and its target as the expectation `expected_response`.

Traces are linked to the run (metadata `mlflow.sourceRun`, assessments
`mlflow.assessment.sourceRunId`, as `mlflow.genai.evaluate` does) and carry a stable
`client_request_id` (`<dataset>:<sample>:<epoch>`), by which the Evaluation-runs view lines the
same sample up across runs. Span times are the events' own timestamps.

Cost. The traces are not built through MLflow's live tracing API, which writes one database
transaction per span and per assessment (60-90 ms per sample measured on a busy 2-core machine,
SQLite): each trace is one `start_trace` with its assessments embedded, and the spans of a batch
of traces go in one `log_spans`. On a SQL store the `start_trace`s of a batch share one
transaction (`_start_in_one_transaction`): about half the CPU of a transaction per trace
(`bench/trace_writes.py`: medians 3.9 against 8.6 ms a trace on the idle 2-core machine; reading a
sample from an `.eval` log adds 3-7 ms). `TraceStream` writes them beside the evaluation, on a
thread. Text is cleaned (`clean_text`) and cut at `FIELD_CHARS` per field.

Logging traces never fails the job: any exception becomes a warning line and a count in the
returned `TraceCounts` (also logged as run metrics `traces_logged`, `traces_skipped`,
`traces_failed`).
"""

from __future__ import annotations

import copy
import queue
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from geoeval.core.text import clean_text, clean_value
from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking import store as tracking_store
from geoeval.core.tracking.delivery import outage_explains

# Building a trace, its text and values, and the choice of samples have modules of their own.
from geoeval.core.tracking.traces.build import (
    build_trace,
)
from geoeval.core.tracking.traces.content import _short
from geoeval.core.tracking.traces.selection import (
    TRACE_MODES,
    TraceMode,
    _candidates,
    _read_samples,
    select_samples,
)

TRACES_PER_BATCH = 50

_RUN_TYPE_TAG = "mlflow.runType"
_RUN_TYPE_EVALUATE = "genai_evaluate"  # what mlflow.genai.evaluate tags its runs with


@dataclass(frozen=True)
class TraceCounts:
    logged: int = 0
    skipped: int = 0  # selected by the mode but over the cap
    failed: int = 0  # could not be read, built or written (see warnings)
    warnings: tuple[str, ...] = field(default=())

    def as_metrics(self) -> dict[str, float]:
        return {
            "traces_logged": float(self.logged),
            "traces_skipped": float(self.skipped),
            "traces_failed": float(self.failed),
        }


def _existing_traces(client: Any, experiment_id: str, run_id: str) -> dict[str, list[str]]:
    """Trace ids already linked to the run, by sample key (a resumed run retrying a sample)."""
    out: dict[str, list[str]] = {}
    token = None
    while True:
        page = client.search_traces(
            locations=[experiment_id], run_id=run_id, include_spans=False, max_results=500, page_token=token
        )
        for trace in page:
            key = trace.info.tags.get("geoeval.sample_key")
            if key:
                out.setdefault(key, []).append(trace.info.trace_id)
        token = page.token
        if not token:
            return out


def _start_in_one_transaction(tracing_client: Any, experiment_id: str, infos: list[Any]) -> set[str]:
    """Starts the traces `infos` (with their assessments) in ONE transaction of a SQL store,
    running the store's own code for each (`_start_trace_once`) on a shared session with one
    lookup of the experiment: MLflow's `start_trace` opens a session, looks the experiment up and
    commits per trace (`bench/trace_writes.py`: 8.6 ms of CPU a trace on SQLite, 3.9 ms this way).
    Returns the ids of the traces that are in the store afterwards; the caller writes the others
    one by one through the public API. Nothing is tried (an empty set) where the store is not
    MLflow's SQL store or its internals are not the ones this expects; a tracking server
    (`http://`) takes the public path (its CPU is not the job's)."""

    store: Any = getattr(tracing_client, "store", None)
    start_once = getattr(type(store), "_start_trace_once", None)
    make_session = getattr(store, "ManagedSessionMaker", None)
    if start_once is None or make_session is None or not hasattr(store, "batch_get_trace_infos"):
        return set()
    from sqlalchemy import event

    rolled_back: list[bool] = []
    try:
        with make_session(read_only=False) as session:
            # the store's code rolls its session back on a conflict that it then mends; on a
            # shared session that drops the batch's earlier traces: then what is there is read back
            event.listen(session, "after_rollback", lambda _session: rolled_back.append(True))
            experiment = store.get_experiment(experiment_id)
            batch_store = copy.copy(store)  # the store other threads use keeps its own sessions

            @contextmanager
            def same_session(*args: Any, **kwargs: Any) -> Any:
                yield session

            batch_store.ManagedSessionMaker = same_session
            batch_store.get_experiment = lambda _experiment_id: experiment
            for info in infos:
                start_once(batch_store, info)
    except Exception:  # noqa: BLE001 - rolled back: the public path writes them, and names a real failure
        return set()
    if rolled_back:
        return {t.trace_id for t in store.batch_get_trace_infos([info.trace_id for info in infos])}
    return {info.trace_id for info in infos}


def _write_batch(
    tracing_client: Any,
    experiment_id: str,
    batch: list[tuple[Any, list[Any]]],
    warn: list[str],
    errors: list[BaseException],
) -> tuple[list[str], int]:
    """Writes one batch: the traces (with their assessments) in one transaction where the store
    allows it (`_start_in_one_transaction`), the others each in one, then all their spans in
    one. Returns (sample keys written, number failed); each failure's warning goes to `warn`,
    its exception to `errors`."""
    started: list[tuple[Any, list[Any]]] = []
    failed = 0
    try:
        written = _start_in_one_transaction(tracing_client, experiment_id, [info for info, _ in batch])
    except Exception:  # noqa: BLE001 - the read-back failed: the public path below writes them
        written = set()
    for info, spans in batch:
        if info.trace_id in written:
            started.append((info, spans))
            continue
        try:
            tracing_client.start_trace(info)
            started.append((info, spans))
        except Exception as exc:
            failed += 1
            errors.append(exc)
            warn.append(f"trace of {info.client_request_id} not written: {_short(exc)}")
    spans = [s for _, ss in started for s in ss]
    if spans:
        try:
            tracing_client.log_spans(experiment_id, spans)
        except Exception as exc:  # the traces exist but show no spans: count them as failed
            errors.append(exc)
            warn.append(f"spans of {len(started)} trace(s) not written: {_short(exc)}")
            return [], failed + len(started)
    return [info.client_request_id for info, _ in started], failed


class _Writer:
    """Builds and writes traces in batches for one run; collects counts and warnings."""

    def __init__(self, tracking_spec: Any, run_id: str, *, dataset_name: str, model: str) -> None:
        from mlflow.tracing.client import TracingClient

        self.client = tracking_store.client_for(tracking_spec)
        self.experiment_id = self.client.get_run(run_id).info.experiment_id
        self.uri = tracking_store.tracking_uri_for(tracking_spec)
        self.tracing = TracingClient(self.uri)
        self.run_id, self.dataset_name, self.model = run_id, dataset_name, model
        self.batch: list[tuple[Any, list[Any]]] = []
        self.written: list[str] = []  # sample keys whose traces were written
        self.failed = 0
        self.warnings: list[str] = []

    def add(self, sample: Any, *, tags: Mapping[str, str] | None = None) -> None:
        try:
            trace = build_trace(
                sample,
                run_id=self.run_id,
                experiment_id=self.experiment_id,
                dataset_name=self.dataset_name,
                model=self.model,
            )
        except Exception as exc:
            self.failed += 1
            self.warnings.append(f"trace of sample {getattr(sample, 'id', '?')} not built: {_short(exc)}")
            return
        if tags:
            trace[0].tags.update(tags)
        self.batch.append(trace)
        if len(self.batch) >= TRACES_PER_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            said: list[str] = []
            errors: list[BaseException] = []
            keys, failed = _write_batch(self.tracing, self.experiment_id, self.batch, said, errors)
            self.written.extend(keys)
            self.failed += failed
            self.batch = []
            if not (failed and outage(self.uri, errors)):  # an outage is one line, not one per trace
                self.warnings.extend(said)

    def add_from_logs(self, chosen: Iterable[Any], warnings: list[str]) -> tuple[set[tuple[str, int]], int]:
        """Adds the `chosen` samples (`selection._Candidate`s, each with the log it is in) read
        from their logs. Returns the (sample id, epoch) keys added and how many chosen samples a
        log that failed to read left out (a warning each log)."""
        by_path: dict[str, set[tuple[str, int]]] = {}
        for cand in chosen:
            by_path.setdefault(cand.path, set()).add(cand.key)
        found: set[tuple[str, int]] = set()
        unread = 0
        for path, wanted in by_path.items():
            seen = 0
            try:
                for sample in _read_samples(path, wanted):
                    seen += 1
                    self.add(sample)
                    found.add((str(sample.id), int(sample.epoch)))
            except Exception as exc:
                warnings.append(f"cannot read samples of {path}: {_short(exc)}")
                unread += len(wanted) - seen
        return found, unread

    def replace_earlier(self, existing: Mapping[str, list[str]]) -> None:
        """One trace per sample and run: a retried sample's earlier trace goes, once the new one
        is written."""
        replaced = [trace_id for key in self.written for trace_id in existing.get(key, [])]
        try:
            for i in range(0, len(replaced), 100):
                self.tracing.delete_traces(self.experiment_id, trace_ids=replaced[i : i + 100])
        except Exception as exc:
            self.warnings.append(f"earlier traces of retried samples not removed: {_short(exc)}")

    def existing(self) -> dict[str, list[str]]:
        try:
            return _existing_traces(self.client, self.experiment_id, self.run_id)
        except Exception as exc:
            self.warnings.append(f"could not list the run's earlier traces: {_short(exc)}")
            return {}


def outage(uri: str, errors: list[BaseException]) -> bool:
    """Whether failures on `uri` are the tracking server's outage, said once for the whole outage
    (`delivery.outage_explains`): the job's end writes the traces it missed."""

    return outage_explains(uri, errors)


def log_samples(
    tracking_spec: Any, run_id: str, samples: Iterable[Any], *, dataset_name: str = "", model: str = ""
) -> TraceCounts:
    """Logs one trace per given Inspect `EvalSample` (no selection: the caller chose them, e.g.
    from an Inspect hook as samples finish) to the run. Never raises."""
    writer = None
    warnings: list[str] = []
    try:
        writer = _Writer(tracking_spec, run_id, dataset_name=dataset_name, model=model)
        existing = writer.existing()
        for sample in samples:
            writer.add(sample)
        writer.flush()
        writer.replace_earlier(existing)
    except Exception as exc:
        warnings.append(f"traces not logged: {_short(exc)}")
    counts = TraceCounts(
        logged=len(writer.written) if writer else 0,
        failed=writer.failed if writer else 0,
        warnings=tuple((writer.warnings if writer else []) + warnings),
    )
    return _report(counts, writer.client if writer else None, run_id, log_counts=False)


class TraceStream:
    """Logs traces on a background thread while the job runs, fed the `EvalSample`s as they
    finish (an Inspect `on_sample_end` hook), so that their cost overlaps the evaluation instead
    of adding to it at the end; no log is read. `mode` and `cap` apply as samples arrive (over
    the cap: the first ones are kept, the rest counted as skipped). `put` never blocks or
    raises; `close` drains the queue and returns the counts (also logged to the run).

    The thread connects to MLflow when the first sample arrives, not before the evaluation:
    MLflow's tracing client (OpenTelemetry's SDK) and the search for the run's earlier traces
    took 1-2 s before the first model call; the first sample arrives while the others wait on
    the model."""

    _STOP = object()

    def __init__(
        self,
        tracking_spec: Any,
        run_id: str,
        *,
        mode: TraceMode = "all",
        cap: int | None = None,
        dataset_name: str = "",
        model: str = "",
        window_s: float = 0.5,
    ) -> None:

        self._queue: queue.Queue = queue.Queue()
        self._mode, self._cap, self._window_s = mode, cap, window_s
        self._accepted = self._skipped = 0
        self._warnings: list[str] = []
        self._writer: _Writer | None = None
        self._existing: dict[str, list[str]] = {}
        self._run_id = run_id
        self._uri = tracking_store.tracking_uri_for(tracking_spec)
        self._connect = partial(_Writer, tracking_spec, run_id, dataset_name=dataset_name, model=model)
        self._connect_failed = False
        if mode not in TRACE_MODES:
            self._warnings.append(f"unknown traces mode {mode!r}; nothing logged")
            self._mode = "none"
        self._thread = threading.Thread(target=self._loop, name="geoeval-trace-writer", daemon=True)
        self._thread.start()

    def put(self, sample: Any) -> None:
        if self._mode == "none" or (self._mode == "errors" and getattr(sample, "error", None) is None):
            return
        if self._cap is not None and self._cap >= 0 and self._accepted >= self._cap:
            self._skipped += 1
            return
        self._accepted += 1
        self._queue.put(sample)

    def _loop(self) -> None:

        while True:
            item = self._queue.get()
            if item is self._STOP:
                return
            batch = [item]
            deadline = time.monotonic() + self._window_s
            stop = False
            while len(batch) < TRACES_PER_BATCH:
                try:
                    nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is self._STOP:
                    stop = True
                    break
                batch.append(nxt)
            try:
                # a stream that could not connect drops what comes (said once): the job's end
                # backfills every stored sample's missing trace from the logs
                if self._writer is None and not self._connect_failed:
                    writer = self._connect()
                    self._existing = writer.existing()
                    self._writer = writer
                if self._writer is not None:
                    for sample in batch:
                        self._writer.add(sample)
                    self._writer.flush()
            except Exception as exc:  # keep draining: the job must not notice
                if not outage(self._uri, [exc]):
                    self._warnings.append(f"traces not logged: {_short(exc)}")
                self._connect_failed = self._writer is None
            if stop:
                return

    def close(self) -> TraceCounts:
        self._queue.put(self._STOP)
        self._thread.join()
        writer = self._writer
        if writer is not None:
            writer.replace_earlier(self._existing)
        counts = TraceCounts(
            logged=len(writer.written) if writer else 0,
            skipped=self._skipped,
            failed=writer.failed if writer else 0,
            warnings=tuple(self._warnings + (writer.warnings if writer else [])),
        )
        if self._mode == "none" and not counts.warnings:
            return counts
        return _report(counts, writer.client if writer else None, self._run_id)


def log_sample_traces(
    tracking_spec: Any,
    experiment: str,
    run_id: str,
    eval_log_paths: Sequence[str | Path],
    *,
    mode: TraceMode = "all",
    cap: int | None = None,
    dataset_name: str = "",
    model: str = "",
    errored: int | None = None,
) -> TraceCounts:
    """Logs one MLflow trace per sample of the given Inspect logs to the run `run_id` (see the
    module docstring); `mode` "errors" traces only errored samples (`errored`: how many the caller
    counted, if it did; with 0 no log needs reading), `cap` bounds the traces per
    call (None: no bound; the rest are counted as skipped). `experiment` is not needed (the run
    knows its experiment) and kept for symmetry with `tracking.runs`. Logs `TraceCounts.as_metrics()`
    to the run and tags it as an evaluation run. Never raises: problems are warnings (printed)
    and counts."""
    if mode not in TRACE_MODES:
        return _report(TraceCounts(warnings=(f"unknown traces mode {mode!r}; nothing logged",)), None, run_id)
    if mode == "none":
        return TraceCounts()
    writer = None
    warnings: list[str] = []
    skipped = 0
    try:
        writer = _Writer(tracking_spec, run_id, dataset_name=dataset_name, model=model)
        nothing_to_find = mode == "errors" and errored == 0
        candidates = [] if nothing_to_find else _candidates(eval_log_paths, warnings)
        chosen, skipped = select_samples(candidates, mode, cap)
        existing = writer.existing() if chosen else {}
        writer.failed += writer.add_from_logs(chosen, warnings)[1]
        writer.flush()
        writer.replace_earlier(existing)
    except Exception as exc:
        warnings.append(f"traces not logged: {_short(exc)}")
    counts = TraceCounts(
        logged=len(writer.written) if writer else 0,
        skipped=skipped,
        failed=writer.failed if writer else 0,
        warnings=tuple(warnings + (writer.warnings if writer else [])),
    )
    return _report(counts, writer.client if writer else None, run_id)


def _report(counts: TraceCounts, client: Any, run_id: str, *, log_counts: bool = True) -> TraceCounts:
    for line in counts.warnings[:20]:
        print(f"[geoeval] warning: MLflow traces: {line}", file=sys.stderr)
    if len(counts.warnings) > 20:
        print(f"[geoeval] warning: MLflow traces: {len(counts.warnings) - 20} more warning(s)", file=sys.stderr)
    if client is not None:
        try:
            if log_counts:
                tracking.log_metrics(client, run_id, counts.as_metrics())
            if counts.logged:
                client.set_tag(run_id, _RUN_TYPE_TAG, _RUN_TYPE_EVALUATE)
        except Exception as exc:
            if not outage(client.tracking_uri, [exc]):  # the job's end logs them when the server is back
                print(f"[geoeval] warning: MLflow traces: counts not logged: {_short(exc)}", file=sys.stderr)
    return counts


def log_dataset(
    tracking_spec: Any,
    experiment: str,
    run_id: str,
    rows: Any,
    name: str,
    digest: str | None = None,
    *,
    context: str = "evaluation",
) -> None:
    """Logs the evaluated samples as the run's input dataset (`mlflow.log_input` with context
    "evaluation", addressed by run id): `rows` is a pandas DataFrame (one row per sample; its
    text is cleaned), `digest` identifies its content (MLflow computes one when None)."""
    tracking_store._mlflow()
    from mlflow.data.pandas_dataset import from_pandas
    from mlflow.entities import DatasetInput, InputTag

    client = tracking_store.client_for(tracking_spec)
    frame = rows.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(
                lambda v: clean_value(v) if isinstance(v, (str, list, dict, tuple)) else v
            )
    dataset = from_pandas(frame, name=clean_text(name, max_chars=500), digest=digest[:36] if digest else None)
    tags = [InputTag(key="mlflow.data.context", value=context)]
    client.log_inputs(run_id, datasets=[DatasetInput(dataset=dataset._to_mlflow_entity(), tags=tags)])
