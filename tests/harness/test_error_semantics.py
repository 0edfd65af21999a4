"""Error semantics end to end: a sample whose model call fails is an *error* (NaN metrics, status
`error`, counted in n_errors), never a silent 0; the run fails loudly past `fail_on_error`; and a
rerun retries exactly the errored samples. The model is Inspect's real `openai-api` provider
against a local server that answers with the MapTab table baseline, and refuses (HTTP 400, not
retryable) the requests of a fixed half of the samples while told to."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from http.server import ThreadingHTTPServer

import duckdb
import pytest

from tests.conftest import geoeval_cmd
from tests.harness.test_openai_provider import BaselineServer


class HalfFailingServer(BaselineServer):
    failing = True

    @staticmethod
    def refused(body: dict) -> bool:
        first_user = next(m for m in body["messages"] if m["role"] == "user")
        text = json.dumps(first_user.get("content"), sort_keys=True)
        return hashlib.sha256(text.encode()).digest()[0] % 2 == 0

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        raw = self.rfile.read(length)
        body = json.loads(raw)
        if HalfFailingServer.failing and self.refused(body):
            payload = json.dumps(
                {"error": {"message": "refused by the test server", "type": "invalid_request_error"}}
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        # hand the body back to the baseline handler
        import io

        self.rfile = io.BytesIO(raw)
        super().do_POST()


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), HalfFailingServer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _run(tmp_path, port, *extra):
    return subprocess.run(
        geoeval_cmd(
            "model=openai_api",
            "model.name=openai-api/local/table-baseline",
            f"model.base_url=http://127.0.0.1:{port}/v1",
            "model.config.max_retries=0",
            "suite.categories=[edge_only]",
            "env.n_maps=1",
            "suite.n_per_category=8",
            "tracking=none",
            "retry_on_error=0",
            *extra,
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LOCAL_API_KEY": "test-key"},
    )


def _samples(tmp_path):
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT sample_id, status, error FROM samples ORDER BY sample_id").fetchall()
        scores = con.execute(
            "SELECT s.sample_id, s.value FROM scores s JOIN samples p USING (run_hash, sample_id, epoch) "
            "WHERE s.metric = 'ema' AND p.status = 'error'"
        ).fetchall()
    finally:
        con.close()
    return rows, scores


@pytest.mark.slow
def test_errors_are_counted_fail_the_run_and_are_retried(tmp_path, server):
    port = server.server_address[1]
    HalfFailingServer.failing = True
    first = _run(tmp_path, port)
    assert "Traceback" not in first.stderr, first.stderr[-3000:]
    rows, error_scores = _samples(tmp_path)
    errored = [sid for sid, status, err in rows if status == "error"]
    assert len(rows) == 8 and 0 < len(errored) < 8
    assert all(err for sid, status, err in rows if status == "error")
    assert error_scores and all(v is None for _, v in error_scores)  # no value, never 0
    # shown in the console, and past the default fail_on_error (10%) the run fails
    assert f"n_errors={len(errored)}" in first.stdout
    assert "errored and have no scores" in first.stderr
    assert first.returncode == 1 and "run FAILED" in first.stderr

    # the scored samples' EMA is computed over the scored only: the table baseline is exact
    summary = first.stdout
    assert "errors" in summary

    # a rerun retries exactly the errored samples, and now passes
    HalfFailingServer.failing = False
    n_requests = len(HalfFailingServer.requests)
    second = _run(tmp_path, port)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"{8 - len(errored)} sample(s) already scored, {len(errored)} to run" in second.stderr
    assert "n_errors=0" in second.stdout
    rows, _ = _samples(tmp_path)
    assert [status for _, status, _ in rows] == ["scored"] * 8
    assert len(HalfFailingServer.requests) - n_requests == len(errored)


@pytest.mark.slow
def test_fail_on_error_false_keeps_exit_zero_but_still_warns(tmp_path, server):
    HalfFailingServer.failing = True
    proc = _run(tmp_path, server.server_address[1], "fail_on_error=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "errored and have no scores" in proc.stderr


def test_fail_on_error_is_validated(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("fail_on_error=-1", "tracking=none"), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "fail_on_error" in proc.stderr
