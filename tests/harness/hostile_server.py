"""A misbehaving OpenAI-compatible chat server for tests (stdlib only, 127.0.0.1, port 0).

It answers `POST /v1/chat/completions` (and `GET /v1/models`) with one failure mode per request,
taken in turn from a schedule: request i gets `schedule[i % len(schedule)]`, so a run sees every
mode in a known order (with concurrent samples, which sample gets which mode varies, but the
count of each mode over a run does not). The modes are what real servers and small models send:

- `bad_json_args`: a tool call whose `arguments` is not JSON;
- `unknown_tool`: a call to a tool the request did not offer;
- `wrong_types`: a call to an offered tool with every argument of the wrong JSON type;
- `missing_args`: a call to the offered submit tool (or another) with `{}`: required arguments missing;
- `surrogate_content`: a lone UTF-16 surrogate in the content, written as the JSON escape (the
  body holds the six characters `\\ud800`: valid JSON, but not encodable as UTF-8);
- `surrogate_args`: a lone surrogate in the arguments of a call that does not end the agent's
  loop (a map tool; else an unknown tool), so it is also in the input of the next request;
- `surrogate_submit`: a lone surrogate in the submitted answer (the submit tool's arguments);
- `surrogate_tool_name`, `surrogate_arg_name`, `surrogate_reasoning`: a lone surrogate in the
  called function's name, in an argument's name, and in the reasoning beside the text;
- `surrogate_call_id`: a lone surrogate in a tool call's name and id and in the reply's id (the
  id is a field no text cleaner read: the reply has to be cleaned field by field);
- `nul`: NUL and other control characters (`\\u0000`, `\\u001b`) in content and arguments;
- `huge`: a 1 MB reply;
- `tag_bomb`: 1 MB of unclosed answer tags and blanks (`<route_begin>`, `<answer_begin>`): a
  lazy regex such as `<route_begin>\\s*(.*?)\\s*<route_end>` backtracks on it for hours;
- `deep_json`: a submitted answer that is JSON text nested 5,000 deep (`[[[[...]]]]`), beyond
  Python's recursion limit for `json.loads`;
- `deep_args`: tool-call arguments that are themselves nested 5,000 deep;
- `empty`: content "" and no tool calls;
- `http_500`: an HTTP 500 with an OpenAI-style error body;
- `timeout`: no reply until the client has given up (the handler sleeps `hang_s`, at most 10 s,
  and wakes at once when the server stops);
- `garbage`: HTTP 200 with a body that is not JSON;
- `partial_body`: HTTP 200 whose `Content-Length` promises a whole chat completion, then half of
  it and the connection closed (a proxy or server that died mid-reply);
- `no_choices`: HTTP 200 with a chat completion whose `choices` is empty;
- `context_exceeded`: HTTP 400 saying the request is longer than the context, in llama.cpp's
  words (`Requested tokens (75000) exceed context window of 8192`);
- `valid`: a well-formed answer: a call to the offered submit tool with some text, or that text
  as the content when no submit tool is offered.

A tool-calling mode aims at the tools the request offers (read from its `tools`): "the submit
tool" is the first whose name contains `submit`, "a map tool" the first other one.

Use it as a context manager; stopping never hangs (daemon handler threads, `shutdown()` then
`server_close()`, sleeping handlers woken):

    with HostileServer() as server:
        run(..., f"model.base_url={server.base_url}")
    server.counts  # {mode: requests answered in that mode}
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES: tuple[str, ...] = (
    "bad_json_args",
    "unknown_tool",
    "wrong_types",
    "missing_args",
    "surrogate_content",
    "surrogate_args",
    "surrogate_submit",
    "surrogate_tool_name",
    "surrogate_arg_name",
    "surrogate_reasoning",
    "surrogate_call_id",
    "nul",
    "huge",
    "tag_bomb",
    "deep_json",
    "deep_args",
    "empty",
    "http_500",
    "timeout",
    "garbage",
    "partial_body",
    "no_choices",
    "context_exceeded",
    "valid",
)
# the default rotation: every mode within its first 18 requests (the transport failures early,
# so that even a short run meets them), and a well-formed answer often enough that multi-turn
# agents also get somewhere
DEFAULT_SCHEDULE: tuple[str, ...] = (
    "http_500",
    "bad_json_args",
    "surrogate_args",
    "surrogate_content",
    "timeout",
    "valid",
    "unknown_tool",
    "garbage",
    "nul",
    "wrong_types",
    "huge",
    "deep_json",
    "missing_args",
    "tag_bomb",
    "surrogate_submit",
    "deep_args",
    "empty",
    "valid",
)
LONE_SURROGATE = "\ud800"
CONTROL_CHARS = "\u0000\u001b\u0007"
HUGE_CHARS = 1_000_000
DEEP = 5000
TAG_BOMB = "<route_begin> <answer_begin>\n  "
MAX_HANG_S = 10.0
VALID_TEXT = "Here is my answer: the route goes from the first station to the last."


@dataclass(frozen=True)
class Request:
    """What the server saw of one chat request, and the mode it answered in."""

    mode: str
    n_messages: int
    tools: tuple[str, ...]  # the names of the tools offered
    max_tokens: int | None


def _wrong_value(schema: dict[str, Any]) -> Any:
    """A value of a JSON type the schema does not allow."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "string":
        return 12345
    if kind in ("integer", "number"):
        return "not a number"
    if kind == "boolean":
        return "perhaps"
    if kind == "array":
        return {"not": "a list"}
    if kind == "object":
        return [1, 2, 3]
    return None  # anyOf / unspecified: null is rarely allowed


def _offered_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["function"] for t in body.get("tools") or [] if isinstance(t, dict) and "function" in t]


def _submit_tool(tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    named = [t for t in tools if "submit" in t.get("name", "")]
    return named[0] if named else None


def _map_tool(tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An offered tool that does not end the agent's loop (anything but submit)."""
    others = [t for t in tools if "submit" not in t.get("name", "")]
    return others[0] if others else None


_MADE_UP_SUBMIT = {"name": "submit", "parameters": {}}
_MADE_UP_LOOKUP = {"name": "lookup_place", "parameters": {"properties": {"query": {"type": "string"}}}}


def _properties(tool: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return (tool.get("parameters") or {}).get("properties") or {}


def _text_arguments(tool: dict[str, Any], text: str) -> dict[str, Any]:
    """Every declared argument set to `text` (or the one `answer` when none is declared)."""
    props = _properties(tool)
    return {name: text for name in props} if props else {"answer": text}


class HostileServer:
    """The server; `schedule` is the per-request rotation of modes (default: every mode)."""

    def __init__(self, schedule: Sequence[str] = DEFAULT_SCHEDULE, *, hang_s: float = MAX_HANG_S) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.set_schedule(schedule)
        self.hang_s = min(float(hang_s), MAX_HANG_S)
        self.n_requests = 0
        self.counts: Counter[str] = Counter()
        self.history: list[Request] = []  # every chat request in order: which turn got what
        self.models_requests = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> HostileServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="hostile-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in `timeout` mode
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- behaviour ---------------------------------------------------------------------------
    def set_schedule(self, schedule: Sequence[str]) -> None:
        """Switch the rotation (e.g. to `["valid"]` for a well-behaved rerun); counting goes on."""
        unknown = [m for m in schedule if m not in MODES]
        if not schedule or unknown:
            raise ValueError(f"schedule must be a non-empty list of {MODES}, got unknown {unknown}")
        with self._lock:
            self._schedule = tuple(schedule)
            self._position = 0

    def next_mode(self, body: dict[str, Any]) -> str:
        """The mode of the next request (`body`, the request's JSON, is recorded in `history`)."""
        with self._lock:
            mode = self._schedule[self._position % len(self._schedule)]
            self._position += 1
            self.n_requests += 1
            self.counts[mode] += 1
            self.history.append(
                Request(
                    mode,
                    len(body.get("messages") or []),
                    tuple(t.get("name", "") for t in _offered_tools(body)),
                    body.get("max_tokens"),
                )
            )
            return mode

    def sleep(self) -> None:
        self._stop.wait(self.hang_s)


class _Server(ThreadingHTTPServer):
    # handler threads never hold up the test: daemons, and server_close() does not join them (a
    # keep-alive connection or a sleeping `timeout` handler would otherwise block it)
    daemon_threads = True
    block_on_close = False


def _call(index: int, name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _tool_reply(index: int, name: str, arguments: str) -> dict[str, Any]:
    """A reply that is one tool call (`arguments`: the raw text the model sends)."""
    return {"content": None, "tool_calls": [_call(index, name, arguments)]}


def reply_message(mode: str, body: dict[str, Any], index: int) -> dict[str, Any]:
    """The assistant message of a JSON-answering mode (not `http_500`, `timeout`, `garbage`)."""
    tools = _offered_tools(body)
    submit = _submit_tool(tools)
    map_tool = _map_tool(tools)
    if mode == "bad_json_args":
        target = map_tool or submit or _MADE_UP_SUBMIT
        return _tool_reply(index, target["name"], '{"answer": "unterminated')
    if mode == "unknown_tool":
        return _tool_reply(index, "no_such_tool_xyz", json.dumps({"q": "x"}))
    if mode == "wrong_types":
        target = map_tool or submit or _MADE_UP_SUBMIT
        props = _properties(target)
        args = {name: _wrong_value(schema) for name, schema in props.items()} or {"answer": 12345}
        return _tool_reply(index, target["name"], json.dumps(args))
    if mode == "missing_args":
        target = submit or map_tool or _MADE_UP_SUBMIT
        return _tool_reply(index, target["name"], "{}")
    if mode == "surrogate_content":
        return {"content": f"Answer: A {LONE_SURROGATE} B {LONE_SURROGATE}", "tool_calls": None}
    if mode in ("surrogate_args", "surrogate_submit"):
        if mode == "surrogate_args":
            target = map_tool or _MADE_UP_LOOKUP
        else:
            target = submit or _MADE_UP_SUBMIT
        # json.dumps writes the lone surrogate as the escape \ud800 inside the arguments string
        args = json.dumps(_text_arguments(target, f"route {LONE_SURROGATE} end"))
        return _tool_reply(index, target["name"], args)
    if mode == "surrogate_tool_name":  # a lone surrogate inside the called function's name
        target = map_tool or submit or _MADE_UP_SUBMIT
        return _tool_reply(index, target["name"][:3] + LONE_SURROGATE + target["name"][3:], json.dumps({}))
    if mode == "surrogate_arg_name":  # ... and inside an argument's name
        target = submit or map_tool or _MADE_UP_SUBMIT
        return _tool_reply(index, target["name"], json.dumps({f"answer{LONE_SURROGATE}": "A"}))
    if mode == "surrogate_call_id":  # ... in the call's name and id (and the reply's id, see `completion`)
        target = map_tool or submit or _MADE_UP_SUBMIT
        reply = _tool_reply(index, target["name"][:3] + LONE_SURROGATE + target["name"][3:], json.dumps({}))
        reply["tool_calls"][0]["id"] = f"call_{index}{LONE_SURROGATE}"
        return reply
    if mode == "surrogate_reasoning":  # ... and in the reasoning a reasoning model sends beside its text
        return {"content": "A", "reasoning_content": f"think {LONE_SURROGATE} more", "tool_calls": None}
    if mode == "nul":
        target = map_tool or submit or _MADE_UP_SUBMIT
        args = json.dumps(_text_arguments(target, f"a{CONTROL_CHARS}b"))
        return {"content": f"text with {CONTROL_CHARS} controls", "tool_calls": [_call(index, target["name"], args)]}
    if mode == "huge":
        return {"content": "x" * HUGE_CHARS, "tool_calls": None}
    if mode == "tag_bomb":
        return {"content": TAG_BOMB * (HUGE_CHARS // len(TAG_BOMB)), "tool_calls": None}
    if mode == "deep_json":
        deep_text = "[" * DEEP + "]" * DEEP
        if submit is None:
            return {"content": deep_text, "tool_calls": None}
        return _tool_reply(index, submit["name"], json.dumps(_text_arguments(submit, deep_text)))
    if mode == "deep_args":
        target = submit or map_tool or _MADE_UP_SUBMIT
        name = next(iter(_properties(target)), "answer")
        # written by hand: json.dumps itself would hit the recursion limit on such a value
        args = '{"' + name + '": ' + "[" * DEEP + "]" * DEEP + "}"
        return _tool_reply(index, target["name"], args)
    if mode == "empty":
        return {"content": "", "tool_calls": None}
    if mode == "valid":
        if submit is None:
            return {"content": VALID_TEXT, "tool_calls": None}
        return _tool_reply(index, submit["name"], json.dumps(_text_arguments(submit, VALID_TEXT)))
    raise ValueError(f"mode {mode!r} has no JSON reply")


def completion(message: dict[str, Any], model: str, index: int) -> bytes:
    surrogate_id = any(LONE_SURROGATE in str(call.get("id")) for call in message.get("tool_calls") or [])
    tool_calls = message.get("tool_calls")
    full = {"role": "assistant", "content": message.get("content")}
    if tool_calls:
        full["tool_calls"] = tool_calls
    payload = {
        "id": f"chatcmpl-{index}" + (LONE_SURROGATE if surrogate_id else ""),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": full, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
    }
    # ensure_ascii: a lone surrogate goes out as the escape \ud800 (raw, it cannot be UTF-8)
    return json.dumps(payload, ensure_ascii=True).encode("ascii")


class _Handler(BaseHTTPRequestHandler):
    owner: HostileServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: the client reuses connections
    timeout = 60  # an idle keep-alive connection is dropped, so no handler thread lives for ever

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def _send(
        self, status: int, payload: bytes, content_type: str = "application/json", *, length=None, cut=None
    ) -> None:
        """Answer `payload`; with `cut`, only its first `cut` bytes under the whole one's length."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload) if length is None else length))
            self.end_headers()
            self.wfile.write(payload if cut is None else payload[:cut])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout mode): nothing to answer

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.owner.models_requests += 1
            self._send(
                200,
                json.dumps(
                    {"object": "list", "data": [{"id": "hostile", "object": "model", "created": 0, "owned_by": "test"}]}
                ).encode(),
            )
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, b'{"error": {"message": "request body is not a JSON object"}}')
            return
        mode = self.owner.next_mode(body)
        index = self.owner.n_requests
        if mode == "http_500":
            self._send(500, b'{"error": {"message": "internal error (hostile)", "type": "server_error"}}')
        elif mode == "timeout":
            self.owner.sleep()
            self.close_connection = True
            self._send(200, completion({"content": "too late"}, body.get("model", "hostile"), index))
        elif mode == "garbage":
            self._send(200, b"<html>502 Bad Gateway</html>\x00\xff not json {")
        elif mode == "partial_body":
            whole = completion(reply_message("valid", body, index), body.get("model", "hostile"), index)
            self.close_connection = True
            self._send(200, whole, length=len(whole), cut=len(whole) // 2)
        elif mode == "context_exceeded":  # llama.cpp's server, for a prompt past n_ctx
            message = b'{"error": {"message": "Requested tokens (75000) exceed context window of 8192", '
            self._send(400, message + b'"type": "invalid_request_error", "code": 400}}')
        elif mode == "no_choices":  # a chat completion without a choice in it
            payload = {
                "id": f"chatcmpl-{index}",
                "object": "chat.completion",
                "created": 0,
                "model": "hostile",
                "choices": [],
            }
            self._send(200, json.dumps(payload).encode())
        else:
            self._send(200, completion(reply_message(mode, body, index), body.get("model", "hostile"), index))
