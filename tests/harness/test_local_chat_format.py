"""geoeval's chat format for the local model (`geoeval/agents/local_chat_format.py`): the prompt the
server builds holds every message verbatim, and the model's reply comes back as text or tool calls.

The conversation is built with Inspect's own types and turned into the request body by Inspect's
OpenAI conversion, then parsed by the server's request model, exactly as the server receives it; the
handler runs against a recording stand-in for the model (no model load).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from geoeval.agents import local_chat_format as chat_format
from geoeval.agents.local_llm import ServeSettings, server_command

pytest.importorskip("llama_cpp.server.types", reason="needs the local-llm extra (llama-cpp-python's server)")

SYSTEM = (
    "You're a map agent. Put the route between <answer_begin> and <answer_end>, e.g. <answer_begin>A -> B<answer_end>."
)
TOOL_RESULT = 'No notes matched "hair salon" & "Nanzhong". Try <one> keyword, e.g. \'salon\'.'
ARGUMENTS = {"query": 'Nanzhong Hair Salon & Spa "No.1"', "near": "Tom's <Café>"}


def request_body() -> dict[str, Any]:
    """A multi-turn tool-using conversation as the server receives it: Inspect's messages and tools,
    converted by Inspect's OpenAI provider code, parsed by the server's request model."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.model._openai import openai_chat_message, openai_chat_tools
    from inspect_ai.tool import ToolCall, ToolInfo, ToolParam, ToolParams
    from llama_cpp.server.types import CreateChatCompletionRequest

    messages = [
        ChatMessageSystem(content=SYSTEM),
        ChatMessageUser(
            content=[{"type": "text", "text": "Edges: A-B, B-C."}, {"type": "text", "text": "Route A to C?"}]
        ),
        ChatMessageAssistant(
            content="",
            tool_calls=[ToolCall(id="call_1", function="search_notes", arguments=ARGUMENTS)],
        ),
        ChatMessageTool(content=TOOL_RESULT, tool_call_id="call_1", function="search_notes"),
    ]
    tool = ToolInfo(
        name="search_notes",
        description="Search the user's notes & reminders.",
        parameters=ToolParams(
            properties={"query": ToolParam(type="string"), "near": ToolParam(type="string")}, required=["query"]
        ),
    )
    body = {
        "model": "smollm2",
        "messages": [asyncio.run(openai_chat_message(m)) for m in messages],
        "tools": openai_chat_tools([tool]),
        "tool_choice": "auto",
        "max_tokens": 32,
        "temperature": 0,
    }
    # what the server's endpoint passes on to the chat handler (llama_cpp/server/app.py)
    return CreateChatCompletionRequest(**json.loads(json.dumps(body))).model_dump(
        exclude={"n", "logit_bias_type", "user", "min_tokens", "model"}
    )


class RecordingLlama:
    """Stands in for `llama_cpp.Llama`: records the prompt and answers with `reply`."""

    n_batch = 8

    def __init__(self, reply: str = "A -> B -> C", eval_seconds: float = 0.0) -> None:
        self.reply, self.eval_seconds = reply, eval_seconds
        self.calls: list[dict[str, Any]] = []
        self.evaluated: list[int] = []

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text) // 4))

    def eval(self, tokens: list[int]) -> None:
        time.sleep(self.eval_seconds)
        self.evaluated.extend(tokens)

    def create_completion(self, prompt: str, **options: Any) -> dict[str, Any]:
        self.calls.append({"prompt": prompt, **options})
        self.eval(self.tokenize(prompt.encode()))
        return {
            "id": "cmpl-1",
            "created": 0,
            "model": "smollm2",
            "choices": [{"text": self.reply, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def handle(llama: RecordingLlama, body: dict[str, Any], tools_first: bool = False) -> dict[str, Any]:
    return chat_format.make_handler(request_timeout_s=None, tools_first=tools_first)(llama=llama, **body)


def test_every_message_reaches_the_prompt_verbatim():
    llama = RecordingLlama()
    handle(llama, request_body())
    prompt = llama.calls[0]["prompt"]
    assert prompt.startswith(f"<|im_start|>system\n{SYSTEM}\n\n")  # the system prompt, as written
    assert "<|im_start|>user\nEdges: A-B, B-C.\nRoute A to C?<|im_end|>\n" in prompt  # parts joined as text
    # the earlier call, its arguments as the model wrote them (JSON, nothing escaped)
    call = json.dumps({"name": "search_notes", "arguments": ARGUMENTS}, ensure_ascii=False)
    assert f"<|im_start|>assistant\n<tool_call>[\n{call}\n]</tool_call><|im_end|>\n" in prompt
    assert f"<|im_start|>tool\n<tool_response>\n{TOOL_RESULT}\n</tool_response><|im_end|>\n" in prompt
    assert '"description": "Search the user\'s notes & reminders."' in prompt  # the offered tool
    assert prompt.endswith("<|im_start|>assistant\n")
    for escaped in ("&lt;", "&gt;", "&#39;", "&#34;", "&amp;", "&quot;", "{'type'", "[{'"):
        assert escaped not in prompt, escaped


def test_the_turns_come_in_order_and_the_reply_is_bounded():
    llama = RecordingLlama()
    handle(llama, request_body())
    prompt = llama.calls[0]["prompt"]
    roles = [line.removeprefix("<|im_start|>") for line in prompt.splitlines() if line.startswith("<|im_start|>")]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert llama.calls[0]["max_tokens"] == 32  # the request's own limit, never unbounded
    assert "<|im_end|>" in llama.calls[0]["stop"]


def test_a_reply_is_text_or_tool_calls():
    llama = RecordingLlama('<tool_call>[{"name": "search_notes", "arguments": {"query": "A & \\"B\\""}}]</tool_call>')
    reply = handle(llama, request_body())["choices"][0]
    assert reply["finish_reason"] == "tool_calls"
    (call,) = reply["message"]["tool_calls"]
    assert call["function"]["name"] == "search_notes"
    assert json.loads(call["function"]["arguments"]) == {"query": 'A & "B"'}
    assert reply["message"]["content"] is None

    text = handle(RecordingLlama("<answer_begin>A -> C<answer_end>"), request_body())["choices"][0]
    assert text["message"] == {"role": "assistant", "content": "<answer_begin>A -> C<answer_end>"}
    assert text["finish_reason"] == "stop"

    # a call of a tool that was not offered, or not JSON, stays the model's text
    for reply_text in ('<tool_call>[{"name": "rm_rf", "arguments": {}}]</tool_call>', "<tool_call>[{oops</tool_call>"):
        kept = handle(RecordingLlama(reply_text), request_body())["choices"][0]
        assert kept["message"]["content"] == reply_text and "tool_calls" not in kept["message"]


def test_an_image_is_refused_clearly():
    body = request_body()
    body["messages"][1]["content"].append({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
    with pytest.raises(chat_format.UnsupportedContent, match="model=local_llm reads text only: .*`image_url` part"):
        handle(RecordingLlama(), body)


def test_tools_first_requires_a_call_until_a_tool_has_answered():
    from llama_cpp import LlamaGrammar

    body = request_body()
    first_turn = {**body, "messages": body["messages"][:2]}
    llama = RecordingLlama()
    handle(llama, first_turn, tools_first=True)
    assert isinstance(llama.calls[0]["grammar"], LlamaGrammar)  # a call of an offered tool, by grammar
    handle(llama, body, tools_first=True)  # a tool result is in: the model chooses
    assert "grammar" not in llama.calls[1]
    handle(llama, first_turn, tools_first=False)
    assert "grammar" not in llama.calls[2]
    handle(llama, {**first_turn, "tool_choice": "none"}, tools_first=True)  # no tools offered at all
    assert "grammar" not in llama.calls[3] and "<tools>" not in llama.calls[3]["prompt"]


def test_the_call_grammar_admits_exactly_one_call_of_an_offered_tool():
    tools = request_body()["tools"]
    grammar = chat_format.tool_call_grammar(tools)
    assert grammar.startswith('root ::= "<tool_call>" calls "</tool_call>"\n')
    assert '"\\"search_notes\\""' in grammar  # the name is fixed to the offered tools


def test_a_request_past_its_timeout_stops_between_batches():
    body = request_body()
    llama = RecordingLlama(eval_seconds=0.05)
    handler = chat_format.make_handler(request_timeout_s=0.12, tools_first=False)
    with pytest.raises(chat_format.RequestTimedOut, match="ran past model.serve.request_timeout_s"):
        handler(llama=llama, **body)
    # stopped after a few batches, not after the whole prompt
    assert 0 < len(llama.evaluated) < len(llama.tokenize(llama.calls[0]["prompt"].encode()))
    assert "eval" not in vars(llama)  # the model's own evaluation is back for the next request


def test_the_launcher_passes_the_format_settings():
    settings = ServeSettings(request_timeout_s=42.5, tools_first=False)
    command = server_command(settings, model_path=Path("m.gguf"), port=1)
    assert command[5:8] == ["42.5", "0", ""]
    assert command[command.index("--chat_format") + 1] == chat_format.FORMAT_NAME
    assert server_command(ServeSettings(request_timeout_s=None), Path("m.gguf"), 1)[5] == ""


def test_a_later_system_message_stays_in_its_place_and_none_gets_smollm2s_default():
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "system", "content": "Wrap up now."},
    ]
    prompt = chat_format.render_prompt(messages)
    assert prompt == (
        f"<|im_start|>system\n{chat_format.DEFAULT_SYSTEM_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello<|im_end|>\n"
        "<|im_start|>system\nWrap up now.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_the_server_answers_an_image_with_400_and_knows_the_format():
    from types import SimpleNamespace

    from llama_cpp.llama_chat_format import get_chat_completion_handler
    from llama_cpp.server.errors import RouteErrorHandler
    from llama_cpp.server.types import CreateChatCompletionRequest

    chat_format.register(request_timeout_s=5, tools_first=True)
    assert get_chat_completion_handler(chat_format.FORMAT_NAME) is not None
    body = CreateChatCompletionRequest(messages=[{"role": "user", "content": "x"}])
    route = SimpleNamespace(pattern_and_formatters=RouteErrorHandler.pattern_and_formatters)
    error = chat_format.UnsupportedContent(f"{chat_format.TEXT_ONLY_MESSAGE}: a message holds a `image_url` part")
    status, response = RouteErrorHandler.error_message_wrapper(route, error, body)
    assert status == 400 and response["message"].startswith(chat_format.TEXT_ONLY_MESSAGE)
    # other failures stay server errors, which clients retry
    status, _ = RouteErrorHandler.error_message_wrapper(route, chat_format.RequestTimedOut("ran past"), body)
    assert status == 500
