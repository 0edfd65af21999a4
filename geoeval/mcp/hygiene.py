"""Every JSON-RPC message an MCP server of geoeval receives gets a reply (issue 8, item 3).

The MCP SDK parses a message with pydantic-core, which refuses valid JSON that Python accepts (a
lone UTF-16 surrogate escape such as `"\\ud800"`) and JSON nested past 255 levels; over stdio it
then drops the line, so a client waits for an answer that never comes. Here a message is parsed
with the standard library instead, bounded (size, nesting), and every string in it is cleaned
(`geoeval.core.text.clean_value`: lone surrogates, NUL and other control characters become
U+FFFD). What cannot be read at all is answered with a JSON-RPC error carrying the request's id
when it can be found, so that the client's call ends.

- `decode_message(text)`: (message, None) or (None, error reply);
- `stdio_transport()`: the stdio transport of the SDK's `stdio_server`, with that reader;
- `CleanJSONBodyMiddleware`: the same cleaning for the streamable HTTP transport (ASGI).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import mcp_types as types

from geoeval.core.text import clean_text, clean_value, nesting_depth

# The SDK's bound on an HTTP request body (mcp.server.transport_security), used for stdio lines too.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# Inspect's bound on tool-call arguments (100 levels) plus the envelope: message > params > arguments.
MAX_MESSAGE_DEPTH = 104
PARSE_ERROR = -32700
INVALID_REQUEST = -32600

ID_SCAN_CHARS = 1 << 20  # where to look for the id of a message that cannot be parsed
_STRUCTURE = re.compile(r'[\[\]{}"]')  # single characters: no backtracking, linear on any text
_COLON = re.compile(r"\s*:\s*")


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(clean_text(text).split())[:limit]


def error_reply(request_id: Any, code: int, message: str) -> Any:
    """A JSON-RPC error response to `request_id` (None when it is unknown)."""

    if not _valid_id(request_id):
        request_id = None
    elif isinstance(request_id, str):
        request_id = clean_text(request_id)  # an id of "\ud800" must not stop the reply from encoding
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=_one_line(message))
    )


def request_id_in(text: str) -> int | str | None:
    """The top-level `"id"` of a JSON-RPC message that cannot be parsed whole (too deep, too
    long), found by one linear scan of its first `ID_SCAN_CHARS` characters without building the
    value (clients put the id before the params); None if not found."""
    text = text[:ID_SCAN_CHARS]
    depth, string_start = 0, -1  # string_start >= 0: inside a string that began there
    for match in _STRUCTURE.finditer(text):
        char, pos = match.group(), match.start()
        if string_start >= 0:
            if char != '"' or _escaped(text, pos):
                continue
            key, string_start = text[string_start : pos + 1], -1
            colon = _COLON.match(text, pos + 1) if depth == 1 and key == '"id"' else None
            if colon is not None:  # the key "id" of the message itself
                try:
                    value, _ = json.JSONDecoder().raw_decode(text, colon.end())
                except (ValueError, RecursionError):
                    return None
                return value if _valid_id(value) else None
        elif char == '"':
            string_start = pos
        else:
            depth += 1 if char in "[{" else -1
    return None


def _escaped(text: str, pos: int) -> bool:
    """Whether the character at `pos` follows an odd number of backslashes."""
    start = pos
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    return (pos - start) % 2 == 1


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _id_of(raw: Any) -> Any:
    return raw.get("id") if isinstance(raw, dict) else None


def clean_message(text: str) -> tuple[Any, Any]:
    """(the parsed message with every string cleaned, None), or (None, an error reply) for text
    that is not JSON or nests deeper than `MAX_MESSAGE_DEPTH`."""
    try:
        raw = json.loads(text)
    except RecursionError:
        return None, error_reply(
            request_id_in(text),
            INVALID_REQUEST,
            f"Invalid request: JSON nested deeper than {MAX_MESSAGE_DEPTH} levels.",
        )
    except ValueError as exc:
        return None, error_reply(None, PARSE_ERROR, f"Parse error: {str(exc).split(';')[0]}.")
    if nesting_depth(raw, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH:
        return None, error_reply(
            _id_of(raw), INVALID_REQUEST, f"Invalid request: JSON nested deeper than {MAX_MESSAGE_DEPTH} levels."
        )
    return clean_value(raw), None


def decode_message(text: str) -> tuple[Any, Any]:
    """(a `JSONRPCMessage`, None) or (None, the `JSONRPCError` to send back)."""
    from pydantic import ValidationError

    raw, error = clean_message(text)
    if error is not None:
        return None, error
    if isinstance(raw, dict) and "method" in raw and "id" in raw and not _valid_id(raw["id"]):
        # the SDK would read it as a notification (no id) and never answer; its sender waits for one
        return None, error_reply(None, INVALID_REQUEST, "Invalid request: 'id' must be a string or an integer.")
    try:
        return types.jsonrpc_message_adapter.validate_python(raw, by_name=False), None
    except ValidationError:
        return None, error_reply(_id_of(raw), INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message.")


# --------------------------------------------------------------------------------------------
# stdio
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _claimed_std_streams() -> Any:
    """(wire in, wire out): private copies of fd 0 and 1. While serving, fd 0 reads /dev/null and
    fd 1 writes to stderr, so that stray prints (a library, a tool) cannot corrupt the wire."""
    sys.stdout.flush()
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_in.fileno(), 0)
        os.dup2(wire_out.fileno(), 1)
        wire_in.close()
        wire_out.close()


def _read_line(wire: BinaryIO) -> tuple[bytes, bool]:
    """(the next line, at most MAX_MESSAGE_BYTES of it; whether it was longer). The rest of an
    over-long line is read and dropped."""
    line = wire.readline(MAX_MESSAGE_BYTES + 1)
    if len(line) <= MAX_MESSAGE_BYTES or line.endswith(b"\n"):
        return line, False
    while True:
        rest = wire.readline(MAX_MESSAGE_BYTES)
        if not rest or rest.endswith(b"\n"):
            return line[:MAX_MESSAGE_BYTES], True


def _write_line(wire: BinaryIO, text: str) -> None:
    wire.write(text.encode("utf-8") + b"\n")
    wire.flush()


@contextlib.asynccontextmanager
async def stdio_transport(
    wire_in: BinaryIO | None = None, wire_out: BinaryIO | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `Server.run`, over stdin/stdout (or the given binary
    streams). One JSON-RPC message per line; each line is decoded by `decode_message`, and a line
    that does not decode is answered at once with its error reply."""
    import anyio
    from mcp.shared.message import SessionMessage

    with contextlib.ExitStack() as stack:
        if wire_in is None or wire_out is None:
            wire_in, wire_out = stack.enter_context(_claimed_std_streams())
        read_send, read_recv = anyio.create_memory_object_stream[Any](0)
        write_send, write_recv = anyio.create_memory_object_stream[Any](0)
        replies = write_send.clone()  # the reader answers bad lines itself, through the one writer

        async def reader() -> None:
            async with read_send, replies:
                while True:
                    line, too_long = await anyio.to_thread.run_sync(_read_line, wire_in, abandon_on_cancel=True)
                    if not line:
                        return
                    text = line.decode("utf-8", errors="replace")
                    if too_long:
                        await replies.send(
                            SessionMessage(
                                error_reply(
                                    request_id_in(text),
                                    INVALID_REQUEST,
                                    f"Invalid request: message longer than {MAX_MESSAGE_BYTES} bytes.",
                                )
                            )
                        )
                        continue
                    if not text.strip():
                        continue
                    message, error = decode_message(text)
                    if error is not None:
                        await replies.send(SessionMessage(error))
                    else:
                        await read_send.send(SessionMessage(message))

        async def writer() -> None:
            async with write_recv:
                async for session_message in write_recv:
                    text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await anyio.to_thread.run_sync(_write_line, wire_out, text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            yield read_recv, write_send


# --------------------------------------------------------------------------------------------
# streamable HTTP
# --------------------------------------------------------------------------------------------


async def send_json(send: Any, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """Send one complete JSON response over ASGI."""
    data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class CleanJSONBodyMiddleware:
    """ASGI middleware: the body of a POST to `path` is parsed and cleaned by `clean_message` and
    handed on re-encoded (plain ASCII JSON), so that the SDK's parser never sees text it refuses;
    a body that cannot be read is answered with 400 (413 when too long) and a JSON-RPC error."""

    def __init__(self, app: Any, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path", "").rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                reply = error_reply(
                    None, INVALID_REQUEST, f"Invalid request: body longer than {MAX_MESSAGE_BYTES} bytes."
                )
                await send_json(send, 413, reply.model_dump_json(by_alias=True, exclude_unset=True))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        raw, error = clean_message(b"".join(chunks).decode("utf-8", errors="replace"))
        if error is not None:
            await send_json(send, 400, error.model_dump_json(by_alias=True, exclude_unset=True))
            return
        body = json.dumps(raw).encode("ascii")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server would

        await self.app(scope, replay, send)
