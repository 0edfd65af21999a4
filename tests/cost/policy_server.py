"""An OpenAI-compatible chat server (stdlib only, 127.0.0.1, port 0) that answers with one of
geoeval's offline policies and reports usage, for the tests of what real models cost.

A request for the model named `judge` is answered as a judge: "SCORE: 1" (counted apart, in
`judge_requests`). Any other model plays a policy that reads only the conversation (MapTab's `table_baseline`, LifePlanner's
`heuristic_baseline`, MapSatisfy's `clarify_baseline`): the request's messages and tools are
turned back into Inspect messages and the policy's reply is sent as a chat completion, a tool
call when the policy calls a tool. It counts every request it answers (geoeval's one-token
preflight probe is answered and counted apart, in `probes`; `all_requests` is every HTTP request
it got, GETs included) and reports usage that a test can price by hand:
`prompt_tokens` = characters of the request's text / 4 (at least 1), `completion_tokens` =
characters of the reply / 4 (at least 1), `prompt_tokens_details.cached_tokens` = 0.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall, ToolInfo, ToolParams


def to_inspect(messages: list[dict[str, Any]]) -> list[Any]:
    """OpenAI chat messages as Inspect messages (a tool reply gets the name of the call it answers)."""
    names: dict[str, str] = {}
    out: list[Any] = []
    for m in messages:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        if m["role"] in ("system", "developer"):
            out.append(ChatMessageSystem(content=content))
        elif m["role"] == "user":
            out.append(ChatMessageUser(content=content))
        elif m["role"] == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
                calls.append(
                    ToolCall(
                        id=c["id"],
                        function=c["function"]["name"],
                        arguments=json.loads(c["function"]["arguments"] or "{}"),
                    )
                )
            out.append(ChatMessageAssistant(content=content, tool_calls=calls or None))
        elif m["role"] == "tool":
            call_id = m.get("tool_call_id") or ""
            out.append(ChatMessageTool(content=content, tool_call_id=call_id, function=names.get(call_id, "")))
    return out


def request_chars(body: dict[str, Any]) -> int:
    total = 0
    for m in body.get("messages") or []:
        content = m.get("content") or ""
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if p.get("type") == "text")
        total += len(content)
    return total


def is_preflight_probe(body: dict[str, Any]) -> bool:
    return body.get("max_tokens") == 1 and body.get("messages") == [{"role": "user", "content": "ping"}]


class PolicyServer:
    """`with PolicyServer("heuristic_baseline", "lifeplanner") as server:` ... `server.requests`."""

    def __init__(self, agent: str, suite: str) -> None:
        from geoeval.agents.policies import get_policy
        from geoeval.core.registry import load_plugins

        load_plugins()
        policy = get_policy(agent, suite)
        assert policy is not None, f"no policy {agent} for {suite}"
        self.policy = policy
        self.requests = 0
        self.judge_requests = 0
        self.probes = 0
        self.all_requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with outer.lock:
                    outer.all_requests += 1
                self._send({"object": "list", "data": [{"id": "policy", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.all_requests += 1
                if is_preflight_probe(body):
                    with outer.lock:
                        outer.probes += 1
                    return self._send(completion({"role": "assistant", "content": "pong"}, "stop", 1, 1))
                if body.get("model") == "judge":
                    with outer.lock:
                        outer.judge_requests += 1
                    reply_text = "The answer meets the rubric.\nSCORE: 1"
                    return self._send(completion({"role": "assistant", "content": reply_text}, "stop", 100, 10))
                tools = [
                    ToolInfo(
                        name=t["function"]["name"],
                        description=t["function"].get("description", ""),
                        parameters=ToolParams.model_validate(t["function"].get("parameters") or {}),
                    )
                    for t in body.get("tools") or []
                ]
                reply = outer.policy(to_inspect(body["messages"]), tools, {})
                message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
                finish = "stop"
                text = reply.content or ""
                if reply.tool:
                    arguments = json.dumps(reply.arguments)
                    with outer.lock:
                        n = outer.requests
                    message["tool_calls"] = [
                        {
                            "id": f"call_{n}",
                            "type": "function",
                            "function": {"name": reply.tool, "arguments": arguments},
                        }
                    ]
                    finish = "tool_calls"
                    text += reply.tool + arguments
                prompt = max(1, request_chars(body) // 4)
                completion_tokens = max(1, len(text) // 4)
                with outer.lock:
                    outer.requests += 1
                    outer.prompt_tokens += prompt
                    outer.completion_tokens += completion_tokens
                self._send(completion(message, finish, prompt, completion_tokens))

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reset(self) -> None:
        with self.lock:
            self.requests = self.judge_requests = self.prompt_tokens = self.completion_tokens = 0
            self.probes = self.all_requests = 0

    def __enter__(self) -> PolicyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(message: dict[str, Any], finish: str, prompt: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-policy",
        "object": "chat.completion",
        "created": 0,
        "model": "policy",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }
