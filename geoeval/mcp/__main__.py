"""`python -m geoeval.mcp <suite> --db <file> [--transport stdio|http] [--host H --port N]
[--token T] [--toolset NAME] [--seed S]`: serve a suite's agent tools over MCP, with the server
the suite declares for that toolset (`Suite.mcp_servers`; LifePlanner: `standard`, `data_engine`).

HTTP binds 127.0.0.1 by default. Any other address needs a token (`GEOEVAL_MCP_TOKEN`, or
`--token`, which other local users can read in `ps`); with a token every HTTP request must carry
`Authorization: Bearer <token>` (see `geoeval.mcp.security`). stdio needs no token.

Errors a user can make (unknown suite, missing database, bad option, a public address without a
token) end with one line on stderr and exit status 2; nothing is written to stdout, which belongs
to the stdio transport.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from geoeval.mcp import servers_of, suite_servers
from geoeval.mcp.security import TOKEN_ENV, bind_refusal, token_problem


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m geoeval.mcp", description="Serve a geoeval suite's tools over MCP.")
    p.add_argument(
        "suite",
        help="suite name (a registered suite that declares `mcp_servers`), or the server's module:function",
    )
    p.add_argument("--db", required=True, help="the environment's DuckDB file")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument(
        "--token",
        default=None,
        help=f"bearer token every HTTP request must carry (default: ${TOKEN_ENV}); required to bind beyond loopback",
    )
    p.add_argument("--toolset", default=None, help="which of the suite's servers (default: its first)")
    p.add_argument("--seed", type=int, default=0, help="seed of sample_place (data engine)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if ":" in args.suite:
        # the server function itself (`module:function`): how a suite starts its own server for a
        # sample (`server_command`), without the registry's lookup, which imports the whole suite
        # (seconds, per sample with stdio)
        if args.toolset is None:
            print("error: a server named as module:function needs --toolset", file=sys.stderr)
            return 2
        servers: dict[str, str] | None = {args.toolset: args.suite}
    else:
        servers = servers_of(args.suite)
    if not servers:
        what = "unknown suite" if servers is None else "no MCP server for suite"
        print(f"error: {what} '{args.suite}'; MCP servers exist for: {', '.join(suite_servers())}", file=sys.stderr)
        return 2
    toolset = next(iter(servers)) if args.toolset is None else args.toolset
    if toolset not in servers:
        print(
            f"error: argument --toolset: invalid choice: '{toolset}' (choose from {', '.join(servers)})",
            file=sys.stderr,
        )
        return 2
    if not Path(args.db).is_file():
        print(f"error: database file not found: {args.db}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"error: --port must be between 1 and 65535, got {args.port}", file=sys.stderr)
        return 2
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if args.transport == "http":
        problem = token_problem(token) if token is not None else bind_refusal(args.host, token)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    from geoeval.core.registry import load_target

    serve = load_target(servers[toolset])
    try:
        serve(
            args.db,
            transport=args.transport,
            toolset=toolset,
            host=args.host,
            port=args.port,
            seed=args.seed,
            token=token if args.transport == "http" else None,
        )
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
