"""Offline MapSatisfy agents (policies of the `geoeval/*` model provider).

- `geoeval/oracle`: calls the expected tools with the required parameters (the case's recorded
  calls, `suite.oracle_plan`), asks no question, and answers with the reference answer
  (`generate.reference.reference_answer`): the fitting entity, the route, and one sentence per implicit
  rubric, every fact copied from the served responses. It reads the current sample, which is its
  purpose; on generated instances it scores ECR = IISR = TS = IFS = 1 under the `rules` judge (on
  the authors' demo, where some recordings are missing, what the responses allow).
- `geoeval/clarify_baseline`: sees only the messages and tools. When the query leaves out a time,
  a travel mode or a preference, it asks one clarification question per missing slot (one turn
  each), then searches the place the query names in the context's city (`search_poi`) and, when
  that finds nothing, the query's places around the user (`search_around_poi`, the tool's default
  5 km), and answers with what came back, quoted: the efficiency penalty of asking instead of
  fetching evidence (section 4.3), with only the evidence one search gives (no route, no price,
  no booking), so it meets few factors.
"""

from __future__ import annotations

import json
import re
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.agents.providers import message_text
from geoeval.suites.mapsatisfy.generate.reference import reference_answer
from geoeval.suites.mapsatisfy.user.simulator import SLOT_WORDS, is_request

_SNIPPET_SPLIT = re.compile(r"[;；\"\[\]{}\n,，|]")
_TRUNCATED = re.compile(r"<START_TOOL_OUTPUT>(.*?)(?:<END_TOOL_OUTPUT>|$)", re.DOTALL)
_MAX_SNIPPETS_PER_RESPONSE = 6
_NO_RESULT = "已为您查询，但工具没有返回可用的结果。"


def _served(content: str) -> bool:
    """False for the sandbox's typed no_record and error responses, which carry no facts."""
    try:
        obj = json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return bool(content.strip())
    return not (isinstance(obj, dict) and obj.get("status") in ("no_record", "error"))


def _tool_output(content: str) -> str:
    """The tool's own text: Inspect wraps a truncated output in a notice and markers."""
    found = _TRUNCATED.search(content)
    return found.group(1) if found else content


def _leaves(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [leaf for v in obj.values() for leaf in _leaves(v)]
    if isinstance(obj, list):
        return [leaf for v in obj for leaf in _leaves(v)]
    if isinstance(obj, (str, int, float)) and not isinstance(obj, bool):
        return [str(obj)]
    return []


def _safe(piece: str) -> bool:
    return 2 <= len(piece) <= 60 and not any(q in piece for q in '「」“”"') and not is_request(piece)


def snippets(content: str) -> list[str]:
    """Short verbatim pieces of a tool response, safe to quote: the values of a JSON response (not
    its keys), or the pieces of a text one, each occurring in the response as written, with no
    quote marks and nothing that reads as a question to the user."""
    text = _tool_output(content)
    try:
        pieces = _leaves(json.loads(text))
    except (json.JSONDecodeError, TypeError):
        pieces = []
    pieces = [p for value in pieces for p in ([value] if _safe(value) else _SNIPPET_SPLIT.split(value))]
    if not pieces:
        pieces = _SNIPPET_SPLIT.split(text[:2000])
    out = []
    for piece in pieces:
        piece = piece.strip()
        if _safe(piece) and piece in text and piece not in out:
            out.append(piece)
        if len(out) >= _MAX_SNIPPETS_PER_RESPONSE:
            break
    return out


def answer_from_tools(messages: list[ChatMessage]) -> str:
    """A final answer made only of quoted facts from the served tool responses."""
    facts: list[str] = []
    for m in messages:
        if getattr(m, "role", "") == "tool" and getattr(m, "error", None) is None and _served(message_text(m)):
            facts += [s for s in snippets(message_text(m)) if s not in facts]
    if not facts:
        return _NO_RESULT
    return "根据查询结果：" + "；".join(f"「{f}」" for f in facts) + "。"


def _tool_calls_made(messages: list[ChatMessage]) -> int:
    return sum(len(getattr(m, "tool_calls", None) or []) for m in messages if getattr(m, "role", "") == "assistant")


def served_calls(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The dialogue's tool responses as the judges' call records (name, arguments, content,
    match_type): a typed no_record or error reply is `no_record`, any other reply served."""
    requested = {c.id: c for m in messages for c in (getattr(m, "tool_calls", None) or [])}
    calls = []
    for m in messages:
        if getattr(m, "role", "") != "tool":
            continue
        content = _tool_output(message_text(m))
        call = requested.get(getattr(m, "tool_call_id", None) or "")
        ok = getattr(m, "error", None) is None and _served(content)
        calls.append(
            {
                "name": getattr(m, "function", "") or "",
                "arguments": dict(call.arguments) if call else {},
                "content": content,
                "match_type": "exact" if ok else "no_record",
                "error": None,
            }
        )
    return calls


def _oracle(messages: list[ChatMessage], tools: list[ToolInfo], ctx: dict[str, Any]) -> PolicyReply:
    from geoeval.api import sample_state
    from geoeval.suites.mapsatisfy.schema import parse_instance

    state = sample_state()
    metadata = (state.metadata or {}) if state is not None else {}
    plan = list(metadata.get("oracle_plan", []))
    offered = {t.name for t in tools}
    plan = [step for step in plan if step["tool"] in offered]
    done = _tool_calls_made(messages)
    if done < len(plan):
        step = plan[done]
        return PolicyReply(tool=step["tool"], arguments=dict(step["arguments"]))
    calls = served_calls(messages)
    if "instance" not in metadata or not any(c["match_type"] == "exact" for c in calls):
        return PolicyReply(content=answer_from_tools(messages))  # nothing was served: the no-result line
    return PolicyReply(content=reference_answer(parse_instance(metadata["instance"]), calls))


# One question per slot, each naming only its own slot (the rule-based user answers the slots a
# question names).
CLARIFY_QUESTIONS = {
    "time": "请问您打算什么时间出发？",
    "travel_mode": "请问您的出行方式是？",
    "preference": "请问您有什么偏好吗？",
}


def missing_slots(query: str) -> list[str]:
    """The slots of `CLARIFY_QUESTIONS` the query does not mention (its underspecification)."""
    lowered = query.lower()
    return [slot for slot in CLARIFY_QUESTIONS if not any(w in lowered for w in SLOT_WORDS[slot])]


def _context_value(messages: list[ChatMessage], key: str) -> str:
    """A string of the context JSON in the system prompt ("" when it has none)."""
    for m in messages:
        if getattr(m, "role", "") == "system":
            found = re.search(rf'"{key}"\s*:\s*"([^"]*)"', message_text(m))
            if found:
                return found.group(1)
    return ""


def _context_city(messages: list[ChatMessage]) -> str:
    return _context_value(messages, "city").split("/")[-1]


def _context_location(messages: list[ChatMessage]) -> tuple[float, float] | None:
    """The user's (lon, lat) from the context's `user_current_loc` ("lon,lat")."""
    try:
        lon, lat = (float(v) for v in _context_value(messages, "user_current_loc").split(","))
    except ValueError:
        return None
    return lon, lat


#: The searches the baseline tries in turn until one is served: the place the query names in the
#: user's city, then the query's places around the user (the tool's default radius).
SEARCH_RADIUS_M = 5000


def _next_search(messages: list[ChatMessage], tools: list[ToolInfo], query: str) -> PolicyReply | None:
    offered = {t.name for t in tools}
    called = [c.function for m in messages for c in (getattr(m, "tool_calls", None) or [])]
    served = [m for m in messages if getattr(m, "role", "") == "tool" and _served(message_text(m))]
    if served:
        return None  # evidence in hand: answer
    if "search_poi" in offered and "search_poi" not in called:
        # cur_adcode takes a city's name as well as its code (the catalogue); no city_limit: the
        # tool's default, as the recorded calls have it
        return PolicyReply(tool="search_poi", arguments={"query": query, "cur_adcode": _context_city(messages)})
    location = _context_location(messages)
    if "search_around_poi" in offered and "search_around_poi" not in called and location is not None:
        return PolicyReply(
            tool="search_around_poi",
            arguments={"query": query, "x": location[0], "y": location[1], "range": SEARCH_RADIUS_M},
        )
    return None


def _clarify_baseline(messages: list[ChatMessage], tools: list[ToolInfo], ctx: dict[str, Any]) -> PolicyReply:
    users = [m for m in messages if getattr(m, "role", "") == "user"]
    query = message_text(users[0]) if users else ""
    asked = [m for m in messages if getattr(m, "role", "") == "assistant" and not getattr(m, "tool_calls", None)]
    missing = missing_slots(query)
    if len(asked) < len(missing):
        return PolicyReply(content=CLARIFY_QUESTIONS[missing[len(asked)]])
    search = _next_search(messages, tools, query)
    return search if search is not None else PolicyReply(content=answer_from_tools(messages))


register_policy("oracle", "mapsatisfy", _oracle)
register_policy("clarify_baseline", "mapsatisfy", _clarify_baseline)
