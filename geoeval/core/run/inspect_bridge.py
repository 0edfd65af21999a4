"""Running one shard of samples through Inspect AI, and streaming each finished sample out.

A shard is an Inspect `eval()` of the suite's Task restricted to some samples. As each sample
finishes, an Inspect hook converts it into a `SampleResult` and hands it to the current sink: the
warehouse (local runner) or a Ray queue drained by the driver (Ray runner). Streaming per sample,
instead of reading the log at the end, is what lets a killed run resume without losing or redoing
finished samples.
"""

from __future__ import annotations

import contextvars
import re
import tempfile
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspect_ai import eval as inspect_eval
from inspect_ai.hooks import Hooks, SampleEnd, hooks
from inspect_ai.log import EvalSample

from geoeval.core.analysis.provenance import offline_model
from geoeval.core.private_api import install_offline_token_estimate, label_task
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.run.models import build_model, samples_in_flight
from geoeval.core.run.preflight import sample_http_retries
from geoeval.core.run.sweep_job import current_sweep_job
from geoeval.core.text import clean_text, clean_value

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

# Inspect estimates tokens with an encoding tiktoken downloads: offline, estimate instead
install_offline_token_estimate()

Sink = Callable[[SampleResult], None]


class _SinkState:
    """The sink of the eval running in this process. Inspect runs one eval at a time per process
    here (each worker runs its shard sequentially), so a process-wide slot guarded by a lock is
    enough; a context var would not reach Inspect's own task group reliably."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sink: Sink | None = None
        self.on_sample: Callable[[EvalSample], None] | None = None  # e.g. a trace stream
        self.run_hash: str = ""
        self.model: str = ""
        self.metric_names: list[str] = []
        # the models whose calls make the trajectory (the evaluated one, the simulated roles); any
        # other model a sample calls is a judge
        self.generation_models: set[str] = set()


_STATE = _SinkState()
_current_shard: contextvars.ContextVar[int] = contextvars.ContextVar("geoeval_shard", default=0)


#: Inspect's message for a model call that failed after its retries (tenacity's RetryError repr)
_RETRIES_EXHAUSTED = re.compile(r"^RetryError[\[(]<Future at 0x[0-9a-fA-F]+ state=finished raised (\w+)>[\])]$")
#: what each provider error class means, said in the stored error
PROVIDER_ERRORS = {
    "InternalServerError": "the endpoint answered HTTP 5xx",
    "RateLimitError": "the endpoint answered HTTP 429 (rate limited)",
    "APITimeoutError": "no answer in time",
    "AttemptTimeoutError": "no answer in time (model.config.attempt_timeout)",
    "APIConnectionError": "the connection failed or was closed",
    "BadRequestError": "the endpoint answered HTTP 400",
    "AuthenticationError": "the endpoint answered HTTP 401",
    "PermissionDeniedError": "the endpoint answered HTTP 403",
    "NotFoundError": "the endpoint answered HTTP 404",
    "APIStatusError": "the endpoint answered an HTTP error status",
}
#: the provider's own error at the end of Inspect's `ModelGenerateError(<the request> ... XError('Error code: N - ...'))`
_GENERATE_ERROR = re.compile(r"([A-Z]\w*Error)\(\\?'Error code: (\d{3}) - (.*?)\\?'\)\S*$")
_NOT_JSON = re.compile(r"^(UnicodeDecodeError|JSONDecodeError)\(")
#: geoeval's own errors of a model call, whose message says it all (Inspect stores their repr)
_OWN_ERROR = re.compile(r"""^(?:RetriesSpent|ReplayMissing|JobHalted|ModelReplyError)\((["'])(.*)\1\)$""")


def readable_error(message: str) -> str:
    """A sample's error as one line that says what happened: Inspect stores a model call that
    failed after its retries as `RetryError(<Future at 0x... raised InternalServerError>)`,
    and a body that is not JSON as the decoder's exception."""
    text = " ".join(message.split())
    found = _RETRIES_EXHAUSTED.match(text)
    if found:
        name = found.group(1)
        return f"the model call failed after its retries: {name} ({PROVIDER_ERRORS.get(name, 'see the Inspect log')})"
    found = _OWN_ERROR.match(text)
    if found:
        return found.group(2).replace("\\'", "'").replace('\\"', '"')
    if _NOT_JSON.match(text):
        return f"the model endpoint's reply is not JSON: {text}"
    found = _GENERATE_ERROR.search(text) if text.startswith("ModelGenerateError(") else None
    if found:  # Inspect quotes the whole request first (kilobytes): the provider's own line is what says why
        name, status, said = found.group(1), found.group(2), found.group(3)
        return f"the model endpoint refused the request: {name} (HTTP {status}): {said}"
    return message


#: the explanation of a sample whose model stopped at its context length (`stop_reason=model_length`)
CONTEXT_EXCEEDED = "the input and answer do not fit the model's context (stop_reason=model_length)"


def sample_to_result(sample: EvalSample, *, run_hash: str, model: str, metric_names: list[str]) -> SampleResult:
    """Convert an Inspect EvalSample into the shared result shape.

    The line between `scored` and `error`: a sample is *scored* whenever the model answered and
    the scorer ran, however malformed the answer (a bad answer scores 0 on the metrics it fails).
    It is an *error* when Inspect recorded a sample error (the provider failed after its retries,
    a timeout, a crashed tool or solver), when no score was produced, or when the scorer flagged
    it (`Score.metadata["error"]`, e.g. every judge failed). An error keeps its dimensions, tokens
    and message; its metrics are NaN (see `SampleResult`)."""
    meta = sample.metadata or {}
    dims = Dimensions.model_validate(meta.get("dims") or {"suite": meta.get("suite", "unknown")})
    score = (sample.scores or {}).get("geoeval")
    error = readable_error(clean_text(sample.error.message, max_chars=4000)) if sample.error is not None else None
    details: dict[str, Any] = {}
    if score is not None and isinstance(score.value, dict):
        scores = {k: float(v) for k, v in score.value.items()}
        answer = score.answer or ""
        explanation = score.explanation or ""
        score_meta = score.metadata or {}
        details = dict(score_meta.get("details") or {})
        if error is None and score_meta.get("error"):
            error = str(score_meta["error"])
    else:
        scores = {m: 0.0 for m in metric_names}
        answer = ""
        explanation = ""
        if error is None:
            error = "sample produced no score"
    output = sample.output
    answered = output is not None and bool(output.choices)  # an errored sample's output has no choice
    completion = (output.completion or "") if answered else ""
    stop_reason = str(output.stop_reason or "") if answered else ""
    if stop_reason == "model_length" and error is None:
        # the model could not take the input (or ran out of context): scored as the empty answer it
        # is, and said so, not left to read as "no route in the answer"
        explanation = "; ".join(
            x for x in [CONTEXT_EXCEEDED + (f" ({output.error})" if output and output.error else ""), explanation] if x
        )
    retries = sample_http_retries(sample)
    if retries:  # shown in the progress line, and kept with the sample
        details["http_retries"] = retries
    usage = sample.model_usage or {}
    in_tok = sum(u.input_tokens for u in usage.values())
    out_tok = sum(u.output_tokens for u in usage.values())
    from geoeval.core.run.replay import REPLAYED, take_recording

    trajectory = take_recording(str(sample.id), int(sample.epoch)) + cached_calls(
        sample, _STATE.generation_models or {model}
    )
    by_model, cache_hits = sample_usage(sample, trajectory, _STATE.generation_models or {model})
    return SampleResult(
        run_hash=run_hash,
        sample_id=str(sample.id),
        epoch=int(sample.epoch),
        model=model,
        answer=clean_text(answer),
        completion=clean_text(completion),
        stop_reason=stop_reason,
        explanation=clean_text(explanation),
        scores=scores,
        dims=dims,
        input_tokens=int(in_tok),
        output_tokens=int(out_tok),
        error=error,
        details=clean_value(details),
        usage=by_model,
        cache_hits=cache_hits,
        replayed_calls=sum(1 for call in trajectory if call.get(REPLAYED)),
        trajectory=clean_value(trajectory) or None,
    )


def cached_calls(sample: EvalSample, generation_models: set[str]) -> list[dict[str, Any]]:
    """The calls of the trajectory's models that Inspect answered from its cache, as records for
    the trajectory store: the cache answers before the provider's `generate`, so the recorder of
    `run/replay.py` never sees them, and without them a cached sample could not be replayed."""
    from inspect_ai.event import ModelEvent

    from geoeval.core.run.replay import call_digest

    calls = []
    for event in sample.events or []:
        if not isinstance(event, ModelEvent) or event.cache != "read" or event.model not in generation_models:
            continue
        if not event.input or event.output is None:  # condensed away: nothing to key it by
            continue
        calls.append(
            {
                "role": event.role or "agent",
                "model": event.model,
                "digest": call_digest(event.model, event.input, event.tools, event.tool_choice),
                "output": event.output.model_dump(mode="json"),
                "cached": True,
            }
        )
    return calls


def sample_usage(sample: EvalSample, trajectory: list[dict[str, Any]], generation_models: set[str]) -> tuple[dict, int]:
    """A sample's tokens by model, as `core.cost.pricing` reads them, and its cache hits: what
    Inspect counted (`model_usage`: every call that was not answered from its cache, replayed ones
    included), the replayed calls' share (from the recording), and the calls Inspect answered
    from its cache (its model events marked `cache="read"`, which it does not count)."""
    from inspect_ai.event import ModelEvent

    from geoeval.core.run.replay import replayed_usage

    out: dict[str, dict[str, Any]] = {}

    def entry(model: str) -> dict[str, Any]:
        return out.setdefault(
            model,
            {
                "role": "agent" if model in generation_models else "judge",
                "input": 0,
                "output": 0,
                "cache_read": 0,
                "replayed_input": 0,
                "replayed_output": 0,
                "cached_input": 0,
                "cached_output": 0,
                "calls": 0,
            },
        )

    for model, usage in (sample.model_usage or {}).items():
        e = entry(model)
        e["input"] += int(usage.input_tokens or 0)
        e["output"] += int(usage.output_tokens or 0)
        e["cache_read"] += int(usage.input_tokens_cache_read or 0)
    cache_hits = 0
    for event in sample.events or []:
        if not isinstance(event, ModelEvent):
            continue
        if event.cache == "read":
            cache_hits += 1
            e = entry(event.model)
            cached = event.output.usage if event.output is not None else None
            e["cached_input"] += int(cached.input_tokens or 0) if cached else 0
            e["cached_output"] += int(cached.output_tokens or 0) if cached else 0
        else:
            entry(event.model)["calls"] += 1
    for model, replayed in replayed_usage(trajectory).items():
        e = entry(model)
        e["replayed_input"] += replayed["input"]
        e["replayed_output"] += replayed["output"]
        e["calls"] = max(0, e["calls"] - replayed["calls"])
    return out, cache_hits


@hooks(name="geoeval_results", description="Streams each finished sample to geoeval's result sink.")
class ResultStreamHook(Hooks):
    async def on_sample_end(self, data: SampleEnd) -> None:
        sink, on_sample = _STATE.sink, _STATE.on_sample
        if sink is None:
            return
        try:
            result = sample_to_result(
                data.sample, run_hash=_STATE.run_hash, model=_STATE.model, metric_names=_STATE.metric_names
            )
        except Exception as exc:  # Inspect would swallow it and the sample would vanish: store it as an error
            result = undelivered_error(
                data.sample,
                epoch=int(data.sample.epoch),
                run_hash=_STATE.run_hash,
                model=_STATE.model,
                metric_names=_STATE.metric_names,
                reason=f"geoeval could not read this finished sample: {type(exc).__name__}: {exc}",
            )
        sink(result)
        if on_sample is not None:
            on_sample(data.sample)


@contextmanager
def streaming_to(
    sink: Sink,
    *,
    run_hash: str,
    model: str,
    metric_names: list[str],
    on_sample: Callable[[EvalSample], None] | None = None,
    generation_models: set[str] | None = None,
):
    with _STATE.lock:
        _STATE.sink, _STATE.run_hash, _STATE.model, _STATE.metric_names = sink, run_hash, model, list(metric_names)
        _STATE.on_sample = on_sample
        _STATE.generation_models = set(generation_models or {model})
    try:
        yield
    finally:
        with _STATE.lock:
            _STATE.sink = _STATE.on_sample = None
            _STATE.generation_models = set()


def undelivered_error(
    sample: Any, *, epoch: int, run_hash: str, model: str, metric_names: list[str], reason: str
) -> SampleResult:
    """The error result of a sample that Inspect never delivered (its eval failed as a whole, or
    was cancelled): it keeps its dimensions, so it is counted where it belongs."""
    meta = getattr(sample, "metadata", None) or {}
    dims = Dimensions.model_validate(meta.get("dims") or {"suite": meta.get("suite", "unknown")})
    return SampleResult(
        run_hash=run_hash,
        sample_id=str(sample.id),
        epoch=epoch,
        model=model,
        scores={m: 0.0 for m in metric_names},
        dims=dims,
        error=clean_text(reason, max_chars=4000),
    )


def live_sample_buffer(spec: RunSpec) -> bool:
    """Whether Inspect keeps its live sample buffer (`runner.log_realtime`), which serves `inspect
    view` while an eval runs at the cost of a SQLite write per transcript event (~3 ms a sample:
    0.8 s of a 256-sample eval of an offline agent, a quarter of it). `auto`: on for real models,
    whose samples take seconds and are worth watching; off for geoeval's offline agents, whose
    samples finish in milliseconds."""

    wanted = spec.runner.log_realtime
    return not offline_model(spec) if wanted == "auto" else bool(wanted)


#: Set once this process hands Inspect geoeval's tasks as objects (a run's driver, a Ray worker).
_TASK_OBJECTS = threading.Event()


def evaluating_task_objects() -> bool:
    """Whether this process evaluates geoeval's tasks as objects (`run_shard`, `warm_up`): Inspect
    then never looks a geoeval task up by name, and its entry point for geoeval
    (`geoeval/_inspect_registry.py`) names the suites loaded so far instead of importing every
    suite and plugin to name them all (~0.45 s of CPU in each process: the driver, each Ray worker)."""
    return _TASK_OBJECTS.is_set()


def warm_up() -> None:
    """Pay Inspect's one-time set-up in this process now: a one-sample eval of Inspect's mock
    model, logged to a throwaway folder. A process's first `eval()` costs ~1.4 s more than the
    next ones (measured in a Ray worker); a worker that does this while the driver prepares the
    job starts its first shard at full speed. Never raises: it is only an optimisation."""

    _TASK_OBJECTS.set()
    try:
        from inspect_ai import Task
        from inspect_ai.dataset import Sample
        from inspect_ai.scorer import match
        from inspect_ai.solver import generate

        with tempfile.TemporaryDirectory(prefix="geoeval-warm-up-") as folder:
            inspect_eval(
                Task(dataset=[Sample(input="ok", target="ok")], solver=[generate()], scorer=match()),
                model="mockllm/model",
                log_dir=folder,
                log_format="eval",
                display="none",
                log_realtime=False,
                score_display=False,
            )
    except Exception:  # a worker that could not warm up still runs its shards
        pass


def _suite_values(spec: RunSpec) -> dict[str, Any]:
    """The suite config's scalar values (setting, resolution, language, ...), without its name."""
    values = spec.suite.model_dump()
    return {k: v for k, v in values.items() if k != "name" and isinstance(v, (str, int, float, bool))}


def sweep_point() -> str | None:
    """The name of the sweep point this process runs (its swept values), where it runs the job;
    the driver sends it to a Ray shard, which does not know it (`run_shard`'s `point`)."""

    job = current_sweep_job()
    return job.label if job is not None else None


def _swept_first(spec: RunSpec, point: str | None) -> dict[str, Any]:
    """The suite's values, those the sweep point names first (in its order), then the others."""
    values = _suite_values(spec)
    swept = [part.split("=", 1)[0].rsplit(".", 1)[-1] for part in (point or "").split() if "=" in part]
    return {**{k: values[k] for k in swept if k in values}, **values}


def log_tags(spec: RunSpec, point: str | None = None) -> list[str]:
    """Tags of an Inspect log that tell a sweep's logs apart in `inspect view`: the sweep point's
    name (its swept values), the swept values one a tag, and the model: no more, since the
    viewer shows the first few and Inspect stores a log's tags as a set (their order is lost);
    every setting is in the log's task args and metadata (`log_task_args`, `log_metadata`).
    Outside a sweep: the model and the suite's settings (`setting=map`, `resolution=0.25`, ...)."""
    values = _swept_first(spec, point)
    if not point:
        return [f"model={spec.model.name}", *(f"{k}={v}" for k, v in values.items())]
    swept = [part for part in point.split() if "=" in part]
    return [f"sweep:{point}", *[f"{k}={v}" for k, v in values.items()][: len(swept)], f"model={spec.model.name}"]


def log_metadata(spec: RunSpec, point: str | None = None) -> dict[str, Any]:
    """The same values as the log's metadata: the model, the suite's settings, the sweep point."""
    return {
        "geoeval_model": spec.model.name,
        "geoeval_suite": {"name": spec.suite.name, **_suite_values(spec)},
        **({"geoeval_sweep_point": point} if point else {}),
    }


def log_task_args(spec: RunSpec, point: str | None = None) -> dict[str, Any]:
    """The task args `inspect view` lists beside each log: the suite's values, swept ones first."""
    return {**_swept_first(spec, point), "model": spec.model.name}


def run_shard(
    spec: RunSpec,
    env: Any,
    samples: list[Any],
    *,
    shard: int,
    sink: Sink,
    log_dir: str | Path,
    on_sample: Callable[[EvalSample], None] | None = None,
    replay: dict[tuple[str, int], list[dict[str, Any]]] | None = None,
    point: str | None = None,
) -> list[str]:
    """Evaluate `samples` with Inspect and stream each result into `sink`; returns the log paths.
    `replay`: the stored model calls of these samples (`run/replay.py`), answered without a
    request where the model is shown the same input. `point`: the sweep point's name, for the
    log's tags and task args (default: this process's, `sweep_point`).

    Every sample reaches the sink exactly once per epoch, scored or as an error: Inspect retries
    an errored sample `retry_on_error` times in the run; and when the eval fails as a whole (an
    error Inspect cannot pin on one sample), each sample it did not deliver is sent as an error
    carrying the eval's message, so nothing vanishes and a rerun retries them."""
    from geoeval.core import registry
    from geoeval.core.run.replay import record_and_replay, replaying

    _TASK_OBJECTS.set()  # before Inspect loads its entry points (`build_model`)
    suite = registry.get_suite(spec.suite.name)
    task = suite.build_task(spec, env, samples)
    point = point if point is not None else sweep_point()
    # what tells the logs apart in `inspect view`: the task args, and the point beside the task's name
    label_task(task, log_task_args(spec, point), f"{task.name} {point}" if point else None)
    model = record_and_replay(build_model(spec, shard), "agent")
    # the suite's simulated roles (a user, a tool simulator) make the trajectory with the agent
    for role, role_model in (task.model_roles or {}).items():
        record_and_replay(role_model, role)
    generation_models = {str(model), spec.model.name, *(str(m) for m in (task.model_roles or {}).values())}
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    run_hash = spec.config_hash()
    delivered: set[tuple[str, int]] = set()

    def tracking_sink(result: SampleResult) -> None:
        delivered.add((result.sample_id, result.epoch))
        sink(result)

    reason = ""
    logs = []
    with (
        replaying(replay, replay_only=spec.generation == "replay_only"),
        streaming_to(
            tracking_sink,
            run_hash=run_hash,
            model=spec.model.name,
            metric_names=spec.metrics.metrics,
            on_sample=on_sample,
            generation_models=generation_models,
        ),
    ):
        try:
            logs = inspect_eval(
                task,
                model=model,
                log_dir=str(log_dir),
                log_format="eval",
                # geoeval shows its own progress; measured on 2 cores, "none" costs what "log"
                # costs at 32 samples and ~80 ms less at 256 (the 30-job sweep: the same)
                display="none",
                log_realtime=live_sample_buffer(spec),
                epochs=spec.epochs,
                max_samples=samples_in_flight(spec, shard),
                # geoeval applies `fail_on_error` itself, over the whole run and after retries
                fail_on_error=False,
                retry_on_error=spec.retry_on_error or None,
                score_display=False,
                tags=log_tags(spec, point),  # the run hash and shard: in the metadata
                metadata={"geoeval_run_hash": run_hash, "shard": shard, **log_metadata(spec, point)},
            )
        except Exception as exc:  # Inspect raised instead of logging the failure
            reason = f"eval failed: {type(exc).__name__}: {exc}"
    for log in logs:
        if getattr(log, "status", "") in ("error", "cancelled") and not reason:
            err = getattr(log, "error", None)
            reason = f"eval {log.status}: {getattr(err, 'message', '') or 'no message'}"
    for sample in samples:
        for epoch in range(1, spec.epochs + 1):
            if (str(sample.id), epoch) not in delivered:
                sink(
                    undelivered_error(
                        sample,
                        epoch=epoch,
                        run_hash=run_hash,
                        model=spec.model.name,
                        metric_names=spec.metrics.metrics,
                        reason=reason or "Inspect did not deliver this sample",
                    )
                )
    return [str(log.location) for log in logs]
