"""A tool server that dies is the harness's failure, not the model's: the MCP client's
'Connection closed' becomes a sample error (`ToolServerGone`), never a tool reply the model reads
and is then scored on. A tool's own error still reaches the model."""

from __future__ import annotations

import asyncio

import pytest
from inspect_ai.tool import ToolDef, ToolError
from inspect_ai.tool._mcp._compat import McpError

from geoeval.suites.lifeplanner.tools.mcp_server import (
    CONNECTION_CLOSED,
    ToolServerGone,
    _recording_tool,
    connection_closed,
)


def _mcp_like_tool(raise_: BaseException):
    """A tool as Inspect's MCP tool source builds it, failing as that source fails."""

    async def execute(place_id: str) -> str:
        raise raise_

    return ToolDef(
        execute,
        name="place_detail",
        description="Details of a place.",
        parameters={"place_id": "the place's id"},
    ).as_tool()


def _closed() -> ToolError:
    try:  # as Inspect maps the client's McpError: a ToolError raised from it
        raise McpError(code=CONNECTION_CLOSED, message="Connection closed")
    except McpError as cause:
        try:
            raise ToolError("Connection closed") from cause
        except ToolError as error:
            return error


def test_connection_closed_is_recognised_through_the_cause_chain():
    assert connection_closed(_closed())
    assert not connection_closed(ToolError("place p9 not found"))
    assert not connection_closed(McpError(code=CONNECTION_CLOSED, message="the server's own error"))


def test_a_closed_connection_makes_the_sample_an_error_not_a_tool_reply():
    wrapped = _recording_tool(_mcp_like_tool(_closed()), "standard")
    with pytest.raises(ToolServerGone, match="closed the connection during place_detail"):
        asyncio.run(wrapped(place_id="p1"))
    assert not issubclass(ToolServerGone, ToolError)  # Inspect would hand a ToolError to the model
