"""One sample as one MLflow trace, built in memory (`build_trace`; nothing is written here): the
root span, a span per model turn and per tool call, the scores as feedback assessments and the
target as an expectation, and the trace's tags and metadata (see `geoeval.core.tracking.traces.writer`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from geoeval.core.text import clean_text
from geoeval.core.tracking import values as tracking_values
from geoeval.core.tracking.traces.content import _clip, _completion, _json, _ns, _prompt, _text

PREVIEW_CHARS = 1000  # MLflow OSS's request/response preview length
TAG_CHARS = 4000  # MLflow guarantees 4096 per trace tag value
METADATA_CHARS = 250  # and 250 per trace metadata value
SOURCE_ID = "geoeval"
EXPECTATION_NAME = "expected_response"


class _TraceBuilder:
    """Collects the immutable spans of one trace (OTel ReadableSpans wrapped as MLflow Spans, with
    attributes JSON-encoded as MLflow stores them)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

        self._ids = RandomIdGenerator()
        self.otel_trace_id = self._ids.generate_trace_id()
        self.trace_id = f"tr-{self.otel_trace_id:032x}"
        self.spans: list[Any] = []

    def add(
        self,
        name: str,
        span_type: str,
        *,
        parent: Any,
        start_ns: int,
        end_ns: int,
        inputs: Any,
        outputs: Any,
        error: str | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> Any:
        from mlflow.entities.span import Span
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

        context = SpanContext(
            self.otel_trace_id,
            self._ids.generate_span_id(),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        attrs = {
            "mlflow.traceRequestId": _json(self.trace_id),
            "mlflow.spanType": _json(span_type),
            "mlflow.spanInputs": _json(inputs),
            "mlflow.spanOutputs": _json(outputs),
        }
        attrs.update({k: _json(v) for k, v in (attributes or {}).items()})
        status = Status(StatusCode.ERROR, clean_text(error, max_chars=1000)) if error else Status(StatusCode.OK)
        span = ReadableSpan(
            name=clean_text(name, max_chars=200),
            context=context,
            parent=parent,
            start_time=start_ns,
            end_time=max(end_ns, start_ns),
            attributes=attrs,
            status=status,
            resource=Resource.get_empty(),
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
    tool_calls = [
        {"function": c.function, "arguments": _clip(c.arguments)} for c in (getattr(message, "tool_calls", None) or [])
    ]
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
        attributes["mlflow.chat.tokenUsage"] = {
            "input_tokens": int(usage.input_tokens or 0),
            "output_tokens": int(usage.output_tokens or 0),
            "total_tokens": int(usage.total_tokens or 0),
        }
    inputs: dict[str, Any] = {"n_messages": len(messages)}
    if last is not None:
        inputs["last_message"] = {
            "role": str(getattr(last, "role", "")),
            "content": _text(getattr(last, "text", None) or last.content),
        }
    builder.add(
        f"turn {turn}",
        "LLM",
        parent=root,
        start_ns=start,
        end_ns=_event_end(event, start),
        inputs=inputs,
        outputs=outputs,
        error=error,
        attributes=attributes,
    )


def _tool_span(builder: _TraceBuilder, root: Any, event: Any, fallback_ns: int) -> None:
    start = _ns(event.timestamp) or fallback_ns
    error = None
    if event.error is not None:
        error = _text(f"{getattr(event.error, 'type', 'error')}: {getattr(event.error, 'message', event.error)}", 2000)
        outputs: dict[str, Any] = {"error": error}
    else:
        outputs = {"result": _text(event.result)}
    builder.add(
        str(event.function),
        "TOOL",
        parent=root,
        start_ns=start,
        end_ns=_event_end(event, start),
        inputs=_clip(event.arguments or {}),
        outputs=outputs,
        error=error,
        attributes={"inspect.tool_call_id": clean_text(str(event.id), max_chars=200)},
    )


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
        out.append(
            Feedback(
                name=tracking_values.mlflow_key(name),
                value=value,
                source=source,
                rationale=rationale,
                metadata=meta,
                error=AssessmentError(error_code="METRIC_NOT_COMPUTED", error_message=note) if note else None,
            )
        )
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
            out[f"geoeval.dims.{tracking_values.mlflow_key(str(key))}"] = clean_text(str(value), max_chars=250)
    return out


def sample_key(dataset_name: str, sample_id: Any, epoch: int) -> str:
    return clean_text(f"{dataset_name}:{sample_id}:{epoch}" if dataset_name else f"{sample_id}:{epoch}", max_chars=250)


def build_trace(
    sample: Any, *, run_id: str, experiment_id: str, dataset_name: str, model: str = ""
) -> tuple[Any, list[Any]]:
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
    root = builder.add(
        name,
        "AGENT",
        parent=None,
        start_ns=start,
        end_ns=end,
        inputs=inputs,
        outputs=outputs,
        error=error,
        attributes={"geoeval.sample_id": str(sample.id), "geoeval.epoch": int(sample.epoch)},
    )
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
        "mlflow.traceName": clean_text(name, max_chars=250),
        "geoeval.sample_key": key,
        "geoeval.sample_id": clean_text(str(sample.id), max_chars=250),
        "geoeval.epoch": str(sample.epoch),
        "geoeval.status": "error" if error else "scored",
        **_dims_tags(sample),
    }
    if model:
        tags["geoeval.model"] = clean_text(model, max_chars=250)
    if error:
        tags["geoeval.error"] = clean_text(error, max_chars=TAG_CHARS)
    metadata = {"mlflow.sourceRun": run_id, "mlflow.trace_schema.version": "3"}
    if dataset_name:
        metadata["geoeval.dataset"] = clean_text(dataset_name, max_chars=METADATA_CHARS)
    info = TraceInfo(
        trace_id=builder.trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start // 1_000_000,
        execution_duration=(end - start) // 1_000_000,
        state=TraceState.ERROR if error else TraceState.OK,
        request_preview=_json(inputs)[:PREVIEW_CHARS],
        response_preview=_json(outputs)[:PREVIEW_CHARS],
        client_request_id=key,
        trace_metadata=metadata,
        tags=tags,
        assessments=_assessments(sample, run_id),
    )
    return info, builder.spans
