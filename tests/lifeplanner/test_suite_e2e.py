"""`python -m geoeval +experiment=lifeplanner_offline` end to end on a tiny city: Hydra configs,
the environment and cases, Inspect with the tool-using solver, the scorer and judges, the
warehouse. The oracle passes every case; the heuristic baseline does not."""

from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, geoeval_cmd

pytestmark = pytest.mark.slow  # whole LifePlanner runs through Inspect

TINY = ("env.n_places=300", "env.n_notes=2000", "suite.n_cases=22", "tracking=none")


def run_cli(tmp_path: Path, *overrides: str, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        geoeval_cmd("+experiment=lifeplanner_offline", *overrides),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "GEOEVAL_EXPERIMENTS_DIR": str(REPO / "experiments")},
    )
    if ok:
        assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return proc


def scores(tmp_path: Path) -> dict[str, dict[str, float]]:
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        out: dict[str, dict[str, float]] = {}
        for sid, metric, value in con.execute(
            "SELECT sample_id, metric, COALESCE(value, 'NaN'::DOUBLE) FROM scores"
        ).fetchall():
            out.setdefault(sid, {})[metric] = value
        return out
    finally:
        con.close()


def samples(tmp_path: Path) -> list[tuple]:
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT sample_id, suite, task_family, task, level, capabilities, explanation "
            "FROM samples ORDER BY sample_id"
        ).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lifeplanner_oracle")
    proc = run_cli(tmp, "model=oracle", *TINY)
    return tmp, proc


def test_the_oracle_passes_every_case(oracle_run):
    tmp, proc = oracle_run
    got = scores(tmp)
    assert len(got) == 22
    for sid, metrics in got.items():
        assert metrics["pr"] == 1.0, (sid, metrics)
        for m, v in metrics.items():
            if m not in ("input_tokens", "output_tokens") and not math.isnan(v):  # NaN: does not apply
                assert v == 1.0, (sid, m, v)
        assert metrics["input_tokens"] > 0 and metrics["output_tokens"] > 0
    assert re.search(r"\|\s+pr\s+\|", proc.stdout) and "Inspect log:" in proc.stdout


def test_samples_carry_their_dimensions_and_only_applicable_metrics(oracle_run):
    tmp, _ = oracle_run
    rows = samples(tmp)
    combos = {(r[2], r[4]) for r in rows}
    assert len(combos) == 11  # every task x level at 22 cases (Table 4 proportions)
    got = scores(tmp)
    for sid, suite, family, task, level, caps, _explanation in rows:
        assert suite == "lifeplanner" and task == f"{family}_{level}" and sid.startswith(task)
        assert caps and ("implicit_preference" in caps) == (level == "l2")
        if level == "l0":  # Table 3: "-" at L0
            assert math.isnan(got[sid]["oc"]) and math.isnan(got[sid]["sc"])
        else:
            assert got[sid]["sc"] == 1.0
        if family == "place":
            assert math.isnan(got[sid]["piou"]) and math.isnan(got[sid]["rd_time"])


def test_the_heuristic_baseline_scores_below_the_oracle(tmp_path):
    run_cli(tmp_path, *TINY)  # the experiment's default model is the baseline
    rows = {r[0]: r for r in samples(tmp_path)}
    got = scores(tmp_path)
    assert len(got) == 22

    def pr(level=None):
        vals = [m["pr"] for sid, m in got.items() if level is None or rows[sid][4] == level]
        return sum(vals) / len(vals)

    assert pr() < 0.9
    assert pr("l0") > pr("l2")


def test_the_tool_budget_is_enforced(tmp_path):
    run_cli(
        tmp_path,
        "model=oracle",
        "suite.tool_budget=2",
        "suite.tasks=[trip]",
        *TINY[:2],
        "suite.n_cases=2",
        "tracking=none",
    )
    rows = samples(tmp_path)
    got = scores(tmp_path)
    assert len(rows) == 2
    for sid, *_, explanation in rows:
        assert "refused past the tool budget" in explanation
        assert got[sid]["te"] == 1.0 and got[sid]["ig"] < 1.0  # 2 calls made; the evidence was never seen


def test_bad_suite_and_env_settings_are_config_errors():
    from geoeval.core.config.validate import validate_config
    from geoeval.core.errors import GeoevalError

    def cfg(**suite):
        return {
            "env": {"name": "lifeplanner_synthetic"},
            "suite": {"name": "lifeplanner", **suite},
            "model": {"name": "geoeval/oracle"},
            "judge": {"models": ["rules"]},
            "metrics": {"name": "lifeplanner", "metrics": ["pr", "ig"]},
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }

    assert validate_config(cfg(tasks=["trip"], levels=["l1"])).suite.combinations() == [("trip", "l1")]
    with pytest.raises(GeoevalError, match="Trip Design has no l0"):
        validate_config(cfg(tasks=["trip"], levels=["l0"]))
    with pytest.raises(GeoevalError, match="suite.tool_budget"):
        validate_config(cfg(tool_budget=0))
    with pytest.raises(GeoevalError, match="suite.transport"):
        validate_config(cfg(transport="carrier-pigeon"))
    bad_env = cfg()
    bad_env["env"]["n_places"] = 3
    with pytest.raises(GeoevalError, match="env.n_places"):
        validate_config(bad_env)
    bad_metric = cfg()
    bad_metric["metrics"]["metrics"] = ["pr", "ema"]  # MapTab's, not LifePlanner's
    with pytest.raises(GeoevalError, match="unknown metric"):
        validate_config(bad_metric)


def test_the_inspect_task_builds_without_the_cli(tmp_path):
    from geoeval.suites.lifeplanner.task import lifeplanner

    task = lifeplanner(n_cases=22, n_places=200, n_notes=1000, work_dir=str(tmp_path))
    samples = list(task.dataset)
    assert len(samples) == 22 and len({s.metadata["dims"]["task"] for s in samples}) == 11
    assert samples[0].input[0].role == "system" and "submit_answer" in samples[0].input[0].text
    assert samples[0].input[1].text.startswith("Now answer the following question:")
    assert (tmp_path / "envs").is_dir()


def test_after_run_writes_the_paper_reports(oracle_run):
    tmp, proc = oracle_run
    [report] = list((tmp / "outputs").rglob("lifeplanner_reports/lifeplanner_report.md"))
    text = report.read_text()
    # the oracle passes everything: every Table 2 cell is 100.0 (22 cases cover all 11 combinations)
    row = next(line for line in text.splitlines() if line.startswith("| geoeval/oracle |"))
    assert row.count("100.0") == 12
    assert "## Tool-call failures (Figure 6)" in text
    assert (report.parent / "exceedance.png").is_file() and (report.parent / "tool_failures.png").is_file()
