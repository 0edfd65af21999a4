"""`geoeval env build lifeplanner ...` (`geoeval.suites.lifeplanner.cli.env_build`): a synthetic city
from the command line, and its usage errors. The OSM source is tested with the other OSM tests
(tests/lifeplanner_mcp)."""

from __future__ import annotations

import duckdb

from geoeval.suites.lifeplanner.cli import env_build as main


def test_builds_a_synthetic_city_with_the_requested_size(tmp_path, capsys):
    out = tmp_path / "sub" / "city.duckdb"
    assert (
        main(
            [
                "--source",
                "synthetic",
                "--out",
                str(out),
                "--seed",
                "4",
                "--places",
                "120",
                "--notes",
                "250",
                "--area-km2",
                "1",
            ]
        )
        == 0
    )
    con = duckdb.connect(str(out), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM places").fetchone()[0] == 120
        assert con.execute("SELECT count(*) FROM notes").fetchone()[0] == 250
    finally:
        con.close()
    assert "synthetic city, seed 4, 120 places, 250 notes" in capsys.readouterr().out


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "c.duckdb"), "--source", "moon"]) == 2
    assert main([]) == 2  # --out is required
    assert main(["--source", "osm", "--out", str(tmp_path / "c.duckdb"), "--places", "10"]) == 2
    assert "use --notes-per-place with osm" in capsys.readouterr().err
    assert main(["--out", str(tmp_path / "c.duckdb"), "--places", "3", "--notes", "100"]) == 2
    assert "--places must be in [50, 100000]" in capsys.readouterr().err
    assert not (tmp_path / "c.duckdb").exists()


def osm_config(tmp_path, **env):
    from geoeval.core.config.validate import validate_config

    return validate_config(
        {
            "work_dir": str(tmp_path),
            "env": {"name": "lifeplanner_osm", **env},
            "suite": {"name": "lifeplanner"},
            "model": {"name": "geoeval/oracle"},
            "judge": {"models": ["rules"]},
            "metrics": {"name": "lifeplanner", "metrics": ["pr"]},
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }
    )


def test_the_osm_environment_is_validated_by_its_own_schema(tmp_path):
    import pytest

    from geoeval.core.errors import GeoevalError
    from geoeval.core.registry import get_suite

    assert osm_config(tmp_path).env.notes_per_place == 10.0
    with pytest.raises(GeoevalError, match="env.notes_per_place"):
        osm_config(tmp_path, notes_per_place=-1)
    with pytest.raises(GeoevalError, match="env.n_places"):  # a synthetic-only key
        osm_config(tmp_path, n_places=100)
    with pytest.raises(GeoevalError, match="OSM extract not found"):
        get_suite("lifeplanner").build_env(osm_config(tmp_path, pbf=str(tmp_path / "missing.osm.pbf")))
