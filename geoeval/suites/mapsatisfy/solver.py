"""The MapSatisfy dialogue as an Inspect solver.

One sample is one dialogue: the business agent (the evaluated model, C.2 prompt as the system
message) gets the root query, may call the sandbox's map tools any number of times per turn, and
each reply without tool calls is an assistant turn the simulated user answers. The dialogue ends
when the user's reply carries `[Finish Conversation]` or after `max_turns` assistant turns (or
`max_tool_calls` tool calls: a runaway agent must not loop for ever).

Recorded in `state.metadata["mapsatisfy"]` (the scorer's metric functions read it there):
- `answer`: the last assistant turn; `turns`: the assistant turns (S_actual of Eff);
- `tool_calls`: every call with its arguments, the response, its match type and error;
- `dialogue`: the visible (role, text) turns; `given`: what the agent was given;
- `tokens`: the agent's total tokens (CEI), the user simulator and judges not counted;
- `verdicts`: the judges' verdicts (`judging.verdicts.Verdicts.to_record`).
The full transcript, tool messages included, stays in `state.messages`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from inspect_ai.model import ChatMessageTool, ChatMessageUser, execute_tools, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from geoeval.agents.providers import message_text
from geoeval.suites.mapsatisfy.grounding import CALL_DETAILS, VERDICT_DETAILS
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory
from geoeval.suites.mapsatisfy.submit import SUBMIT_REPLY, submit_reply_tool, submitted
from geoeval.suites.mapsatisfy.user.simulator import FINISH, LLMUser, RuleBasedUser, fill_user_prompt


def make_user(instance: Any, user_model: Any | None) -> Any:
    """The LLM simulator on `user_model` when given, otherwise the rule-based one."""
    if user_model is None:
        return RuleBasedUser(instance.query, instance.full_intent)
    persona = instance.user_profile.summary if instance.user_profile is not None else ""
    prompt = fill_user_prompt(
        instance.query,
        instance.full_intent,
        instance.context.time,
        instance.context.user_loc_name or instance.context.user_current_loc,
        persona,
    )
    return LLMUser(user_model, prompt)


def _user_role_model() -> Any | None:
    """The `user` model role of the running eval, if one is configured."""
    from inspect_ai.model import model_roles

    return model_roles().get("user")


@solver
def mapsatisfy_dialogue(
    env: Any,
    *,
    max_turns: int = 8,
    max_tool_calls: int = 40,
    judges: list[str] | None = None,
    votes: int = 3,
    temperature: float = 1.0,
    evidence_chars: int | None = None,
    protocol: str = "robust",
    metric_names: list[str] | None = None,
    cache: bool | str = False,
    answer_channel: str = "text",
) -> Solver:
    """`env`: the suite's environment handle (`suite.MapSatisfyEnv`), which opens the sandbox;
    `protocol`: the run's answer protocol (`scoring.protocol`), whose verdicts are the record's
    `verdicts`; the judges judge under both (`judge_into_record`). `cache`: Inspect's cache for
    model judges (`judge.cache`). `answer_channel="tool"`: each reply comes through
    `submit_reply(reply, recommended)` (`submit.py`), and the recommended names are recorded."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from geoeval.api import DETAILS_KEY, PROTOCOL_DISAGREEMENT_KEY, SAMPLE_ERROR_KEY
        from geoeval.suites.mapsatisfy.replay.inspect_adapter import inspect_tools
        from geoeval.suites.mapsatisfy.schema import parse_instance

        instance = parse_instance(state.metadata["instance"])
        sandbox = env.sandbox()
        responses: list[Any] = []
        tools = inspect_tools(
            sandbox, state.metadata.get("tools"), trace_id=instance.task_id, on_response=responses.append
        )
        if answer_channel == "tool":
            tools.append(submit_reply_tool())
        recommended: list[str] | None = None
        model = get_model()
        user = make_user(instance, _user_role_model())
        dialogue: list[tuple[str, str]] = [("user", instance.query)]
        given = [instance.query, json.dumps(instance.context.model_dump(mode="json"), ensure_ascii=False)]
        if state.metadata.get("setting") == "profile" and instance.user_profile is not None:
            given.append(json.dumps(instance.user_profile.model_dump(mode="json"), ensure_ascii=False))
        tokens = 0
        turns = 0
        answer = ""
        finished = False
        n_calls = 0
        while turns < max_turns and not finished:
            output = await model.generate(state.messages, tools)
            tokens += int(output.usage.total_tokens) if output.usage else 0
            message = output.message
            state.messages.append(message)
            state.output = output
            delivered = next((d for c in message.tool_calls or [] if (d := submitted(c)) is not None), None)
            if delivered is not None:  # the typed channel: the reply, and what it recommends
                state.messages.extend(
                    ChatMessageTool(content="Delivered to the user.", tool_call_id=c.id, function=c.function)
                    for c in message.tool_calls or []
                )
                answer, recommended = delivered
            elif message.tool_calls:
                n_calls += len(message.tool_calls)
                result = await execute_tools(state.messages, tools)
                state.messages.extend(result.messages)
                if n_calls >= max_tool_calls:
                    break
                continue
            turns += 1
            if delivered is None:
                answer = message_text(message)
            dialogue.append(("assistant", answer))
            reply = await user.reply(dialogue)
            dialogue.append(("user", reply))
            finished = FINISH in reply
            # the closing reply stays in the transcript for review; the agent is not asked again
            state.messages.append(ChatMessageUser(content=reply))
            if not finished:
                given.append(reply)
        calls = [
            {
                "name": r.tool,
                "arguments": r.arguments,
                "content": r.content,
                "match_type": r.match_type,
                "error": r.error,
                "score": r.score,
            }
            for r in responses
        ]
        # a call the sandbox never saw (Inspect rejected its arguments, or the tool raised) is still
        # a call of the trajectory: TS counts its name, but its arguments were refused, so it
        # carried no valid parameter (they are kept for review as `rejected_arguments`)
        requested = {c.id: c for m in state.messages for c in (getattr(m, "tool_calls", None) or [])}
        for m in state.messages:
            if isinstance(m, ChatMessageTool) and m.error is not None:
                call = requested.get(m.tool_call_id or "")
                calls.append(
                    {
                        "name": m.function or "",
                        "arguments": {},
                        "rejected_arguments": dict(call.arguments) if call else {},
                        "content": message_text(m),
                        "match_type": "no_record",
                        "error": m.error.message,
                        "score": None,
                    }
                )
        record = {
            "answer": answer,
            "turns": turns,
            "tool_calls": calls,
            "dialogue": dialogue,
            "given": given,
            "tokens": tokens,
            "finished": finished,
            "profile_in_prompt": state.metadata.get("setting") == "profile" and instance.user_profile is not None,
            **({"recommended": recommended} if recommended is not None else {}),
        }
        budget = {} if evidence_chars is None else {"evidence_chars": evidence_chars}
        settings = {"judges": judges or ["rules"], "votes": votes, "temperature": temperature, "cache": cache, **budget}
        verdicts = await judge_into_record(instance, record, settings, protocol)
        state.metadata["mapsatisfy"] = record
        state.metadata[DETAILS_KEY] = {
            "judges": verdicts.raw,  # every judge reply, kept with the sample
            # what the summary's notes read (grounding.py): the verdicts of each rubric line, and
            # how many calls the sandbox served
            VERDICT_DETAILS: {"explicit_met": verdicts.explicit_met, "implicit_satisfied": verdicts.implicit_satisfied},
            CALL_DETAILS: {"made": len(calls), "served": sum(1 for c in calls if c["match_type"] != "no_record")},
        }
        disagreement = protocol_disagreement_of(instance, record, protocol, metric_names)
        if disagreement:
            state.metadata[PROTOCOL_DISAGREEMENT_KEY] = disagreement
        if verdicts.all_failed():
            state.metadata[SAMPLE_ERROR_KEY] = "every judge failed on every rubric item: the case cannot be judged"
        return state

    return solve


async def judge_into_record(instance: Any, record: dict[str, Any], settings: dict[str, Any], protocol: str) -> Any:
    """Judge a dialogue record under both answer protocols (`judging.ensemble.judge_protocols`:
    the rules judge once per protocol, a model judge once) and keep the verdicts in it: `verdicts`
    under `protocol`, every protocol's under `scorers.VERDICTS_BY_PROTOCOL`. Returns the verdicts
    under `protocol`. The solver, `MapSatisfySuite.score_answers` and the meta-evaluation judge
    with this one function."""
    from geoeval.suites.mapsatisfy.judging.ensemble import judge_protocols
    from geoeval.suites.mapsatisfy.scorers import VERDICTS_BY_PROTOCOL

    both = await judge_protocols(instance, Trajectory.from_record(record), **settings)
    record["verdicts"] = both[protocol].to_record()
    record[VERDICTS_BY_PROTOCOL] = {p: v.to_record() for p, v in both.items()}
    return both[protocol]


def protocol_disagreement_of(
    instance: Any, record: dict[str, Any], protocol: str, metric_names: list[str] | None = None
) -> dict[str, dict[str, float]]:
    """{metric: {"robust": x, "paper": y}} for the metrics (of `metric_names`, None: all eight)
    that the two protocols' verdicts of a judged record score differently."""

    from geoeval.api import PROTOCOLS, protocol_disagreement
    from geoeval.suites.mapsatisfy.scorers import scores_from_record

    def floats(p: str) -> dict[str, float]:
        scores = scores_from_record(instance, record, p)
        names = metric_names if metric_names is not None else list(scores)
        return {m: math.nan if scores.get(m) is None else float(scores[m]) for m in names if m in scores}  # type: ignore[arg-type]

    other = PROTOCOLS[1] if protocol == PROTOCOLS[0] else PROTOCOLS[0]
    return protocol_disagreement(floats(protocol), floats(other), protocol)


def record_from_messages(instance: Any, answer: str, messages: list[dict[str, Any]] | None, setting: str) -> dict:
    """The dialogue record of an answer written outside a run (`MapSatisfySuite.score_answers`):
    `messages` are the trajectory as Inspect chat messages (dicts, validated with
    `inspect_ai.model.ChatMessage`); each tool message is a call, served unless it is an error or
    the sandbox's typed no_record reply (`agents.served_calls`); the user's replies after the
    query are what the agent was given too; the assistant turns without tool calls are S_actual.
    None: the answer alone, as if no tool had been called. The agent's tokens are not known (CEI
    is then undefined)."""
    from pydantic import TypeAdapter

    from geoeval.suites.mapsatisfy.agents import served_calls
    from geoeval.suites.mapsatisfy.meta_eval import given_of

    given = given_of(instance, setting)
    if messages is None:
        return {"answer": answer, "tool_calls": [], "given": given, "turns": 1, "tokens": 0}
    from inspect_ai.model import ChatMessage

    parsed = [TypeAdapter(ChatMessage).validate_python(m) for m in messages]
    replies = [message_text(m) for m in parsed if m.role == "user"][1:]
    delivered = [d for m in parsed if m.role == "assistant" for c in m.tool_calls or [] if (d := submitted(c))]
    turns = [m for m in parsed if m.role == "assistant" and not getattr(m, "tool_calls", None)]
    final = answer or (delivered[-1][0] if delivered else message_text(turns[-1]) if turns else "")
    return {
        "answer": final,
        "tool_calls": [c for c in served_calls(parsed) if c.get("name") != SUBMIT_REPLY],
        "given": given + replies,
        "turns": max(1, len(turns) + len(delivered)),
        "tokens": 0,
        **({"recommended": delivered[-1][1]} if delivered else {}),
    }
