"""A bad config fails before any work with geoeval's own message naming the key, and leaves no
`outputs/` folder behind."""

from __future__ import annotations

import subprocess

from tests.conftest import geoeval_cmd


def test_a_typo_is_named_by_geoeval_first_and_nothing_is_created(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("model.config.temprature=0.5"), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == "geoeval: error: Invalid config:"
    # the hint lists the schema's keys, not only those the YAML happens to set
    assert "model.config.temprature: unknown key (allowed keys: attempt_timeout, max_connections," in proc.stderr
    assert "To append to your config use +" not in proc.stderr  # not Hydra's advice
    assert list(tmp_path.iterdir()) == []  # no outputs/, no results/


def test_an_invalid_value_is_named_before_outputs_exist(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("runner=ray", "runner.num_workers=0"), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "runner.num_workers" in proc.stderr
    assert not (tmp_path / "outputs").exists()


def test_an_experiment_that_is_not_yaml_is_one_line_with_its_place(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "broken.yaml").write_text("# @package _global_\nmodel: [oracle\nsuite: {\n")
    proc = subprocess.run(geoeval_cmd("+experiment=broken"), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("geoeval: error: Invalid config: a file is not valid YAML:")
    assert "broken.yaml" in proc.stderr and "line 2" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiments"]  # no outputs/
