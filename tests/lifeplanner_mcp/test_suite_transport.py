"""`suite.transport=mcp` end to end through the CLI: the agent reaches the tools through one MCP
server process per sample and the run is indistinguishable from `inproc` in everything the agent
and the scorer see (tool calls, results, errors and failure classes per sample; every score)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import duckdb
import pytest
from inspect_ai.log import read_eval_log

from geoeval.suites.lifeplanner.tools.arguments import TOOL_LOG_KEY
from tests.conftest import REPO, geoeval_cmd

# the heuristic baseline (the experiment's default) makes failing, empty and truncated calls too
TINY = ("env.n_places=300", "env.n_notes=2000", "suite.n_cases=11", "tracking=none")


# Imported by every Python process started with PYTHONPATH pointing at its folder (the CLI and
# any MCP server it spawns, which inherit the environment): appends each process's command line,
# so the test can count the servers a run really started.
SITECUSTOMIZE = """
import os, sys
_log = os.environ.get("LIFEPLANNER_TEST_PROCESS_LOG")
if _log:
    with open(_log, "a") as f:
        f.write(" ".join(sys.orig_argv) + "\\n")
"""


def run_cli(tmp_path: Path, *overrides: str) -> tuple[Path, list[str]]:
    """Run the experiment; return the Inspect log and the MCP server processes it started."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    processes = tmp_path / "processes.txt"
    env = {
        **os.environ,
        "GEOEVAL_EXPERIMENTS_DIR": str(REPO / "experiments"),
        "LIFEPLANNER_TEST_PROCESS_LOG": str(processes),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        geoeval_cmd("+experiment=lifeplanner_offline", *TINY, *overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    started = processes.read_text().splitlines() if processes.exists() else []
    servers = [line for line in started if "geoeval.mcp" in line and "lifeplanner" in line]
    return Path(re.search(r"Inspect log: (\S+)", proc.stdout).group(1)), servers


def trajectories(log_path: Path) -> dict[str, dict]:
    log = read_eval_log(str(log_path))
    out = {}
    for s in log.samples:
        steps = []
        for m in s.messages:
            if m.role == "assistant":
                steps.append(("call", [(c.function, c.arguments) for c in (m.tool_calls or [])]))
            elif m.role == "tool":
                steps.append(("result", m.function, m.text, m.error.type if m.error else None))
        out[str(s.id)] = {"steps": steps, "tool_log": s.store.get(TOOL_LOG_KEY), "answer": s.output.completion}
    return out


def scores(tmp_path: Path) -> dict[tuple[str, str], float]:
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        return {
            (sid, m): v
            for sid, m, v in con.execute(
                "SELECT sample_id, metric, COALESCE(value, 'NaN'::DOUBLE) FROM scores"
            ).fetchall()
        }
    finally:
        con.close()


@pytest.mark.slow
def test_mcp_transport_gives_the_in_process_trajectories_and_scores(tmp_path):
    (tmp_path / "inproc").mkdir()
    (tmp_path / "mcp").mkdir()
    inproc_log, inproc_servers = run_cli(tmp_path / "inproc")
    mcp_log, mcp_servers = run_cli(tmp_path / "mcp", "suite.transport=mcp")
    inproc, over_mcp = trajectories(inproc_log), trajectories(mcp_log)
    assert len(inproc) == 11
    # the tools really went over MCP: one stdio server per sample (and none in process)
    assert inproc_servers == [] and len(mcp_servers) == 11, mcp_servers[:3]
    assert all("--transport stdio" in line for line in mcp_servers)
    # the comparison means something: calls were made, and not all of them succeeded
    classes = {c["failure_class"] for t in inproc.values() for c in t["tool_log"]}
    assert "ok" in classes and len(classes) >= 2, classes
    assert over_mcp == inproc
    inproc_scores, mcp_scores = scores(tmp_path / "inproc"), scores(tmp_path / "mcp")
    assert len(inproc_scores) >= 11 * 10
    # NaN != NaN: compare as strings
    assert {k: repr(v) for k, v in mcp_scores.items()} == {k: repr(v) for k, v in inproc_scores.items()}
