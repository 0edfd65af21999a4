"""A loaded map that fails a quality check is reported with the check and the offending rows, and
is excluded or stops the run, as configured: never silently used."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from geoeval.core.config.validate import validate_config
from geoeval.core.errors import GeoevalError
from geoeval.core.registry import get_suite


def spec(tmp_path, root, policy):
    return validate_config(
        {
            "work_dir": str(tmp_path / "work"),
            "env": {"name": "maptab_authors", "root": str(root), "scenario": "both", "on_quality_failure": policy},
            "suite": {"name": "maptab"},
            "model": {"name": "geoeval/oracle"},
            "judge": {"models": ["rules"]},
            "metrics": {"name": "maptab_rp", "metrics": ["ema"]},
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }
    )


@pytest.fixture
def broken_release(tmp_path, peers):
    root = tmp_path / "release"
    shutil.copytree(peers / "maptab", root)
    folder = root / "metromap" / "tabulars" / "america"
    for name in ("cleveland_edge.json",):
        rows = json.loads((folder / name).read_text(encoding="utf-8-sig"))
        rows.append(dict(rows[0]))  # a duplicate edge row: B.5 "duplicates"
        (folder / name).write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    csv = folder / "cleveland_edge.csv"
    lines = csv.read_text(encoding="utf-8-sig").splitlines()
    csv.write_text("\n".join(lines + [lines[1]]) + "\n", encoding="utf-8")
    return root


def test_failing_map_is_excluded_and_reported(tmp_path, broken_release, capsys):
    suite = get_suite("maptab")
    s = spec(tmp_path, broken_release, "exclude")
    env = suite.build_env(s)
    samples = suite.build_samples(s, env)
    err = capsys.readouterr().err
    assert "cleveland" in err and "excluded" in err
    assert samples and all("cleveland" not in str(x.id) and x.metadata["map"] != "cleveland" for x in samples)
    quality = json.loads((Path(env.items_path).parent / "quality.json").read_text())
    assert quality["excluded"]["maps"] == ["cleveland"]
    assert any("uplicate" in p for p in quality["maps"]["cleveland"])


def test_failing_map_stops_the_run_when_configured(tmp_path, broken_release):
    with pytest.raises(GeoevalError) as err:
        get_suite("maptab").build_env(spec(tmp_path, broken_release, "fail"))
    assert "cleveland" in str(err.value) and "on_quality_failure" in str(err.value)


def test_clean_release_loses_nothing(tmp_path, peers):
    suite = get_suite("maptab")
    s = spec(tmp_path, peers / "maptab", "fail")
    assert len(suite.build_samples(s, suite.build_env(s))) == 24


@pytest.fixture
def truncated_image_release(tmp_path, peers):
    root = tmp_path / "release"
    shutil.copytree(peers / "maptab", root)
    image = root / "metromap" / "images" / "america" / "cleveland.png"
    data = image.read_bytes()
    image.write_bytes(data[: len(data) // 2])  # a download cut off half-way
    return root


def test_a_truncated_image_follows_the_quality_policy(tmp_path, truncated_image_release, capsys):
    suite = get_suite("maptab")
    s = spec(tmp_path / "exclude", truncated_image_release, "exclude")
    env = suite.build_env(s)
    samples = suite.build_samples(s, env)
    assert "cleveland" in capsys.readouterr().err
    assert samples and all(x.metadata["map"] != "cleveland" for x in samples)
    quality = json.loads((Path(env.items_path).parent / "quality.json").read_text())
    assert quality["excluded"]["maps"] == ["cleveland"]
    assert any("image cleveland.png cannot be read" in p for p in quality["maps"]["cleveland"])

    with pytest.raises(GeoevalError, match=r"map cleveland: image cleveland.png cannot be read"):
        suite.build_env(spec(tmp_path / "fail", truncated_image_release, "fail"))
