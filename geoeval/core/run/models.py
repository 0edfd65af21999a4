"""The models a run calls, built one way: the evaluated model (`build_model`: its generate
settings, Inspect's cache when asked, its connections split among Ray's workers) and every other
(`build_role_model`: a judge, a simulated user or tool). Each goes through the same seam
(`clean_model_replies`): a provider's reply is made safe for Inspect's log, a reply that cannot be
read is one clear error, a request longer than the model's context is a `model_length` stop; and
the OpenAI SDK's own retries are off, so Inspect's `max_retries` bound every call. How many samples
a worker runs at once follows the model (`samples_in_flight`).
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

from inspect_ai.model import GenerateConfig, Model, get_model
from pydantic import BaseModel, ValidationError

from geoeval.core.private_api import install_offline_token_estimate
from geoeval.core.run.preflight import OFFLINE_PROVIDERS, bounded_generate_settings
from geoeval.core.text import clean_fields, clean_text, clean_value, nesting_depth

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

# Inspect estimates tokens with an encoding tiktoken downloads: offline, estimate instead (a model
# built here may run where nothing imported `inspect_bridge`, e.g. a judge scored outside a run)
install_offline_token_estimate()


#: what a provider's HTTP 400 says when a request is longer than the model's context (OpenAI's
#: code is recognised by Inspect; llama.cpp's, vLLM's and others' messages are not)
_CONTEXT_MESSAGE = re.compile(
    r"exceed(?:s|ed)? (?:the )?context window|context length|maximum context|context_length_exceeded|"
    r"input length|too many tokens|prompt is too long",
    re.IGNORECASE,
)


def clean_model_output(output: Any) -> Any:
    """A provider's `ModelOutput` (or `(ModelOutput, ModelCall)`) made safe for Inspect's own
    logging, in place: lone surrogates and control characters in every string field of the reply
    (the text, the reasoning, the tool calls' names, ids and arguments, the reply's id and
    metadata, whatever a provider adds) and in the raw call record become U+FFFD, and over-deep
    argument nesting is cut. Without it one `"\\ud800"` anywhere in a reply fails Inspect's sample
    log (`PydanticSerializationError`) and with it every sample of the eval."""

    result, call = output if isinstance(output, tuple) else (output, None)
    if getattr(result, "choices", None) == [] and not getattr(result, "error", None):
        raise ModelReplyError("the model endpoint answered with a chat completion that has no choices (`choices: []`)")
    for choice in getattr(result, "choices", None) or []:
        for tool_call in choice.message.tool_calls or []:
            if nesting_depth(tool_call.arguments, 64) > 64:
                tool_call.arguments = clean_value(tool_call.arguments, max_depth=64)
    if isinstance(result, BaseModel):
        clean_fields(result)
    if call is not None:
        call.request = clean_value(call.request)
        call.response = clean_value(call.response) if call.response is not None else None
    return output


#: What a provider raises when a reply parses as JSON but is not the chat completion it reads
#: (`choices: []` gives IndexError, a missing field TypeError, KeyError or a pydantic error)
UNREADABLE_REPLY = (IndexError, KeyError, TypeError, AttributeError, ValidationError)


class ModelReplyError(RuntimeError):
    """A reply the provider could not read: the sample's error says so in one line (it was an
    opaque `IndexError('list index out of range')`)."""


def _retryable(api: Any, error: BaseException) -> bool:
    should_retry = getattr(api, "should_retry", None)
    try:
        return bool(should_retry(error)) if should_retry is not None else False
    except Exception:  # a provider's classifier that cannot classify this: not retryable
        return False


def context_exceeded(model: Any, error: BaseException) -> Any:
    """A `ModelOutput` with `stop_reason="model_length"` for a provider error that says the request
    is longer than the model's context (an HTTP 400 whose message says so), else None. The sample
    is then scored as the empty answer it is, with that reason, not retried as a failure."""
    from inspect_ai.model import ModelOutput

    status = getattr(error, "status_code", None)
    message = clean_text(str(error), max_chars=300)
    if status != 400 or not _CONTEXT_MESSAGE.search(message):
        return None
    output = ModelOutput.from_content(str(getattr(model, "name", "") or model), content="", stop_reason="model_length")
    output.error = message
    return output


def clean_model_replies(model: Any) -> Any:
    """`model` (an Inspect `Model`) with its provider's `generate` wrapped by `clean_model_output`
    (the seam between the provider and Inspect's Model, which records the reply as soon as
    `generate` returns), once; returns it. Every model geoeval builds goes through it: the
    evaluated one, and the suites' own roles (a user or tool simulator, a model judge), whose
    replies enter the same sample log. Anything without a provider (a test's stand-in) is
    returned as it is."""
    api = getattr(model, "api", None)
    if api is None or getattr(api, "_geoeval_clean_replies", False):
        return model
    generate = api.generate

    async def clean_generate(*args: Any, **kwargs: Any) -> Any:
        try:
            output = await generate(*args, **kwargs)
        except Exception as error:
            found = context_exceeded(model, error)
            if found is not None:
                return found
            if not isinstance(error, UNREADABLE_REPLY):
                raise
            if _retryable(api, error):
                raise  # Inspect's retry decides about it, as about any provider error
            raise ModelReplyError(
                f"the model endpoint answered, but its reply could not be read as a chat completion "
                f"({type(error).__name__}: {clean_text(str(error), max_chars=300)}; e.g. an empty `choices` list)"
            ) from error
        if isinstance(output, tuple) and isinstance(output[0], Exception):  # a provider's handled 400
            found = context_exceeded(model, output[0])
            if found is not None:
                return found, output[1]
        return clean_model_output(output)

    api.generate = clean_generate
    api._geoeval_clean_replies = True
    return model


#: Inspect providers that talk through the OpenAI SDK client, whose own retries `build_model` turns off
OPENAI_SDK_PROVIDERS = frozenset({"openai", "openai-api", "ollama"})

#: The client library each provider imports when its first model is built (~1.2 s for the OpenAI
#: SDK on 2 cores): a Ray worker's warm-up imports it before its first shard (`import_provider_sdk`)
PROVIDER_SDKS = {
    **dict.fromkeys(OPENAI_SDK_PROVIDERS | {"vllm", "openai-api-completions"}, "openai"),
    "anthropic": "anthropic",
}


def import_provider_sdk(model_name: str) -> None:
    """Import the client library of `model_name`'s provider, if it has one and it is installed."""
    module = PROVIDER_SDKS.get(model_name.split("/", 1)[0])
    if module is not None:
        try:
            importlib.import_module(module)
        except ImportError:  # the provider says so when the model is built
            pass


#: Where a rescore's evaluated model points (`.invalid` never resolves), and the key it is given:
#: it is never called, but a provider wants both to be built
NO_CALL_BASE_URL = "http://replay-only.invalid/v1"
NO_CALL_API_KEY = "placeholder"


def cache_policy(setting: bool | str) -> Any:
    """Inspect's `CachePolicy` for a `model.cache` / `judge.cache` setting (None: off)."""
    from inspect_ai.model import CachePolicy

    if setting is False:
        return None
    return CachePolicy() if setting is True else CachePolicy(expiry=str(setting))


#: samples in flight for geoeval's offline agents when nothing says otherwise (they answer in
#: milliseconds: more only adds contention on a small machine)
OFFLINE_SAMPLES_IN_FLIGHT = 8


#: Inspect's connection limit for a provider that does not set its own
INSPECT_DEFAULT_CONNECTIONS = 10


def shard_count(spec: RunSpec) -> int:
    """The shards (Ray tasks) a job's samples are split into: `runner.num_workers`, but no more
    than `model.config.max_connections` (each shard holds at least one connection, so more shards
    than connections would exceed the total); 1 for the local runner."""
    if spec.runner.name != "ray":
        return 1
    total = spec.model.config.max_connections
    return spec.runner.num_workers if total is None else max(1, min(spec.runner.num_workers, total))


def connections_per_worker(spec: RunSpec, shard: int = 0) -> int | None:
    """The evaluated model's connection limit in shard `shard`: `model.config.max_connections` is
    the total a provider sees, so the shards split it exactly (C = 5 over 2: 3 and 2; the sum is
    never above C). None: the provider's own default."""
    total = spec.model.config.max_connections
    if total is None:
        return None
    workers = shard_count(spec)
    return total // workers + (1 if shard % workers < total % workers else 0)


def samples_in_flight(spec: RunSpec, shard: int = 0) -> int:
    """Samples each worker runs at once: `runner.max_samples` when set, else as many as the model
    takes requests at once (its connections per worker; Inspect's default of 10 per provider; 8
    for geoeval's offline agents). For an API model the work is waiting: fewer samples than
    connections leave connections idle."""
    if spec.runner.max_samples is not None:
        return spec.runner.max_samples
    per_worker = connections_per_worker(spec, shard)
    if per_worker is not None:
        return per_worker
    if spec.model.provider == "geoeval":
        return OFFLINE_SAMPLES_IN_FLIGHT
    return max(1, -(-INSPECT_DEFAULT_CONNECTIONS // shard_count(spec)))


def concurrency_warning(spec: RunSpec) -> str | None:
    """One line when an explicit `runner.max_samples` keeps the model's connections idle."""
    per_worker = connections_per_worker(spec)
    if spec.runner.max_samples is None or per_worker is None or spec.runner.max_samples >= per_worker:
        return None
    return (
        f"runner.max_samples={spec.runner.max_samples} keeps {per_worker - spec.runner.max_samples} of the model's "
        f"{per_worker} connections per worker idle (model.config.max_connections={spec.model.config.max_connections}"
        f" over {shard_count(spec)} worker(s)); leave runner.max_samples unset to follow the model"
    )


def sdk_retry_args(name: str) -> dict[str, Any]:
    """Provider args that turn the OpenAI SDK's own retries off (it retries each request twice
    under Inspect's retries), so that a model call makes at most `max_retries` + 1 requests."""
    return {"max_retries": 0} if name.split("/", 1)[0] in OPENAI_SDK_PROVIDERS else {}


def build_role_model(name: str, config: GenerateConfig) -> Model:
    """A model a suite or judge uses beside the evaluated one (a simulated user or tool, a model
    judge, a phrasing model): its replies cleaned (`clean_model_replies`) and its retries bounded
    as the evaluated model's are (`sdk_retry_args`)."""
    return clean_model_replies(get_model(name, config=config, **sdk_retry_args(name)))


def build_model(spec: RunSpec, shard: int = 0) -> Model:
    """The evaluated model from `model=`: any Inspect model string with its generate settings
    (its connections: shard `shard`'s part of `model.config.max_connections`).

    A key given as `model.args.api_key` goes to Inspect as `api_key=`, which Inspect never
    writes to its log (its `model_args` are logged); validation refuses other secret-named args."""

    # retries are bounded whatever the config says: a failing endpoint ends in counted errors
    settings = bounded_generate_settings({k: v for k, v in spec.model.config.model_dump().items() if v is not None})
    per_worker = connections_per_worker(spec, shard)
    if per_worker is not None:  # the configured total, split among Ray's workers
        settings["max_connections"] = per_worker
    if spec.model.cache is not False:
        settings["cache"] = cache_policy(spec.model.cache)
    args = dict(spec.model.args)
    api_key = args.pop("api_key", None)
    base_url = spec.model.base_url
    if spec.generation == "replay_only" and spec.model.provider not in OFFLINE_PROVIDERS:
        # a rescore answers every call from the stored trajectory and refuses any other before it
        # is sent (`run/replay.py`): the provider points nowhere, needing no server, key or endpoint
        # (vLLM given no base URL would start one)
        base_url, api_key = NO_CALL_BASE_URL, api_key or NO_CALL_API_KEY
    if spec.model.name.split("/", 1)[0] in OPENAI_SDK_PROVIDERS:
        # the OpenAI SDK retries each request twice on its own, under Inspect's retries: with it off,
        # a model call makes at most `max_retries` + 1 requests, as configured (a user's value wins)
        args.setdefault("max_retries", 0)
    model = get_model(
        spec.model.name,
        config=GenerateConfig(**settings),
        base_url=base_url,
        api_key=api_key,
        memoize=False,
        **args,
    )
    return clean_model_replies(model)
