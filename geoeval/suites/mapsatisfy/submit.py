"""MapSatisfy's typed submit channel (`suite.answer_channel=tool`; `core/reading/submit.py`): each
reply to the user delivered through a tool that names the records it recommends.

The paper's agent answers in text (`answer_channel=text`, the default), and the rules judge reads
which records the reply recommends (`judging/reading.py`). With `tool`, the agent calls
`submit_reply(reply, recommended)`: `reply` is the turn the user reads, and `recommended` names
the records it recommends, which the robust reading takes as the recommendation exactly (a name
that matches no record of the tool outputs recommends nothing).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.tool import Tool, ToolDef

SUBMIT_REPLY = "submit_reply"
#: the line the agent prompt ends with under `answer_channel=tool`
TOOL_LINE = (
    f"\n\n每次回复用户时，请调用 `{SUBMIT_REPLY}`：`reply` 为给用户的回复内容，`recommended` 为你推荐的地点"
    f"名称列表（与工具结果中的名称一致；没有推荐时为空）。Reply to the user by calling `{SUBMIT_REPLY}`."
)


def submit_reply_tool() -> Tool:
    async def submit_reply(reply: str, recommended: list[str] | None = None) -> str:
        return "Delivered to the user."

    return ToolDef(
        submit_reply,
        name=SUBMIT_REPLY,
        description="Deliver your reply to the user, naming the places it recommends.",
        parameters={
            "reply": "The reply the user reads.",
            "recommended": "The names of the places the reply recommends, as the tool results write them.",
        },
    ).as_tool()


def submitted(call: Any) -> tuple[str, list[str]] | None:
    """(reply, recommended names) of a `submit_reply` call, or None for another call."""
    if getattr(call, "function", None) != SUBMIT_REPLY:
        return None
    arguments = dict(getattr(call, "arguments", None) or {})
    names = arguments.get("recommended") or []
    return str(arguments.get("reply") or ""), [str(n) for n in names] if isinstance(names, list) else [str(names)]
