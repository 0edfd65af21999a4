"""The `geoeval` Inspect model provider: deterministic offline agents.

`geoeval/oracle` answers from the sample's reference (the harness self-check: every metric must
be exactly 1.0); `geoeval/table_baseline`, `geoeval/perception_baseline` and any agent a suite
registers answer honestly from the messages. They count tokens without tiktoken (no download),
and report usage on every output.

Model args (`model.args` in config):
- `crash_once_marker`: path; the first call in any process where the file does not exist yet
  creates it and kills the worker process. Used to test the Ray runner's shard retries.
- `delay_s`: seconds to wait before each reply (simulates model latency; used by the resume test
  and the harness-overhead benchmark).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    StopReason,
    modelapi,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from geoeval.agents.policies import PolicyReply, answer_or_submit, get_policy, register_policy
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import sample_state


def message_text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "\n".join(getattr(c, "text", "") for c in content if getattr(c, "type", "") == "text")


def approx_tokens(text: str) -> int:
    """~4 characters per token; deterministic and needs no tokenizer download."""
    return max(1, (len(text) + 3) // 4) if text else 0


def _oracle(messages: list[ChatMessage], tools: list[ToolInfo], ctx: dict[str, Any]) -> PolicyReply:

    state = sample_state()
    if state is None or not state.target.target:
        return PolicyReply(content="")
    reference = state.target.target[0]
    return answer_or_submit(reference, tools, messages)


register_policy("oracle", "*", _oracle)


class GeoevalAgentAPI(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.model_args = model_args
        from geoeval.agents.policies import agents
        from geoeval.core.registry import load_plugins

        load_plugins()  # suites and plugins register their agents' policies when the registry loads them

        if model_name not in agents():
            raise GeoevalError(
                f"Invalid config: model.name: unknown offline agent 'geoeval/{model_name}' "
                f"(available: {', '.join('geoeval/' + a for a in sorted(agents()))})"
            )

    async def count_text_tokens(self, text: str) -> int:
        return approx_tokens(text)

    def max_tokens(self) -> int | None:
        return None

    def _crash_once(self) -> None:
        marker = self.model_args.get("crash_once_marker")
        if marker and not Path(marker).exists():
            Path(marker).parent.mkdir(parents=True, exist_ok=True)
            Path(marker).write_text(str(os.getpid()))
            os._exit(1)  # a hard worker death, as a killed node would look to Ray

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:

        self._crash_once()
        delay = float(self.model_args.get("delay_s", 0) or 0)
        if delay > 0:
            await asyncio.sleep(delay)
        state = sample_state()
        suite = str((state.metadata or {}).get("suite", "*")) if state is not None else "*"
        policy = get_policy(self.model_name, suite)
        if policy is None:
            reply = PolicyReply(content=f"[geoeval/{self.model_name} has no policy for suite '{suite}']")
        else:
            reply = policy(input, tools, dict(self.model_args))
        in_tokens = sum(approx_tokens(message_text(m)) for m in input)
        stop: StopReason
        if reply.tool:
            call = ToolCall(id=f"call_{len(input)}", function=reply.tool, arguments=reply.arguments)
            message = ChatMessageAssistant(
                content=reply.content, tool_calls=[call], model=self.model_name, source="generate"
            )
            stop = "tool_calls"
            out_tokens = approx_tokens(reply.content + str(reply.arguments))
        else:
            message = ChatMessageAssistant(content=reply.content, model=self.model_name, source="generate")
            stop = "stop"
            out_tokens = approx_tokens(reply.content)
        return ModelOutput(
            model=self.model_name,
            choices=[ChatCompletionChoice(message=message, stop_reason=stop)],
            usage=ModelUsage(input_tokens=in_tokens, output_tokens=out_tokens, total_tokens=in_tokens + out_tokens),
        )


@modelapi(name="geoeval")
def geoeval_agents() -> type[ModelAPI]:
    return GeoevalAgentAPI
