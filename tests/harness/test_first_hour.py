"""The first hour of a new user, from a fresh directory that is not the checkout: every
experiment's default model is one of its suite's agents; the authors' data come from `geoeval
data`'s cache (here filled by the documented copy-the-cache route and verified offline); a missing
dataset fails at once naming the fetch command and the copy route; each suite's terminal tables fit
120 columns."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PEERS, REPO, compose_spec, geoeval_cmd

#: the offline agents written for each suite (an experiment's default must be one of them)
SUITE_AGENTS = {
    "maptab": {"geoeval/table_baseline", "geoeval/perception_baseline", "geoeval/oracle"},
    "maptab_qa": {"geoeval/table_baseline", "geoeval/perception_baseline", "geoeval/oracle"},
    "lifeplanner": {"geoeval/heuristic_baseline", "geoeval/oracle"},
    "mapsatisfy": {"geoeval/clarify_baseline", "geoeval/oracle"},
}
EXPERIMENTS = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
#: the console's width; a line that is a path (an Inspect log) is as long as the path
WIDTH = 120


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiments_default_model_is_an_agent_of_its_suite(tmp_path, experiment):
    spec = compose_spec(tmp_path, f"+experiment={experiment}")
    assert spec.model.name in SUITE_AGENTS[spec.suite.name], (experiment, spec.suite.name, spec.model.name)


def test_the_authors_data_default_to_the_cache(tmp_path):
    for experiment in ("mapsatisfy_demo", "maptab_authors_sample"):
        assert compose_spec(tmp_path, f"+experiment={experiment}").env.root is None, experiment


def _run(cwd: Path, *args: str, data_dir: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "GEOEVAL_DATA_DIR": str(data_dir)}
    return subprocess.run(
        geoeval_cmd(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _overall(stdout: str, metric: str) -> float:
    """`metric`'s value in the Overall table (split into blocks or not)."""
    block = stdout.split("## Overall")[1].split("\n## ")[0]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    for header, _, values in zip(lines, lines[1:], lines[2:]):
        cells = [c.strip() for c in header.strip("|").split("|")]
        if metric in cells:
            return float(values.strip("|").split("|")[cells.index(metric)])
    raise AssertionError(f"no {metric} in the Overall table:\n{block}")


def _table_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("|")]


@pytest.mark.slow
def test_a_missing_dataset_names_the_fetch_command_and_the_copy_route(tmp_path):
    proc = _run(tmp_path, "+experiment=mapsatisfy_demo", "tracking=none", data_dir=tmp_path / "empty-cache")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "`geoeval data fetch mapsatisfy-demo`" in proc.stderr
    assert "copy a fetched mapsatisfy-demo/ folder from another machine's cache" in proc.stderr
    assert "evaluating with" not in proc.stderr  # it failed before any sample ran


@pytest.mark.slow
@pytest.mark.conformance
def test_the_authors_experiments_run_from_a_fresh_directory_on_a_copied_cache(tmp_path):
    if not PEERS.is_dir():
        pytest.skip("../shared/peers (the authors' files) is not present")
    cache = tmp_path / "cache"
    shutil.copytree(PEERS / "mapsatisfy", cache / "mapsatisfy-demo")
    shutil.copytree(PEERS / "maptab", cache / "maptab-sample")
    work = tmp_path / "fresh"
    work.mkdir()
    for name in ("mapsatisfy-demo", "maptab-sample"):  # docs/data.md: a copied cache is verified offline
        proc = _run(work, "data", "fetch", name, data_dir=cache)
        assert proc.returncode == 0 and "0 downloaded" in proc.stdout, proc.stdout + proc.stderr
    demo = _run(work, "+experiment=mapsatisfy_demo", "tracking=none", data_dir=cache)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "geoeval/clarify_baseline" in demo.stdout
    assert _overall(demo.stdout, "eff") > 0  # MapSatisfy's agent (MapTab's scored 0 on every metric)
    assert max(len(line) for line in _table_lines(demo.stdout)) <= WIDTH
    sample = _run(work, "+experiment=maptab_authors_sample", "tracking=none", data_dir=cache)
    assert sample.returncode == 0, sample.stderr[-3000:]
    assert max(len(line) for line in _table_lines(sample.stdout)) <= WIDTH


@pytest.mark.slow
def test_lifeplanners_terminal_tables_fit_120_columns(tmp_path):
    proc = _run(tmp_path, "+experiment=lifeplanner_offline", "tracking=none", "limit=11", data_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tables = _table_lines(proc.stdout)
    assert tables and max(len(line) for line in tables) <= WIDTH
    assert "tables split to fit 120 columns; the whole tables:)\n  " in proc.stdout  # and the file's path
    prose = [
        line
        for line in proc.stdout.splitlines()
        if not line.startswith(("|", "Inspect log:", "outputs:")) and " " in line.strip()  # not a path alone
    ]
    assert max(len(line) for line in prose) <= WIDTH, [line for line in prose if len(line) > WIDTH]
