"""The project home (`geoeval.core.config.home`): found from any subfolder of a folder `geoeval
init` marked, `$GEOEVAL_HOME` over it, the current folder without either; and a run started in a
subfolder writes its results, logs and outputs to the home."""

from __future__ import annotations

import os
import subprocess

import pytest

from geoeval.core.config.home import init_home, marked_home, project_home, settle_home
from tests.conftest import geoeval_cmd


@pytest.fixture
def no_home_env(monkeypatch):
    for key in ("GEOEVAL_HOME", "GEOEVAL_ROOT"):
        monkeypatch.setenv(key, "")  # recorded, so that what settle_home() sets is undone after the test
        monkeypatch.delenv(key)


def test_a_marked_home_is_found_from_any_subfolder_and_the_variable_wins(tmp_path, monkeypatch, no_home_env):
    project, deep = tmp_path / "project", tmp_path / "project" / "a" / "b"
    deep.mkdir(parents=True)
    assert marked_home(deep) is None and project_home(deep) == deep.resolve()  # unmarked: each folder its own
    init_home(project)
    init_home(project)  # idempotent
    assert marked_home(deep) == project.resolve()
    assert project_home(deep) == project.resolve()
    monkeypatch.chdir(deep)
    assert settle_home() == project.resolve() and os.environ["GEOEVAL_ROOT"] == str(project.resolve())
    monkeypatch.delenv("GEOEVAL_ROOT")
    monkeypatch.setenv("GEOEVAL_HOME", str(tmp_path / "elsewhere"))
    assert project_home(deep) == (tmp_path / "elsewhere").resolve()
    assert settle_home() == (tmp_path / "elsewhere").resolve()


def test_settle_home_leaves_an_unmarked_folder_alone(tmp_path, monkeypatch, no_home_env):
    monkeypatch.chdir(tmp_path)
    assert settle_home() is None and "GEOEVAL_ROOT" not in os.environ


@pytest.mark.slow
def test_a_run_in_a_subfolder_writes_to_the_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("GEOEVAL_HOME", "GEOEVAL_ROOT")}
    init = subprocess.run(geoeval_cmd("init"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    sub = tmp_path / "notebooks" / "week1"
    sub.mkdir(parents=True)
    proc = subprocess.run(
        geoeval_cmd("suite=maptab", "model=oracle", "runner=local", "tracking=none", "env.n_maps=1", "limit=2"),
        cwd=sub,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "results" / "geoeval.duckdb").is_file()
    assert (tmp_path / "logs").is_dir() and (tmp_path / "outputs").is_dir()
    assert not any(sub.iterdir())  # nothing in the folder it ran from
    again = subprocess.run(
        geoeval_cmd("suite=maptab", "model=oracle", "runner=local", "tracking=none", "env.n_maps=1", "limit=2"),
        cwd=tmp_path / "notebooks",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0 and "2 sample(s) already scored, 0 to run" in again.stderr, again.stderr[-3000:]
