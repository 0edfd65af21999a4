"""The chat format geoeval registers into llama-cpp-python's server for the local model.

Why geoeval ships one: SmolLM2's own chat template (`tokenizer.chat_template` in its GGUF) is plain
ChatML with no tools, and llama-cpp-python's `chatml-function-calling` renders through Jinja with
HTML autoescaping and without a `tool` role: the system prompt arrived escaped (`&lt;answer_begin&gt;`),
list-of-parts user content as an escaped Python repr, tool results as an empty turn, and earlier tool
arguments escaped again on every turn. This format keeps SmolLM2's ChatML turn markers and renders in
plain Python (no template engine, so nothing is escaped):

- `system`, `user`, `assistant` turns carry their text verbatim; user content given as a list of
  parts is its text parts joined by newlines. An image part is refused (HTTP 400, the request's
  error): the model reads text only, and answering a map question without the map would be scored
  as if it had seen it.
- offered tools are described in the system turn as in SmolLM2's own function-calling data
  (SmolTalk's APIGen subset): a JSON list inside `<tools>`, and a reply that calls tools is
  `<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>`.
- an assistant turn with tool calls renders its text, then its calls in that same form; a `tool`
  message renders as a `tool` turn whose text sits inside `<tool_response>`.
- the reply is parsed back: a well-formed `<tool_call>` naming offered tools becomes OpenAI
  `tool_calls` (finish reason `tool_calls`); anything else is plain content, as the model wrote it.
  `tool_choice: "none"` offers no tools; `required` or a named tool constrains the reply by grammar
  to one such call, its arguments following the tool's schema.
- `tools_first`: SmolLM2-135M answered in text under every tools prompt tried (this one, and its
  instruction data's own "expert in composing functions" prompt) and never called a tool unasked, so the first reply of a conversation that offers tools (no tool result in it yet) is
  constrained, as `required` would be, to one call of a tool of the model's choosing; after that the
  model chooses freely between calling more tools and answering.

Each request honours `max_tokens` and stops at `request_timeout_s` (prompt evaluation is checked
between batches, decoding after every token): past it the server answers an error (HTTP 500) and is
free for the next request at once, instead of working on for a client that has gone; a retry reuses
the prompt evaluated so far. With a prompt log, each request's rendered prompt and raw reply are
appended to it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from re import compile as compile_pattern
from typing import Any

FORMAT_NAME = "geoeval-chatml-tools"
#: SmolLM2's template puts this system turn in front of a conversation that has none.
DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
END_OF_TURN = "<|im_end|>"
TEXT_ONLY_MESSAGE = "model=local_llm reads text only"
TIMEOUT_MESSAGE = "the local model ran past model.serve.request_timeout_s"

#: SmolLM2's function-calling prompt from its instruction data (SmolTalk's APIGen subset), with the
#: answer in plain text once the results are in, as the suites' agents need
TOOLS_PREAMBLE = "You have access to the following tools:\n"
TOOLS_FORMAT = (
    "To call tools, reply with only this format, and NO other text:\n"
    "<tool_call>[\n"
    '{"name": "func_name1", "arguments": {"argument1": "value1", "argument2": "value2"}},\n'
    "... (more tool calls as required)\n"
    "]</tool_call>\n"
    "Each result comes back in a tool turn inside <tool_response></tool_response>. "
)
#: how the model is asked to end: in plain text, or, when the tools hold a submit tool (a suite's
#: typed answer channel, LifePlanner's `submit_answer`), by calling it (saying "reply in plain
#: text" there left 7 of 8 LifePlanner samples without a submitted answer)
PLAIN_TEXT_END = "When no tool call is needed, reply in plain text."
SUBMIT_END = "When you have your final answer, submit it by calling {name}; do not write it as plain text."
TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


class UnsupportedContent(ValueError):
    """A message the local model cannot read (an image); the server answers it with HTTP 400."""


class RequestTimedOut(RuntimeError):
    """The request ran past `request_timeout_s`; the server stopped working on it."""


def message_text(content: Any) -> str:
    """A message's text: a string as is, a list of parts as its text parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            texts.append(part.get("text", ""))
        else:
            raise UnsupportedContent(
                f"{TEXT_ONLY_MESSAGE}: a message holds a `{kind}` part (choose a setting without images)"
            )
    return "\n".join(texts)


def render_tools(tools: Iterable[Mapping[str, Any]]) -> str:
    functions = [tool["function"] for tool in tools if tool.get("type") == "function"]
    submit = next((f["name"] for f in functions if str(f.get("name", "")).startswith("submit")), None)
    end = SUBMIT_END.format(name=submit) if submit else PLAIN_TEXT_END
    return f"{TOOLS_PREAMBLE}<tools>{json.dumps(functions, ensure_ascii=False)}</tools>\n\n{TOOLS_FORMAT}{end}"


def render_tool_calls(calls: Iterable[Mapping[str, Any]]) -> str:
    """An assistant turn's calls in the form the model is asked to write them."""
    rendered = []
    for call in calls:
        function = call["function"]
        arguments: Any = function.get("arguments") or "{}"
        try:  # arguments arrive as a JSON string; rendered as the object the model wrote
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except json.JSONDecodeError:
            pass  # malformed text stays as it was written
        rendered.append(json.dumps({"name": function["name"], "arguments": arguments}, ensure_ascii=False))
    return "<tool_call>[\n" + ",\n".join(rendered) + "\n]</tool_call>"


def render_turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}{END_OF_TURN}\n"


def render_prompt(messages: list[Mapping[str, Any]], tools: list[Mapping[str, Any]] | None = None) -> str:
    """The prompt text for `messages`, ending with an open assistant turn. The leading system messages
    and the offered tools make the first turn; a later system message stays where it was sent."""
    leading = 0
    while leading < len(messages) and messages[leading]["role"] in ("system", "developer"):
        leading += 1
    system = [message_text(m.get("content")) for m in messages[:leading]]
    if tools:
        system.append(render_tools(tools))
    turns = [render_turn("system", "\n\n".join(system) if system else DEFAULT_SYSTEM_PROMPT)]
    for message in messages[leading:]:
        role = "system" if message["role"] == "developer" else message["role"]
        text = message_text(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            text = "\n".join(filter(None, [text, render_tool_calls(message["tool_calls"])]))
        elif role in ("tool", "function"):
            role, text = "tool", f"<tool_response>\n{text}\n</tool_response>"
        turns.append(render_turn(role, text))
    turns.append("<|im_start|>assistant\n")
    return "".join(turns)


def parse_reply(text: str, tool_names: set[str]) -> tuple[str | None, list[dict[str, Any]]]:
    """The reply's content and its tool calls. A block that is not JSON naming offered tools stays in
    the content, so the agent (and the scorer) see what the model wrote."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    position = 0
    for match in TOOL_CALL.finditer(text):
        block = tool_calls(match.group(1), tool_names)
        if not block:
            continue
        kept.append(text[position : match.start()])
        position = match.end()
        calls.extend(block)
    kept.append(text[position:])
    content = "".join(kept).strip()
    return (content or None) if calls else text, calls


def tool_calls(body: str, tool_names: set[str]) -> list[dict[str, Any]]:
    """The calls in one `<tool_call>` block: a JSON list of calls or a single call; none unless every
    call names an offered tool with an arguments object."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return []
    entries = payload if isinstance(payload, list) else [payload]
    if not all(
        isinstance(e, dict) and e.get("name") in tool_names and isinstance(e.get("arguments", {}), dict)
        for e in entries
    ):
        return []
    return [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": e["name"], "arguments": json.dumps(e.get("arguments", {}), ensure_ascii=False)},
        }
        for e in entries
    ]


def offered_tools(tools: list[Mapping[str, Any]] | None, tool_choice: Any) -> list[Mapping[str, Any]]:
    if not tools or tool_choice == "none":
        return []
    return [tool for tool in tools if tool.get("type") == "function"]


def required_tools(
    offered: list[Mapping[str, Any]], tool_choice: Any, messages: list[Mapping[str, Any]], tools_first: bool
) -> list[Mapping[str, Any]]:
    """The tools one of which the reply must call (none: the model may answer in text). `required` and a
    named `tool_choice` as in OpenAI's API; with `tools_first`, also the first reply of a conversation
    that offers tools and holds no tool result yet."""
    if not offered:
        return []
    if isinstance(tool_choice, Mapping):
        name = tool_choice.get("function", {}).get("name")
        return [tool for tool in offered if tool["function"]["name"] == name]
    if tool_choice == "required":
        return offered
    if tools_first and not any(m["role"] in ("tool", "function") for m in messages):
        return offered
    return []


def tool_call_grammar(tools: list[Mapping[str, Any]]) -> str:
    """GBNF for one `<tool_call>` block holding a single call of one of `tools`, its arguments following
    the tool's JSON schema (as far as llama.cpp's converter reads it; see `arguments_schema`)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # the server's own process

    calls = {
        "type": "array",
        "minItems": 1,
        "maxItems": 1,
        "items": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"name": {"const": tool["function"]["name"]}, "arguments": arguments_schema(tool)},
                    "required": ["name", "arguments"],
                }
                for tool in tools
            ]
        },
    }
    gbnf = re.sub(r"^root ::=", "calls ::=", json_schema_to_gbnf(json.dumps(calls)), flags=re.MULTILINE)
    return f'root ::= "<tool_call>" calls "</tool_call>"\n{gbnf}'


def arguments_schema(tool: Mapping[str, Any]) -> Any:
    """The tool's parameter schema as llama.cpp's converter takes it: it fails on an empty `items`
    schema (any element, as Inspect writes `list[Any]`), which is then left out (any array either
    way); a schema it still cannot read allows any JSON object."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = without_empty_items(tool["function"].get("parameters") or {"type": "object"})
    try:
        json_schema_to_gbnf(json.dumps(schema))
    except Exception:  # noqa: BLE001 - the converter raises assorted errors on schemas it does not support
        return {"type": "object"}
    return schema


def without_empty_items(schema: Any) -> Any:
    if isinstance(schema, list):
        return [without_empty_items(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: without_empty_items(v) for k, v in schema.items() if not (k == "items" and v == {})}


class Deadline:
    """Stops one request's work at `seconds` (None: never)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds
        self.passed = False

    def check(self) -> bool:
        if self.at is not None and time.monotonic() > self.at:
            self.passed = True
        return self.passed

    def stopping_criterion(self, _input_ids: Any, _logits: Any) -> bool:
        return self.check()

    def raise_if_passed(self, prompt_tokens: int) -> None:
        if self.passed:
            raise RequestTimedOut(
                f"{TIMEOUT_MESSAGE} ({self.seconds:g} s) on a {prompt_tokens}-token prompt; "
                "the server stopped it and is free for the next request"
            )


def evaluate_in_batches(llama: Any, deadline: Deadline, prompt_tokens: int) -> Any:
    """`llama.eval` that checks the deadline between batches: a long prompt takes minutes on a busy CPU,
    and llama.cpp's own evaluation cannot be interrupted."""
    evaluate = type(llama).eval

    def eval_checked(tokens: list[int]) -> None:
        for start in range(0, len(tokens), llama.n_batch):
            if deadline.check():
                deadline.raise_if_passed(prompt_tokens)
            evaluate(llama, tokens[start : start + llama.n_batch])

    return eval_checked


def make_handler(request_timeout_s: float | None, tools_first: bool, prompt_log: Path | None = None) -> Any:
    """The llama-cpp-python chat completion handler of this format. With `prompt_log`, each request's
    rendered prompt and the model's raw reply are appended to that file (JSON lines)."""

    def handle(
        *,
        llama: Any,
        messages: list[Mapping[str, Any]],
        tools: list[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        stream: bool = False,
        stop: str | list[str] | None = None,
        max_tokens: int | None = None,
        **sampling: Any,
    ) -> dict[str, Any]:
        from llama_cpp.llama import StoppingCriteriaList  # the server's own process: llama_cpp is loaded
        from llama_cpp.llama_grammar import LlamaGrammar

        if stream:
            raise UnsupportedContent(f"{FORMAT_NAME} answers whole replies only (stream: false)")
        offered = offered_tools(tools, tool_choice)
        prompt = render_prompt(messages, offered)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        deadline = Deadline(request_timeout_s)
        prompt_tokens = len(llama.tokenize(prompt.encode(), add_bos=False, special=True))
        options = {k: v for k, v in sampling.items() if k in COMPLETION_OPTIONS and v is not None}
        required = required_tools(offered, tool_choice, messages, tools_first)
        if required:
            options["grammar"] = LlamaGrammar.from_string(tool_call_grammar(required), verbose=False)
        llama.eval = evaluate_in_batches(llama, deadline, prompt_tokens)
        try:
            completion = llama.create_completion(
                prompt=prompt,
                stop=[*stops, END_OF_TURN],
                max_tokens=max_tokens,
                stream=False,
                stopping_criteria=StoppingCriteriaList([deadline.stopping_criterion]),
                **options,
            )
        finally:
            del llama.eval
        deadline.raise_if_passed(prompt_tokens)
        if prompt_log is not None:
            choice = completion["choices"][0]
            record = {"prompt": prompt, "reply": choice["text"], "finish_reason": choice["finish_reason"]}
            with prompt_log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(record, ensure_ascii=False) + "\n")
        return chat_completion(completion, {t["function"]["name"] for t in offered})

    return handle


#: sampling options the handler passes on to `Llama.create_completion` (the rest are not used)
COMPLETION_OPTIONS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "typical_p",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "repeat_penalty",
        "tfs_z",
        "mirostat_mode",
        "mirostat_tau",
        "mirostat_eta",
        "logit_bias",
        "logits_processor",
        "grammar",
    }
)


def chat_completion(completion: Mapping[str, Any], tool_names: set[str]) -> dict[str, Any]:
    choice = completion["choices"][0]
    content, calls = parse_reply(choice["text"], tool_names)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chat" + completion["id"],
        "object": "chat.completion",
        "created": completion["created"],
        "model": completion["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else choice["finish_reason"],
            }
        ],
        "usage": completion["usage"],
    }


def register(request_timeout_s: float | None, tools_first: bool, prompt_log: Path | None = None) -> None:
    """Registers this format under FORMAT_NAME in llama-cpp-python (in the server's process, before it
    starts), and has the server answer content it cannot read with HTTP 400, the request's own error,
    rather than 500, which clients retry."""

    from llama_cpp.llama_chat_format import LlamaChatCompletionHandlerRegistry
    from llama_cpp.server.errors import ErrorResponse, RouteErrorHandler

    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        FORMAT_NAME, make_handler(request_timeout_s, tools_first, prompt_log), overwrite=True
    )

    def bad_request(_body: Any, match: re.Match[str]) -> tuple[int, ErrorResponse]:
        return 400, ErrorResponse(message=match.group(0), type="invalid_request_error", param="messages", code=None)

    RouteErrorHandler.pattern_and_formatters[compile_pattern(rf"{re.escape(TEXT_ONLY_MESSAGE)}.*")] = bad_request
