"""MCP servers for geoeval suites: `python -m geoeval.mcp <suite> --db <file> ...`.

A suite that serves its tools over MCP declares its servers in the registry (`Suite.mcp_servers`,
{toolset: "module:function"}), a plugin suite as a built-in one; `__main__` finds the suite by
name and calls the server of the chosen `--toolset`. Shared by every suite's server: `hygiene`
(every JSON-RPC message is bounded, cleaned and answered, over stdio and HTTP) and `security` (no
binding beyond loopback without a token; bearer-token check on HTTP).
"""

from __future__ import annotations

from typing import Any

from geoeval.core.errors import GeoevalError


def suite_servers() -> dict[str, dict[str, str]]:
    """{suite: {toolset: "module:function"}} of the registered suites that serve MCP."""
    from geoeval.core.registry import get_suite, suite_names

    found = {name: dict(getattr(get_suite(name), "mcp_servers", {}) or {}) for name in suite_names()}
    return {name: servers for name, servers in found.items() if servers}


def servers_of(suite: str) -> dict[str, str] | None:
    """`suite`'s MCP servers (empty when it serves none), importing only the plugins it needs;
    None when no registered suite has that name."""
    from geoeval.core.registry import get_suite

    try:
        found: Any = get_suite(suite)
    except GeoevalError:
        return None
    return dict(getattr(found, "mcp_servers", {}) or {})
