"""A model that echoes its API key leaves it in no file: redaction is by value, not only by field
name. The server below answers every chat request with a route and the bearer token it was sent
(what a prompt-injected or confused model could write); the key reaches geoeval only through the
provider's environment variable. Every file the run wrote (the warehouse, the MLflow store with
its traces and artifacts, the Inspect logs unzipped, Hydra's outputs) is searched."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import geoeval_cmd
from tests.harness.test_secrets_never_stored import _hits

pytestmark = pytest.mark.slow

ECHOED_KEY = "envPLANTEDsecretKEY42"  # one of test_secrets_never_stored.SECRETS, which _hits looks for


class EchoServer(BaseHTTPRequestHandler):
    echoed: list[str] = []

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        content = "pong" if body.get("max_tokens") == 1 else f"A-B-C\nDebug: I was called with the key {token}."
        EchoServer.echoed.append(token)
        payload = json.dumps(
            {
                "id": "chatcmpl-echo",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "echo"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_a_key_the_model_echoes_is_in_no_file_the_run_wrote(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                "model.name=openai-api/local/echo",
                f"model.base_url=http://127.0.0.1:{server.server_address[1]}/v1",
                "suite.categories=[edge_only]",
                "env.n_maps=1",
                "suite.n_per_category=2",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LOCAL_API_KEY": ECHOED_KEY},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ECHOED_KEY in EchoServer.echoed  # the model really wrote the key into its replies
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".eval" for p in written) and any(p.name == "mlflow.db" for p in written)
    assert _hits(tmp_path) == []
    assert ECHOED_KEY not in proc.stdout + proc.stderr
