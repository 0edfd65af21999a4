"""The hostile battery (issue 43): nothing paid twice, nothing forged, nothing outside the run
touched. Each fault is its own test: a lone surrogate in a tool call, truncated reply bodies,
forged and truncated stored trajectories, a YAML bomb, a logging handler aimed outside the run, a
full disk mid-run on a small filesystem, and kill -9 right after the model answered. Each asserts
what the issue asks of it: no collateral errors, no finished sample lost, nothing paid twice beyond
the stated bound, forged data detected, nothing written outside the run, every failure one line.
No test measures wall time: they wait on what they can observe (the server's request count, the
rows in the warehouse)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import geoeval_cmd
from tests.harness.hostile_server import HostileServer

pytestmark = pytest.mark.slow  # whole runs of `python -m geoeval` against local servers

HOSTILE = "openai-api/local/hostile"
MAPTAB = ("suite.categories=[edge_only]", "env.n_maps=1")


def run_geoeval(cwd: Path, *overrides: str, server: HostileServer | None = None, timeout: int = 600):
    """`python -m geoeval` in `cwd` (tracking off, the local runner), against `server` if given."""
    model = ("model=openai_api", f"model.name={HOSTILE}", f"model.base_url={server.base_url}") if server else ()
    return subprocess.run(
        geoeval_cmd(*model, *overrides, "tracking=none", "runner=local"),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "LOCAL_API_KEY": "x"},
    )


def samples(db: Path) -> list[tuple[str, str | None]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT status, error FROM samples ORDER BY sample_id").fetchall()


def one_line_failure(stderr: str) -> str:
    """The run's failure: exactly one `geoeval: error:` line, no traceback."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("geoeval: error:")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def test_a_lone_surrogate_in_a_tool_call_voids_no_sample(tmp_path):
    """In the called tool's name, its id and the reply's id: the react agent's samples are scored
    (3 of 3 were errors with `PydanticSerializationError`, exit 1)."""
    with HostileServer(schedule=["surrogate_call_id", "surrogate_tool_name"]) as server:
        proc = run_geoeval(tmp_path, "suite.solver=react", *MAPTAB, "suite.n_per_category=3", server=server)
        modes = set(server.counts)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {"surrogate_call_id", "surrogate_tool_name"} <= modes
    assert [status for status, _ in samples(tmp_path / "results" / "geoeval.duckdb")] == ["scored"] * 3


def test_truncated_replies_cost_at_most_max_retries_plus_one_requests_per_sample(tmp_path):
    """Every reply's body is cut short: each sample's call makes `max_retries` + 1 requests, and
    Inspect's sample retry (`retry_on_error=2`) sends it no more (it cost 3 x as much)."""
    with HostileServer(schedule=["partial_body"]) as server:
        proc = run_geoeval(
            tmp_path,
            *MAPTAB,
            "suite.n_per_category=2",
            "++model.config.max_retries=1",
            "retry_on_error=2",
            "preflight=false",
            "fail_on_error=false",
            server=server,
        )
        requests = server.n_requests
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert requests == 2 * (1 + 1)  # 2 samples, 1 call each: the request and its one retry
    stored = samples(tmp_path / "results" / "geoeval.duckdb")
    assert [status for status, _ in stored] == ["error", "error"]
    assert all(error.startswith("the model call failed after its retries: APIConnectionError") for _, error in stored)


def test_a_yaml_bomb_fails_in_one_line_before_anything_runs(tmp_path):
    """Ten lines of nested anchors expand to 3.5 billion strings: the run hung with no output."""
    lines = ["# @package _global_", 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "bomb.yaml").write_text("\n".join(lines) + "\n")
    proc = run_geoeval(tmp_path, "+experiment=bomb")
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line_failure(proc.stderr)
    assert "bomb.yaml: its anchors and aliases expand to more than" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiments"]  # nothing ran, nothing written


LOG_OUTSIDE = """# @package _global_
hydra:
  job_logging:
    version: 1
    handlers:
      file:
        class: logging.FileHandler
        filename: {victim}
        mode: w
    root:
      handlers: [file]
"""


def test_a_logging_handler_aimed_outside_the_run_is_refused(tmp_path):
    """`hydra.job_logging` with `mode: w` and a file outside the run truncated it to 0 bytes."""
    victim = tmp_path / "notes.txt"
    victim.write_text("a week of notes\n")
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "logs_elsewhere.yaml").write_text(LOG_OUTSIDE.format(victim=victim))
    proc = run_geoeval(project, "+experiment=logs_elsewhere", "model=oracle", "limit=2")
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line_failure(proc.stderr)
    assert f"hydra.job_logging.handlers.file.filename: '{victim}' is outside the run's output folder" in line
    assert victim.read_text() == "a week of notes\n"  # untouched
    assert sorted(p.name for p in project.iterdir()) == ["experiments"]  # and nothing ran
