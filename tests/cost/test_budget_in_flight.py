"""Budgets with samples in flight (issue 43.7) and the counts after a budget stop (issue 41.4),
against a local OpenAI-compatible server that prices its replies (`policy_server.PolicyServer`):

- with 4 samples in flight and a first sample that costs twice the whole budget, one sample is
  paid for, not 4 (the budget is checked before each sample starts, with what the samples let in
  before it are expected to cost; a sample of a kind not measured yet is let in alone);
- after a token budget stops a run, every count the console prints (samples evaluated now and
  resumed, n_samples, n_scored, n_errors, tokens, dollars) is the warehouse's, and MLflow's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.cost.cli import run_geoeval
from tests.cost.policy_server import PolicyServer

pytestmark = pytest.mark.slow

PRICE_IN, PRICE_OUT = 3.0, 15.0  # USD per million tokens
MODEL = "openai-api/local/policy"
MAPTAB = ["suite=maptab", "suite.solver=react", "suite.categories=[map_edge]", "env.n_maps=1", "suite.n_per_category=8"]


def geoeval(cwd: Path, server: PolicyServer, *overrides: str, tracking: bool = False) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "prices.yaml").write_text(json.dumps({"models": {MODEL: {"input": PRICE_IN, "output": PRICE_OUT}}}))
    args = [
        "model=openai_api",
        f"model.name={MODEL}",
        f"model.base_url={server.base_url}",
        "pricing.file=prices.yaml",
        *([] if tracking else ["tracking=none"]),
        *MAPTAB,
        *overrides,
    ]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return run_geoeval(cwd, args, {**env, "LOCAL_API_KEY": "test-key", "GEOEVAL_ROOT": str(cwd)})


def warehouse(cwd: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(cwd / "results" / "geoeval.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def first_sample(server: PolicyServer, root: Path) -> tuple[float, int]:
    """The dollars and tokens of the first sample, measured by a run of it alone."""
    server.reset()
    probe = geoeval(root / "probe", server, "limit=1")
    assert probe.returncode == 0, probe.stderr[-3000:]
    ((cost,),) = warehouse(root / "probe", "SELECT cost_usd FROM samples")
    tokens = server.prompt_tokens + server.completion_tokens
    server.reset()
    return cost, tokens


def test_a_budget_smaller_than_one_sample_pays_for_one_sample_not_the_samples_in_flight(tmp_path):
    with PolicyServer("table_baseline", "maptab") as server:
        cost, _ = first_sample(server, tmp_path)
        stopped = geoeval(tmp_path / "a", server, "runner.max_samples=4", f"budget.usd={cost / 2}")
    assert stopped.returncode == 3, stopped.stderr[-3000:]
    assert "BUDGET_EXCEEDED" in stopped.stderr
    costs = [c for (c,) in warehouse(tmp_path / "a", "SELECT cost_usd FROM samples")]
    assert costs == [pytest.approx(cost)]  # the measurement alone: 4 in flight would have paid 4
    assert server.requests == 1  # table_baseline answers in one call


def test_counts_after_a_budget_stop_are_the_warehouses_and_mlflows(tmp_path):
    with PolicyServer("table_baseline", "maptab") as server:
        _, tokens = first_sample(server, tmp_path)
        limit = int(tokens * 3.5)  # the measurement, a start of two, then no room for one more
        stopped = geoeval(
            tmp_path / "a", server, "runner.max_samples=2", "limit=8", f"budget.tokens={limit}", tracking=True
        )
    assert stopped.returncode == 3, stopped.stderr[-3000:]
    cwd = tmp_path / "a"
    ((n, n_scored, n_errors, cost),) = warehouse(
        cwd,
        "SELECT count(*), count(*) FILTER (status = 'scored'), count(*) FILTER (status = 'error'), sum(cost_usd) FROM samples",
    )
    assert 2 <= n < 8
    ((n_evaluated, n_reused),) = warehouse(cwd, "SELECT n_evaluated, n_reused FROM invocations")
    assert (n_evaluated, n_reused) == (n, 0)
    # the console's counts
    ran = re.search(r"\((\d+) sample\(s\) evaluated now, (\d+) resumed", stopped.stdout)
    assert ran and (int(ran.group(1)), int(ran.group(2))) == (n, 0), stopped.stdout[-3000:]
    assert f"samples: n_samples={n} n_scored={n_scored} n_errors={n_errors}" in stopped.stdout
    sent = re.search(r"tokens sent: ([\d,]+) in, ([\d,]+) out", stopped.stdout)
    assert sent, stopped.stdout[-3000:]
    tokens_in, tokens_out = (int(sent.group(i).replace(",", "")) for i in (1, 2))
    assert tokens_in + tokens_out == server.prompt_tokens + server.completion_tokens
    # past the limit by at most the samples in flight (2): the two dearest
    dearest = sorted((t for (t,) in warehouse(cwd, "SELECT input_tokens + output_tokens FROM samples")), reverse=True)
    assert tokens_in + tokens_out <= limit + sum(dearest[:2])
    assert f"cost: ${cost:.4f}" in stopped.stdout
    # MLflow's
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlruns' / 'mlflow.db'}")
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    (run,) = [r for r in runs if r.data.tags.get("geoeval.status") == "BUDGET_EXCEEDED"]
    metrics = run.data.metrics
    assert (metrics["n_samples"], metrics["n_scored"], metrics["n_errors"]) == (n, n_scored, n_errors)
    assert (metrics["tokens_in"], metrics["tokens_out"]) == (tokens_in, tokens_out)
    assert metrics["cost_usd"] == pytest.approx(cost)
