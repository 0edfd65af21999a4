"""Small helpers shared by the LifePlanner tests."""

from __future__ import annotations


def rows(con, sql, params=()):
    """Query results as dicts (expectations are computed with plain SQL, independently of the tools)."""
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def run_policy(policy, case, city, system_prompt_text, user_prompt_text, budget=30, max_turns=60):
    """Run an offline agent policy on one case with the real standard tools, the way the solver
    does but without Inspect (fast): returns (messages, submitted result or None)."""
    import json as _json

    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall, ToolCallError

    from geoeval.suites.lifeplanner.cases.case import run_standard

    messages = [ChatMessageSystem(content=system_prompt_text), ChatMessageUser(content=user_prompt_text)]
    calls = 0
    for turn in range(max_turns):
        reply = policy(messages, [], {})
        if not reply.tool:
            return messages, None
        call = ToolCall(id=f"c{turn}", function=reply.tool, arguments=reply.arguments)
        messages.append(ChatMessageAssistant(content=reply.content, tool_calls=[call]))
        if reply.tool == "submit_answer":
            messages.append(ChatMessageTool(content="Answer submitted.", tool_call_id=call.id, function=call.function))
            return messages, reply.arguments.get("result")
        calls += 1
        if calls > budget:
            messages.append(
                ChatMessageTool(
                    content="budget",
                    tool_call_id=call.id,
                    function=call.function,
                    error=ToolCallError("limit", "budget"),
                )
            )
            continue
        res = run_standard(city, reply.tool, dict(reply.arguments))
        if res.failure_class == "parameter_error":
            messages.append(
                ChatMessageTool(
                    content=res.error,
                    tool_call_id=call.id,
                    function=call.function,
                    error=ToolCallError("unknown", res.error),
                )
            )
        else:
            messages.append(
                ChatMessageTool(content=_json.dumps(res.payload), tool_call_id=call.id, function=call.function)
            )
    return messages, None
