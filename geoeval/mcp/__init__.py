"""MCP servers for geoeval suites: `python -m geoeval.mcp <suite> --db <file> ...`.

Each suite that serves its tools over MCP is listed in `SUITES` (name -> module:function taking
the parsed arguments); `__main__` dispatches on the suite name. Shared by every suite's server:
`hygiene` (every JSON-RPC message is bounded, cleaned and answered, over stdio and HTTP) and
`security` (no binding beyond loopback without a token; bearer-token check on HTTP).
"""

from __future__ import annotations

SUITES = {"lifeplanner": "geoeval.suites.lifeplanner.tools.mcp_server"}
