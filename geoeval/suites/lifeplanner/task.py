"""The LifePlanner Inspect task and its solver.

The solver is the paper's scaffold (appendix B.3): the model sees Figure 9's prompt and the
question, the standard toolset of Table 7 plus `submit_answer`, and may call tools until it
submits, stops calling tools, or spends its budget (30 calls by default). `submit_answer` does
not count against the budget; a call past the budget is not run and the model is told to submit.
The submitted `result` is the answer; the trajectory (every call and what it returned) stays in
the messages, where the scorer reads it.
"""

from __future__ import annotations

import json
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, execute_tools, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCallError, ToolDef

from geoeval.judges.ensemble import JudgeEnsemble
from geoeval.suites.lifeplanner.prompts import SUBMIT_DESCRIPTION, SUBMIT_PARAMETER
from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL

ANSWER_KEY = "lifeplanner_answer"
# turns the model may still take after its budget is spent, to submit
_GRACE_TURNS = 2


def submit_answer_tool() -> Any:
    """`submit_answer(result)` (Table 7): records the final answer in the sample store."""

    async def submit_answer(result: dict[str, Any] | list[Any] | str) -> str:
        from inspect_ai.util import store

        store().set(ANSWER_KEY, result)
        return "Answer submitted."

    return ToolDef(
        submit_answer, name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, parameters={"result": SUBMIT_PARAMETER}
    ).as_tool()


def budget_message(budget: int) -> str:
    return (
        f"Tool budget exhausted: {budget} tool calls were already made. This call was not run. "
        f"Call {SUBMIT_TOOL}(result=...) now with your final answer."
    )


@solver
def lifeplanner_agent(
    db_path: str, tool_budget: int = 30, transport: str = "inproc", answer_channel: str = "tool"
) -> Solver:
    """Figure 9's agent loop over the standard toolset with a tool-call budget. `transport="mcp"`
    reaches the tools through the suite's MCP server over stdio, one server process per sample
    (the connection is held for the whole loop; without it Inspect would start one per call).
    `answer_channel="text"` offers no `submit_answer`: the last reply is the answer."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from inspect_ai.tool import mcp_connection

        if transport == "mcp":
            from geoeval.suites.lifeplanner.tools.mcp_server import mcp_agent_tools

            sources = mcp_agent_tools(db_path, "stdio")
        elif transport == "inproc":
            from geoeval.suites.lifeplanner.tools.toolsets import agent_tools

            sources = agent_tools(db_path)
        else:
            raise ValueError(f"transport must be inproc or mcp, got {transport!r}")
        # mcp_connection is a no-op for in-process tools
        async with mcp_connection(sources):
            return await _agent_loop(state, sources, tool_budget, submit=answer_channel == "tool")

    return solve


async def _resolve_tools(sources: list[Any]) -> list[Any]:
    """Tools from a list of tools and tool sources (an MCP source lists its server's tools)."""
    from inspect_ai.tool import ToolSource

    tools: list[Any] = []
    for source in sources:
        tools.extend(await source.tools() if isinstance(source, ToolSource) else [source])
    return tools


async def _agent_loop(state: TaskState, sources: list[Any], tool_budget: int, submit: bool = True) -> TaskState:
    tools = [*await _resolve_tools(sources), *([submit_answer_tool()] if submit else [])]
    state.tools = tools
    model = get_model()
    calls = 0
    over_budget_turns = 0
    while not state.completed:
        output = await model.generate(state.messages, tools)
        state.output = output
        message = output.message
        state.messages.append(message)
        tool_calls = list(message.tool_calls or [])
        if not tool_calls:
            break  # the model answered in text: read as its answer where the protocol reads text
        allowed, refused = [], []
        for call in tool_calls:
            if call.function == SUBMIT_TOOL or calls < tool_budget:
                allowed.append(call)
                calls += call.function != SUBMIT_TOOL
            else:
                refused.append(call)
        if allowed:
            # run only the calls within budget: execute_tools reads the last assistant message
            runnable = message.model_copy(update={"tool_calls": allowed})
            result = await execute_tools([*state.messages[:-1], runnable], tools)
            state.messages.extend(result.messages)
        for call in refused:
            state.messages.append(
                ChatMessageTool(
                    content=budget_message(tool_budget),
                    tool_call_id=call.id,
                    function=call.function,
                    error=ToolCallError("limit", budget_message(tool_budget)),
                )
            )
        submitted = any(c.function == SUBMIT_TOOL for c in allowed) and _submitted(state)
        if submitted:
            break
        if refused:
            over_budget_turns += 1
            if over_budget_turns >= _GRACE_TURNS:
                break
    answer = _stored_answer(state)
    if answer is not None:
        # the run's final output is the submitted answer (what logs show as the completion)
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        final = ModelOutput.from_content(model=str(state.model), content=text)
        final.usage = state.output.usage
        state.output = final
    return state


def _stored_answer(state: TaskState) -> Any:
    return state.store.get(ANSWER_KEY)


def _submitted(state: TaskState) -> bool:
    return state.store.get(ANSWER_KEY) is not None


def _evaluated_tokens(state: TaskState) -> dict[str, int]:
    """Input and output tokens of the evaluated model over the whole trajectory (read before the
    judges run; they are other models)."""
    from geoeval.api import sample_model_usage

    usage = sample_model_usage() or {}
    own = usage.get(str(state.model))
    picked = [own] if own is not None else list(usage.values())
    return {"input": sum(u.input_tokens for u in picked), "output": sum(u.output_tokens for u in picked)}


@solver
def lifeplanner_judging(db_path: str, judge: Any, alpha: float = 0.9, protocol: str = "robust") -> Solver:
    """The last step: read the finished trajectory and answer under both answer protocols, run
    the judge ensemble (SC, RP) on each reading and record the outcome in `metadata["lifeplanner"]`
    (the run's `protocol`) and `metadata["lifeplanner_by_protocol"]` for the metric functions,
    which score both. Judges are model calls, which the core scorer's synchronous metric
    functions cannot make."""
    from geoeval.api import DETAILS_KEY, SAMPLE_ERROR_KEY
    from geoeval.suites.lifeplanner.scorers import evaluate_both, record_metadata
    from geoeval.suites.lifeplanner.scoring.judging import rules_judge

    ensemble = JudgeEnsemble(judge, rules=rules_judge)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        records = await evaluate_both(
            state.metadata["case"], state.messages, db_path, ensemble, alpha=alpha, tokens=_evaluated_tokens(state)
        )
        record = records[protocol]
        state.metadata.update(record_metadata(records, protocol))
        details: dict[str, Any] = {"judges": record.judge_votes, "failure_classes": record.failure_classes}
        if records["robust"].reading:  # the rules that explain a disagreement, whatever the run's protocol
            details["reading"] = records["robust"].reading
        state.metadata[DETAILS_KEY] = details
        if record.judge_error:
            state.metadata[SAMPLE_ERROR_KEY] = record.judge_error
        return state

    return solve


def make_task(
    suite_cfg: Any,
    env: Any,
    samples: list[Sample],
    metric_names: list[str],
    judge: Any,
    protocol: str = "robust",
) -> Task:
    from geoeval.api import geoeval_scorer
    from geoeval.suites.lifeplanner.scorers import extract_answer

    return Task(
        name="lifeplanner",
        dataset=MemoryDataset(samples, name="lifeplanner"),
        solver=[
            lifeplanner_agent(env.db_path, suite_cfg.tool_budget, suite_cfg.transport, suite_cfg.answer_channel),
            lifeplanner_judging(env.db_path, judge, suite_cfg.alpha, protocol),
        ],
        scorer=geoeval_scorer(list(metric_names), extract_answer, protocol=protocol),
        metadata={"suite": "lifeplanner"},
    )


@task
def lifeplanner(
    n_cases: int = 22,
    tasks: str | list[str] = "place,nearby,routing,trip",
    levels: str | list[str] = "l0,l1,l2",
    n_places: int = 600,
    n_notes: int = 5000,
    seed: int = 0,
    tool_budget: int = 30,
    work_dir: str = "results/work",
) -> Task:
    """LifePlanner on a seeded synthetic city, without geoeval's CLI
    (`inspect eval geoeval/lifeplanner --model geoeval/oracle`)."""
    from geoeval.api import get_suite, validate_config

    def split(v: str | list[str]) -> list[str]:
        return v.split(",") if isinstance(v, str) else list(v)

    spec = validate_config(
        {
            "seed": seed,
            "work_dir": work_dir,
            "env": {"name": "lifeplanner_synthetic", "n_places": n_places, "n_notes": n_notes},
            "suite": {
                "name": "lifeplanner",
                "n_cases": n_cases,
                "tasks": split(tasks),
                "levels": split(levels),
                "tool_budget": tool_budget,
            },
            "model": {"name": "geoeval/oracle"},
            "judge": {"models": ["rules"]},
            "metrics": {
                "name": "lifeplanner",
                "metrics": [
                    "pr",
                    "a",
                    "piou",
                    "rd_distance",
                    "rd_time",
                    "oc",
                    "sc",
                    "ig",
                    "te",
                    "rp",
                    "input_tokens",
                    "output_tokens",
                ],
            },
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }
    )
    suite = get_suite("lifeplanner")
    env = suite.build_env(spec)
    return make_task(
        spec.suite, env, suite.build_samples(spec, env), spec.metrics.metrics, spec.judge, spec.scoring.protocol
    )
