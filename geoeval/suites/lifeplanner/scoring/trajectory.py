"""The tool-use trajectory τ of one sample, read from its chat messages: the calls, what each one
let the agent observe, the routing legs it saw, each call's failure class (Figure 6) and the
submitted answer.

Reading the messages (rather than an in-process log) makes the trajectory the same whatever
transport served the tools. What a call lets the agent observe is named by identities (section
3.2, IG): `place:<id>` (the place appeared), `place:<id>:<field>` (one of its attributes was
shown), `note:<id>` (the note's full text was read), `note_listed:<id>` (it appeared in a search
list), and `route:<a>|<b>|<vehicle>|<mode>` (a routing leg between two places, either direction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SUBMIT_TOOL = "submit_answer"


def route_item(a: str, b: str, vehicle: str, mode: str) -> str:
    x, y = sorted((a, b))
    return f"route:{x}|{y}|{vehicle}|{mode}"


def observed_items(tool: str, payload: Any) -> set[str]:
    """Identities a successful tool result shows (see the module docstring)."""
    out: set[str] = set()
    if not isinstance(payload, dict):
        return out

    def place(rec: Any) -> None:
        if isinstance(rec, dict) and isinstance(rec.get("place_id"), str):
            pid = rec["place_id"]
            out.add(f"place:{pid}")
            for k in rec:
                if k not in ("place_id", "distance_m"):
                    out.add(f"place:{pid}:{k}")

    def note(rec: Any) -> None:
        if isinstance(rec, dict) and isinstance(rec.get("note_id"), str):
            nid = rec["note_id"]
            out.add(f"note_listed:{nid}")
            if "desc" in rec:
                out.add(f"note:{nid}")

    if tool in ("place_search", "nearby_search"):
        for rec in payload.get("results") or []:
            place(rec)
    elif tool == "place_detail":
        place(payload)
    elif tool == "sample_place":
        for rec in payload.get("pois") or []:
            place(rec)
    elif tool == "routing":
        s, e = payload.get("start") or {}, payload.get("end") or {}
        if isinstance(s, dict) and isinstance(e, dict) and s.get("place_id") and e.get("place_id"):
            out.add(f"place:{s['place_id']}")
            out.add(f"place:{e['place_id']}")
            if payload.get("total_distance_m") is not None:
                out.add(route_item(s["place_id"], e["place_id"], str(payload.get("vehicle")), str(payload.get("mode"))))
    elif tool == "multi_stop_routing":
        for leg in payload.get("legs") or []:
            out.add(route_item(leg["from"], leg["to"], str(payload.get("vehicle")), str(payload.get("mode"))))
        for stop in payload.get("stops") or []:
            out.add(f"place:{stop['place_id']}")
    elif tool == "search_notes":
        for rec in payload.get("results") or []:
            note(rec)
    elif tool == "note_detail":
        note(payload)
    return out


def route_legs(tool: str, payload: Any) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    """(from, to, vehicle, mode) -> (distance_m, time_s) of every leg a result reports."""
    legs: dict[tuple[str, str, str, str], tuple[float, float]] = {}
    if not isinstance(payload, dict):
        return legs
    if tool == "routing" and payload.get("total_distance_m") is not None:
        s, e = payload.get("start") or {}, payload.get("end") or {}
        if s.get("place_id") and e.get("place_id"):
            legs[(s["place_id"], e["place_id"], str(payload.get("vehicle")), str(payload.get("mode")))] = (
                float(payload["total_distance_m"]),
                float(payload["total_time_s"]),
            )
    elif tool == "multi_stop_routing":
        for leg in payload.get("legs") or []:
            legs[(leg["from"], leg["to"], str(payload.get("vehicle")), str(payload.get("mode")))] = (
                float(leg["distance_m"]),
                float(leg["time_s"]),
            )
    return legs


def failure_class_of(payload: Any) -> str:
    """Figure 6's class of a call that ran, read from what it returned (the tools put it in the
    payload: `total_matched`/`returned`, or a routing `error`)."""
    if isinstance(payload, dict):
        if "total_matched" in payload:
            total, returned = payload.get("total_matched") or 0, payload.get("returned") or 0
            if total == 0:
                return "empty"
            if total > returned:
                return "truncated"
            return "ok"
        if "error" in payload:
            return "empty"  # a routing call that found no route ran, but found nothing
    return "ok"


@dataclass
class ToolCallRecord:
    tool: str
    arguments: dict[str, Any]
    failure_class: str
    payload: Any = None
    error: str | None = None


@dataclass
class Trajectory:
    calls: list[ToolCallRecord] = field(default_factory=list)  # every call except submit_answer
    submitted: Any = None
    submit_calls: int = 0
    #: the text of the last assistant message, when the sample ends with one (no tool call after it)
    final_text: str | None = None
    refused: int = 0  # calls refused because the tool budget was spent
    observed: set[str] = field(default_factory=set)
    legs: dict[tuple[str, str, str, str], tuple[float, float]] = field(default_factory=dict)

    @property
    def n_calls(self) -> int:
        return len(self.calls)

    def failure_counts(self) -> dict[str, int]:
        counts = {"ok": 0, "parameter_error": 0, "truncated": 0, "empty": 0}
        for c in self.calls:
            counts[c.failure_class] = counts.get(c.failure_class, 0) + 1
        return counts

    def leg(self, a: str, b: str, vehicle: str, mode: str) -> tuple[float, float] | None:
        """A leg the agent saw, in either direction (the road graph is undirected)."""
        return self.legs.get((a, b, vehicle, mode)) or self.legs.get((b, a, vehicle, mode))

    def submission(self, protocol: str, answer_channel: str = "tool") -> tuple[Any, bool]:
        """(the answer, whether it is the last reply): the `submit_answer` call's result; without
        one, the last reply where it was asked for (the text channel) or where the protocol reads
        what a model says however it is delivered (robust)."""
        asked_or_read = protocol == "robust" or answer_channel == "text"
        if self.submitted is None and self.final_text is not None and asked_or_read:
            return self.final_text, True
        return self.submitted, False

    def observed_text(self) -> str:
        """Everything the tools returned, as text (for the judges' evidence)."""
        return "\n".join(json.dumps(c.payload, ensure_ascii=False) for c in self.calls if c.payload is not None)


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(c, "text", "") for c in content or [] if getattr(c, "type", "") == "text")


def trajectory_from_messages(messages: list[Any]) -> Trajectory:
    """The trajectory of a finished sample. A call Inspect refused before it ran (arguments that
    fail the tool's JSON schema: error type `parsing`) or that raised a tool error counts as a
    parameter error; a call whose result cannot be read as JSON counts by what it was."""
    traj = Trajectory()
    # keyed by call id; a tool message without one (None) finds no call
    pending: dict[str | None, tuple[str, dict[str, Any]]] = {}
    order: list[str] = []
    for msg in messages:
        role = getattr(msg, "role", "")
        if role == "assistant":
            text = _message_text(getattr(msg, "content", "")).strip()
            traj.final_text = text if text and not getattr(msg, "tool_calls", None) else None
            for call in getattr(msg, "tool_calls", None) or []:
                pending[call.id] = (call.function, dict(call.arguments or {}))
                order.append(call.id)
        elif role == "tool":
            call_id = getattr(msg, "tool_call_id", None)
            tool, args = pending.pop(call_id, (getattr(msg, "function", "") or "", {}))
            error = getattr(msg, "error", None)
            if tool == SUBMIT_TOOL:
                traj.submit_calls += 1
                if error is None and "result" in args:
                    traj.submitted = args["result"]
                continue
            if error is not None and getattr(error, "type", "") == "limit":
                traj.refused += 1  # past the tool budget: not run, not part of τ
                continue
            if error is not None:
                traj.calls.append(
                    ToolCallRecord(tool, args, "parameter_error", None, getattr(error, "message", str(error)))
                )
                continue
            text = _message_text(getattr(msg, "content", ""))
            try:
                payload = json.loads(text)
            except (json.JSONDecodeError, TypeError):
                payload = None  # truncated or not JSON: the call ran, its content is unreadable
            cls = failure_class_of(payload)
            traj.calls.append(ToolCallRecord(tool, args, cls, payload, None))
            traj.observed |= observed_items(tool, payload)
            traj.legs.update(route_legs(tool, payload))
    return traj
