"""A bad endpoint is found in seconds, before any work; a flaky one is retried visibly.

Each test starts a stdlib OpenAI-compatible server on 127.0.0.1 and runs `python -m geoeval`
through Inspect's real `openai-api` provider against it."""

from __future__ import annotations

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import geoeval_cmd
from tests.harness.test_openai_provider import BaselineServer


class NotImplementedServer(BaseHTTPRequestHandler):
    posts = 0

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        NotImplementedServer.posts += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"error": "chat completions are not served here"}'
        self.send_response(501)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ThrottlingServer(BaselineServer):
    """Answers 429 to the first three POSTs, then as the MapTab table baseline."""

    throttled = 0

    def do_POST(self) -> None:
        if ThrottlingServer.throttled < 3:
            ThrottlingServer.throttled += 1
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"error": {"message": "slow down", "type": "rate_limit"}}'
            self.send_response(429)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_POST()


def _serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _run(tmp_path, port, *extra, timeout=240):
    return subprocess.run(
        geoeval_cmd(
            "model=openai_api",
            "model.name=openai-api/local/table-baseline",
            f"model.base_url=http://127.0.0.1:{port}/v1",
            "suite.categories=[edge_only]",
            "env.n_maps=1",
            "suite.n_per_category=1",
            "tracking=none",
            *extra,
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "LOCAL_API_KEY": "test-key"},
    )


@pytest.mark.slow
def test_an_endpoint_answering_501_stops_the_run_in_seconds_with_one_line(tmp_path):
    server = _serve(NotImplementedServer)
    try:
        proc = _run(tmp_path, server.server_address[1], timeout=60)  # bench/fail_fast.py measures how fast
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("geoeval: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert (
        "evaluated model" in errors[0] and "501" in errors[0] and f"127.0.0.1:{server.server_address[1]}" in errors[0]
    )
    assert "Traceback" not in proc.stderr
    assert NotImplementedServer.posts == 1  # the one probe: no sample was sent
    assert not (tmp_path / "results").exists()  # nothing was built before the check


@pytest.mark.slow
def test_an_unreachable_endpoint_is_named(tmp_path):
    import socket

    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _run(tmp_path, port, timeout=60)
    assert proc.returncode == 2
    assert "evaluated model" in proc.stderr and f"127.0.0.1:{port}" in proc.stderr


@pytest.mark.slow
def test_an_endpoint_answering_429_three_times_is_retried_and_the_run_completes(tmp_path):
    server = _serve(ThrottlingServer)
    try:
        proc = _run(tmp_path, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ThrottlingServer.throttled == 3
    assert "preflight" in proc.stderr and "429" in proc.stderr  # the probe's 429 is shown, not fatal
    # the run's own two 429s were retried and shown, and every sample was scored
    assert "http_retries=2" in proc.stdout and "n_errors=0" in proc.stdout
