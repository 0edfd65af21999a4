"""MCP servers for geoeval suites: `python -m geoeval.mcp <suite> --db <file> ...`.

Each suite that serves its tools over MCP is listed in `SUITES` (name -> module:function taking
the parsed arguments); `__main__` dispatches on the suite name.
"""

from __future__ import annotations

SUITES = {"lifeplanner": "geoeval.suites.lifeplanner.mcp_server"}
