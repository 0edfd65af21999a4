"""LifePlanner's offline agents, as policies of the `geoeval` model provider.

- `oracle` replays the case's reference tool path τ* through the real tools, one call per turn,
  then submits the reference answer: the self-check of the whole pipeline (it must pass every
  case: PR = 1, and IG = TE = 1).
- `heuristic_baseline` (`baseline/agent.py`) sees only the messages and the tools, like a model.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL


def calls_made(messages: list[ChatMessage]) -> list[Any]:
    """Every tool call the agent has made so far, in order."""
    return [
        c for m in messages if getattr(m, "role", "") == "assistant" for c in (getattr(m, "tool_calls", None) or [])
    ]


def lifeplanner_oracle(messages: list[ChatMessage], tools: list[ToolInfo], args: dict[str, Any]) -> PolicyReply:
    from geoeval.api import sample_state

    state = sample_state()
    case = (state.metadata or {}).get("case") if state is not None else None
    if case is None:
        return PolicyReply(content="")
    made = calls_made(messages)
    if any(c.function == SUBMIT_TOOL for c in made):
        return PolicyReply(content="Submitted.")
    tau = case["tau_star"]
    if len(made) < len(tau):
        step = tau[len(made)]
        return PolicyReply(tool=step["tool"], arguments=dict(step["arguments"]))
    return PolicyReply(tool=SUBMIT_TOOL, arguments={"result": case["answer"]})


register_policy("oracle", "lifeplanner", lifeplanner_oracle)

from geoeval.suites.lifeplanner.baseline import agent as _baseline  # noqa: E402,F401  registers heuristic_baseline
