"""Config composition and validation: bad configs stop before any work, naming the key."""

from __future__ import annotations

import subprocess

import pytest
from hydra import compose, initialize_config_module

from geoeval.core.config.validate import validate_config
from geoeval.core.errors import GeoevalError
from tests.conftest import geoeval_cmd


def composed(*overrides: str):
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_default_config_validates_with_typed_groups():
    spec = validate_config(composed())
    assert spec.suite.name == "maptab"
    assert spec.suite.resolution == 1.0
    assert spec.model.name == "geoeval/table_baseline"
    assert spec.runner.name == "local"
    assert spec.metrics.metrics == ["ema", "pma", "ds"]


def test_shipped_experiment_composes_into_a_sweep():
    cfg = composed("+experiment=maptab_resolution_sweep")
    assert cfg.model.name == "geoeval/perception_baseline"
    assert cfg.runner.name == "ray"
    spec = validate_config(cfg)
    assert spec.experiment_name == "maptab_resolution_sweep"


@pytest.mark.parametrize(
    "override, key",
    [
        ("suite.resolution=0", "suite.resolution"),
        ("suite.resolution=1.5", "suite.resolution"),
        ("+suite.resoluton=0.5", "suite.resoluton"),
        ("suite.n_per_category=zero", "suite.n_per_category"),
        ("runner.max_samples=0", "runner.max_samples"),
        ("suite.table_format=xml", "suite.table_format"),
        ("+runner.bogus=1", "runner.bogus"),
        ("model.name=nosuchprovider/x", "model.name"),
        ("metrics.metrics=[ema,nope]", "metrics.metrics"),
    ],
)
def test_invalid_values_name_the_key(override, key):
    with pytest.raises(GeoevalError) as err:
        validate_config(composed(override))
    assert key in str(err.value)


def test_unknown_provider_lists_valid_ones():
    with pytest.raises(GeoevalError) as err:
        validate_config(composed("model.name=nosuchprovider/x"))
    msg = str(err.value)
    assert "openai-api" in msg and "geoeval" in msg and "anthropic" in msg


def test_config_hash_ignores_runner_but_not_suite():
    a = validate_config(composed())
    b = validate_config(composed("runner=ray"))
    c = validate_config(composed("suite.resolution=0.5"))
    assert a.config_hash() == b.config_hash()
    assert a.config_hash() != c.config_hash()


def test_cli_rejects_bad_config_before_work(tmp_path):
    proc = subprocess.run(
        geoeval_cmd(
            "suite.resolution=2",
            f"results_db={tmp_path}/r.duckdb",
            f"work_dir={tmp_path}/w",
            "tracking.enabled=false",
            f"hydra.run.dir={tmp_path}/out",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "suite.resolution" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "w").exists()  # no environment was built
    assert not (tmp_path / "r.duckdb").exists()


def test_cli_unknown_group_option_names_available_ones(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("model=gpt5000", f"hydra.run.dir={tmp_path}/out"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "model" in proc.stderr and "oracle" in proc.stderr


def test_user_experiments_folder_is_on_the_search_path(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "my_study.yaml").write_text(
        "# @package _global_\nexperiment_name: my_study\nsuite:\n  resolution: 0.25\n"
    )
    proc = subprocess.run(
        geoeval_cmd("+experiment=my_study", "--cfg", "job"), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "experiment_name: my_study" in proc.stdout
    assert "resolution: 0.25" in proc.stdout


@pytest.mark.slow
def test_sweep_validates_every_job_before_the_first_runs(tmp_path):
    proc = subprocess.run(
        geoeval_cmd("-m", "suite.resolution=1,2", "tracking=none", "env.n_maps=1", "suite.n_per_category=1"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "suite.resolution" in proc.stderr
    assert not (tmp_path / "results").exists()  # job 0 (resolution=1, valid) never started


def test_the_schema_decides_which_keys_exist_not_the_yaml():
    """`model.config.max_connections` is in the schema, not in conf/model/*.yaml: it is accepted
    as typed (Hydra alone wants `+`), while a key no schema has is refused with the schema's keys."""
    from geoeval.core.config.compose import schema_authority
    from geoeval.core.config.precheck import precheck

    typed = ["model.config.max_connections=32", "suite.n_per_category=2", "tracking=none"]
    assert schema_authority(typed) == ["++model.config.max_connections=32", *typed[1:]]
    assert precheck(typed)[0] == "++model.config.max_connections=32"
    with pytest.raises(
        GeoevalError, match=r"model\.config\.max_conections: unknown key \(allowed keys: .*max_connections"
    ):
        schema_authority(["model.config.max_conections=32"])
    with pytest.raises(GeoevalError, match=r"suite\.toolz: unknown key \(allowed keys: .*tools"):
        schema_authority(["suite.toolz=[x]"])


def test_a_sweep_over_a_key_the_yaml_lacks_keeps_its_values():
    from geoeval.core.config.precheck import precheck

    args = ["-m", "model.config.max_connections=4,8", "tracking=none"]
    assert precheck(args) == ["-m", "++model.config.max_connections=4,8", "tracking=none"]


def test_two_keys_the_yaml_lacks_in_one_command_are_both_set():
    """docs/real-models.md's `model.serve.log_path=... model.serve.prompt_log_path=...`: each key
    the model's YAML lacks (`serve` is a mapping) is forced, not only the first (the second once
    made the first's retry fail, and Hydra stopped the run with "Key 'prompt_log_path' is not in struct")."""
    from geoeval.core.config.precheck import precheck

    args = ["model=local_llm", "model.serve.prompt_log_path=p.jsonl", "model.serve.log_path=s.log", "limit=1"]
    assert precheck(args) == [
        "model=local_llm",
        "++model.serve.prompt_log_path=p.jsonl",
        "++model.serve.log_path=s.log",
        "limit=1",
    ]
