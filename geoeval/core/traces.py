"""Each evaluated sample as an MLflow trace, so that MLflow's Traces and Evaluation-runs views show
every sample of every run side by side.

A trace per sample, from the run's Inspect `.eval` logs after the samples ran
(`log_sample_traces`), from samples in memory (`log_samples`), or on a background thread while
the job runs, fed by an Inspect hook (`TraceStream`):

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
SQLite): each trace is one `start_trace` transaction with its assessments embedded, and the
spans of a batch of traces go in one `log_spans` (about 20 ms per sample on the same busy
machine, 10 ms when idle, of which reading the `.eval` log is 3-7 ms). `TraceStream` moves that
cost off the job's critical path. Text is cleaned (`clean_text`) and cut at `FIELD_CHARS` per
field.

Logging traces never fails the job: any exception becomes a warning line and a count in the
returned `TraceCounts` (also logged as run metrics `traces_logged`, `traces_skipped`,
`traces_failed`).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from geoeval.core import tracking
from geoeval.core.text import clean_text, clean_value

TraceMode = Literal["all", "errors", "none"]
TRACE_MODES = ("all", "errors", "none")

FIELD_CHARS = 20_000  # per text field of a span
PREVIEW_CHARS = 1000  # MLflow OSS's request/response preview length
TAG_CHARS = 4000  # MLflow guarantees 4096 per trace tag value
METADATA_CHARS = 250  # and 250 per trace metadata value
MAX_LIST_ITEMS = 200  # of a tool argument or result list
TRACES_PER_BATCH = 50
SOURCE_ID = "geoeval"
EXPECTATION_NAME = "expected_response"

_RUN_TYPE_TAG = "mlflow.runType"
_RUN_TYPE_EVALUATE = "genai_evaluate"  # what mlflow.genai.evaluate tags its runs with


@dataclass(frozen=True)
class TraceCounts:
    logged: int = 0
    skipped: int = 0  # selected by the mode but over the cap
    failed: int = 0  # could not be read, built or written (see warnings)
    warnings: tuple[str, ...] = field(default=())

    def as_metrics(self) -> dict[str, float]:
        return {"traces_logged": float(self.logged), "traces_skipped": float(self.skipped),
                "traces_failed": float(self.failed)}


# --- selection --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    path: str
    sample_id: Any
    epoch: int
    errored: bool

    @property
    def key(self) -> tuple[str, int]:
        return (str(self.sample_id), int(self.epoch))


def select_samples(candidates: Sequence[_Candidate], mode: TraceMode, cap: int | None) -> tuple[list[_Candidate], int]:
    """The samples to trace and how many the cap left out. A sample found in several logs (an
    errored sample retried by a later invocation) counts once, as its last occurrence. Over the
    cap, errored samples go first (they are what one opens traces for), then in log order."""
    if mode == "none":
        return [], 0
    last: dict[tuple[str, int], _Candidate] = {}
    for cand in candidates:
        last.pop(cand.key, None)  # re-insert: keep log order of the last occurrence
        last[cand.key] = cand
    chosen = [c for c in last.values() if mode == "all" or c.errored]
    if cap is None or cap < 0 or len(chosen) <= cap:
        return chosen, 0
    ranked = sorted(range(len(chosen)), key=lambda i: (not chosen[i].errored, i))[:cap]
    return [chosen[i] for i in sorted(ranked)], len(chosen) - cap


def _candidates(paths: Iterable[str | Path], warn: list[str]) -> list[_Candidate]:
    from inspect_ai.log import read_eval_log_sample_summaries

    out: list[_Candidate] = []
    for path in paths:
        try:
            for s in read_eval_log_sample_summaries(str(path)):
                out.append(_Candidate(str(path), s.id, int(s.epoch), s.error is not None))
        except Exception as exc:
            warn.append(f"cannot read Inspect log {path}: {_short(exc)}")
    return out


def _read_samples(path: str, wanted: set[tuple[str, int]], n_in_log: int) -> Iterable[Any]:
    """The wanted samples of one log: streamed when most are wanted, read one by one otherwise."""
    from inspect_ai.log import read_eval_log_sample, read_eval_log_samples

    if len(wanted) * 4 >= n_in_log:
        for sample in read_eval_log_samples(path, all_samples_required=False, resolve_attachments="core"):
            if (str(sample.id), int(sample.epoch)) in wanted:
                yield sample
    else:
        for sample_id, epoch in sorted(wanted):
            yield read_eval_log_sample(path, id=_typed_id(sample_id), epoch=epoch, resolve_attachments="core")


def _typed_id(sample_id: str) -> int | str:
    return int(sample_id) if sample_id.isdigit() else sample_id


# --- text and values --------------------------------------------------------------------------


def _short(exc: BaseException) -> str:
    return clean_text(f"{type(exc).__name__}: {exc}", max_chars=300)


def _text(value: Any, max_chars: int = FIELD_CHARS) -> str:
    """Any Inspect content (str, content list, message) as clean, bounded text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value, max_chars=max_chars)
    if isinstance(value, list):
        return clean_text("\n".join(_text(v, max_chars) for v in value), max_chars=max_chars)
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return clean_text(text, max_chars=max_chars)
    return clean_text(str(value), max_chars=max_chars)


def _clip(value: Any, depth: int = 0) -> Any:
    """JSON-safe, clean and bounded: strings cut at FIELD_CHARS, lists at MAX_LIST_ITEMS, deep
    nesting flattened to text (a hostile model can send any JSON as tool arguments)."""
    if isinstance(value, str):
        return clean_text(value, max_chars=FIELD_CHARS)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 8:
        return clean_text(str(value), max_chars=FIELD_CHARS)
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {clean_text(str(k), max_chars=200): _clip(v, depth + 1) for k, v in items[:MAX_LIST_ITEMS]}
        if len(items) > MAX_LIST_ITEMS:
            out["…"] = f"{len(items) - MAX_LIST_ITEMS} more keys cut"
        return out
    if isinstance(value, (list, tuple)):
        out_list = [_clip(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
        if len(value) > MAX_LIST_ITEMS:
            out_list.append(f"…[{len(value) - MAX_LIST_ITEMS} more items cut]")
        return out_list
    if hasattr(value, "model_dump"):
        return _clip(value.model_dump(mode="json", exclude_none=True), depth + 1)
    return clean_text(str(value), max_chars=FIELD_CHARS)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _ns(when: Any) -> int | None:
    if when is None:
        return None
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when)
        except ValueError:
            return None
    if isinstance(when, datetime):
        return int(when.timestamp() * 1e9)
    return None


def _prompt(sample: Any) -> str:
    """The first user message (the task as posed), else the whole input."""
    value = sample.input
    if isinstance(value, str):
        return _text(value)
    for message in value or []:
        if getattr(message, "role", None) == "user":
            return _text(getattr(message, "text", None) or getattr(message, "content", ""))
    return _text(value)


def _completion(sample: Any) -> str:
    output = getattr(sample, "output", None)
    return _text(getattr(output, "completion", "") if output is not None else "")


# --- spans ------------------------------------------------------------------------------------


class _TraceBuilder:
    """Collects the immutable spans of one trace (OTel ReadableSpans wrapped as MLflow Spans, with
    attributes JSON-encoded as MLflow stores them)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

        self._ids = RandomIdGenerator()
        self.otel_trace_id = self._ids.generate_trace_id()
        self.trace_id = f"tr-{self.otel_trace_id:032x}"
        self.spans: list[Any] = []

    def add(self, name: str, span_type: str, *, parent: Any, start_ns: int, end_ns: int, inputs: Any, outputs: Any,
            error: str | None = None, attributes: Mapping[str, Any] | None = None) -> Any:
        from mlflow.entities.span import Span
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

        context = SpanContext(self.otel_trace_id, self._ids.generate_span_id(), is_remote=False,
                              trace_flags=TraceFlags(TraceFlags.SAMPLED))
        attrs = {
            "mlflow.traceRequestId": _json(self.trace_id), "mlflow.spanType": _json(span_type),
            "mlflow.spanInputs": _json(inputs), "mlflow.spanOutputs": _json(outputs),
        }
        attrs.update({k: _json(v) for k, v in (attributes or {}).items()})
        status = Status(StatusCode.ERROR, clean_text(error, max_chars=1000)) if error else Status(StatusCode.OK)
        span = ReadableSpan(
            name=clean_text(name, max_chars=200), context=context, parent=parent, start_time=start_ns,
            end_time=max(end_ns, start_ns), attributes=attrs, status=status, resource=Resource.get_empty(),
        )
        self.spans.append(Span(span))
        return context


def _event_end(event: Any, start_ns: int) -> int:
    end = _ns(getattr(event, "completed", None))
    if end is None and getattr(event, "working_time", None):
        end = start_ns + int(float(event.working_time) * 1e9)
    return end if end is not None else start_ns


def _model_span(builder: _TraceBuilder, root: Any, event: Any, turn: int, fallback_ns: int) -> None:
    start = _ns(event.timestamp) or fallback_ns
    messages = list(event.input or [])
    last = messages[-1] if messages else None
    output = event.output
    message = output.choices[0].message if output is not None and output.choices else None
    tool_calls = [{"function": c.function, "arguments": _clip(c.arguments)} for c in (getattr(message, "tool_calls", None) or [])]
    outputs: dict[str, Any] = {"text": _text(output.completion if output is not None else "")}
    if tool_calls:
        outputs["tool_calls"] = tool_calls
    if output is not None and output.stop_reason:
        outputs["stop_reason"] = str(output.stop_reason)
    error = _text(event.error, 2000) if event.error else None
    if error:
        outputs["error"] = error
    attributes: dict[str, Any] = {"mlflow.llm.model": clean_text(str(event.model), max_chars=200)}
    usage = output.usage if output is not None else None
    if usage is not None:
        attributes["mlflow.chat.tokenUsage"] = {"input_tokens": int(usage.input_tokens or 0),
                                                "output_tokens": int(usage.output_tokens or 0),
                                                "total_tokens": int(usage.total_tokens or 0)}
    inputs = {"n_messages": len(messages)}
    if last is not None:
        inputs["last_message"] = {"role": str(getattr(last, "role", "")), "content": _text(getattr(last, "text", None) or last.content)}
    builder.add(f"turn {turn}", "LLM", parent=root, start_ns=start, end_ns=_event_end(event, start),
                inputs=inputs, outputs=outputs, error=error, attributes=attributes)


def _tool_span(builder: _TraceBuilder, root: Any, event: Any, fallback_ns: int) -> None:
    start = _ns(event.timestamp) or fallback_ns
    error = None
    if event.error is not None:
        error = _text(f"{getattr(event.error, 'type', 'error')}: {getattr(event.error, 'message', event.error)}", 2000)
        outputs: dict[str, Any] = {"error": error}
    else:
        outputs = {"result": _text(event.result)}
    builder.add(str(event.function), "TOOL", parent=root, start_ns=start, end_ns=_event_end(event, start),
                inputs=_clip(event.arguments or {}), outputs=outputs, error=error,
                attributes={"inspect.tool_call_id": clean_text(str(event.id), max_chars=200)})


# --- assessments ------------------------------------------------------------------------------


def _score_items(sample: Any) -> list[tuple[str, Any, str | None]]:
    """(metric name, value, rationale) for every score of the sample. A dict-valued score (one
    value per metric, as geoeval's scorer gives) yields one item per key, named by the key alone
    when it is the only or the `geoeval` scorer, else `<scorer>/<key>`."""
    scores = sample.scores or {}
    items: list[tuple[str, Any, str | None]] = []
    for scorer, score in scores.items():
        rationale = _text(score.explanation, 4000) if getattr(score, "explanation", None) else None
        value = score.value
        if isinstance(value, Mapping):
            bare = len(scores) == 1 or scorer == "geoeval"
            for key, v in value.items():
                items.append((str(key) if bare else f"{scorer}/{key}", v, rationale))
        else:
            items.append((str(scorer), value, rationale))
    return items


def _feedback_value(value: Any) -> tuple[Any, str | None]:
    """(value, error note): numbers as floats, NaN as no value with a note; bools and short
    strings (Inspect's "C"/"I") as they are; lists/dicts as JSON text."""
    if isinstance(value, bool):
        return value, None
    if isinstance(value, (int, float)):
        v = float(value)
        if math.isnan(v):
            return None, "metric not computed (NaN): the sample errored or the metric does not apply"
        if math.isinf(v):
            return None, f"metric is {v}"
        return v, None
    if isinstance(value, str):
        return clean_text(value, max_chars=1000), None
    return clean_text(_json(_clip(value)), max_chars=4000), None


def _assessments(sample: Any, run_id: str) -> list[Any]:
    from mlflow.entities import AssessmentError, AssessmentSource, Expectation, Feedback

    source = AssessmentSource(source_type="CODE", source_id=SOURCE_ID)
    meta = {"mlflow.assessment.sourceRunId": run_id}
    out: list[Any] = []
    for name, raw, rationale in _score_items(sample):
        value, note = _feedback_value(raw)
        out.append(Feedback(
            name=tracking.mlflow_key(name), value=value, source=source, rationale=rationale, metadata=meta,
            error=AssessmentError(error_code="METRIC_NOT_COMPUTED", error_message=note) if note else None,
        ))
    target = sample.target
    if target not in (None, "", []):
        expected = _text(target) if isinstance(target, str) else _clip(list(target))
        out.append(Expectation(name=EXPECTATION_NAME, value=expected, source=source, metadata=meta))
    return out


# --- traces -----------------------------------------------------------------------------------


def _dims_tags(sample: Any) -> dict[str, str]:
    dims = (sample.metadata or {}).get("dims") if isinstance(sample.metadata, Mapping) else None
    if not isinstance(dims, Mapping):
        return {}
    out = {}
    for key, value in list(dims.items())[:20]:
        if isinstance(value, (str, int, float, bool)) and value != "":
            out[f"geoeval.dims.{tracking.mlflow_key(str(key))}"] = clean_text(str(value), max_chars=250)
    return out


def sample_key(dataset_name: str, sample_id: Any, epoch: int) -> str:
    return clean_text(f"{dataset_name}:{sample_id}:{epoch}" if dataset_name else f"{sample_id}:{epoch}", max_chars=250)


def build_trace(sample: Any, *, run_id: str, experiment_id: str, dataset_name: str, model: str = "") -> tuple[Any, list[Any]]:
    """(TraceInfo with its assessments, spans) for one Inspect sample; pure (writes nothing)."""
    from mlflow.entities import TraceInfo, TraceLocation, TraceState

    builder = _TraceBuilder()
    events = list(sample.events or [])
    event_times = [t for t in (_ns(getattr(e, "timestamp", None)) for e in events) if t is not None]
    start = _ns(getattr(sample, "started_at", None)) or (min(event_times) if event_times else None)
    end = _ns(getattr(sample, "completed_at", None)) or (max(event_times) if event_times else None)
    if start is None:
        start = end if end is not None else int(datetime.now().timestamp() * 1e9)
    if end is None or end < start:
        end = start + int(float(getattr(sample, "total_time", 0) or 0) * 1e9)
    error = _text(sample.error.message, 4000) if getattr(sample, "error", None) is not None else None
    name = f"sample {sample.id}" if int(sample.epoch) == 1 else f"sample {sample.id} (epoch {sample.epoch})"
    inputs = {"prompt": _prompt(sample)}
    outputs: dict[str, Any] = {"completion": _completion(sample)}
    if error:
        outputs["error"] = error
    root = builder.add(name, "AGENT", parent=None, start_ns=start, end_ns=end, inputs=inputs, outputs=outputs, error=error,
                       attributes={"geoeval.sample_id": str(sample.id), "geoeval.epoch": int(sample.epoch)})
    turn = 0
    for event in events:
        kind = getattr(event, "event", None)
        if kind == "model":
            turn += 1
            _model_span(builder, root, event, turn, start)
        elif kind == "tool":
            _tool_span(builder, root, event, start)
    key = sample_key(dataset_name, sample.id, int(sample.epoch))
    tags = {
        "mlflow.traceName": clean_text(name, max_chars=250), "geoeval.sample_key": key,
        "geoeval.sample_id": clean_text(str(sample.id), max_chars=250), "geoeval.epoch": str(sample.epoch),
        "geoeval.status": "error" if error else "scored", **_dims_tags(sample),
    }
    if model:
        tags["geoeval.model"] = clean_text(model, max_chars=250)
    if error:
        tags["geoeval.error"] = clean_text(error, max_chars=TAG_CHARS)
    metadata = {"mlflow.sourceRun": run_id, "mlflow.trace_schema.version": "3"}
    if dataset_name:
        metadata["geoeval.dataset"] = clean_text(dataset_name, max_chars=METADATA_CHARS)
    info = TraceInfo(
        trace_id=builder.trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start // 1_000_000, execution_duration=(end - start) // 1_000_000,
        state=TraceState.ERROR if error else TraceState.OK,
        request_preview=_json(inputs)[:PREVIEW_CHARS], response_preview=_json(outputs)[:PREVIEW_CHARS],
        client_request_id=key, trace_metadata=metadata, tags=tags, assessments=_assessments(sample, run_id),
    )
    return info, builder.spans


def _existing_traces(client: Any, experiment_id: str, run_id: str) -> dict[str, list[str]]:
    """Trace ids already linked to the run, by sample key (a resumed run retrying a sample)."""
    out: dict[str, list[str]] = {}
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], run_id=run_id, include_spans=False,
                                    max_results=500, page_token=token)
        for trace in page:
            key = trace.info.tags.get("geoeval.sample_key")
            if key:
                out.setdefault(key, []).append(trace.info.trace_id)
        token = page.token
        if not token:
            return out


def _write_batch(tracing_client: Any, experiment_id: str, batch: list[tuple[Any, list[Any]]], warn: list[str]) -> tuple[list[str], int]:
    """Writes one batch: each trace (with its assessments) in one transaction, then all their
    spans in one. Returns (sample keys written, number failed)."""
    started: list[tuple[Any, list[Any]]] = []
    failed = 0
    for info, spans in batch:
        try:
            tracing_client.start_trace(info)
            started.append((info, spans))
        except Exception as exc:
            failed += 1
            warn.append(f"trace of {info.client_request_id} not written: {_short(exc)}")
    spans = [s for _, ss in started for s in ss]
    if spans:
        try:
            tracing_client.log_spans(experiment_id, spans)
        except Exception as exc:  # the traces exist but show no spans: count them as failed
            warn.append(f"spans of {len(started)} trace(s) not written: {_short(exc)}")
            return [], failed + len(started)
    return [info.client_request_id for info, _ in started], failed


class _Writer:
    """Builds and writes traces in batches for one run; collects counts and warnings."""

    def __init__(self, tracking_spec: Any, run_id: str, *, dataset_name: str, model: str) -> None:
        from mlflow.tracing.client import TracingClient

        self.client = tracking.client_for(tracking_spec)
        self.experiment_id = self.client.get_run(run_id).info.experiment_id
        self.tracing = TracingClient(tracking.tracking_uri_for(tracking_spec))
        self.run_id, self.dataset_name, self.model = run_id, dataset_name, model
        self.batch: list[tuple[Any, list[Any]]] = []
        self.written: list[str] = []  # sample keys whose traces were written
        self.failed = 0
        self.warnings: list[str] = []

    def add(self, sample: Any) -> None:
        try:
            trace = build_trace(sample, run_id=self.run_id, experiment_id=self.experiment_id,
                                dataset_name=self.dataset_name, model=self.model)
        except Exception as exc:
            self.failed += 1
            self.warnings.append(f"trace of sample {getattr(sample, 'id', '?')} not built: {_short(exc)}")
            return
        self.batch.append(trace)
        if len(self.batch) >= TRACES_PER_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            keys, failed = _write_batch(self.tracing, self.experiment_id, self.batch, self.warnings)
            self.written.extend(keys)
            self.failed += failed
            self.batch = []

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


def log_samples(tracking_spec: Any, run_id: str, samples: Iterable[Any], *, dataset_name: str = "",
                model: str = "") -> TraceCounts:
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
        logged=len(writer.written) if writer else 0, failed=writer.failed if writer else 0,
        warnings=tuple((writer.warnings if writer else []) + warnings),
    )
    return _report(counts, writer.client if writer else None, run_id, log_counts=False)


class TraceStream:
    """Logs traces on a background thread while the job runs, fed the `EvalSample`s as they
    finish (an Inspect `on_sample_end` hook), so that their cost overlaps the evaluation instead
    of adding to it at the end; no log is read. `mode` and `cap` apply as samples arrive (over
    the cap: the first ones are kept, the rest counted as skipped). `put` never blocks or
    raises; `close` drains the queue and returns the counts (also logged to the run)."""

    _STOP = object()

    def __init__(self, tracking_spec: Any, run_id: str, *, mode: TraceMode = "all", cap: int | None = None,
                 dataset_name: str = "", model: str = "", window_s: float = 0.5) -> None:
        import queue
        import threading

        self._queue: queue.Queue = queue.Queue()
        self._mode, self._cap, self._window_s = mode, cap, window_s
        self._accepted = self._skipped = 0
        self._warnings: list[str] = []
        self._writer: _Writer | None = None
        self._existing: dict[str, list[str]] = {}
        self._run_id = run_id
        if mode not in TRACE_MODES:
            self._warnings.append(f"unknown traces mode {mode!r}; nothing logged")
            self._mode = "none"
        if self._mode != "none":
            try:
                self._writer = _Writer(tracking_spec, run_id, dataset_name=dataset_name, model=model)
                self._existing = self._writer.existing()
            except Exception as exc:
                self._warnings.append(f"traces not logged: {_short(exc)}")
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
        import queue
        import time

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
                for sample in batch:
                    self._writer.add(sample)
                self._writer.flush()
            except Exception as exc:  # keep draining: the job must not notice
                self._warnings.append(f"traces not logged: {_short(exc)}")
            if stop:
                return

    def close(self) -> TraceCounts:
        self._queue.put(self._STOP)
        self._thread.join()
        writer = self._writer
        if writer is not None:
            writer.replace_earlier(self._existing)
        counts = TraceCounts(
            logged=len(writer.written) if writer else 0, skipped=self._skipped, failed=writer.failed if writer else 0,
            warnings=tuple(self._warnings + (writer.warnings if writer else [])),
        )
        if self._mode == "none" and not counts.warnings:
            return counts
        return _report(counts, writer.client if writer else None, self._run_id)


def log_sample_traces(
    tracking_spec: Any, experiment: str, run_id: str, eval_log_paths: Sequence[str | Path], *,
    mode: TraceMode = "all", cap: int | None = None, dataset_name: str = "", model: str = "",
) -> TraceCounts:
    """Logs one MLflow trace per sample of the given Inspect logs to the run `run_id` (see the
    module docstring); `mode` "errors" traces only errored samples, `cap` bounds the traces per
    call (None: no bound; the rest are counted as skipped). `experiment` is not needed (the run
    knows its experiment) and kept for symmetry with `tracking`. Logs `TraceCounts.as_metrics()`
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
        candidates = _candidates(eval_log_paths, warnings)
        chosen, skipped = select_samples(candidates, mode, cap)
        existing = writer.existing() if chosen else {}
        n_in_log: dict[str, int] = {}
        for cand in candidates:
            n_in_log[cand.path] = n_in_log.get(cand.path, 0) + 1
        by_path: dict[str, set[tuple[str, int]]] = {}
        for cand in chosen:
            by_path.setdefault(cand.path, set()).add(cand.key)
        for path, wanted in by_path.items():
            seen = 0
            try:
                for sample in _read_samples(path, wanted, n_in_log[path]):
                    seen += 1
                    writer.add(sample)
            except Exception as exc:
                warnings.append(f"cannot read samples of {path}: {_short(exc)}")
                writer.failed += len(wanted) - seen
        writer.flush()
        writer.replace_earlier(existing)
    except Exception as exc:
        warnings.append(f"traces not logged: {_short(exc)}")
    counts = TraceCounts(
        logged=len(writer.written) if writer else 0, skipped=skipped, failed=writer.failed if writer else 0,
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
            print(f"[geoeval] warning: MLflow traces: counts not logged: {_short(exc)}", file=sys.stderr)
    return counts


def log_dataset(tracking_spec: Any, experiment: str, run_id: str, rows: Any, name: str, digest: str | None = None, *,
                context: str = "evaluation") -> None:
    """Logs the evaluated samples as the run's input dataset (`mlflow.log_input` with context
    "evaluation", addressed by run id): `rows` is a pandas DataFrame (one row per sample; its
    text is cleaned), `digest` identifies its content (MLflow computes one when None)."""
    tracking._mlflow()
    import mlflow.data
    from mlflow.entities import DatasetInput, InputTag

    client = tracking.client_for(tracking_spec)
    frame = rows.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(lambda v: clean_value(v) if isinstance(v, (str, list, dict, tuple)) else v)
    dataset = mlflow.data.from_pandas(frame, name=clean_text(name, max_chars=500), digest=digest[:36] if digest else None)
    tags = [InputTag(key="mlflow.data.context", value=context)]
    client.log_inputs(run_id, datasets=[DatasetInput(dataset=dataset._to_mlflow_entity(), tags=tags)])
