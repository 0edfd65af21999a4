"""The LifePlanner tools over MCP (issue 4, item 3).

Server: `python -m geoeval.mcp lifeplanner --db city.duckdb [--transport stdio|http]
[--host 127.0.0.1 --port 8765] [--toolset standard|data_engine]` serves the standard toolset
(Table 7) or the data-engine toolset (Table 8) over stdio or streamable HTTP (path `/mcp`).

The server does not re-declare the tools. It builds the Inspect tools of the one tool table
(`toolsets.TOOL_TABLE`, via `toolset_tools`) and serves exactly those:

- `tools/list` gives each tool's name, description and the JSON schema Inspect generates for it
  (so an MCP client sees the parameters an in-process agent sees, down to the descriptions);
- `tools/call` awaits the same wrapper, which calls the same pure function, so the result text is
  `ToolResult.text()`; a parameter error (`ToolError`) becomes an MCP error result whose text is
  the error message, which Inspect's MCP client turns back into the same `ToolError`.

Every message gets a reply, whatever it holds (issue 8): both transports read JSON with the
standard library and clean every string before the SDK sees it (`geoeval.mcp.hygiene`: lone
surrogates, NUL and control characters become U+FFFD; too deep, too long or not JSON is answered
with a JSON-RPC error carrying the request's id); `tools/call` checks the tool name and the
argument names itself; a tool answers a result or a parameter error; a bug in a tool is an error
result, one line. Bound beyond loopback, HTTP needs a token, and then every request must carry
`Authorization: Bearer <token>` (`geoeval.mcp.security`).

Client: `mcp_agent_tools(db_path, transport)` returns an Inspect `ToolSource` that a task can
use in place of `agent_tools(db_path)`. It wraps Inspect's own MCP client (`mcp_tools`) so that
the transcript is the in-process one: a tool result is the plain text (not a one-item content
list), the data-engine tools keep `max_output=0`, and each call is appended to the sample store
under `TOOL_LOG_KEY` with its failure class (the server process cannot reach the sample store;
the class is read back from the payload by `failure_class_of`, which a test checks against the
pure functions call by call).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, cast

import mcp_types as types

from geoeval.mcp.hygiene import CleanJSONBodyMiddleware
from geoeval.mcp.security import BearerTokenMiddleware, bind_refusal

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # Python 3.10: the backport anyio (under mcp) installs there
    from exceptiongroup import BaseExceptionGroup

from geoeval.api import clean_text, clean_value
from geoeval.mcp.security import TOKEN_ENV
from geoeval.suites.lifeplanner.tools.arguments import ToolResult
from geoeval.suites.lifeplanner.tools.toolsets import TOOLSETS, record_call, toolset_tools

TRANSPORTS = ("stdio", "http")
SERVER_NAME = "geoeval-lifeplanner"
HTTP_PATH = "/mcp"

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


def build_server(db_path: str | Path, *, toolset: str = "standard", seed: int = 0) -> Any:
    """An MCP low-level `Server` serving the Inspect tools of `toolset` over the city at `db_path`.

    The low-level server (rather than `MCPServer` with decorated functions) lets `tools/list`
    publish Inspect's own JSON schema verbatim, so both transports declare identical parameters.
    `sample_place` (data engine) draws seed, seed+1, ... per call over the server's lifetime, as
    it does per tool list in process."""
    from inspect_ai.tool import ToolDef, ToolError
    from mcp.server.lowlevel import Server

    defs = {d.name: d for d in (ToolDef(t) for t in toolset_tools(db_path, toolset, seed=seed))}
    specs = [
        types.Tool(name=d.name, description=d.description, input_schema=d.parameters.model_dump(exclude_none=True))
        for d in defs.values()
    ]

    def error(message: str) -> types.CallToolResult:
        text = " ".join(clean_text(message).splitlines())  # an MCP error result is one line, always encodable
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    def names(items: list[str]) -> str:
        shown = ", ".join(" ".join(n[:40].split()) for n in items[:10])
        return shown + (f" (and {len(items) - 10} more)" if len(items) > 10 else "")

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=specs)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        d = defs.get(params.name)
        if d is None:
            return error(f"Unknown tool '{' '.join(params.name[:60].split())}'. Available tools: {', '.join(defs)}.")
        args = dict(params.arguments or {})
        # Inspect's client checks these against the schema before calling; other MCP clients may not,
        # and a Python TypeError would say nothing useful to an agent.
        unknown = sorted(set(args) - set(d.parameters.properties))
        if unknown:
            return error(
                f"Unknown parameter(s) for {d.name}: {names(unknown)}. "
                f"Parameters: {', '.join(d.parameters.properties)}."
            )
        missing = [p for p in d.parameters.required if p not in args]
        if missing:
            return error(f"Missing required parameter(s) for {d.name}: {', '.join(missing)}.")
        try:
            text = await d.tool(**args)
        except ToolError as exc:
            return error(exc.message)
        except Exception as exc:  # a bug in a tool: tell the client, keep serving
            logger.exception("tool %s failed", d.name)
            return error(f"Internal error in {d.name}: {type(exc).__name__}: {str(exc)[:200]}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(
        SERVER_NAME,
        version="1",
        instructions=f"LifePlanner {toolset} tools over {Path(db_path).name}",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def http_app(server: Any, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The ASGI app of the streamable HTTP transport: bodies cleaned (`CleanJSONBodyMiddleware`)
    and, with a token, every request checked for `Authorization: Bearer <token>` first. Refuses
    (ValueError) a non-loopback `host` without a token."""

    refusal = bind_refusal(host, token)
    if refusal:
        raise ValueError(refusal)
    app = CleanJSONBodyMiddleware(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), HTTP_PATH)
    return BearerTokenMiddleware(app, token) if token else app


def serve(
    db_path: str | Path,
    *,
    transport: str = "stdio",
    toolset: str = "standard",
    host: str = "127.0.0.1",
    port: int = 8765,
    seed: int = 0,
    token: str | None = None,
) -> None:
    """Run the server until stdin closes (stdio) or the process is stopped (http). `token`
    (http only): the bearer token every request must carry; required beyond loopback."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}.")
    server = build_server(db_path, toolset=toolset, seed=seed)
    if transport == "stdio":
        import anyio

        from geoeval.mcp.hygiene import stdio_transport

        async def main() -> None:
            async with stdio_transport() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    else:
        import uvicorn

        app = http_app(server, host=host, token=token)
        print(
            f"LifePlanner MCP ({toolset}) at http://{host}:{port}{HTTP_PATH}"
            f"{' (bearer token required)' if token else ''}",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=host, port=port, log_level="warning")


def server_command(
    db_path: str | Path,
    *,
    transport: str = "stdio",
    toolset: str = "standard",
    host: str = "127.0.0.1",
    port: int | None = None,
    seed: int = 0,
) -> list[str]:
    """The command line that starts the server with this interpreter."""
    cmd = [
        sys.executable,
        "-m",
        "geoeval.mcp",
        f"{__name__}:serve",  # the server itself: a lookup by suite name would import the whole suite
        "--db",
        str(Path(db_path).resolve()),
        "--transport",
        transport,
        "--toolset",
        toolset,
        "--seed",
        str(seed),
    ]
    if transport == "http":
        cmd += ["--host", host, "--port", str(port)]
    return cmd


def _repo_env(token: str | None = None) -> dict[str, str]:
    """Environment for a server subprocess: geoeval importable even when run from elsewhere; the
    token (if any) in `GEOEVAL_MCP_TOKEN`, never on the command line, and none inherited."""
    root = str(Path(__file__).resolve().parents[4])
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    if token:
        env[TOKEN_ENV] = token
    return env


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(
    db_path: str | Path,
    *,
    toolset: str = "standard",
    host: str = "127.0.0.1",
    port: int | None = None,
    seed: int = 0,
    token: str | None = None,
    startup_timeout: float = 30.0,
) -> Iterator[str]:
    """Start the HTTP server in a subprocess, wait until it accepts connections, yield its URL,
    and stop it on exit. With `token`, requests must carry `Authorization: Bearer <token>`."""
    port = port or free_port(host)
    proc = subprocess.Popen(
        server_command(db_path, transport="http", toolset=toolset, host=host, port=port, seed=seed),
        env=_repo_env(token),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                stderr = cast(IO[str], proc.stderr)  # a pipe (stderr=PIPE)
                raise RuntimeError(f"MCP server exited with {proc.returncode}: {stderr.read()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"MCP server did not listen on {host}:{port} within {startup_timeout:g} s.")
            time.sleep(0.1)
        yield f"http://{host}:{port}{HTTP_PATH}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


# --------------------------------------------------------------------------------------------
# Inspect client
# --------------------------------------------------------------------------------------------


def failure_class_of(payload: Any) -> str:
    """Figure 6's class of a call that returned `payload` (parameter errors arrive as tool errors,
    never as payloads): list tools say `total_matched`/`returned`; a route that does not exist is
    an `error` payload (class `empty`)."""
    if isinstance(payload, dict):
        if "total_matched" in payload and "returned" in payload:
            if payload["total_matched"] == 0:
                return "empty"
            return "truncated" if payload["total_matched"] > payload["returned"] else "ok"
        if "error" in payload:
            return "empty"
    return "ok"


def _result_text(result: Any) -> str:
    from inspect_ai.model import ContentText

    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(c, ContentText) for c in result):
        return "".join(c.text for c in result)
    raise TypeError(f"Unexpected MCP tool result: {type(result).__name__}")


def _inner_exception(exc: BaseException) -> BaseException:
    """The one exception inside nested one-member groups (anyio wraps a task group's failure)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


#: The JSON-RPC code of the error the MCP client raises when the server's end of the connection is
#: gone (`mcp_types.CONNECTION_CLOSED`); Inspect turns it into a ToolError the model would read.
CONNECTION_CLOSED = -32000


class ToolServerGone(RuntimeError):
    """The MCP tool server closed the connection during a call (it died or was stopped). That is
    a failure of the harness, not of the model: the sample becomes an error (counted, and retried
    by the next run of the config) instead of being scored on tool replies that never came."""


def connection_closed(error: BaseException) -> bool:
    """Whether `error`, or an exception it was raised from, is the MCP client's 'Connection
    closed' (code `CONNECTION_CLOSED`)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        data = getattr(current, "error", None)
        code = getattr(data, "code", getattr(current, "code", None))
        message = str(getattr(data, "message", "") or current)
        if code == CONNECTION_CLOSED and "closed" in message.lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def _recording_tool(mcp_tool: Any, toolset: str) -> Any:
    """`mcp_tool` with the in-process wrapper's behaviour: text result, tool log, max_output."""
    from inspect_ai.tool import ToolDef, ToolError

    d = ToolDef(mcp_tool)
    defaults = {n: p.default for n, p in d.parameters.properties.items() if p.default is not None}

    async def execute(**kwargs: Any) -> str:
        # the in-process wrapper logs its arguments with Python defaults filled in; the schema has them
        arguments = {**defaults, **kwargs}
        try:
            # cleaned as the in-process tool cleans them; a lone surrogate would not even encode as JSON
            text = _result_text(await mcp_tool(**clean_value(kwargs)))
        except Exception as exc:
            # without a held connection Inspect opens one per call, inside a task group, so the
            # ToolError can arrive wrapped in an exception group
            inner = _inner_exception(exc)
            if connection_closed(inner):
                raise ToolServerGone(
                    f"the LifePlanner MCP tool server closed the connection during {d.name} (it died or was "
                    "stopped): the sample is an error, retried by the next run"
                ) from exc
            if isinstance(inner, ToolError):
                record_call(d.name, arguments, ToolResult({"error": inner.message}, "parameter_error"))
            raise
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text
        record_call(d.name, arguments, ToolResult(payload, failure_class_of(payload)))
        return text

    return ToolDef(
        execute,
        name=d.name,
        description=d.description,
        parameters=d.parameters,
        max_output=0 if toolset == "data_engine" else None,
    ).as_tool()


def _tool_source_class() -> type:
    # A subclass of Inspect's local MCP tool source (private class) rather than a plain ToolSource:
    # `mcp_connection(tools)` (used by `react()`, and by any solver that wants one connection per
    # sample instead of one per call) recognises it by this type and holds its server open.
    from geoeval.api import mcp_tool_source_local

    class LifePlannerMCPTools(mcp_tool_source_local()):  # type: ignore[misc]
        """Inspect's MCP tool source with each tool wrapped by `_recording_tool`."""

        def __init__(self, server: Any, toolset: str) -> None:
            super().__init__(server, "all")
            self._toolset = toolset

        async def tools(self) -> list[Any]:
            return [_recording_tool(t, self._toolset) for t in await super().tools()]

    return LifePlannerMCPTools


def mcp_agent_tools(
    db_path: str | Path,
    transport: Literal["stdio", "http"] = "stdio",
    *,
    toolset: str = "standard",
    url: str | None = None,
    seed: int = 0,
    token: str | None = None,
) -> list[Any]:
    """Inspect tool sources reaching the LifePlanner tools through MCP, usable wherever
    `agent_tools(db_path)` (toolset `standard`) or `data_engine_tools(db_path, seed=seed)`
    (`data_engine`) is.

    `stdio` starts `python -m geoeval.mcp lifeplanner --db ...` per connection: one per sample when
    the agent loop runs inside `inspect_ai.tool.mcp_connection(tools)` (as `react()` does),
    otherwise one per tool call (correct, but about a second each). `http` connects to a running server at `url` (start one with
    `python -m geoeval.mcp lifeplanner --db ... --transport http`, or `http_server(...)`), sending
    `Authorization: Bearer <token>` when `token` (default: `$GEOEVAL_MCP_TOKEN`) is set."""
    from inspect_ai.tool import mcp_server_http, mcp_server_stdio

    if toolset not in TOOLSETS:
        raise ValueError(f"toolset must be one of {', '.join(TOOLSETS)}, got {toolset!r}.")
    if transport == "stdio":
        if not Path(db_path).is_file():
            raise FileNotFoundError(f"LifePlanner city database not found: {db_path}")
        cmd = server_command(db_path, transport="stdio", toolset=toolset, seed=seed)
        server = mcp_server_stdio(name=f"{SERVER_NAME}-{toolset}", command=cmd[0], args=cmd[1:], env=_repo_env())
    elif transport == "http":
        if not url:
            raise ValueError("transport 'http' needs the url of a running server (e.g. http://127.0.0.1:8765/mcp).")
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        server = mcp_server_http(name=f"{SERVER_NAME}-{toolset}", url=url, headers=headers)
    else:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}.")
    return [_tool_source_class()(server, toolset)]
