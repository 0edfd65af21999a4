"""Preflight against stdlib servers on 127.0.0.1: every answer classified, every failure fast;
and Inspect's retries of a 429 counted by `http_retry_count`."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.core.run.preflight import (
    OLLAMA_DEFAULT_BASE_URL,
    RETRY_DEFAULTS,
    Endpoint,
    bounded_generate_settings,
    check_endpoint,
    endpoint_checks,
    http_retry_count,
    preflight,
    resolve_endpoint,
    sample_http_retries,
    send_early,
)

KEY = "sk-PREFLIGHTKEY123"
FAST_S = 1.0  # probe timeout in these tests
CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "p"}, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
# path prefix -> (status, body); the base URL of a mode is http://127.0.0.1:<port>/<mode>/v1
MODES: dict[str, tuple[int, bytes]] = {
    "ok": (200, json.dumps(CHAT_COMPLETION).encode()),
    "401": (401, json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()),
    "404": (404, b'{"error": {"message": "The model `m` does not exist."}}'),
    "400": (400, b'{"error": {"message": "Unsupported parameter: max_tokens"}}'),
    "429": (429, b'{"error": {"message": "Rate limit reached"}}'),
    "500": (500, b'{"error": {"message": "internal"}}'),
    "503": (503, b"upstream\nbusy"),
    "501": (501, b"<html><body>" + b"Not here. " * 50 + b"</body></html>"),
    "garbage": (200, b"\x00\xffthis is not json {"),
    "json_not_chat": (200, b'{"status": "ok"}'),
}


class ProbeServer:
    """Answers POST /<mode>/v1/chat/completions as MODES says; `hang` never answers (until
    the server stops). Records each request's path, Authorization header and JSON body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None, dict]] = []
        self.stopping = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((self.path, self.headers.get("Authorization"), body))
                mode = self.path.split("/")[1]
                if mode == "hang":
                    owner.stopping.wait(10)
                    return
                status, payload = MODES[mode]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}/v1"

    def __enter__(self) -> ProbeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # 127.0.0.1 must be reached directly
    with ProbeServer() as probe_server:
        yield probe_server


def _check(server: ProbeServer, mode: str, role: str = "evaluated model"):
    """How fast each kind of failure is reported is measured in bench/fail_fast.py, not here."""
    return check_endpoint(role, "openai-api/local/m", server.url(mode), KEY, timeout_s=FAST_S, environ={})


def test_ok_sends_one_bearer_request_for_one_token(server):
    result = _check(server, "ok")
    assert (result.ok, result.fatal, result.status) == (True, False, 200)
    assert result.endpoint == server.url("ok") and result.role == "evaluated model"
    assert server.requests == [
        (
            "/ok/v1/chat/completions",
            f"Bearer {KEY}",
            {"model": "m", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1},
        )
    ]


@pytest.mark.parametrize(
    "mode, status, reason",
    [
        ("401", 401, "Unauthorized"),
        ("404", 404, "Not Found"),
        ("501", 501, "Not Implemented"),
    ],
)
def test_fatal_statuses(server, mode, status, reason):
    result = _check(server, mode)
    assert (result.ok, result.fatal, result.status) == (False, True, status)
    assert result.message.startswith(
        f"model endpoint {server.url(mode)} (role: evaluated model) answered HTTP {status} {reason}: "
    )
    assert "\n" not in result.message


def test_fatal_message_quotes_200_chars_of_the_body_on_one_line(server):
    result = _check(server, "501")
    body = result.message.split("Not Implemented: ", 1)[1]
    assert body.startswith("<html><body>Not here. Not here.")
    assert body.startswith(("<html><body>" + "Not here. " * 50)[:200])
    assert "more characters cut" in body


def test_the_key_is_scrubbed_from_a_quoted_body(server):
    result = _check(server, "401")
    assert KEY not in result.message
    assert result.message.endswith(
        'answered HTTP 401 Unauthorized: {"error": {"message": "Incorrect API key provided: ***"}}'
    )


@pytest.mark.parametrize("mode, status", [("429", 429), ("500", 500), ("503", 503)])
def test_retryable_statuses_let_the_run_proceed_with_a_note(server, mode, status):
    result = _check(server, mode)
    assert (result.ok, result.fatal, result.status) == (True, False, status)
    assert "retryable" in result.message


def test_a_rejected_probe_is_not_a_bad_endpoint(server):
    result = _check(server, "400")
    assert (result.ok, result.fatal, result.status) == (True, False, 400)
    assert "reachable" in result.message


@pytest.mark.parametrize("mode", ["garbage", "json_not_chat"])
def test_a_200_that_is_not_a_chat_completion_is_fatal(server, mode):
    result = _check(server, mode)
    assert (result.ok, result.fatal, result.status) == (False, True, 200)
    assert "answered HTTP 200 OK but not with a chat completion" in result.message


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_closed_port_is_unreachable_at_once():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = check_endpoint("judge", "openai-api/local/m", url, KEY, timeout_s=FAST_S, environ={})
    assert (result.ok, result.fatal, result.status) == (False, True, None)
    assert result.message == f"model endpoint {url} (role: judge) is unreachable: connection refused"


def test_an_unknown_host_is_unreachable(monkeypatch):
    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)  # offline and deterministic
    result = check_endpoint(
        "judge", "openai-api/local/m", "http://no-such-host.invalid/v1", None, timeout_s=FAST_S, environ={}
    )
    assert result.fatal and result.message.endswith("(role: judge) is unreachable: unknown host")


def test_a_server_that_never_answers_times_out(server):
    result = _check(server, "hang", role="user simulator")
    assert (result.ok, result.fatal, result.status) == (False, True, None)
    assert "(role: user simulator) did not answer within 1 s" in result.message
    assert "raise preflight_timeout_s" in result.message  # the key to raise is named


def test_a_url_without_scheme_is_fatal():
    result = check_endpoint("judge", "openai-api/local/m", "127.0.0.1:8000/v1", None, timeout_s=FAST_S, environ={})
    assert result.fatal and "is not a usable URL" in result.message


def test_credentials_in_the_base_url_are_not_shown(server):
    url = server.url("501").replace("http://", "http://bob:pw-secret-1@")
    result = check_endpoint("judge", "openai-api/local/m", url, None, timeout_s=FAST_S, environ={})
    assert "pw-secret-1" not in result.message and result.endpoint.startswith("http://***@127.0.0.1:")


def test_preflight_raises_one_line_per_failing_role_and_probes_each_endpoint_once(server):
    checks = [
        ("evaluated model", "openai-api/local/m", server.url("501"), KEY),
        ("judge", "openai-api/local/m", server.url("501"), KEY),
        ("user simulator", "openai-api/local/m", server.url("ok"), KEY),
        ("tool simulator", "openai-api/local/m", server.url("429"), KEY),
        ("judge", "geoeval/oracle", None, None),
    ]
    with pytest.raises(GeoevalError) as raised:
        preflight(checks, timeout_s=FAST_S, environ={})
    lines = str(raised.value).splitlines()
    assert [line.split(" answered")[0] for line in lines] == [
        f"model endpoint {server.url('501')} (role: evaluated model)",
        f"model endpoint {server.url('501')} (role: judge)",
    ]
    assert all(" answered HTTP 501 Not Implemented: <html>" in line for line in lines)
    assert sorted(path for path, _, _ in server.requests) == [
        "/429/v1/chat/completions",
        "/501/v1/chat/completions",
        "/ok/v1/chat/completions",
    ]


def test_preflight_passes_and_returns_the_notes(server):
    results = preflight(
        [("evaluated model", "openai-api/local/m", server.url("429"), KEY), ("judge", "mockllm/model", None, None)],
        timeout_s=FAST_S,
        environ={},
    )
    assert [(r.role, r.ok, r.status) for r in results] == [("evaluated model", True, 429), ("judge", True, None)]
    assert results[1].message == "mockllm/model (role: judge): offline provider: nothing to probe"


def test_meanwhile_runs_while_the_probes_wait_on_their_endpoints(server):
    seen = []

    def meanwhile():  # what the caller does meanwhile (MLflow's import): the probe is already out
        deadline = time.monotonic() + 120  # a wait bound on a saturated machine, not a speed target
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(len(server.requests))

    with pytest.raises(GeoevalError, match="did not answer within 1 s"):  # and the result still counts
        preflight(
            [("evaluated model", "openai-api/local/m", server.url("hang"), KEY)],
            timeout_s=FAST_S,
            environ={},
            meanwhile=meanwhile,
        )
    assert seen == [1]


def test_meanwhile_waits_for_no_probe_that_is_back_at_once():
    called = []
    dead = ("evaluated model", "openai-api/local/m", f"http://127.0.0.1:{_closed_port()}/v1", KEY)
    with pytest.raises(GeoevalError, match="unreachable"):  # reported before any meanwhile work
        preflight([dead], timeout_s=FAST_S, environ={}, meanwhile=lambda: called.append(1))
    preflight(
        [("judge", "mockllm/model", None, None)], timeout_s=FAST_S, environ={}, meanwhile=lambda: called.append(1)
    )
    assert called == []


def test_a_probe_sent_early_is_taken_by_the_preflight_and_not_sent_again(server):
    """`send_early` (a run's probes, sent once its config is valid) returns before the answer;
    the run's `preflight` of the same endpoints takes it: one request, the same results."""
    checks = [
        ("evaluated model", "openai-api/local/m", server.url("hang"), KEY),
        ("judge", "openai-api/local/m", server.url("429"), KEY),
    ]
    send_early(checks, timeout_s=FAST_S)  # returns at once: the hang's answer is awaited by `preflight`
    with pytest.raises(GeoevalError, match=r"\(role: evaluated model\) did not answer within 1 s"):
        preflight(checks, timeout_s=FAST_S)
    assert sorted(path for path, _, _ in server.requests) == ["/429/v1/chat/completions", "/hang/v1/chat/completions"]
    # each early answer is taken once: the next preflight asks again
    results = preflight(checks[1:], timeout_s=FAST_S)
    assert [(r.role, r.ok, r.status) for r in results] == [("judge", True, 429)]
    assert len(server.requests) == 3


def test_an_early_probe_is_not_taken_for_other_endpoints_or_another_environment(server):
    ok = ("evaluated model", "openai-api/local/m", server.url("ok"), KEY)
    send_early([ok], timeout_s=FAST_S)
    preflight([ok], timeout_s=FAST_S, environ={})  # an environment of its own: probed again
    preflight([ok], timeout_s=FAST_S * 2)  # another timeout: probed again
    preflight([ok], timeout_s=FAST_S)  # the early one
    assert len(server.requests) == 3


def test_nothing_is_sent_early_when_a_key_is_missing(server, monkeypatch):
    monkeypatch.delenv("LOCAL_API_KEY", raising=False)
    send_early([("evaluated model", "openai-api/local/m", server.url("ok"), None)], timeout_s=FAST_S)
    with pytest.raises(GeoevalError, match="needs an API key: set the environment variable LOCAL_API_KEY"):
        preflight([("evaluated model", "openai-api/local/m", server.url("ok"), None)], timeout_s=FAST_S)
    assert server.requests == []


def test_import_mlflow_imports_the_store_it_will_open_and_opens_nothing(tmp_path):
    script = (
        "import sys\n"
        "from types import SimpleNamespace\n"
        "from geoeval.core.tracking.store import import_mlflow\n"
        "import_mlflow(SimpleNamespace(tracking_uri=sys.argv[1]))\n"
        "print('mlflow' in sys.modules, 'mlflow.store.tracking.sqlalchemy_store' in sys.modules)\n"
    )
    db = tmp_path / "mlruns" / "mlflow.db"
    for uri, expected in ((f"sqlite:///{db}", "True True"), ("http://127.0.0.1:9/", "True False")):
        done = subprocess.run([sys.executable, "-c", script, uri], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == expected.split()
    assert list(tmp_path.iterdir()) == []  # no store, no folder


def test_the_key_and_base_url_come_from_the_service_environment(server):
    env = {"MY_SVC_BASE_URL": server.url("ok"), "MY_SVC_API_KEY": "svc-key-1"}
    result = check_endpoint("judge", "openai-api/my-svc/org/model-7", None, None, timeout_s=FAST_S, environ=env)
    assert result.ok and result.status == 200
    assert server.requests[0][1:] == (
        "Bearer svc-key-1",
        {"model": "org/model-7", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1},
    )


@pytest.mark.parametrize(
    "model_name, base_url, environ, expected",
    [
        ("openai-api/local/m", "http://h/v1", {"LOCAL_API_KEY": "k1"}, Endpoint("http://h/v1", "m", "k1")),
        ("openai-api/local/m", None, {"LOCAL_BASE_URL": "http://e/v1"}, Endpoint("http://e/v1", "m", None)),
        (
            "openai-api/local/m",
            None,
            {"INSPECT_EVAL_MODEL_BASE_URL": "http://i/v1"},
            Endpoint("http://i/v1", "m", None),
        ),
        ("openai/gpt-4o", "http://h/v1", {"OPENAI_API_KEY": "k2"}, Endpoint("http://h/v1", "gpt-4o", "k2")),
        ("openai/gpt-4o", None, {"OPENAI_BASE_URL": "http://o/v1"}, Endpoint("http://o/v1", "gpt-4o", None)),
        (
            "vllm/Qwen/Qwen2.5-VL-7B-Instruct",
            "http://v/v1",
            {},
            Endpoint("http://v/v1", "Qwen/Qwen2.5-VL-7B-Instruct", "inspectai"),
        ),
        ("vllm/q", None, {"VLLM_BASE_URL": "http://v/v1", "VLLM_API_KEY": "k3"}, Endpoint("http://v/v1", "q", "k3")),
        ("ollama/llama3.2", None, {}, Endpoint(OLLAMA_DEFAULT_BASE_URL, "llama3.2", "ollama")),
        ("ollama/llama3.2", None, {"OLLAMA_BASE_URL": "http://l/v1"}, Endpoint("http://l/v1", "llama3.2", "ollama")),
    ],
)
def test_resolve_endpoint(model_name, base_url, environ, expected):
    assert resolve_endpoint(model_name, base_url, None, environ) == expected


@pytest.mark.parametrize(
    "model_name, base_url, why",
    [
        ("geoeval/oracle", None, "offline"),
        ("mockllm/model", None, "offline"),
        ("rules", None, "offline"),
        ("openai-api/local/m", None, "LOCAL_BASE_URL"),
        ("openai/gpt-4o", None, "public OpenAI"),
        ("openai/azure/gpt-4o", "http://h", "Azure"),
        ("vllm/q", None, "Inspect starts one"),
        ("anthropic/claude-sonnet-4-5", None, "not OpenAI-compatible"),
    ],
)
def test_endpoints_that_are_not_probed(model_name, base_url, why):
    reason = resolve_endpoint(model_name, base_url, None, {})
    assert isinstance(reason, str) and why in reason
    result = check_endpoint("judge", model_name, base_url, None, environ={})
    assert (result.ok, result.fatal, result.endpoint) == (True, False, None)


def test_endpoint_checks_names_every_model_role():
    spec = SimpleNamespace(
        model=SimpleNamespace(name="openai-api/local/m", base_url="http://h/v1", args={"api_key": "k"}),
        judge=SimpleNamespace(models=["rules", "openai/gpt-4o-mini"]),
        suite=SimpleNamespace(user_model="openai-api/sim/u", tool_simulator=None, judge_votes=3),
        generation="reuse",
    )
    assert endpoint_checks(spec) == [
        ("evaluated model", "openai-api/local/m", "http://h/v1", "k"),
        ("judge", "openai/gpt-4o-mini", None, None),
        ("user simulator", "openai-api/sim/u", None, None),
    ]


def test_bounded_generate_settings_fill_only_unset_fields():
    assert bounded_generate_settings({"temperature": 0, "max_retries": 1, "timeout": None}) == {
        "temperature": 0,
        "max_retries": 1,
        "timeout": RETRY_DEFAULTS["timeout"],
        "attempt_timeout": RETRY_DEFAULTS["attempt_timeout"],
    }


class FlakyServer(BaseHTTPRequestHandler):
    """429 for the first `n_rate_limited` requests, then a chat completion."""

    n_rate_limited = 3
    seen = 0

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        FlakyServer.seen += 1
        limited = FlakyServer.seen <= FlakyServer.n_rate_limited
        payload = b'{"error": {"message": "Rate limit reached"}}' if limited else json.dumps(CHAT_COMPLETION).encode()
        self.send_response(429 if limited else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.mark.slow
def test_inspect_retries_three_429s_and_the_counter_shows_them(monkeypatch):
    from inspect_ai.model import GenerateConfig, get_model

    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    FlakyServer.seen = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FlakyServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        model = get_model(
            "openai-api/local/m",
            base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
            api_key="k",
            config=GenerateConfig(**RETRY_DEFAULTS),
            memoize=False,
        )
        before = http_retry_count()
        output = asyncio.run(model.generate("hello"))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert output.completion == "p" and output.error is None
    assert FlakyServer.seen == 4
    assert http_retry_count() - before == 3
    # two quick SDK retries (0.5 s, 1 s), then one Inspect backoff (3-6 s)


def test_a_composed_run_spec_against_a_501_endpoint_fails_in_one_line(server, tmp_path):
    from tests.conftest import compose_spec

    spec = compose_spec(
        tmp_path,
        "+experiment=mapsatisfy_demo",
        "model=openai_api",
        f"model.base_url={server.url('501')}",
        "+model.args.api_key=" + KEY,
        "suite.user_model=openai-api/sim/user",
        "judge.models=[rules,openai-api/judge/j]",
    )
    checks = endpoint_checks(spec)
    assert [role for role, *_ in checks] == ["evaluated model", "judge", "user simulator"]
    env = {
        "SIM_BASE_URL": server.url("ok"),
        "JUDGE_BASE_URL": server.url("404"),
        "SIM_API_KEY": "x",
        "JUDGE_API_KEY": "x",
    }
    with pytest.raises(GeoevalError) as raised:
        preflight(checks, timeout_s=FAST_S, environ=env)
    lines = str(raised.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        f"model endpoint {server.url('501')} (role: evaluated model) answered HTTP 501 Not Implemented: "
    )
    assert lines[1].startswith(f"model endpoint {server.url('404')} (role: judge) answered HTTP 404 Not Found: ")
    assert KEY not in str(raised.value)


@pytest.mark.slow
def test_the_retries_of_an_eval_sample_are_read_from_its_transcript(monkeypatch, tmp_path):
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.solver import generate

    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    FlakyServer.seen = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FlakyServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        model = get_model(
            "openai-api/local/m",
            base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
            api_key="k",
            config=GenerateConfig(**RETRY_DEFAULTS),
            memoize=False,
        )
        before = http_retry_count()
        [log] = inspect_eval(
            Task(dataset=[Sample(input="hello", target="p")], solver=generate()),
            model=model,
            display="none",
            log_dir=str(tmp_path / "logs"),
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    [sample] = log.samples
    assert sample.output.completion == "p" and sample.error is None
    assert http_retry_count() - before == 3
    assert sample_http_retries(sample) == 3
    assert sample_http_retries(SimpleNamespace(events=None)) == 0


def test_a_missing_provider_key_is_one_line_before_any_network(monkeypatch):
    from geoeval.core.run.preflight import missing_keys

    checks = [
        ("evaluated model", "openai/gpt-4o", None, None),
        ("judge", "openai-api/local/judge", None, None),
        ("evaluated model", "anthropic/claude", None, "sk-given-in-config"),
        ("judge", "geoeval/oracle", None, None),
    ]
    lines = missing_keys(checks, environ={})
    assert lines == [
        "evaluated model openai/gpt-4o needs an API key: set the environment variable OPENAI_API_KEY "
        "(for a local server without keys, any value: OPENAI_API_KEY=x)",
        "judge openai-api/local/judge needs an API key: set the environment variable LOCAL_API_KEY "
        "(for a local server without keys, any value: LOCAL_API_KEY=x)",
    ]
    assert missing_keys(checks[:1], environ={"OPENAI_API_KEY": "sk-x"}) == []
