"""A run killed midway and rerun redoes no finished sample and loses none."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import duckdb
import pytest

from tests.conftest import geoeval_cmd

ARGS = (
    "model=table_baseline",
    "+model.args.delay_s=0.4",
    "runner.max_samples=1",
    "tracking=none",
    "env.n_maps=1",
    "suite.n_per_category=3",
)  # 12 samples, one at a time


def finished(db) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT sample_id, completed_at FROM samples").fetchall()
        orphans = con.execute(
            "SELECT count(*) FROM samples s WHERE (SELECT count(*) FROM scores c WHERE c.sample_id = s.sample_id "
            "AND c.run_hash = s.run_hash) <> 3"
        ).fetchone()[0]
    finally:
        con.close()
    assert orphans == 0, "a sample row without its three score rows"
    return dict(rows)


@pytest.mark.slow
def test_killed_run_resumes_without_loss_or_rework(tmp_path):
    proc = subprocess.Popen(
        geoeval_cmd(*ARGS),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seen = 0
    deadline = time.time() + 240
    buf = ""
    while time.time() < deadline and seen < 4:
        chunk = proc.stderr.read(1)
        if not chunk:
            break
        buf += chunk
        counts = re.findall(r"(\d+)/12", buf[-200:])
        if counts:
            seen = max(seen, int(counts[-1]))
    assert seen >= 4, buf[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)

    before = finished(tmp_path / "results" / "geoeval.duckdb")
    assert 4 <= len(before) < 12, len(before)

    rerun = subprocess.run(geoeval_cmd(*ARGS), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{12 - len(before)} sample(s) evaluated now, {len(before)} resumed" in rerun.stdout
    after = finished(tmp_path / "results" / "geoeval.duckdb")
    assert len(after) == 12
    for sample_id, completed_at in before.items():  # finished samples were not redone
        assert after[sample_id] == completed_at
