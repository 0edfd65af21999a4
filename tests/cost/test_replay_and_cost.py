"""Real models at a known price (issue 23), proven offline against a local OpenAI-compatible
server that counts requests and reports usage (`policy_server.PolicyServer`):

- a scoring-version bump re-scores every sample from its stored trajectory with 0 requests and
  the same answers; `geoeval rescore` with the paper protocol makes 0 requests;
- a rerun in another directory with `model.cache` on makes 0 requests (Inspect's cache);
- a budget stops a run within the samples in flight of its limit (exit 3, BUDGET_EXCEEDED) and a
  rerun with a higher budget finishes it with nothing redone;
- the cost of a run is the hand-computed price of the tokens the server counted;
- `geoeval estimate` of a sweep prices each job's samples left from the stored ones, making no request.

MapTab runs with the map image in the prompt, LifePlanner and MapSatisfy with tool-using
trajectories (the server plays the suites' conversation-only baselines).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.cost.cli import run_geoeval
from tests.cost.policy_server import PolicyServer

pytestmark = pytest.mark.slow

#: USD per million tokens of the server's model, as the tests' price file says
PRICE_IN, PRICE_OUT = 3.0, 15.0
MODEL = "openai-api/local/policy"
JUDGE = "openai-api/local/judge"  # the same server, answering as a judge

SUITES = {
    "maptab": (
        "table_baseline",
        "maptab",
        [
            "suite=maptab",
            "suite.solver=react",
            "suite.categories=[map_edge]",
            "env.n_maps=1",
            "suite.n_per_category=4",
        ],
    ),
    "lifeplanner": ("heuristic_baseline", "lifeplanner", ["+experiment=lifeplanner_offline", "limit=4"]),
    "mapsatisfy": ("clarify_baseline", "mapsatisfy", ["+experiment=mapsatisfy_generated", "limit=4"]),
}


def geoeval(
    cwd: Path, server: PolicyServer, *overrides: str, command: str = "", patch: str = ""
) -> subprocess.CompletedProcess:
    """`geoeval [command] overrides` against `server`, in `cwd`; `patch`: Python run first in the
    same process (e.g. a bumped scoring version)."""
    cwd.mkdir(parents=True, exist_ok=True)
    (cwd / "prices.yaml").write_text(
        json.dumps({"models": {MODEL: {"input": PRICE_IN, "output": PRICE_OUT}, JUDGE: {"input": 1.0, "output": 1.0}}})
    )
    flags = [o for o in overrides if o.startswith("-")]  # e.g. -m: before the overrides, as Hydra parses them
    overrides = tuple(o for o in overrides if not o.startswith("-"))
    args = [
        *([command] if command else []),
        *flags,
        "model=openai_api",
        f"model.name={MODEL}",
        f"model.base_url={server.base_url}",
        "pricing.file=prices.yaml",
        "tracking=none",
        *overrides,
    ]
    env = {
        **os.environ,
        "LOCAL_API_KEY": "test-key",
        "LOCAL_BASE_URL": server.base_url,  # where an `openai-api/local/...` judge is asked
        "INSPECT_CACHE_DIR": str(cwd.parent / "inspect_cache"),
    }
    return run_geoeval(cwd, args, env, patch=patch)


def rows(cwd: Path) -> dict[str, list[tuple]]:
    """{run_hash: [(sample_id, epoch, answer, status, cost_usd, replayed_calls)]} of the warehouse in `cwd`."""
    con = duckdb.connect(str(cwd / "results" / "geoeval.duckdb"), read_only=True)
    try:
        found = con.execute(
            "SELECT run_hash, sample_id, epoch, answer, status, cost_usd, replayed_calls FROM samples "
            "ORDER BY run_hash, sample_id, epoch"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, list[tuple]] = {}
    for run_hash, *rest in found:
        out.setdefault(run_hash, []).append(tuple(rest))
    return out


def answers(found: list[tuple]) -> list[tuple]:
    return [(sid, epoch, answer, status) for sid, epoch, answer, status, *_ in found]


def bump_scoring_version(suite: str) -> str:
    """Python that bumps `suite`'s scoring version in the process it runs in, as a release would."""
    module = {"maptab": "MapTabSuite", "lifeplanner": "LifePlannerSuite", "mapsatisfy": "MapSatisfySuite"}[suite]
    return (
        "from geoeval.core import registry\nregistry.load_plugins()\n"
        f"import geoeval.suites.{suite}.suite as s\ns.{module}.scoring_version = 'bumped-by-test'"
    )


@pytest.mark.parametrize("name", sorted(SUITES))
def test_scoring_change_and_rescore_make_no_request(tmp_path, name):
    agent, suite, overrides = SUITES[name]
    with PolicyServer(agent, suite) as server:
        first = geoeval(tmp_path / "a", server, *overrides)
        assert first.returncode == 0, first.stderr[-3000:]
        generated = server.requests
        assert generated > 0
        ((run_a, found_a),) = rows(tmp_path / "a").items()
        assert all(status == "scored" for *_, status, _, _ in [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in found_a])
        # cost = the hand-computed price of what the server counted
        cost = sum(r[4] for r in found_a)
        expected = (server.prompt_tokens * PRICE_IN + server.completion_tokens * PRICE_OUT) / 1e6
        assert cost == pytest.approx(expected, rel=1e-9)
        assert f"cost: ${expected:.4f}" in first.stdout

        server.reset()
        bumped = geoeval(tmp_path / "a", server, *overrides, patch=bump_scoring_version(suite))
        assert bumped.returncode == 0, bumped.stderr[-3000:]
        assert server.requests == 0, "a scoring change must re-score stored trajectories, not call the model"
        runs = rows(tmp_path / "a")
        assert len(runs) == 2  # a new run identity, the same answers
        ((run_b, found_b),) = ((h, f) for h, f in runs.items() if h != run_a)
        assert answers(found_b) == answers(found_a)
        assert all(r[4] == 0.0 and r[5] > 0 for r in found_b)  # nothing paid, everything replayed

        rescored = geoeval(tmp_path / "a", server, *overrides, "scoring.protocol=paper", command="rescore")
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert server.requests == 0
        assert len(rows(tmp_path / "a")) == 3


def test_rescore_without_stored_trajectories_is_an_error_not_a_model_call(tmp_path):
    agent, suite, overrides = SUITES["maptab"]
    with PolicyServer(agent, suite) as server:
        proc = geoeval(tmp_path / "a", server, *overrides, command="rescore")
    assert server.requests == 0
    assert proc.returncode == 1
    assert "no stored trajectory" in proc.stderr


def test_cache_answers_a_rerun_in_another_directory(tmp_path):
    agent, suite, overrides = SUITES["maptab"]
    with PolicyServer(agent, suite) as server:
        first = geoeval(tmp_path / "a", server, *overrides, "model.cache=1D")
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.requests > 0
        server.reset()
        second = geoeval(tmp_path / "b", server, *overrides, "model.cache=1D")
        assert second.returncode == 0, second.stderr[-3000:]
        assert server.requests == 0
        # the cache answered before the provider was called: those calls are still stored, so a
        # rescore (cache off) replays them
        rescored = geoeval(tmp_path / "b", server, *overrides, "scoring.protocol=paper", command="rescore")
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert server.requests == 0
    assert all(r[4] == 0.0 for found in rows(tmp_path / "b").values() for r in found)
    assert "cache hits: " in second.stdout and "cache hits: 0;" not in second.stdout


def test_budget_stops_within_the_samples_in_flight_and_a_higher_budget_resumes(tmp_path):
    agent, suite, overrides = SUITES["maptab"]
    overrides = [*overrides, "suite.n_per_category=8", "runner.max_samples=2"]  # 8 samples, 2 in flight
    with PolicyServer(agent, suite) as server:
        probe = geoeval(tmp_path / "probe", server, *overrides, "limit=2")
        assert probe.returncode == 0, probe.stderr[-3000:]
        ((_, found),) = rows(tmp_path / "probe").items()
        per_sample = sum(r[4] for r in found) / len(found)
        server.reset()
        # room for about 4: the measurement alone, then 2 at once, then 1 (2 would pass it)
        limit = per_sample * 4.5
        stopped = geoeval(tmp_path / "a", server, *overrides, f"budget.usd={limit}")
        assert stopped.returncode == 3, stopped.stderr[-3000:]
        assert "BUDGET_EXCEEDED" in stopped.stderr
        ((_, found),) = rows(tmp_path / "a").items()
        assert 3 <= len(found) < 8  # then no new sample
        costs = [r[4] for r in found]
        assert sum(costs) <= limit + 2 * max(costs)  # past it by at most the samples in flight
        requests_before = server.requests
        resumed = geoeval(tmp_path / "a", server, *overrides, f"budget.usd={limit * 10}")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        stored_before = len(found)
        ((_, found),) = rows(tmp_path / "a").items()
        assert len(found) == 8
        # the stored samples were not redone: the resume asked only for the others (one request each)
        assert requests_before == stored_before
        assert server.requests - requests_before == 8 - stored_before


def test_model_judges_are_scoring_asked_again_through_their_cache(tmp_path):
    """LifePlanner with a model judge beside the rules: a rescore replays the agent (0 requests)
    and asks the judge again, which its cache answers (0 judge requests); the judge's dollars are
    counted apart."""
    agent, suite, overrides = SUITES["lifeplanner"]
    judged = [*overrides, f"judge.models=[rules,{JUDGE}]"]
    with PolicyServer(agent, suite) as server:
        first = geoeval(tmp_path / "a", server, *judged)
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.requests > 0 and server.judge_requests > 0
        con = duckdb.connect(str(tmp_path / "a" / "results" / "geoeval.duckdb"), read_only=True)
        judge_cost = con.execute("SELECT sum(judge_cost_usd) FROM samples").fetchone()[0]
        con.close()
        assert judge_cost == pytest.approx(server.judge_requests * (100 + 10) / 1e6)
        server.reset()
        rescored = geoeval(tmp_path / "a", server, *judged, "scoring.protocol=paper", command="rescore")
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert (server.requests, server.judge_requests) == (0, 0)
        assert "cache hits: 0;" not in rescored.stdout


def test_replay_through_ray_workers(tmp_path):
    agent, suite, overrides = SUITES["maptab"]
    ray = [*overrides, "runner=ray", "runner.num_workers=2"]
    with PolicyServer(agent, suite) as server:
        first = geoeval(tmp_path / "a", server, *ray)
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.requests > 0
        server.reset()
        rescored = geoeval(tmp_path / "a", server, *ray, "scoring.protocol=paper", command="rescore")
        assert rescored.returncode == 0, rescored.stderr[-3000:]
        assert server.requests == 0
    runs = rows(tmp_path / "a")
    first_rows, second_rows = (runs[h] for h in sorted(runs, key=lambda h: min(r[5] for r in runs[h])))
    assert answers(first_rows) == answers(second_rows)


def test_estimate_projects_each_job_of_a_sweep_from_stored_samples(tmp_path):
    """`geoeval estimate -m ... limit=2,4` after a run of 2 samples: the first job has nothing to
    generate; the second has 2 left, priced at twice the stored samples' mean, and no request is made."""
    agent, suite, overrides = SUITES["maptab"]
    with PolicyServer(agent, suite) as server:
        ran = geoeval(tmp_path / "a", server, *overrides, "limit=2")
        assert ran.returncode == 0, ran.stderr[-3000:]
        ((_, found),) = rows(tmp_path / "a").items()
        costs = [r[4] for r in found]
        tokens = server.prompt_tokens + server.completion_tokens
        server.reset()
        estimated = geoeval(tmp_path / "a", server, "-m", *overrides, "limit=2,4", command="estimate")
        assert estimated.returncode == 0, estimated.stderr[-3000:]
        assert server.requests == 0
    table = [line for line in estimated.stdout.splitlines() if line.startswith("| limit=")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    # job | model | samples | stored | replayable | to generate | tokens | cost | measured on
    assert [c[0] for c in cells] == ["limit=2", "limit=4"]
    assert [c[2:6] for c in cells] == [["2", "2", "0", "0"], ["4", "2", "0", "2"]]
    assert (cells[0][6], cells[0][7]) == ("0", "$0.0000")
    assert cells[1][6].startswith(f"{tokens:,.0f}")  # 2 samples left at the stored mean: the 2 stored ones' sum
    assert cells[1][7].startswith(f"${sum(costs):,.4f}")
    assert cells[1][8].startswith("2 sample(s) (generation ")
    assert f"total: 6 sample(s), 2 to generate; expected tokens {cells[1][6]}, cost {cells[1][7]}" in estimated.stdout
