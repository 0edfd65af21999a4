"""`geoeval rescore` pays nothing and needs nothing of the evaluated model (issue 41.1, 43.9):
against a local OpenAI-compatible server that counts every HTTP request it gets (preflight
probes and GETs included), a rescore makes 0 of them; with `model=local_llm` it starts no llama
server (the config names a model file that does not exist, which starting one would fail on);
it needs no API key; and it runs while the endpoint is down. A sample without a stored
trajectory stays an error.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.cost.cli import run_geoeval
from tests.cost.policy_server import PolicyServer

pytestmark = pytest.mark.slow

MAPTAB = ["suite=maptab", "suite.solver=react", "suite.categories=[map_edge]", "env.n_maps=1"]
#: a served model's weights that do not exist: starting its server fails at once (serve_local_llm)
NO_WEIGHTS = "+model.serve.model_path=/nonexistent/smollm2.gguf"


def geoeval(cwd: Path, *args: str, key: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCAL_")}
    if key:
        env["LOCAL_API_KEY"] = "test-key"
    return run_geoeval(cwd, [*args, "tracking=none"], {**env, "INSPECT_CACHE_DIR": str(cwd / "inspect_cache")})


def statuses(cwd: Path) -> dict[str, list[str]]:
    con = duckdb.connect(str(cwd / "results" / "geoeval.duckdb"), read_only=True)
    try:
        found = con.execute("SELECT run_hash, status FROM samples ORDER BY run_hash, sample_id").fetchall()
    finally:
        con.close()
    out: dict[str, list[str]] = {}
    for run_hash, status in found:
        out.setdefault(run_hash, []).append(status)
    return out


def test_rescore_of_a_served_model_makes_no_request_and_starts_no_server(tmp_path):
    with PolicyServer("table_baseline", "maptab") as server:
        # generated through the server (a served model pointed at a running server starts nothing)
        first = geoeval(
            tmp_path, "model=local_llm", f"model.base_url={server.base_url}", NO_WEIGHTS, *MAPTAB, "limit=2"
        )
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.requests > 0 and server.probes == 1
        server.reset()
        # the same model without a server: a rescore must not start one, probe nor call anything
        rescored = geoeval(
            tmp_path, "rescore", "model=local_llm", NO_WEIGHTS, *MAPTAB, "limit=2", "scoring.protocol=paper", key=False
        )
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert server.all_requests == 0  # preflight included
    assert "no server is started" in rescored.stderr
    assert "no such file" not in rescored.stderr and "Traceback" not in rescored.stderr
    runs = statuses(tmp_path)
    assert len(runs) == 2 and all(s == ["scored", "scored"] for s in runs.values())


def test_rescore_runs_while_the_endpoint_is_down_and_a_missing_trajectory_stays_an_error(tmp_path):
    with PolicyServer("table_baseline", "maptab") as server:
        base_url = server.base_url
        first = geoeval(
            tmp_path,
            "model=openai_api",
            "model.name=openai-api/local/policy",
            f"model.base_url={base_url}",
            *MAPTAB,
            "limit=2",
        )
        assert first.returncode == 0, first.stderr[-3000:]
    # the server is gone: the preflight would refuse the run, a rescore needs no endpoint
    args = ["model=openai_api", "model.name=openai-api/local/policy", f"model.base_url={base_url}"]
    rescored = geoeval(tmp_path, "rescore", *args, *MAPTAB, "limit=2", "scoring.protocol=paper", key=False)
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    assert all(s == ["scored", "scored"] for s in statuses(tmp_path).values())
    # a sample never generated: an error that says so, still no request (nothing listens anyway)
    more = geoeval(tmp_path, "rescore", *args, *MAPTAB, "limit=3", "scoring.protocol=paper", key=False)
    assert more.returncode == 1, more.stderr[-3000:]
    assert "no stored trajectory" in more.stderr


def test_local_checks_come_before_any_request(tmp_path):
    """A results_db that cannot be written is one line naming the key, before the preflight probe
    (a request) is sent."""
    (tmp_path / "a_file").write_text("")
    with PolicyServer("table_baseline", "maptab") as server:
        proc = geoeval(
            tmp_path,
            "model=openai_api",
            "model.name=openai-api/local/policy",
            f"model.base_url={server.base_url}",
            f"results_db={tmp_path / 'a_file' / 'geoeval.duckdb'}",
            *MAPTAB,
            "limit=2",
        )
        assert server.all_requests == 0
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("geoeval: error:")]
    assert len(errors) == 1 and "results_db=" in errors[0], proc.stderr[-3000:]
