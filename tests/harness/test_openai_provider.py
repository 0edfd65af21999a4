"""The real-model path: an eval through Inspect's own `openai-api` provider against a local
OpenAI-compatible HTTP server that this test starts on 127.0.0.1. The server answers with the
MapTab table baseline, through a `submit` tool call (react solver), so tool calls cross the wire."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import duckdb
import pytest
from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, ToolInfo

from geoeval.suites.maptab.agents import table_baseline
from tests.conftest import geoeval_cmd


def to_inspect(messages: list[dict]) -> list:
    out = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        if m["role"] in ("system", "developer"):
            out.append(ChatMessageSystem(content=content))
        elif m["role"] == "user":
            out.append(ChatMessageUser(content=content))
        elif m["role"] == "assistant":
            calls = [
                ToolCall(
                    id=c["id"], function=c["function"]["name"], arguments=json.loads(c["function"]["arguments"] or "{}")
                )
                for c in m.get("tool_calls") or []
            ]
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif m["role"] == "tool":
            out.append(
                ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id"), function=m.get("name") or "submit")
            )
    return out


def is_preflight_probe(body: dict) -> bool:
    """geoeval's preflight: one user message "ping" asking for one token."""
    return body.get("max_tokens") == 1 and body.get("messages") == [{"role": "user", "content": "ping"}]


class BaselineServer(BaseHTTPRequestHandler):
    requests: list[dict] = []
    replies: list[dict] = []

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if is_preflight_probe(body):  # geoeval's one request before any work: answered, not counted
            return self._reply({"role": "assistant", "content": "pong"}, "stop", body)
        BaselineServer.requests.append(body)
        tools = [
            ToolInfo(name=t["function"]["name"], description=t["function"].get("description", ""))
            for t in body.get("tools") or []
        ]
        reply = table_baseline(to_inspect(body["messages"]), tools, {})
        message: dict = {"role": "assistant", "content": reply.content or None}
        finish = "stop"
        if reply.tool:
            message["tool_calls"] = [
                {
                    "id": f"call_{len(BaselineServer.requests)}",
                    "type": "function",
                    "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
                }
            ]
            finish = "tool_calls"
        BaselineServer.replies.append(message)
        self._reply(message, finish, body)

    def _reply(self, message: dict, finish: str, body: dict) -> None:
        payload = json.dumps(
            {
                "id": f"chatcmpl-{len(BaselineServer.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "baseline"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.mark.slow
def test_openai_api_provider_against_local_server(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaselineServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                "model.name=openai-api/local/table-baseline",
                f"model.base_url=http://127.0.0.1:{port}/v1",
                "suite.solver=react",
                "suite.categories=[edge_only,T]",
                "env.n_maps=1",
                "suite.n_per_category=2",
                "tracking=none",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LOCAL_API_KEY": "test-key"},
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-4000:]
    # the model was really asked over HTTP, offered the submit tool, and answered through it
    assert BaselineServer.requests
    assert any(any(t["function"]["name"] == "submit" for t in r.get("tools") or []) for r in BaselineServer.requests)
    # every answer crossed the wire as a `submit` tool call (react ends once submit is called)
    assert BaselineServer.replies and all(r.get("tool_calls") for r in BaselineServer.replies)
    assert all(r["tool_calls"][0]["function"]["name"] == "submit" for r in BaselineServer.replies)
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    ema = con.execute("SELECT value FROM scores WHERE metric = 'ema'").fetchall()
    model = con.execute("SELECT DISTINCT model FROM samples").fetchall()
    con.close()
    assert len(ema) == 4 and all(v == 1.0 for (v,) in ema)
    assert model == [("openai-api/local/table-baseline",)]
