"""What the model said is kept: the warehouse stores the model's raw last output and its stop
reason beside the extracted answer, and a request the server refuses as longer than the model's
context is stored with that reason (scored as the empty answer it is), not as "no route in the
answer" or a transport error."""

from __future__ import annotations

import os
import subprocess

import duckdb
import pytest

from geoeval.core.run.inspect_bridge import CONTEXT_EXCEEDED
from tests.conftest import geoeval_cmd
from tests.harness.hostile_server import VALID_TEXT, HostileServer

pytestmark = pytest.mark.slow

OVERRIDES = (
    "model=openai_api",
    "model.name=openai-api/local/hostile",
    "suite.categories=[edge_only]",
    "env.n_maps=1",
    "suite.n_per_category=2",
    "tracking=none",
    "model.config.max_retries=0",
    "fail_on_error=false",
)


def run(tmp_path, schedule: list[str]) -> tuple[subprocess.CompletedProcess, list[tuple]]:
    with HostileServer(schedule) as server:
        proc = subprocess.run(
            geoeval_cmd(*OVERRIDES, f"model.base_url={server.base_url}"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LOCAL_API_KEY": "test-key"},
        )
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT status, answer, completion, stop_reason, explanation FROM samples ORDER BY sample_id"
    ).fetchall()
    con.close()
    return proc, rows


def test_the_raw_output_and_stop_reason_are_stored_beside_the_answer(tmp_path):
    proc, rows = run(tmp_path, ["valid"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(rows) == 2
    for status, _answer, completion, stop_reason, _ in rows:
        assert status == "scored"
        assert completion == VALID_TEXT  # prose with no route: nothing extracted, but what it said is kept
        assert stop_reason == "stop"


def test_a_request_longer_than_the_context_is_scored_with_that_reason(tmp_path):
    proc, rows = run(tmp_path, ["context_exceeded"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(rows) == 2
    for status, answer, completion, stop_reason, explanation in rows:
        assert (status, answer, completion, stop_reason) == ("scored", "", "", "model_length")
        assert explanation.startswith(CONTEXT_EXCEEDED) and "exceed context window of 8192" in explanation
