"""The typed submit channel: a suite's answer type offered as an Inspect tool, for models that call
tools, so that their answers are read exactly and not from prose.

A suite declares its answer schema as the parameters of one tool: MapTab's
`submit_route(route, transfer_at)` and `submit_answer(value)` (`suites/maptab/submit.py`),
LifePlanner's `submit_answer(result)` (its paper's). The tool returns the typed arguments as the
answer in the paper's own format, and that text is what the scorer reads, under either answer
protocol: a submitted answer has one reading. `submit_solver` is Inspect's react agent with that tool as its submit
tool (`AgentSubmit`, the completion its answer only, the call kept in the transcript).

Which channel a run uses is the suite's `answer_channel` setting: `text` (prose, read by the
suite's reader; what MapTab's and MapSatisfy's papers did) or `tool`; a suite's default is its
paper's. The prompt then says the same thing the channel does (each suite's prompt lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai.tool import Tool

#: the answer channels (`suite.answer_channel`)
ANSWER_CHANNELS = ("text", "tool")


def submit_solver(submit: Tool, tools: Sequence[Tool] = (), attempts: int = 1) -> Any:
    """Inspect's react agent with `submit` as its submit tool: the completion scored is the
    submitted answer alone, and the call stays in the transcript."""
    from inspect_ai.agent import AgentSubmit, react

    return react(
        tools=list(tools),
        attempts=attempts,
        submit=AgentSubmit(tool=submit, answer_only=True, keep_in_messages=True),
    )
