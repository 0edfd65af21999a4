"""Stage timers (`geoeval.core.timing`): what `bench/profile_main.py` adds up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from geoeval.core import timing


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv(timing.PROFILE_DIR_ENV, raising=False)
    monkeypatch.delenv(timing.PROFILE_ENV, raising=False)
    timing.reset()
    yield
    timing.reset()


def test_stages_accumulate_per_name_also_when_they_raise():
    with timing.stage("a"):
        time.sleep(0.02)
    with pytest.raises(ValueError), timing.stage("a"):
        raise ValueError("boom")
    with timing.stage("b"):
        pass
    assert timing.STAGE_COUNTS == {"a": 2, "b": 1}
    assert timing.STAGE_TIMES["a"] >= 0.02 and timing.STAGE_TIMES["b"] < timing.STAGE_TIMES["a"]


def test_profile_dir_gets_one_line_per_stage_and_summarizes(tmp_path, monkeypatch):
    monkeypatch.setenv(timing.PROFILE_DIR_ENV, str(tmp_path))
    with timing.stage("outer"):
        with timing.stage("inner"):
            pass
        with timing.stage("inner"):
            pass
    (tmp_path / "stages-999999.jsonl").write_text(
        json.dumps({"stage": "inner", "seconds": 1.5, "pid": 999999, "t": time.time()}) + "\n{torn"
    )
    events = timing.read_stage_events(tmp_path)
    assert [e["stage"] for e in events[:3]] == ["inner", "inner", "outer"]
    seconds, counts = timing.summarize(events)
    assert counts == {"inner": 3, "outer": 1}
    assert seconds["inner"] >= 1.5  # another process's line is added in


def test_profile_env_prints_the_table_once_when_the_process_exits(tmp_path):
    # a job has several top-level stages: the table comes once, at exit, with all of them
    script = (
        "from geoeval.core import timing\n"
        "for name in ('preflight', 'job', 'reports'):\n"
        "    with timing.stage(name):\n"
        "        with timing.stage('inner'):\n"
        "            pass\n"
        "import sys; print('before exit', file=sys.stderr)\n"
    )
    env = {**os.environ, timing.PROFILE_ENV: "1"}
    env.pop(timing.PROFILE_DIR_ENV, None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("stage times") == 1
    before, table = done.stderr.split("before exit")
    assert "stage times" in table and "stage times" not in before
    assert all(name in table for name in ("preflight", "job", "reports")) and "x3" in table  # inner ran 3 times
    env.pop(timing.PROFILE_ENV)
    quiet = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert "stage times" not in quiet.stderr


def test_format_table_orders_by_seconds_with_shares():
    text = timing.format_table({"fast": 1.0, "slow": 3.0}, {"fast": 1, "slow": 2}, total=4.0)
    lines = text.splitlines()
    assert "slow" in lines[1] and "75.0 %" in lines[1] and "fast" in lines[2] and "25.0 %" in lines[2]
