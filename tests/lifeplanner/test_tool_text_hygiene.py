"""Every LifePlanner tool answers any argument with a result or a clean parameter error (issue 8,
item 3): lone surrogates, NUL and control characters, a megabyte of text, RTL marks, emoji, wrong
types and values nested past Python's stack, at every parameter of every tool, as pure functions,
as Inspect tools called directly, and through Inspect's own tool-call path (`execute_tools`, which
adds missing arguments, unknown keys and unknown tools). No user text ever enters SQL text.

`HOSTILE` is shared with the MCP tests (tests/lifeplanner_mcp/test_hostile_input.py)."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import pytest

from geoeval.core.text import REPLACEMENT, is_clean
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools
from geoeval.suites.lifeplanner.tools import toolsets as toolsets_module

DE = "data_engine"


def nested(depth: int) -> list[Any]:
    """A list nested `depth` levels deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


HOSTILE: dict[str, Any] = {
    "lone high surrogate": "\ud800",
    "lone low surrogate in a word": "caf\udcff",
    "reversed surrogate pair": "\udc00\ud800",
    "NUL": "\x00",
    "NUL inside a word": "coffee\x00house",
    "C0 and C1 controls": "\x01\x07\x1b[2J\x7f\x85\x9b",
    "line breaks": "first\nsecond\r\n\u2028third",
    "1 MB string": "x" * 1_000_000,
    "1 MB of commas": "," * 1_000_000,  # as a keyword list: a million empty keywords
    "RTL marks": "\u202e\u200fcoffee\u200e",
    "emoji": "\u2615\U0001f35c\U0001f469\u200d\U0001f469\u200d\U0001f467 \U0001f1eb\U0001f1ee",
    "CJK": "\u5496\u5561\u9986",
    "SQL injection": "x'); DROP TABLE places; --",
    "route object text with a surrogate": '{"start": "\ud800", "end": "\x00", "vehicle": "\U0001f697"}',
    "JSON text nested past the stack": "{" * 100_000,
    "huge integer": 123456789012345678901234567890,
    "negative": -1,
    "huge float": 1e308,
    "boolean": True,
    "null": None,
    "empty list": [],
    "list of hostile strings": ["\ud800", "\x00", "a\nb"],
    "10,000 keywords": [f"k{i}" for i in range(10_000)],
    "object": {"\ud800": "\x00", "fields": ["long_mem"], "detail": "full"},
    "nested 50 deep": nested(50),
    "nested 150 deep": nested(150),
    "nested 5000 deep": nested(5000),
}

# No reply may echo these whole (a message of a megabyte).
ECHO_PROBES = ("x" * 1000, "," * 1000)

PURE = [  # (label, function, toolset keyword or None)
    ("place_search", place_tools.place_search, "standard"),
    ("place_search/de", place_tools.place_search, DE),
    ("place_detail", place_tools.place_detail, None),
    ("nearby_search", nearby_tools.nearby_search, "standard"),
    ("nearby_search/de", nearby_tools.nearby_search, DE),
    ("routing", routing_tools.routing, None),
    ("search_notes", note_tools.search_notes, "standard"),
    ("search_notes/de", note_tools.search_notes, DE),
    ("note_detail", note_tools.note_detail, None),
    ("sample_place", place_tools.sample_place, None),
    ("multi_stop_routing", routing_tools.multi_stop_routing, None),
]


def agent_parameters(fn) -> list[str]:
    """The parameters an agent fills (not the city, not the keyword-only toolset/seed)."""
    params = list(inspect.signature(fn.__wrapped__).parameters.values())[1:]
    return [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]


@pytest.fixture(scope="module")
def valid_args(db):
    """Arguments that make each tool succeed; one at a time is replaced by a hostile value."""
    p0, p1, p2 = [r[0] for r in db.execute("SELECT id FROM places ORDER BY id LIMIT 3").fetchall()]
    note = db.execute("SELECT note_id FROM notes ORDER BY note_id LIMIT 1").fetchone()[0]
    word = db.execute("SELECT split_part(name, ' ', 1) FROM places ORDER BY id LIMIT 1").fetchone()[0]
    return {
        "place_search": {"query_name": word},
        "place_detail": {"place_id": p0},
        "nearby_search": {"center": p0},
        "routing": {"start_place_id": p0, "end_place_id": p1},
        "search_notes": {"keyword": "quiet"},
        "note_detail": {"note_id": note},
        "sample_place": {},
        "multi_stop_routing": {"stop_ids": [p0, p1, p2]},
    }


def assert_one_clean_line(message: str, where: str) -> None:
    assert isinstance(message, str) and message, where
    assert len(message.splitlines()) == 1, f"{where}: {message!r:.300}"
    assert is_clean(message) and len(message) < 400, f"{where}: {message!r:.300}"


def assert_clean_result(result: tool_arguments.ToolResult, where: str) -> None:
    assert isinstance(result, tool_arguments.ToolResult), where
    assert result.failure_class in tool_arguments.FAILURE_CLASSES, where
    text = result.text()
    text.encode("utf-8")  # strict: no lone surrogate can reach the agent or a log
    json.loads(text)
    assert not any(probe in text for probe in ECHO_PROBES), f"{where}: echoes a hostile value"
    if result.failure_class == "parameter_error":
        assert_one_clean_line(result.error, where)


@pytest.mark.parametrize("value", list(HOSTILE.values()), ids=list(HOSTILE))
def test_every_pure_tool_answers_a_hostile_value_at_every_parameter(city, valid_args, value):
    calls = 0
    for label, fn, toolset in PURE:
        base = valid_args[fn.__name__]
        for param in agent_parameters(fn):
            where = f"{label}({param}=<hostile>)"
            kwargs = {**base, param: value, **({"toolset": toolset} if toolset else {})}
            result = fn(city, **kwargs)  # bench/fail_fast.py times these against valid calls
            assert_clean_result(result, where)
            calls += 1
    assert calls == 49  # every parameter of every tool (both toolsets) was tried


@pytest.mark.parametrize("value", list(HOSTILE.values()), ids=list(HOSTILE))
def test_every_inspect_tool_returns_json_or_raises_a_one_line_tool_error(city_path, valid_args, value):
    from inspect_ai.tool import ToolDef, ToolError

    toolsets = {"standard": toolsets_module.agent_tools(city_path), DE: toolsets_module.data_engine_tools(city_path)}

    async def run() -> int:
        calls = 0
        for toolset, tools in toolsets.items():
            for tool in tools:
                d = ToolDef(tool)
                for param in d.parameters.properties:
                    where = f"{toolset}.{d.name}({param}=<hostile>)"
                    try:
                        text = await tool(**{**valid_args[d.name], param: value})
                    except ToolError as exc:
                        assert_one_clean_line(exc.message, where)
                        assert not any(probe in exc.message for probe in ECHO_PROBES), where
                    else:
                        text.encode("utf-8")
                        json.loads(text)
                    calls += 1
        return calls

    assert asyncio.run(run()) == 23 + 31


@pytest.mark.slow
def test_inspect_tool_call_path_answers_hostile_calls(city_path, valid_args):
    """Through `execute_tools`, as the agent loop calls tools: each call ends in a result or a
    ToolCallError, including calls with missing arguments, unknown keys and unknown tools."""
    from inspect_ai.model import ChatMessageAssistant, execute_tools
    from inspect_ai.tool import ToolCall, ToolDef

    tools = toolsets_module.agent_tools(city_path)
    # A model's arguments arrive as JSON text, which Inspect refuses past 100 levels while parsing
    # it; a dict 5000 deep built here would crash Inspect's own ToolEvent model before that check.
    values = [v for k, v in HOSTILE.items() if k != "nested 5000 deep"]
    calls: list[tuple[str, dict[str, Any]]] = []
    for tool in tools:
        d = ToolDef(tool)
        for param in d.parameters.properties:
            calls += [(d.name, {**valid_args[d.name], param: v}) for v in values]
    calls += [
        ("place_search", {}),  # missing the required argument
        ("routing", {"start_place_id": valid_args["routing"]["start_place_id"]}),
        ("place_detail", {**valid_args["place_detail"], "fields": ["long_mem"], "\ud800": 1}),  # unknown keys
        ("no_such_tool", {"x": "\ud800"}),
    ]
    message = ChatMessageAssistant(
        content="",
        tool_calls=[ToolCall(id=f"call{i}", function=name, arguments=args) for i, (name, args) in enumerate(calls)],
    )

    result = asyncio.run(execute_tools([message], tools))
    replies = {m.tool_call_id: m for m in result.messages}
    assert len(replies) == len(calls)
    kinds = set()
    for i, (name, _) in enumerate(calls):
        reply = replies[f"call{i}"]
        if reply.error is None:
            json.loads(reply.text)
            kinds.add("result")
        else:
            assert reply.error.type in ("parsing", "unknown"), (name, reply.error)
            if reply.error.type == "unknown":  # our ToolError (parsing errors are Inspect's schema check)
                assert_one_clean_line(reply.error.message, name)
            kinds.add(reply.error.type)
    assert kinds == {"result", "parsing", "unknown"}
    tail = [replies[f"call{i}"].error for i in range(len(calls) - 4, len(calls))]
    assert "'query_name' is a required property" in tail[0].message
    assert "'end_place_id' is a required property" in tail[1].message
    assert "Additional properties are not allowed" in tail[2].message
    assert tail[3].message == "Tool no_such_tool not found"


# ------------------------------------------------------------------ what the answers are


def test_hostile_text_is_cleaned_to_replacement_characters_and_searched(city, valid_args):
    p0 = valid_args["place_detail"]["place_id"]
    # a surrogate or NUL cannot match a place: the search runs and finds nothing (not an error)
    for query in ("\ud800", "\x00", "caf\udcff"):
        r = place_tools.place_search(city, query)
        assert r.failure_class == "empty" and r.payload["total_matched"] == 0
    assert note_tools.search_notes(city, "quiet\ud800").failure_class == "empty"
    # the message quotes the cleaned id, on one line, cut at 40 characters
    r = place_tools.place_detail(city, p0 + "\x00")
    assert r.error == (
        f"place_id '{p0}{REPLACEMENT}' was not found. Use a place_id returned by place_search or nearby_search."
    )
    assert note_tools.note_detail(city, "a\nb\u2028c").error.startswith("note_id 'a b c' was not found.")
    assert place_tools.place_detail(city, "y" * 150).error.startswith(f"place_id '{'y' * 40}' was not found.")
    assert place_tools.place_detail(city, "y" * 201).error == "place_id is too long (201 characters, at most 200)."
    # emoji, CJK and RTL marks are ordinary text, searched as given: a name word finds places, and
    # the same word with a left-to-right mark attached finds none (the mark was not stripped)
    word = valid_args["place_search"]["query_name"]
    assert place_tools.place_search(city, word).payload["total_matched"] > 0
    assert place_tools.place_search(city, word + "\u200e").failure_class == "empty"
    assert place_tools.place_search(city, "\u5496\u5561\u9986 \U0001f35c").failure_class == "empty"


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda c, a: place_tools.place_search(c, "a", place_types=[f"k{i}" for i in range(10_000)]),
            "place_types: too many keywords (10000, at most 20).",
        ),
        (
            lambda c, a: place_tools.place_search(c, "a", geo_tag=[f"k{i}" for i in range(25)]),
            "geo_tag: too many keywords (more than 20).",
        ),
        (
            lambda c, a: nearby_tools.nearby_search(c, "{" * 100_000),
            "center is too long (100000 characters, at most 2000).",
        ),
        (
            lambda c, a: nearby_tools.nearby_search(c, "{" * 1000),
            "center looks like a route object but is not valid JSON.",
        ),
        (
            lambda c, a: nearby_tools.nearby_search(c, '{"start": "\ud800", "end": "x"}'),
            f"center.start '{REPLACEMENT}' was not found. Use a place_id returned by place_search or nearby_search.",
        ),
        (lambda c, a: place_tools.place_detail(c, nested(150)), "place_id is nested more than 100 levels deep."),
        (lambda c, a: place_tools.place_detail(c, nested(5000)), "place_id is nested more than 100 levels deep."),
        (lambda c, a: place_tools.place_detail(c, nested(50)), "place_id must be a string, got list."),
        (
            lambda c, a: routing_tools.routing(c, *a, mode="x" * 1_000_000),
            "mode must be one of 'time', 'distance', got 'xxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'.",
        ),
        (
            lambda c, a: routing_tools.routing(c, *a, vehicle={"a\nb": nested(40)}),
            "vehicle must be one of 'walking', 'cycling', 'driving', got {'a\\nb': [[...]]}.",
        ),
        (
            lambda c, a: place_tools.place_search(c, "a", min_rating="\ud800\nhigh"),
            f"min_rating must be a number, got '{REPLACEMENT} high'.",
        ),
        (
            lambda c, a: routing_tools.multi_stop_routing(c, [str(i) for i in range(1_000_000)]),
            "stop_ids must list between 2 and 8 places, got 1000000.",
        ),
    ],
)
def test_hostile_arguments_get_these_parameter_errors(city, valid_args, call, message):
    ends = (valid_args["routing"]["start_place_id"], valid_args["routing"]["end_place_id"])
    r = call(city, ends)
    assert r.failure_class == "parameter_error"
    assert r.error == message


def test_the_tool_log_keeps_any_argument_storable():
    for value in HOSTILE.values():
        logged = toolsets_module.loggable(value)
        text = json.dumps(logged, ensure_ascii=False)
        text.encode("utf-8")
        assert len(text) < 20_000
    assert toolsets_module.loggable("a\ud800") == f"a{REPLACEMENT}"
    assert toolsets_module.loggable("x" * 1001) == "x" * 1000 + "…[1 more characters cut]"
    cut: Any = "…[nested deeper than 8 levels]"
    for _ in range(8):
        cut = [cut]
    assert toolsets_module.loggable(nested(20)) == cut
    assert toolsets_module.loggable(list(range(60)))[-1] == "…[10 more items cut]"


# ------------------------------------------------------------------ no user text in SQL


class RecordingCursor:
    """A DuckDB cursor that records each statement and its parameters."""

    def __init__(self, cursor, log):
        self.cursor, self.log = cursor, log

    def execute(self, sql, params=None):
        self.log.append((sql, params))
        return self.cursor.execute(sql, params)


def test_user_text_reaches_sql_only_as_bound_parameters(city, valid_args, monkeypatch):
    """A marker in every text parameter of every tool is found among the parameters of the
    statements the tools run, and never in their SQL text."""
    log: list[tuple[str, Any]] = []
    real_cursor = city_handle.City.cursor
    monkeypatch.setattr(city_handle.City, "cursor", lambda self: RecordingCursor(real_cursor(self), log))
    marker = "zq'mk;--"
    for _label, fn, toolset in PURE:
        base = valid_args[fn.__name__]
        for param in agent_parameters(fn):
            for value in (marker, [marker], f"quiet AND {marker}"):
                fn(city, **{**base, param: value, **({"toolset": toolset} if toolset else {})})
    statements = [sql for sql, _ in log]
    bound = [p for _, params in log for p in (params or []) if isinstance(p, str)]
    assert len(statements) >= 30
    assert not [sql for sql in statements if "zq" in sql.lower()]
    assert any(marker.lower() in p for p in bound)  # the marker did reach DuckDB, as a parameter
