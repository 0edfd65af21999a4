"""The MCP server serves the tools of lifeplanner/tools/ unchanged: same names, descriptions and parameter
schemas as the Inspect tools, and for each call the same text as the pure function (the error
message for a parameter error), over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import sys

import anyio
import pytest
from inspect_ai.tool import ToolDef

from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools import toolsets
from geoeval.suites.lifeplanner.tools.mcp_server import _repo_env, failure_class_of, http_server, server_command

from .conftest import data_engine_calls, standard_calls

CALL_TIMEOUT_S = 60  # a whole session (server start, list, every call) must finish within this

PURE = {
    "place_search": place_tools.place_search,
    "place_detail": place_tools.place_detail,
    "nearby_search": nearby_tools.nearby_search,
    "routing": routing_tools.routing,
    "search_notes": note_tools.search_notes,
    "note_detail": note_tools.note_detail,
    "sample_place": place_tools.sample_place,
    "multi_stop_routing": routing_tools.multi_stop_routing,
}
TAKES_TOOLSET = {"place_search", "nearby_search", "search_notes"}


def expected_results(city_path, toolset, calls):
    """What the pure functions return for `calls`, with the seed sample_place gets from a server."""
    city = city_handle.open_city(city_path)
    out, k = [], 0
    for name, args in calls:
        kwargs = dict(args)
        if name in TAKES_TOOLSET:
            kwargs["toolset"] = toolset
        if name == "sample_place":
            kwargs["seed"], k = k, k + 1
        out.append(PURE[name](city, **kwargs))
    return out


async def _session_run(client_cm, calls):
    from mcp.client.session import ClientSession

    async with client_cm as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            results = [await session.call_tool(name, args) for name, args in calls]
    return listed, results


def run_stdio(city_path, toolset, calls):
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = server_command(city_path, transport="stdio", toolset=toolset)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_repo_env())

    async def main():
        with anyio.fail_after(CALL_TIMEOUT_S):
            return await _session_run(stdio_client(params, errlog=sys.stderr), calls)

    return anyio.run(main)


def run_http(url, calls):
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        with anyio.fail_after(CALL_TIMEOUT_S):
            return await _session_run(streamable_http_client(url), calls)

    return anyio.run(main)


def assert_tools_match_inspect(listed, inspect_tools):
    expected = {d.name: d for d in (ToolDef(t) for t in inspect_tools)}
    assert [t.name for t in listed] == list(expected)
    for t in listed:
        d = expected[t.name]
        assert t.description == d.description
        assert t.input_schema == d.parameters.model_dump(exclude_none=True), t.name


def assert_results_match(results, expected, calls):
    seen = set()
    for (name, args), got, exp in zip(calls, results, expected, strict=True):
        text = "".join(c.text for c in got.content)
        where = f"{name}({json.dumps(args)})"
        seen.add(exp.failure_class)
        if exp.failure_class == "parameter_error":
            assert got.is_error, where
            assert text == exp.payload["error"], where
        else:
            assert not got.is_error, where
            assert text == exp.text(), where
            # the Inspect client over MCP classifies calls from the payload; it must agree with the tool
            assert failure_class_of(json.loads(text)) == exp.failure_class, where
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("toolset", ["standard", "data_engine"])
def test_stdio_serves_the_inspect_tools_with_identical_results(city_path, city_ids, toolset):
    calls = standard_calls(city_ids) if toolset == "standard" else data_engine_calls(city_ids)
    listed, results = run_stdio(city_path, toolset, calls)
    inspect_tools = toolsets.agent_tools(city_path) if toolset == "standard" else toolsets.data_engine_tools(city_path)
    assert_tools_match_inspect(listed, inspect_tools)
    seen = assert_results_match(results, expected_results(city_path, toolset, calls), calls)
    if toolset == "standard":  # the calls exercise every failure class of Figure 6
        assert seen == set(tool_arguments.FAILURE_CLASSES)


@pytest.mark.slow
def test_http_serves_identical_results(city_path, city_ids):
    calls = standard_calls(city_ids)
    with http_server(city_path, toolset="standard") as url:
        assert url.startswith("http://127.0.0.1:")
        listed, results = run_http(url, calls)
    assert_tools_match_inspect(listed, toolsets.agent_tools(city_path))
    assert assert_results_match(results, expected_results(city_path, "standard", calls), calls) == set(
        tool_arguments.FAILURE_CLASSES
    )


@pytest.mark.slow
def test_calls_outside_the_schema_get_a_clear_error(city_path, city_ids):
    """Clients other than Inspect may skip schema validation; the server answers, never crashes."""
    p0 = city_ids["places"][0]
    calls = [
        ("place_search", {"query_name": "cafe", "social_mem": ["quiet"]}),  # data-engine only
        ("routing", {"start_place_id": p0}),
        ("sample_place", {"num_samples": 2}),  # not a standard tool
        ("place_detail", {"place_id": p0}),
    ]  # and the session still works
    _, results = run_stdio(city_path, "standard", calls)
    texts = ["".join(c.text for c in r.content) for r in results]
    assert [r.is_error for r in results] == [True, True, True, False]
    assert texts[0].startswith("Unknown parameter(s) for place_search: social_mem.")
    assert texts[1] == "Missing required parameter(s) for routing: end_place_id."
    assert texts[2].startswith("Unknown tool 'sample_place'.")
    assert json.loads(texts[3])["place_id"] == p0


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({"total_matched": 0, "returned": 0, "results": []}, "empty"),
        ({"total_matched": 21, "returned": 20, "results": []}, "truncated"),
        ({"total_matched": 3, "returned": 3, "results": []}, "ok"),
        ({"error": "No walking route from A to B.", "total_distance_m": None}, "empty"),
        ({"place_id": "B0", "name": "A"}, "ok"),
    ],
)
def test_failure_class_of_payload(payload, expected):
    assert failure_class_of(payload) == expected
