"""Minimal JSON-RPC clients that send exactly the bytes a test chooses (the SDK's client cannot
even encode a lone surrogate), over the server's stdio and over streamable HTTP, each waiting for
a reply with a deadline so that a missing reply fails the test instead of hanging it."""

from __future__ import annotations

import http.client
import json
import os
import select
import subprocess
import time
from typing import Any
from urllib.parse import urlsplit

from geoeval.suites.lifeplanner.tools.mcp_server import _repo_env, server_command

PROTOCOL = "2025-06-18"
REPLY_SECONDS = 30.0


def initialize_request(request_id: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class _Raw(str):
    """JSON text to emit as it is (a bracket or a separator)."""


def dumps(value: Any) -> str:
    """`json.dumps` (ASCII: a lone surrogate becomes the valid escape "\\ud800") without recursion,
    so that a value nested deeper than Python's stack can be sent."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            parts: list[Any] = [_Raw("[")]
            for i, child in enumerate(item):
                parts += [_Raw(",")] * (i > 0) + [child]
            stack.extend(reversed([*parts, _Raw("]")]))
        elif isinstance(item, dict):
            parts = [_Raw("{")]
            for i, (key, child) in enumerate(item.items()):
                parts += [_Raw(",")] * (i > 0) + [_Raw(json.dumps(str(key)) + ":"), child]
            stack.extend(reversed([*parts, _Raw("}")]))
        else:
            out.append(json.dumps(item))
    return "".join(out)


def tool_call(request_id: int, name: str, arguments: Any) -> bytes:
    return dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    ).encode("ascii")


class RawStdioClient:
    """The MCP server as a subprocess; one line per message each way."""

    def __init__(self, db_path, toolset: str = "standard") -> None:
        self.proc = subprocess.Popen(
            server_command(db_path, transport="stdio", toolset=toolset),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_repo_env(),
        )
        self._buffer = b""
        self.send_line(json.dumps(initialize_request()).encode())
        reply = self.reply()
        assert reply["id"] == 0 and "result" in reply, reply
        self.send_line(json.dumps(INITIALIZED).encode())

    def send_line(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = REPLY_SECONDS) -> dict[str, Any]:
        """The next message from the server; AssertionError when none comes in time."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"no reply from the MCP server within {timeout:g} s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise AssertionError(f"the MCP server exited (status {self.proc.poll()}) without replying")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))  # strict UTF-8: a reply must be encodable text

    def call(self, request_id: int, name: str, arguments: Any) -> dict[str, Any]:
        self.send_line(tool_call(request_id, name, arguments))
        return self.reply()

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def __enter__(self) -> RawStdioClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RawHTTPClient:
    """POSTs raw bodies to a streamable HTTP MCP endpoint (stdlib `http.client`)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.headers = dict(headers or {})
        self.session_id: str | None = None

    def post(self, body: bytes) -> tuple[int, dict[str, str], Any]:
        """(status, headers, the JSON-RPC message(s) in the reply or None)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=REPLY_SECONDS)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
            **self.headers,
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        try:
            conn.request("POST", self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            reply_headers = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        return response.status, reply_headers, _messages(reply_headers.get("content-type", ""), data)

    def initialize(self) -> None:
        status, headers, reply = self.post(json.dumps(initialize_request()).encode())
        assert status == 200 and reply["id"] == 0 and "result" in reply, (status, reply)
        self.session_id = headers.get("mcp-session-id")
        status, _, _ = self.post(json.dumps(INITIALIZED).encode())
        assert status == 202, status

    def call(self, request_id: int, name: str, arguments: Any) -> dict[str, Any]:
        status, _, reply = self.post(tool_call(request_id, name, arguments))
        assert reply is not None, status
        return reply


def _messages(content_type: str, data: bytes) -> Any:
    text = data.decode("utf-8")  # strict
    if not text.strip():
        return None
    if content_type.startswith("text/event-stream"):
        events = [
            json.loads(line[len("data:") :])
            for line in text.splitlines()
            if line.startswith("data:") and line[len("data:") :].strip()
        ]
        return events[-1] if events else None
    return json.loads(text)


def reply_text(reply: dict[str, Any]) -> tuple[bool, str]:
    """(is an error, the text) of a tools/call reply: an MCP result or a JSON-RPC error."""
    if "error" in reply:
        return True, reply["error"]["message"]
    result = reply["result"]
    return bool(result.get("isError")), "".join(c["text"] for c in result["content"])
