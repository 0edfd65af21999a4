"""A test plugin that only the driver has (loaded through `GEOEVAL_PLUGINS=geoeval_probe_plugin`,
found through the driver's PYTHONPATH): the offline agent `geoeval/tool_prober` for MapTab.

- It really calls the `station_neighbors` tool, which reads the environment's DuckDB file, and
  answers the reference route only when the tool found the source station's neighbours (a wrong
  route otherwise). The oracle never calls a tool, so a MapTab run with tools would not notice a
  worker that cannot read the environment; with this agent such a shard scores 0 or errors.
- On a cluster it reaches the workers only if geoeval ships the modules named in
  `GEOEVAL_PLUGINS` (the workers' PYTHONPATH does not name this folder).
- With `model.args.trace_dir=<dir>` every reply appends one JSON line to `<dir>/<pid>.jsonl`:
  the sample, the event (`tool` or `answer`), the time, and the process's mount namespace, which
  tells the test which node (the head, or the second node in its own namespace) answered.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo

from geoeval.agents.policies import PolicyReply, answer_or_submit, register_policy

TOOL = "station_neighbors"
WRONG_ROUTE = "I cannot determine the route from the information given."


def mount_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/mnt")
    except OSError:
        return "unknown"


def _trace(args: dict[str, Any], sample_id: str, event: str) -> None:
    trace_dir = args.get("trace_dir")
    if not trace_dir:
        return
    line = json.dumps(
        {"sample": sample_id, "event": event, "t": time.time(), "pid": os.getpid(), "ns": mount_namespace()}
    )
    with open(Path(trace_dir) / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
        f.write(line + "\n")


def _found_neighbours(message: Any) -> bool:
    if getattr(message, "error", None) is not None:
        return False
    content = (
        message.content
        if isinstance(message.content, str)
        else "".join(getattr(c, "text", "") for c in message.content)
    )
    try:
        rows = json.loads(content)
    except ValueError:
        return False
    return isinstance(rows, list) and len(rows) > 0


def tool_prober(messages: list[ChatMessage], tools: list[ToolInfo], args: dict[str, Any]) -> PolicyReply:
    from inspect_ai.solver._task_state import sample_state

    state = sample_state()
    if state is None or not state.target.target:
        return PolicyReply(content="")
    sample_id = str(state.sample_id)
    replies = [m for m in messages if getattr(m, "role", "") == "tool" and getattr(m, "function", "") == TOOL]
    if not replies and any(t.name == TOOL for t in tools):
        _trace(args, sample_id, "tool")
        return PolicyReply(tool=TOOL, arguments={"station": str(state.metadata["source"])})
    if not any(getattr(m, "role", "") == "tool" and getattr(m, "function", "") == "submit" for m in messages):
        _trace(args, sample_id, "answer")
    answer = state.target.target[0] if replies and _found_neighbours(replies[-1]) else WRONG_ROUTE
    return answer_or_submit(answer, tools, messages)


register_policy("tool_prober", "maptab", tool_prober)
