"""Concurrency follows the model: a run configured with `model.config.max_connections=N` (and no
`runner.max_samples`) has N requests in flight at once, in one process and over two Ray workers
(N in all, split between them, never N per worker).

The model is a local OpenAI-compatible server that counts the requests it holds at once: it
holds each request until N are in flight (then a short settle window more, so that a run sending
more than N shows it) or a deadline passes, and records the most it held. N = 12 is more than
geoeval's old fixed 8 samples at once and less than the 24 samples, so a run capped below N,
and a Ray run that gives each worker N connections, both show in the count. Not timed: the
deadline only bounds how long a failing run waits."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import geoeval_cmd
from tests.harness.test_openai_provider import is_preflight_probe

N = 12  # the model's connections
SAMPLES = ("env.n_maps=2", "suite.n_per_category=12")  # 24 samples: twice N
SETTLE_S = 1.0  # held requests wait this long after N are in flight: anything over N arrives meanwhile
DEADLINE_S = 60.0  # a request waits at most this long for N in flight (a run below N fails the test)


class InFlightCounter:
    def __init__(self, target: int) -> None:
        self.target = target
        self.cond = threading.Condition()
        self.in_flight = self.max_in_flight = self.requests = 0
        self.release_at: float | None = None  # when N were first in flight, plus the settle window

    def hold(self) -> None:
        """Count the request in, and wait for N in flight (then the settle window) or the deadline."""
        with self.cond:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.in_flight >= self.target and self.release_at is None:
                self.release_at = time.monotonic() + SETTLE_S
                self.cond.notify_all()
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                if self.release_at is not None and time.monotonic() >= self.release_at:
                    return
                wake = deadline if self.release_at is None else min(deadline, self.release_at)
                self.cond.wait(max(0.01, wake - time.monotonic()))

    def done(self) -> None:
        with self.cond:
            self.in_flight -= 1


def serve(counter: InFlightCounter) -> ThreadingHTTPServer:
    class CountingModel(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not is_preflight_probe(body):  # geoeval's one probe before any work is not counted
                counter.hold()
                try:
                    self._reply(body)
                finally:
                    counter.done()
            else:
                self._reply(body)

        def _reply(self, body: dict) -> None:
            payload = json.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "x"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "ANSWER: A"}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), CountingModel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_against_counter(tmp_path, *runner: str) -> InFlightCounter:
    counter = InFlightCounter(N)
    server = serve(counter)
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                "model.name=openai-api/local/x",
                f"model.base_url=http://127.0.0.1:{server.server_address[1]}/v1",
                f"model.config.max_connections={N}",
                "suite.categories=[edge_only]",
                *SAMPLES,
                "tracking=none",
                *runner,
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "LOCAL_API_KEY": "test-key"},
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "runner.max_samples" not in proc.stderr  # no warning: nothing set by hand
    assert counter.requests == 24  # one request per sample
    return counter


def test_a_local_run_has_max_connections_requests_in_flight(tmp_path):
    counter = run_against_counter(tmp_path, "runner=local")
    assert counter.max_in_flight == N


@pytest.mark.slow
def test_two_ray_workers_share_max_connections(tmp_path):
    counter = run_against_counter(tmp_path, "runner=ray", "runner.num_workers=2", "runner.num_cpus=2")
    assert counter.max_in_flight == N  # N / 2 per worker: the provider sees N, not 2 x N
