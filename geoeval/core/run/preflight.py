"""Fail fast on a bad model endpoint, and bound the retries of a run.

Before any work, `preflight` sends ONE small chat request (`max_tokens: 1`) to each configured
OpenAI-compatible endpoint (the evaluated model, the judges, the user and tool simulators) with a
short timeout, and stops the run with one line per failing role when an endpoint cannot serve it:

- 2xx with a chat completion: ok;
- 429, 408 and 5xx other than 501: retryable, the run proceeds (the result carries a note);
- 400 and 422: ok with a note: the endpoint is reachable and took the key, it only rejected the
  probe's parameters (e.g. a reasoning model that wants `max_completion_tokens`), which says
  nothing about the run's own requests;
- any other 4xx (401, 403, 404, ...), 501, a 2xx whose body is not a chat completion, a refused
  connection, an unknown host or no answer within the timeout: fatal.

Which endpoint a model string names follows Inspect's own resolution (its providers read the
same variables): `openai-api/<service>/<model>` takes the base URL from `base_url` or
`<SERVICE>_BASE_URL` and the key from `api_key` or `<SERVICE>_API_KEY` (service upper-cased,
`-` as `_`); `openai/...` is probed only with `base_url` or `OPENAI_BASE_URL` (the public API is
not probed); `vllm/...` only with `base_url` or `VLLM_BASE_URL` (otherwise Inspect starts its own
server); `ollama/...` with `base_url`, `OLLAMA_BASE_URL` or `http://localhost:11434/v1`. Offline
providers (`geoeval/`, `mockllm/`, `none/`), the `rules` judge and other providers are skipped.

During the run Inspect retries 429, 408, 5xx, connection errors and timeouts itself, with
exponential backoff (3 s, 6 s, 12 s, ... plus up to 3 s jitter) around the OpenAI SDK's own two
quick retries; it retries forever unless `max_retries` or `timeout` is set. `RETRY_DEFAULTS` are
the bounds geoeval recommends; `http_retry_count` reads Inspect's process-wide retry counter for
the progress line.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypedDict

from geoeval.core.config.secrets import redact_url, scrub_text
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import http_retries_count
from geoeval.core.text import clean_text

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

#: Seconds to wait for the probe's connection and for its answer.
DEFAULT_TIMEOUT_S = 5.0
#: Seconds the probes have to come back before `preflight` runs its caller's `meanwhile` work.
MEANWHILE_AFTER_S = 0.1
#: Characters of an error body quoted in the message.
BODY_CHARS = 200
#: Providers that never leave the process.
OFFLINE_PROVIDERS = frozenset({"geoeval", "mockllm", "none"})
#: Inspect's own default for Ollama.
OLLAMA_DEFAULT_BASE_URL = "http://localhost:11434/v1"
#: Statuses Inspect retries (its `is_retryable_http_status`), less 501, which no retry can fix.
RETRYABLE_STATUSES = frozenset({408, 429}) | (frozenset(range(500, 600)) - {501})
#: Statuses that reject the probe's parameters, not the endpoint or the key.
PROBE_REJECTED_STATUSES = frozenset({400, 422})


class RetrySettings(TypedDict):
    """The `GenerateConfig` fields that bound a request's retries (seconds for the timeouts)."""

    max_retries: int
    timeout: int
    attempt_timeout: int


#: Bounded retries for every model's GenerateConfig. Each Inspect attempt is tried three times
#: by the OpenAI SDK (0.5 s and 1 s apart), and Inspect waits 3, 6, 12 s (plus up to 3 s jitter)
#: between its attempts; `max_retries=3` thus gives up on an endpoint that always answers 429 or
#: 5xx after 12 requests and about 30 s (measured: 29 s). `attempt_timeout` abandons and retries
#: an attempt that hangs (a long reasoning answer must fit in it); `timeout` is checked between
#: attempts and caps a request whose attempts are slow failures. A request that gives up raises,
#: and Inspect records the sample as errored (with `fail_on_error=False`).
RETRY_DEFAULTS: RetrySettings = {"max_retries": 3, "timeout": 600, "attempt_timeout": 300}

#: Roles as the message names them.
ROLE_EVALUATED = "evaluated model"
ROLE_JUDGE = "judge"
#: Suite config fields that name an Inspect model, and the role each plays.
SUITE_MODEL_FIELDS: dict[str, str] = {
    "user_model": "user simulator",  # MapSatisfy's C.1 LLM user (Inspect role `user`)
    "tool_simulator": "tool simulator",  # MapSatisfy's sandbox stage 3 (role `tool_simulator`)
    "phrasing_model": "query rephraser",  # LifePlanner's templated-query rewriter
}

#: The suite model fields whose calls make the trajectory with the evaluated model's: a rescore
#: replays them (`run/replay.py`), so it does not probe them either.
REPLAYED_SUITE_MODEL_FIELDS = frozenset({"user_model", "tool_simulator"})

Check = tuple[str, str, "str | None", "str | None"]  # (role, model_name, base_url, api_key)


@dataclass(frozen=True)
class Endpoint:
    """Where a model string's chat requests go."""

    base_url: str
    model: str  # the model name the server is asked for
    api_key: str | None


@dataclass(frozen=True)
class PreflightResult:
    """One probed (or skipped) endpoint. `ok`: the run may proceed; `fatal`: it must not;
    `status`: the HTTP status, None when there was no answer or no probe."""

    role: str
    model_name: str
    endpoint: str | None  # the base URL, credentials redacted
    status: int | None
    ok: bool
    fatal: bool
    message: str


# --- which endpoint ---------------------------------------------------------------------------
def _env_name(service: str) -> str:
    return service.upper().replace("-", "_")


def _base_url(explicit: str | None, env_vars: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Inspect's `model_base_url`: the explicit URL, the first set variable, then
    `INSPECT_EVAL_MODEL_BASE_URL`."""
    if explicit:
        return explicit
    for var in (*env_vars, "INSPECT_EVAL_MODEL_BASE_URL"):
        if environ.get(var):
            return environ[var]
    return None


def resolve_endpoint(
    model_name: str, base_url: str | None, api_key: str | None, environ: Mapping[str, str] | None = None
) -> Endpoint | str:
    """The OpenAI-compatible endpoint `model_name` talks to, or a sentence saying why it is not
    probed (offline provider, no base URL known, not an OpenAI-compatible provider)."""
    environ = os.environ if environ is None else environ
    provider, _, rest = model_name.partition("/")
    if provider in OFFLINE_PROVIDERS or model_name == "rules":
        return "offline provider: nothing to probe"
    if provider == "openai-api":
        service, _, model = rest.partition("/")
        name = _env_name(service)
        url = _base_url(base_url, [f"{name}_BASE_URL"], environ)
        if not url:
            return f"no base URL known (set model.base_url or {name}_BASE_URL)"
        return Endpoint(url, model, api_key or environ.get(f"{name}_API_KEY"))
    if provider == "openai":
        if rest.split("/", 1)[0] in ("azure", "bedrock"):
            return "hosted OpenAI (Azure/Bedrock): not probed"
        url = _base_url(base_url, ["OPENAI_BASE_URL"], environ)
        if not url:
            return "the public OpenAI API: not probed"
        return Endpoint(url, rest, api_key or environ.get("OPENAI_API_KEY"))
    if provider == "vllm":
        url = _base_url(base_url, ["VLLM_BASE_URL"], environ)
        if not url:
            return "no vLLM server given (Inspect starts one): not probed"
        return Endpoint(url, rest, api_key or environ.get("VLLM_API_KEY") or "inspectai")
    if provider == "ollama":
        url = _base_url(base_url, ["OLLAMA_BASE_URL"], environ) or OLLAMA_DEFAULT_BASE_URL
        return Endpoint(url, rest, api_key or environ.get("OLLAMA_API_KEY") or "ollama")
    return f"provider {provider!r} is not OpenAI-compatible: not probed"


# --- one probe --------------------------------------------------------------------------------
def _probe_request(endpoint: Endpoint) -> urllib.request.Request:
    body = json.dumps(
        {"model": endpoint.model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    ).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        # urllib cannot send `user:password@host`: the credentials go as HTTP basic auth, as
        # httpx (the providers' client) sends them
        import base64

        userinfo, host = parts.netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        token = base64.b64encode(f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()).decode()
        headers.setdefault("Authorization", f"Basic {token}")
        url = urllib.parse.urlunsplit(parts._replace(netloc=host))
    return urllib.request.Request(url, data=body, headers=headers, method="POST")


def _quote_body(raw: bytes, api_key: str | None) -> str:
    """The first `BODY_CHARS` characters of a reply body on one line, with the key scrubbed
    (some servers echo the key they refused)."""
    text = " ".join(raw.decode("utf-8", errors="replace").split())
    text = scrub_text(text, [api_key] if api_key else [])
    return clean_text(text, max_chars=BODY_CHARS)


def _reason(status: int, given: str | None) -> str:
    if given:
        return str(given)
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _is_chat_completion(raw: bytes) -> bool:
    try:
        payload = json.loads(raw)
    except ValueError:
        return False
    return isinstance(payload, dict) and isinstance(payload.get("choices"), list)


def _why_unreachable(error: BaseException, timeout_s: float) -> str:
    reason = getattr(error, "reason", error)
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return (
            f"did not answer within {timeout_s:g} s (a cold model load can take longer: raise preflight_timeout_s, "
            "or skip the check with preflight=false)"
        )
    if isinstance(reason, ConnectionRefusedError):
        return "is unreachable: connection refused"
    if isinstance(reason, socket.gaierror):
        return "is unreachable: unknown host"
    return f"is unreachable: {clean_text(str(reason), max_chars=BODY_CHARS)}"


def _classify(status: int, reason: str, raw: bytes, api_key: str | None) -> tuple[bool, bool, str]:
    """(ok, fatal, what happened) for an HTTP answer."""
    said = f"answered HTTP {status} {reason}".rstrip()
    body = _quote_body(raw, api_key)
    quoted = f": {body}" if body else " (empty body)"
    if 200 <= status < 300:
        if _is_chat_completion(raw):
            return True, False, f"answered HTTP {status}"
        return False, True, f"{said} but not with a chat completion{quoted}"
    if status in RETRYABLE_STATUSES:
        return True, False, f"{said} (retryable; the run will retry){quoted}"
    if status in PROBE_REJECTED_STATUSES:
        return True, False, f"{said} to the 1-token probe (reachable; the run's requests differ){quoted}"
    return False, True, f"{said}{quoted}"


def _line(role: str, endpoint: str, what: str) -> str:
    return f"model endpoint {endpoint} (role: {role}) {what}"


@dataclass(frozen=True)
class _Outcome:
    """A probe's outcome, before it is attributed to a role."""

    endpoint: str | None
    status: int | None
    ok: bool
    fatal: bool
    what: str


def _read_error_body(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read() or b""
    except (OSError, http.client.HTTPException):  # the server closed mid-body
        return b""


def _probe(
    model_name: str, base_url: str | None, api_key: str | None, timeout_s: float, environ: Mapping[str, str] | None
) -> _Outcome:
    resolved = resolve_endpoint(model_name, base_url, api_key, environ)
    if isinstance(resolved, str):
        return _Outcome(None, None, ok=True, fatal=False, what=resolved)
    shown = redact_url(resolved.base_url)
    parsed = urllib.parse.urlsplit(resolved.base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return _Outcome(
            shown, None, ok=False, fatal=True, what="is not a usable URL (it needs http:// or https:// and a host)"
        )
    try:
        with urllib.request.urlopen(_probe_request(resolved), timeout=timeout_s) as reply:
            status, reason, raw = reply.status, reply.reason, reply.read()
    except urllib.error.HTTPError as error:
        status, reason, raw = error.code, error.reason, _read_error_body(error)
    except ValueError as error:  # a base URL urllib cannot use (no scheme, bad port)
        return _Outcome(shown, None, ok=False, fatal=True, what=f"is not a usable URL: {error}")
    except (urllib.error.URLError, OSError) as error:  # refused, unknown host, timeout, reset
        return _Outcome(shown, None, ok=False, fatal=True, what=_why_unreachable(error, timeout_s))
    except http.client.HTTPException as error:  # not HTTP at all, or a body cut short
        detail = clean_text(str(error), max_chars=BODY_CHARS)
        return _Outcome(
            shown, None, ok=False, fatal=True, what=f"did not answer in HTTP: {type(error).__name__} {detail}"
        )
    ok, fatal, what = _classify(status, _reason(status, reason), raw, resolved.api_key)
    return _Outcome(shown, status, ok=ok, fatal=fatal, what=what)


def _result(role: str, model_name: str, outcome: _Outcome) -> PreflightResult:
    if outcome.endpoint:
        message = _line(role, outcome.endpoint, outcome.what)
    else:  # not probed: say which model and why
        message = f"{model_name} (role: {role}): {outcome.what}"
    return PreflightResult(role, model_name, outcome.endpoint, outcome.status, outcome.ok, outcome.fatal, message)


def check_endpoint(
    role: str,
    model_name: str,
    base_url: str | None,
    api_key: str | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    environ: Mapping[str, str] | None = None,
) -> PreflightResult:
    """Probe the endpoint `model_name` talks to with one 1-token chat request (at most
    `timeout_s` to connect and as much again to answer) and classify the outcome (module
    docstring). `environ` (default: this process's) supplies `<SERVICE>_BASE_URL` and
    `<SERVICE>_API_KEY`. Never raises for the endpoint's behaviour."""
    return _result(role, model_name, _probe(model_name, base_url, api_key, timeout_s, environ))


#: The environment variable each hosted provider reads its key from (Inspect's names).
PROVIDER_KEY_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "grok": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "perplexity": "PERPLEXITY_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}


def missing_keys(checks: Sequence[Check], environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per role whose provider needs a key that is neither configured nor in the
    environment (checked before any work, so a missing key is not found after the environment
    is built, as a traceback)."""
    environ = os.environ if environ is None else environ
    lines = []
    for role, model_name, _base_url, api_key in checks:
        provider, _, rest = model_name.partition("/")
        if provider == "openai-api":
            var = f"{_env_name(rest.partition('/')[0])}_API_KEY"
        else:
            var = PROVIDER_KEY_VARS.get(provider, "")
        if var and not api_key and not environ.get(var):
            lines.append(
                f"{role} {model_name} needs an API key: set the environment variable {var} "
                f"(for a local server without keys, any value: {var}=x)"
            )
    return lines


#: Probes `send_early` sent ahead of the run, by (model, base URL, key, timeout): the `preflight` of
#: the same endpoint takes the answer instead of asking again (each is taken once).
_EARLY: dict[tuple[str, str | None, str | None, float], Future[_Outcome]] = {}


def send_early(checks: Sequence[Check], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Send the probes of `checks` now, each on a daemon thread, and return at once: the run's
    `preflight` later takes their answers. A probe waits one model request (a remote model's
    latency, ~1 s) with the GIL free, so sent before the run's imports and Hydra's composition
    instead of after them, its wait is hidden behind them. What `preflight` reports and when
    (after the local checks and the tracking server's) is unchanged; nothing is sent when a key
    is missing (`preflight` says which). Probes with an `environ` of their own are not taken."""
    if missing_keys(checks):
        return
    for model_name, base_url, api_key in dict.fromkeys((m, b, k) for _, m, b, k in checks):
        key = (model_name, base_url, api_key, timeout_s)
        if key in _EARLY:
            continue
        answer: Future[_Outcome] = Future()
        _EARLY[key] = answer

        def probe(m: str = model_name, b: str | None = base_url, k: str | None = api_key, f=answer) -> None:
            try:
                f.set_result(_probe(m, b, k, timeout_s, None))
            except BaseException as exc:  # noqa: BLE001 -- raised again where `preflight` takes it
                f.set_exception(exc)

        threading.Thread(target=probe, name="geoeval-preflight-early", daemon=True).start()


def _early_answer(
    model_name: str, base_url: str | None, api_key: str | None, timeout_s: float, environ: Mapping[str, str] | None
) -> Future[_Outcome] | None:
    return _EARLY.pop((model_name, base_url, api_key, timeout_s), None) if environ is None else None


def preflight(
    checks: Sequence[Check],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[PreflightResult]:
    """Probe every check `(role, model_name, base_url, api_key)`, each distinct endpoint once
    and all in parallel, and raise `GeoevalError` with one line per failing role when any is
    fatal, e.g. `model endpoint http://127.0.0.1:9911/v1 (role: evaluated model) answered HTTP
    501 Not Implemented: <body>`. Returns the results (ok ones may carry notes worth printing).
    `meanwhile` (which must not raise) runs in this thread while the probes wait on their
    endpoints (a probe is one model request: a remote model's latency), unless every probe is
    back within `MEANWHILE_AFTER_S` (an offline model, a local server, a dead endpoint, whose
    error then comes at once)."""
    missing = missing_keys(checks, environ)
    if missing:
        raise GeoevalError("\n".join(missing))
    unique = list(dict.fromkeys((m, b, k) for _, m, b, k in checks))
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(unique)))) as pool:
        probes = [
            _early_answer(m, b, k, timeout_s, environ) or pool.submit(_probe, m, b, k, timeout_s, environ)
            for m, b, k in unique
        ]
        if meanwhile is not None and wait(probes, timeout=MEANWHILE_AFTER_S).not_done:
            meanwhile()
        outcomes = dict(zip(unique, (probe.result() for probe in probes)))
    results = [_result(role, m, outcomes[(m, b, k)]) for role, m, b, k in checks]
    failing = [r.message for r in results if r.fatal]
    if failing:
        raise GeoevalError("\n".join(failing))
    return results


def endpoint_checks(spec: RunSpec) -> list[Check]:
    """The checks of a validated run spec: the evaluated model (`model.name`, `model.base_url`,
    `model.args.api_key`), each `judge.models` entry other than `rules`, and the suite's
    model fields (`SUITE_MODEL_FIELDS`) that are set. Judges and simulators are plain model
    strings, so their base URL and key come from the environment. A rescore
    (`generation=replay_only`) calls neither the evaluated model nor the simulated roles (their
    calls are replayed): only the judges and the models that build samples are checked."""
    model = spec.model
    replay_only = spec.generation == "replay_only"
    checks: list[Check] = []
    if not replay_only:
        checks.append((ROLE_EVALUATED, model.name, model.base_url, (model.args or {}).get("api_key")))
    checks += [(ROLE_JUDGE, name, None, None) for name in spec.judge.models if name != "rules"]
    for field, role in SUITE_MODEL_FIELDS.items():
        name = getattr(spec.suite, field, None)
        if name and not (replay_only and field in REPLAYED_SUITE_MODEL_FIELDS):
            checks.append((role, str(name), None, None))
    return checks


# --- retries during the run -------------------------------------------------------------------
def http_retry_count() -> int:
    """HTTP retries Inspect has counted in this process so far (never reset; take differences):
    the number its own progress footer shows as "HTTP retries". Each request retried by the
    provider SDK or by Inspect's backoff loop counts once; a request that exhausts
    `max_retries` counts its last failure too (12 for 12 failed requests, 3 for three 429s
    followed by an answer)."""

    return http_retries_count()


def sample_http_retries(sample: Any) -> int:
    """The failed HTTP requests behind one finished Inspect `EvalSample` (every model it called:
    the evaluated model, judges, simulators), read from its transcript: each `ModelEvent` holds
    the provider SDK's retries of its call (`retries`) and, when the call failed, its `error`.
    Unlike `http_retry_count` it travels with the sample, so it also counts what happened in a
    Ray worker. It equals Inspect's counter for retried calls (3 for three 429s then an answer,
    12 for a call that exhausted `max_retries=3`); a call that failed without retry counts 1."""
    from inspect_ai.event import ModelEvent

    events = getattr(sample, "events", None) or []
    return sum((e.retries or 0) + (1 if e.error else 0) for e in events if isinstance(e, ModelEvent))


def bounded_generate_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` (GenerateConfig fields) with `RETRY_DEFAULTS` filled in where unset (None)."""
    merged = dict(settings)
    for name, value in RETRY_DEFAULTS.items():
        if merged.get(name) is None:
            merged[name] = value
    return merged
