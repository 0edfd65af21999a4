"""Running one shard of samples through Inspect AI, and streaming each finished sample out.

A shard is an Inspect `eval()` of the suite's Task restricted to some samples. As each sample
finishes, an Inspect hook converts it into a `SampleResult` and hands it to the current sink: the
warehouse (local runner) or a Ray queue drained by the driver (Ray runner). Streaming per sample,
instead of reading the log at the end, is what lets a killed run resume without losing or redoing
finished samples.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.hooks import Hooks, SampleEnd, hooks
from inspect_ai.log import EvalSample
from inspect_ai.model import GenerateConfig, Model, get_model

from geoeval.core.records import Dimensions, SampleResult

Sink = Callable[[SampleResult], None]


class _SinkState:
    """The sink of the eval running in this process. Inspect runs one eval at a time per process
    here (each worker runs its shard sequentially), so a process-wide slot guarded by a lock is
    enough; a context var would not reach Inspect's own task group reliably."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sink: Sink | None = None
        self.run_hash: str = ""
        self.model: str = ""
        self.metric_names: list[str] = []


_STATE = _SinkState()
_current_shard: contextvars.ContextVar[int] = contextvars.ContextVar("geoeval_shard", default=0)


def sample_to_result(sample: EvalSample, *, run_hash: str, model: str, metric_names: list[str]) -> SampleResult:
    """Convert an Inspect EvalSample into the shared result shape. An errored sample keeps its
    dimensions, scores 0 on every metric and records the error."""
    meta = sample.metadata or {}
    dims = Dimensions.model_validate(meta.get("dims") or {"suite": meta.get("suite", "unknown")})
    score = (sample.scores or {}).get("geoeval")
    error = None
    if sample.error is not None:
        error = sample.error.message
    if score is not None and isinstance(score.value, dict):
        scores = {k: float(v) for k, v in score.value.items()}
        answer = score.answer or ""
        explanation = score.explanation or ""
    else:
        scores = {m: 0.0 for m in metric_names}
        answer = ""
        explanation = error or "sample produced no score"
    usage = sample.model_usage or {}
    in_tok = sum(u.input_tokens for u in usage.values())
    out_tok = sum(u.output_tokens for u in usage.values())
    return SampleResult(
        run_hash=run_hash,
        sample_id=str(sample.id),
        epoch=int(sample.epoch),
        model=model,
        answer=answer,
        explanation=explanation,
        scores=scores,
        dims=dims,
        input_tokens=int(in_tok),
        output_tokens=int(out_tok),
        error=error,
    )


@hooks(name="geoeval_results", description="Streams each finished sample to geoeval's result sink.")
class ResultStreamHook(Hooks):
    async def on_sample_end(self, data: SampleEnd) -> None:
        sink = _STATE.sink
        if sink is None:
            return
        sink(sample_to_result(data.sample, run_hash=_STATE.run_hash, model=_STATE.model, metric_names=_STATE.metric_names))


@contextmanager
def streaming_to(sink: Sink, *, run_hash: str, model: str, metric_names: list[str]):
    with _STATE.lock:
        _STATE.sink, _STATE.run_hash, _STATE.model, _STATE.metric_names = sink, run_hash, model, list(metric_names)
    try:
        yield
    finally:
        with _STATE.lock:
            _STATE.sink = None


def build_model(spec: Any) -> Model:
    """The evaluated model from `model=`: any Inspect model string with its generate settings."""
    settings = {k: v for k, v in spec.model.config.model_dump().items() if v is not None}
    return get_model(
        spec.model.name,
        config=GenerateConfig(**settings),
        base_url=spec.model.base_url,
        memoize=False,
        **spec.model.args,
    )


def run_shard(spec: Any, env: Any, samples: list[Any], *, shard: int, sink: Sink, log_dir: str | Path) -> list[str]:
    """Evaluate `samples` with Inspect and stream each result into `sink`; returns the log paths."""
    from geoeval.core import registry

    suite = registry.get_suite(spec.suite.name)
    task = suite.build_task(spec, env, samples)
    model = build_model(spec)
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    with streaming_to(sink, run_hash=spec.config_hash(), model=spec.model.name, metric_names=spec.metrics.metrics):
        logs = inspect_eval(
            task,
            model=model,
            log_dir=str(log_dir),
            log_format="eval",
            display="none",
            epochs=spec.epochs,
            max_samples=spec.runner.max_samples,
            fail_on_error=False,
            score_display=False,
            tags=[f"geoeval:{spec.config_hash()}", f"shard:{shard}"],
            metadata={"geoeval_run_hash": spec.config_hash(), "shard": shard},
        )
    return [str(log.location) for log in logs]
