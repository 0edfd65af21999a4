"""Agent policies: how each offline agent answers, per suite.

A policy sees exactly what a real model sees (the chat messages and the tool list), never the
sample's reference, except the oracle, whose whole point is to replay the reference. Suites
register their baselines here with `register_policy(agent, suite, fn)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo


@dataclass
class PolicyReply:
    """Either a final text answer, or a tool call (`tool` with `arguments`)."""

    content: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)


Policy = Callable[[list[ChatMessage], list[ToolInfo], dict[str, Any]], PolicyReply]

_POLICIES: dict[tuple[str, str], Policy] = {}


def register_policy(agent: str, suite: str, fn: Policy) -> Policy:
    _POLICIES[(agent, suite)] = fn
    return fn


def get_policy(agent: str, suite: str) -> Policy | None:
    return _POLICIES.get((agent, suite)) or _POLICIES.get((agent, "*"))


def agents() -> set[str]:
    return {a for a, _ in _POLICIES}


def answer_or_submit(answer: str, tools: list[ToolInfo], messages: list[ChatMessage]) -> PolicyReply:
    """With a `submit` tool (react agents) the answer goes through it; otherwise as text. Once the
    answer was submitted, the agent stops talking."""
    if any(t.name == "submit" for t in tools):
        if any(getattr(m, "role", "") == "tool" and getattr(m, "function", "") == "submit" for m in messages):
            return PolicyReply(content=answer)
        return PolicyReply(tool="submit", arguments={"answer": answer})
    return PolicyReply(content=answer)
