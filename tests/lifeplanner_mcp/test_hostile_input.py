"""The MCP server replies to everything (issue 8, item 3): every hostile value at every parameter
of every tool gets the answer the in-process tool gives (a result, or its parameter error as an
MCP error result), and a message that cannot be read at all (not JSON, nested past any stack,
longer than 4 MiB, not UTF-8, not JSON-RPC) gets a JSON-RPC error carrying its id whenever the id
can be found, over stdio and over streamable HTTP, with the session still working afterwards.

The clients are raw (tests/lifeplanner_mcp/raw_client.py): the SDK's client cannot even encode a
lone surrogate, and a hostile client would not use it."""

from __future__ import annotations

import json

import pytest

from geoeval.core.text import REPLACEMENT, is_clean
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools.mcp_server import http_server
from tests.lifeplanner.test_tool_text_hygiene import ECHO_PROBES, HOSTILE

from .raw_client import RawHTTPClient, RawStdioClient, reply_text

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
# A message deeper than this is refused before any tool sees it (geoeval.mcp.hygiene).
TOO_DEEP_FOR_MCP = {"nested 150 deep", "nested 5000 deep"}


def valid_args(ids):
    p0, p1, p2 = ids["places"]
    return {
        "place_search": {"query_name": ids["first_word"]},
        "place_detail": {"place_id": p0},
        "nearby_search": {"center": p0},
        "routing": {"start_place_id": p0, "end_place_id": p1},
        "search_notes": {"keyword": ids["note_word"]},
        "note_detail": {"note_id": ids["note_id"]},
        "sample_place": {},
        "multi_stop_routing": {"stop_ids": [p0, p1, p2]},
    }


def expected(city, toolset, name, arguments):
    kwargs = dict(arguments, **({"toolset": toolset} if name in TAKES_TOOLSET else {}))
    return PURE[name](city, **kwargs)


def assert_one_line(text, where):
    assert len(text.splitlines()) == 1 and is_clean(text) and len(text) < 400, f"{where}: {text!r:.300}"


def assert_reply_matches_in_process(reply, exp, request_id, where, hostile_name):
    assert reply["id"] == request_id, where
    is_error, text = reply_text(reply)
    assert not any(probe in text for probe in ECHO_PROBES), where
    if hostile_name in TOO_DEEP_FOR_MCP:
        assert reply["error"]["code"] == -32600, where
        assert reply["error"]["message"] == "Invalid request: JSON nested deeper than 104 levels.", where
        return
    if exp is None:  # sample_place: the server's k-th call draws seed k; only the shape is checked
        assert is_error or "pois" in json.loads(text), where
    elif exp.failure_class == "parameter_error":
        assert is_error and text == exp.error, f"{where}: {text!r:.200} != {exp.error!r:.200}"
    else:
        assert not is_error and text == exp.text(), where
    if is_error:
        assert_one_line(text, where)


def hostile_calls(city, ids, toolset, tools):
    """(request id, tool, arguments, expected result, hostile value's name) for each parameter of
    `tools` (name -> parameter names) and each hostile value."""
    base = valid_args(ids)
    out, request_id = [], 100
    for name, params in tools.items():
        for param in params:
            for hostile_name, value in HOSTILE.items():
                arguments = {**base[name], param: value}
                exp = None if name == "sample_place" else expected(city, toolset, name, arguments)
                out.append((request_id, name, arguments, exp, hostile_name))
                request_id += 1
    return out


def listed_parameters(client):
    client.send_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode())
    reply = client.reply()
    return {t["name"]: list(t["inputSchema"]["properties"]) for t in reply["result"]["tools"]}


@pytest.mark.slow
@pytest.mark.parametrize("toolset", ["standard", "data_engine"])
def test_stdio_answers_every_hostile_value_at_every_parameter_as_in_process(city_path, city_ids, toolset):
    city = city_handle.open_city(city_path)
    with RawStdioClient(city_path, toolset) as client:
        tools = listed_parameters(client)
        if toolset == "data_engine":  # only what the standard run has not covered: the same code otherwise
            tools = {
                "place_search": ["social_mem"],
                "nearby_search": ["social_mem"],
                "sample_place": tools["sample_place"],
                "multi_stop_routing": tools["multi_stop_routing"],
            }
        calls = hostile_calls(city, city_ids, toolset, tools)
        for request_id, name, arguments, exp, hostile_name in calls:
            reply = client.call(request_id, name, arguments)
            assert_reply_matches_in_process(reply, exp, request_id, f"{name}({hostile_name})", hostile_name)
        # and the session still serves an ordinary call
        ok = client.call(9999, "place_detail", {"place_id": city_ids["places"][0]})
        assert json.loads(reply_text(ok)[1])["place_id"] == city_ids["places"][0]
    assert len(calls) == (23 if toolset == "standard" else 8) * len(HOSTILE)


def malformed_messages(ids):
    """(raw line, the id the reply must carry, what the reply must say)."""
    p0 = ids["places"][0]
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        (b"not json at all", None, "Parse error: Expecting value"),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "place_search", '
            b'"arguments": {"query_name": ' + deep + b"}}}",
            7,
            "Invalid request: JSON nested deeper than 104 levels.",
        ),
        (
            b'{"jsonrpc": "2.0", "id": "deep-\\ud800", "method": "tools/list", "params": {"x": ' + deep + b"}}",
            f"deep-{REPLACEMENT}",
            "Invalid request: JSON nested deeper than 104 levels.",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 8,
                    "method": "tools/call",
                    "params": {"name": "place_search", "arguments": {"query_name": "x" * 5_000_000}},
                }
            ).encode(),
            8,
            "Invalid request: message longer than 4194304 bytes.",
        ),
        # bytes that are not UTF-8 become U+FFFD: the tool runs and says what it got
        (
            b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "place_detail", '
            b'"arguments": {"place_id": "\xff\xfe"}}}',
            9,
            f"place_id '{REPLACEMENT * 2}' was not found. Use a place_id returned by place_search or nearby_search.",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 10,
                    "method": "tools/call",
                    "params": {"name": "place_\ud800\n", "arguments": {}},
                }
            ).encode(),
            10,
            f"Unknown tool 'place_{REPLACEMENT}'. Available tools: ",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 11,
                    "method": "tools/call",
                    "params": {"name": "place_search", "arguments": "not an object"},
                }
            ).encode(),
            11,
            "Invalid request parameters",
        ),
        (
            b'{"jsonrpc": "2.0", "id": {"not": "an id"}, "method": "tools/list"}',
            None,
            "Invalid request: 'id' must be a string or an integer.",
        ),
        (
            b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}',
            None,
            "Invalid request: 'id' must be a string or an integer.",
        ),
        (
            b'[{"jsonrpc": "2.0", "id": 12, "method": "tools/list"}]',
            None,
            "Invalid request: not a JSON-RPC 2.0 message.",
        ),
        (b'{"id": 13, "method": "tools/list"}', 13, "Invalid request: not a JSON-RPC 2.0 message."),
        (b'{"jsonrpc": "2.0", "id": 14, "method": "no/such/method"}', 14, "Method not found"),
        (
            json.dumps(
                {"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "routing", "arguments": {}}}
            ).encode(),
            15,
            "Missing required parameter(s) for routing: start_place_id, end_place_id.",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 16,
                    "method": "tools/call",
                    "params": {
                        "name": "place_detail",
                        "arguments": {"place_id": p0, "a\nb": 1, **{f"k{i:02}": i for i in range(30)}},
                    },
                }
            ).encode(),
            16,
            "Unknown parameter(s) for place_detail: a b, k00, k01, k02, k03, k04, k05, k06, k07, k08 (and 21 more). "
            "Parameters: place_id.",
        ),
        (
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": "str-id-\ud800",
                    "method": "tools/call",
                    "params": {"name": "search_notes", "arguments": {"keyword": "(((("}},
                }
            ).encode(),
            f"str-id-{REPLACEMENT}",
            "Invalid keyword logic: ",
        ),
    ]


@pytest.mark.slow
def test_stdio_replies_to_every_malformed_message(city_path, city_ids):
    with RawStdioClient(city_path) as client:
        for line, request_id, says in malformed_messages(city_ids):
            client.send_line(line)
            reply = client.reply()
            where = line[:80]
            assert reply["id"] == request_id, where
            _, text = reply_text(reply)
            assert text.startswith(says), f"{where}: {text!r:.200}"
            assert_one_line(text, where)
        client.send_line(b"")  # a blank line is no message: skipped, no reply
        listed = listed_parameters(client)
        assert list(listed) == [
            "place_search",
            "place_detail",
            "nearby_search",
            "routing",
            "search_notes",
            "note_detail",
        ]


@pytest.mark.slow
def test_http_answers_hostile_input_as_in_process(city_path, city_ids):
    city = city_handle.open_city(city_path)
    with http_server(city_path, toolset="standard") as url:
        client = RawHTTPClient(url)
        client.initialize()
        calls = hostile_calls(
            city, city_ids, "standard", {"place_search": ["query_name", "geo_tag"], "nearby_search": ["center"]}
        )
        for request_id, name, arguments, exp, hostile_name in calls:
            reply = client.call(request_id, name, arguments)  # too deep: 400, with the id all the same
            assert_reply_matches_in_process(reply, exp, request_id, f"{name}({hostile_name})", hostile_name)
        # bodies that cannot be read at all: an HTTP error status with a JSON-RPC error body
        for body, status, says in [
            (b"not json", 400, "Parse error: Expecting value"),
            (
                b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                400,
                "Invalid request: JSON nested deeper than 104 levels.",
            ),
            (b'{"x": "' + b"y" * 5_000_000 + b'"}', 413, "Invalid request: body longer than 4194304 bytes."),
        ]:
            got_status, _, reply = client.post(body)
            assert got_status == status and reply["error"]["message"].startswith(says), (body[:60], reply)
        ok = client.call(9999, "place_detail", {"place_id": city_ids["places"][0]})
        assert json.loads(reply_text(ok)[1])["place_id"] == city_ids["places"][0]


# ------------------------------------------------------------------ through Inspect's MCP client


@pytest.mark.slow
def test_an_eval_with_hostile_tool_calls_gives_the_in_process_transcript_over_mcp(city_path, city_ids, tmp_path):
    """A model's hostile arguments reach the tools through Inspect's MCP client exactly as they
    reach the in-process tools. (Lone surrogates are left out here: in a model's reply they are
    cleaned before Inspect logs the sample, which is the model boundary's work, not the tools'.)"""
    from inspect_ai.model import ModelOutput, ModelUsage

    from geoeval.suites.lifeplanner.tools.mcp_server import mcp_agent_tools
    from geoeval.suites.lifeplanner.tools.toolsets import agent_tools

    from .test_inspect_transport import MODEL, run_eval, transcript

    calls = [
        ("place_detail", {"place_id": city_ids["places"][0] + "\x00"}),
        ("search_notes", {"keyword": "x" * 1_000_000}),
        ("place_search", {"query_name": "\u202e" + city_ids["first_word"] + "\u200f"}),
        ("place_search", {"query_name": "\x1b[31m", "geo_tag": ["\U0001f35c", "\x00"]}),
        ("nearby_search", {"center": '{"start": "\x00", "end": 3}'}),
    ]

    def outputs():
        out = [
            ModelOutput.for_tool_call(MODEL, name, args, tool_call_id=f"call_{k}")
            for k, (name, args) in enumerate(calls)
        ]
        out.append(ModelOutput.from_content(MODEL, "done"))
        for o in out:
            o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        return out

    inproc = transcript(run_eval(agent_tools(city_path), outputs(), tmp_path / "inproc"))
    over_mcp = transcript(run_eval(mcp_agent_tools(city_path, "stdio"), outputs(), tmp_path / "mcp"))
    assert over_mcp == inproc
    errors = [m["error"] for m in inproc["messages"] if m["role"] == "tool" and m["error"]]
    assert errors[0] == (
        "unknown",
        f"place_id '{city_ids['places'][0]}{REPLACEMENT}' was not found. Use a place_id "
        "returned by place_search or nearby_search.",
    )
    assert errors[1][1].startswith("Invalid keyword logic: keyword longer than 300 characters.")
    logged = inproc["tool_log"][1]["arguments"]["keyword"]  # the tool log keeps 1,000 characters, marked
    assert logged == "x" * 1000 + "…[999000 more characters cut]"


@pytest.mark.slow
def test_the_mcp_client_cleans_a_lone_surrogate_before_sending(city_path):
    """The SDK's client cannot encode a lone surrogate; `mcp_agent_tools` cleans arguments first,
    as the in-process tool does, so both answer the same."""
    import asyncio

    from inspect_ai.tool import ToolDef

    from geoeval.suites.lifeplanner.tools.mcp_server import mcp_agent_tools
    from geoeval.suites.lifeplanner.tools.toolsets import agent_tools

    async def both():
        source = mcp_agent_tools(city_path, "stdio")[0]
        over_mcp = {ToolDef(t).name: t for t in await source.tools()}
        inproc = {ToolDef(t).name: t for t in agent_tools(city_path)}
        args = {"query_name": "caf\ud800", "geo_tag": ["\udc00"]}
        return await over_mcp["place_search"](**args), await inproc["place_search"](**args)

    over_mcp, inproc = asyncio.run(both())
    assert over_mcp == inproc
    assert json.loads(over_mcp)["total_matched"] == 0
