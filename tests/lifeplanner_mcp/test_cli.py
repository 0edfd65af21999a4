"""`python -m geoeval.mcp` fails with one clear line (and status 2) on input a user gets wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "geoeval.mcp", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("mapsatisfy", "--db", "x.duckdb"),
            "error: no MCP server for suite 'mapsatisfy'; MCP servers exist for: lifeplanner",
        ),
        (("nosuch", "--db", "x.duckdb"), "error: unknown suite 'nosuch'; MCP servers exist for: lifeplanner"),
        (
            ("lifeplanner", "--db", "x.duckdb", "--toolset", "other"),
            "error: argument --toolset: invalid choice: 'other' (choose from standard, data_engine)",
        ),
        (
            ("lifeplanner", "--db", "/nonexistent/city.duckdb"),
            "error: database file not found: /nonexistent/city.duckdb",
        ),
    ],
)
def test_bad_input_gives_one_error_line(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""  # stdout belongs to the stdio transport
    assert proc.stderr.strip().splitlines() == [message]


def test_bad_port_is_rejected(city_path):
    proc = run_cli("lifeplanner", "--db", str(city_path), "--transport", "http", "--port", "70000")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --port must be between 1 and 65535, got 70000"
