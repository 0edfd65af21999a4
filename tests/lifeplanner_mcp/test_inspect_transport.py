"""An Inspect eval reaches the tools through MCP (`mcp_agent_tools`) with the same transcript as
in process (`agent_tools`): the tools offered to the model, every message (tool results, tool
errors, schema-rejected calls) and the tool log in the sample store."""

from __future__ import annotations

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, solver, use_tools
from inspect_ai.tool import mcp_connection

from geoeval.suites.lifeplanner.tools.arguments import TOOL_LOG_KEY
from geoeval.suites.lifeplanner.tools.mcp_server import http_server, mcp_agent_tools
from geoeval.suites.lifeplanner.tools.toolsets import agent_tools, data_engine_tools

MODEL = "mockllm/model"


def scripted_outputs(ids, toolset):
    """One tool call per turn, then a final answer. Every output has usage set (mockllm would
    otherwise count tokens with a tokenizer it cannot download offline)."""
    p0, p1, p2 = ids["places"]
    calls = [
        ("place_search", {"query_name": ids["first_word"]}),
        ("place_detail", {"place_id": "B0NOTAPLACE"}),  # tool error
        ("place_search", {"query_name": "a", "min_rating": "high"}),  # rejected by Inspect's schema check
        ("routing", {"start_place_id": p0, "end_place_id": p2, "vehicle": "walking"}),
        ("nearby_search", {"center": {"start": p0, "end": p1, "vehicle": "walking"}, "radius_meters": 150}),
        ("search_notes", {"keyword": "a"}),  # truncated
        ("note_detail", {"note_id": ids["note_id"]}),
    ]
    if toolset == "data_engine":
        calls += [
            ("sample_place", {"num_samples": 2}),
            ("multi_stop_routing", {"stop_ids": [p0, p1, p2], "start_id": p0}),
            ("search_notes", {"keyword": "a"}),
        ]  # full posts: longer than Inspect's default cut
    outputs = [
        ModelOutput.for_tool_call(MODEL, name, args, tool_call_id=f"call_{k}") for k, (name, args) in enumerate(calls)
    ]
    outputs.append(ModelOutput.from_content(MODEL, "done"))
    for o in outputs:
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return outputs


@solver
def connected_tool_loop(tools):
    """use_tools + generate, holding one MCP connection for the sample (a no-op in process)."""

    async def solve(state, generate):
        async with mcp_connection(tools):
            state = await use_tools(tools)(state, generate)
            return await generate(state)

    return solve


def run_eval(tools, outputs, log_dir, *, connected=True):
    plan = [connected_tool_loop(tools)] if connected else [use_tools(tools), generate()]
    task = Task(dataset=[Sample(input="Plan my afternoon.", id="s1")], solver=plan)
    model = get_model(MODEL, custom_outputs=list(outputs), memoize=False)
    [log] = eval(task, model=model, log_dir=str(log_dir), display="none", log_samples=True)
    assert log.status == "success", log.error
    return log.samples[0]


def transcript(sample):
    messages = []
    for m in sample.messages:
        item = {"role": m.role, "text": m.text}
        if m.role == "assistant":
            item["calls"] = [(c.function, c.arguments) for c in (m.tool_calls or [])]
        if m.role == "tool":
            item["function"] = m.function
            item["error"] = (m.error.type, m.error.message) if m.error else None
        messages.append(item)
    model_events = [e for e in sample.events if e.event == "model"]
    offered = [[t.model_dump() for t in e.tools] for e in model_events]
    return {"messages": messages, "offered": offered, "tool_log": sample.store.get(TOOL_LOG_KEY)}


def assert_meaningful(t, toolset):
    errors = [m["error"][0] for m in t["messages"] if m["role"] == "tool" and m["error"]]
    assert errors == ["unknown", "parsing"]  # the tool error and the schema rejection
    classes = [c["failure_class"] for c in t["tool_log"]]
    assert {"ok", "parameter_error", "truncated"} <= set(classes)
    assert len(t["tool_log"]) == (9 if toolset == "data_engine" else 6)
    if toolset == "data_engine":  # the data engine reads whole results (max_output=0), also over MCP
        longest = max(len(m["text"]) for m in t["messages"] if m["role"] == "tool")
        assert longest > 16 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("toolset", ["standard", "data_engine"])
def test_stdio_transport_gives_the_in_process_transcript(city_path, city_ids, tmp_path, toolset):
    inproc_tools = agent_tools(city_path) if toolset == "standard" else data_engine_tools(city_path)
    inproc = transcript(run_eval(inproc_tools, scripted_outputs(city_ids, toolset), tmp_path / "inproc"))
    assert_meaningful(inproc, toolset)
    over_mcp = transcript(
        run_eval(
            mcp_agent_tools(city_path, "stdio", toolset=toolset), scripted_outputs(city_ids, toolset), tmp_path / "mcp"
        )
    )
    assert over_mcp == inproc


@pytest.mark.slow
def test_http_transport_gives_the_in_process_transcript(city_path, city_ids, tmp_path):
    # without mcp_connection: Inspect opens an HTTP session per call (cheap over HTTP)
    inproc = transcript(
        run_eval(agent_tools(city_path), scripted_outputs(city_ids, "standard"), tmp_path / "inproc", connected=False)
    )
    with http_server(city_path) as url:
        over_mcp = transcript(
            run_eval(
                mcp_agent_tools(city_path, "http", url=url),
                scripted_outputs(city_ids, "standard"),
                tmp_path / "mcp",
                connected=False,
            )
        )
    assert over_mcp == inproc


def test_mcp_agent_tools_rejects_bad_configuration(city_path, tmp_path):
    with pytest.raises(ValueError, match="needs the url"):
        mcp_agent_tools(city_path, "http")
    with pytest.raises(ValueError, match="transport must be one of"):
        mcp_agent_tools(city_path, "grpc")
    with pytest.raises(ValueError, match="toolset must be one of"):
        mcp_agent_tools(city_path, "stdio", toolset="admin")
    with pytest.raises(FileNotFoundError):
        mcp_agent_tools(tmp_path / "missing.duckdb", "stdio")
