"""A latency-bound OpenAI-compatible model for benchmarks: it answers MapTab correctly and takes
L ms per request (run by hand, or started by `bench/latency_bound.py`):

    .venv/bin/python bench/latency_server.py [--latency-ms 200] [--port 0]

It prints one line `port <n>` on stdout once it listens on 127.0.0.1, and serves until its stdin
closes (so it never outlives the process that started it) or it gets SIGTERM/SIGINT.

- `POST /v1/chat/completions`: the answer of the MapTab table baseline
  (`geoeval.suites.maptab.agents.table_baseline`) to the request's messages, as text, or as a
  `submit` tool call when the request offers one. Each reply leaves `latency_ms` after its request
  arrived, computation included, so the model's own time is L whatever the answer costs.
  Answers are memoised by request content: the baseline's CPU time (parsing the tables, routing)
  is spent once per prompt, not on every repeat, and does not compete with the client being
  measured for the cores.
- `GET /stats`: requests served, the most requests in flight at once (the concurrency the
  client really reached), answer-cache hits, answers the baseline could not compute, and when
  the first request of the evaluation arrived (`first_request_at`, Unix time; geoeval's one-token
  preflight probe is not one). `POST /stats/reset` zeroes them.

Threads, one per connection (`ThreadingHTTPServer`): a request waits in `time.sleep`, which
releases the GIL, so 32 or 64 concurrent requests wait in parallel.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, ToolInfo


def to_inspect(messages: list[dict]) -> list:
    """OpenAI chat messages as Inspect messages, for the baseline policy."""
    out = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        role = m.get("role")
        if role in ("system", "developer"):
            out.append(ChatMessageSystem(content=content))
        elif role == "user":
            out.append(ChatMessageUser(content=content))
        elif role == "assistant":
            calls = [
                ToolCall(
                    id=c["id"],
                    function=c["function"]["name"],
                    arguments=json.loads(c["function"].get("arguments") or "{}"),
                )
                for c in m.get("tool_calls") or []
            ]
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif role == "tool":
            out.append(
                ChatMessageTool(content=content, tool_call_id=m.get("tool_call_id"), function=m.get("name") or "submit")
            )
    return out


def baseline_message(body: dict) -> dict:
    """The assistant message the table baseline sends for this request."""
    from geoeval.suites.maptab.agents import table_baseline

    tools = [
        ToolInfo(name=t["function"]["name"], description=t["function"].get("description", ""))
        for t in body.get("tools") or []
    ]
    reply = table_baseline(to_inspect(body.get("messages") or []), tools, {})
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool:
        message["tool_calls"] = [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
            }
        ]
    return message


def request_key(body: dict) -> str:
    """What the answer depends on: the messages and the offered tools."""
    blob = json.dumps(
        [body.get("messages"), [t.get("function", {}).get("name") for t in body.get("tools") or []]], sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests = self.in_flight = self.max_in_flight = self.cache_hits = self.failed_answers = 0
        self.first_request_at: float | None = None

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return {
                "requests": self.requests,
                "max_in_flight": self.max_in_flight,
                "cache_hits": self.cache_hits,
                "failed_answers": self.failed_answers,
                "first_request_at": self.first_request_at,
            }


def make_handler(latency_s: float, stats: Stats, cache: dict[str, dict]) -> type[BaseHTTPRequestHandler]:
    class LatencyBoundModel(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client's pool reuses its connections

        def log_message(self, *args: Any) -> None:  # one line per request would swamp the bench
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":
                self._send(200, stats.snapshot())
            elif self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "x", "object": "model", "owned_by": "bench"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            arrived = time.monotonic()
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") == "/stats/reset":
                with stats.lock:
                    stats.reset()
                self._send(200, {"ok": True})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            probe = body.get("messages") == [{"role": "user", "content": "ping"}]
            with stats.lock:
                if stats.first_request_at is None and not probe:  # geoeval's preflight is no eval request
                    stats.first_request_at = time.time()
                stats.requests += 1
                stats.in_flight += 1
                stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
                n = stats.requests
            try:
                key = request_key(body)
                message = cache.get(key)
                if message is None:
                    try:
                        message = baseline_message(body)
                    except Exception as exc:  # a probe or an odd request still gets an answer
                        with stats.lock:
                            stats.failed_answers += 1
                        message = {"role": "assistant", "content": f"cannot answer ({type(exc).__name__})"}
                    cache[key] = message
                else:
                    with stats.lock:
                        stats.cache_hits += 1
                time.sleep(max(0.0, latency_s - (time.monotonic() - arrived)))
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "x"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                    },
                )
            finally:
                with stats.lock:
                    stats.in_flight -= 1

    return LatencyBoundModel


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many clients connect at once when an eval starts

    def handle_error(self, request, client_address) -> None:
        # a client that ends drops its idle keep-alive connections: not worth a traceback
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def serve(latency_ms: float, port: int = 0) -> Server:
    """A started server (on its own thread); stop it with `.shutdown()`."""
    server = Server(("127.0.0.1", port), make_handler(latency_ms / 1000.0, Stats(), {}))
    threading.Thread(target=server.serve_forever, name="latency-server", daemon=True).start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = serve(args.latency_ms, args.port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # the parent closes our stdin when it ends (or dies): stop then too
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print(f"port {server.server_address[1]}", flush=True)
    stop.wait()
    server.shutdown()


if __name__ == "__main__":
    main()
