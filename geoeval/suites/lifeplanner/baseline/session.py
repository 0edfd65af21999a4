"""The heuristic baseline's replay of a conversation (`Session`): each turn the plan re-runs from
the start; a tool call already made is answered from its tool message, and the first call not
made yet interrupts the plan (`_NeedCall`) to become this turn's call, within the tool budget."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from inspect_ai.model import ChatMessage

from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

BUDGET = 30  # the scaffold's default; the plan keeps one turn for submit_answer


class _NeedCall(Exception):
    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        super().__init__(tool)
        self.tool, self.arguments = tool, arguments


class _OutOfBudget(Exception):
    pass


@dataclass
class _Past:
    tool: str
    arguments: dict[str, Any]
    payload: Any  # None when the call failed


class Session:
    """Replays the calls already made; the first new call interrupts the plan."""

    def __init__(self, messages: list[ChatMessage], budget: int = BUDGET) -> None:
        results: dict[str | None, Any] = {}  # by tool call id (None: a result without one)
        for m in messages:
            if getattr(m, "role", "") == "tool":
                tool_msg = cast("ChatMessageTool", m)
                payload = None
                if getattr(m, "error", None) is None:
                    try:
                        payload = json.loads(m.text)
                    except (json.JSONDecodeError, TypeError):
                        payload = None
                results[tool_msg.tool_call_id] = payload
        self.past = [
            _Past(c.function, dict(c.arguments or {}), results.get(c.id))
            for m in messages
            if getattr(m, "role", "") == "assistant"
            for c in (cast("ChatMessageAssistant", m).tool_calls or [])
            if c.function != SUBMIT_TOOL
        ]
        self.i = 0
        self.budget = budget - 1  # keep a turn for submit_answer
        self.memo: dict[str, Any] = {}  # a call repeated within the plan is answered, not made again

    def left(self) -> int:
        return self.budget - self.i

    def call(self, tool: str, **arguments: Any) -> Any:
        arguments = {k: v for k, v in arguments.items() if v is not None}
        key = json.dumps([tool, arguments], sort_keys=True, default=str)
        if key in self.memo:
            return self.memo[key]
        if self.i < len(self.past):
            got = self.past[self.i]
            self.i += 1
            self.memo[key] = got.payload
            return got.payload
        if self.i >= self.budget:
            raise _OutOfBudget()
        raise _NeedCall(tool, arguments)
