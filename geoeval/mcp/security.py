"""Tool servers closed to strangers (issue 13, item 4).

An MCP server bound to a loopback address (127.0.0.1, ::1, localhost: the default) is reachable
only from this machine. Bound to any other address (0.0.0.0, a LAN address, a host name) it is
reachable from the network, so it must be given a token: `--token` or, better (a command line
is visible to every local user in `ps`), the environment variable `GEOEVAL_MCP_TOKEN`. With a
token, every HTTP request must carry `Authorization: Bearer <token>`; any other request gets 401
before it reaches the MCP transport. The comparison takes the same time whatever the header
holds (both sides are hashed, then compared with `hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Any

from geoeval.mcp.hygiene import send_json

TOKEN_ENV = "GEOEVAL_MCP_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine. A name other than
    "localhost" counts as reachable from outside (it may resolve to any address)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def token_problem(token: str) -> str | None:
    """Why `token` cannot be used as a bearer token (None when it can)."""
    if not token:
        return "the token is empty"
    if not all(33 <= ord(c) <= 126 for c in token):
        return "the token must be printable ASCII without spaces (it travels in an HTTP header)"
    return None


def bind_refusal(host: str, token: str | None) -> str | None:
    """The reason to refuse serving HTTP on `host` (None when it may): a non-loopback address
    without a token."""
    if token or is_loopback(host):
        return None
    return (
        f"refusing to serve on {host}, which is reachable from other machines, without a token: "
        f"set {TOKEN_ENV} (or pass --token); clients then send 'Authorization: Bearer <token>'"
    )


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def bearer_matches(header: bytes | None, token: str) -> bool:
    """Whether an `Authorization` header value is `Bearer <token>` (scheme case-insensitive, as
    RFC 7235 says), compared in constant time."""
    scheme, _, presented = (header or b"").strip().partition(b" ")
    same_scheme = scheme.lower() == b"bearer"
    same_token = hmac.compare_digest(_digest(presented.strip()), _digest(token.encode("ascii")))
    return same_scheme and same_token


class BearerTokenMiddleware:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401."""

    def __init__(self, app: Any, token: str) -> None:
        problem = token_problem(token)
        if problem:
            raise ValueError(problem)
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # lifespan events come from the server itself
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), None)
        if bearer_matches(header, self.token):
            await self.app(scope, receive, send)
            return

        message = "missing Authorization header" if header is None else "wrong bearer token"
        await send_json(
            send,
            401,
            {"error": f"Unauthorized: {message}; send 'Authorization: Bearer <token>'."},
            headers=[(b"www-authenticate", b'Bearer realm="geoeval-mcp"')],
        )
