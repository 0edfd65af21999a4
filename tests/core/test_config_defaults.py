"""One source of defaults: where a shipped YAML file and its pydantic schema both give a default,
they agree, so a Python caller (a plugin, a test, `inspect eval geoeval/maptab`) and a command
line get the same run. The YAML is what users read and override; the schema repeats each value
only so that Python callers need not compose YAML, and this test keeps the two identical.

Checked: the primary config against `RunSpec`, every group's base option (the one the primary
config's defaults list selects) against its schema, and every suite and env file against its
suite's schemas."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from geoeval.core.config.schema import JudgeSpec, RunnerSpec, RunSpec, TrackingSpec
from geoeval.core.config.validate import _env_schema
from geoeval.core.registry import get_suite, suite_names

CONF = Path(__file__).resolve().parents[2] / "conf"


def _normal(value):
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return _normal(value.model_dump())
    return value


def disagreements(yaml_path: Path, schema: type[BaseModel]) -> list[str]:
    """Where the YAML's values (interpolations resolved as with no `$GEOEVAL_ROOT`: the paths under
    the current directory) differ from the schema's defaults."""
    loaded = OmegaConf.load(yaml_path)
    kept = [str(k) for k in loaded if k not in ("defaults", "hydra")]  # Hydra's own resolvers are not here
    data = OmegaConf.to_container(OmegaConf.masked_copy(loaded, kept), resolve=True)
    out = []
    for key, value in data.items():
        if key in ("defaults", "hydra"):
            continue
        field = schema.model_fields.get(key)
        if field is None:
            out.append(f"{yaml_path.relative_to(CONF)}: {key}: not in the schema {schema.__name__}")
            continue
        if field.default_factory is not None:
            default = field.default_factory()
        elif field.default is PydanticUndefined:
            continue  # required: the YAML is the only source
        else:
            default = field.default
        if _normal(default) != _normal(value):
            out.append(f"{yaml_path.relative_to(CONF)}: {key}: YAML {value!r} != schema {default!r}")
    return out


def test_the_primary_config_and_the_base_groups_agree_with_their_schemas(monkeypatch):
    monkeypatch.delenv("GEOEVAL_ROOT", raising=False)
    problems = disagreements(CONF / "config.yaml", RunSpec)
    problems += disagreements(CONF / "runner" / "local.yaml", RunnerSpec)
    problems += disagreements(CONF / "tracking" / "mlflow.yaml", TrackingSpec)
    problems += disagreements(CONF / "judge" / "rules.yaml", JudgeSpec)
    assert problems == []


@pytest.mark.parametrize("suite_name", [n for n in suite_names() if (CONF / "suite" / f"{n}.yaml").exists()])
def test_each_suite_file_agrees_with_its_schema(suite_name):
    assert disagreements(CONF / "suite" / f"{suite_name}.yaml", get_suite(suite_name).config_schema) == []


def test_each_env_file_agrees_with_its_schema():
    problems = []
    for path in sorted((CONF / "env").glob("*.yaml")):
        data = OmegaConf.to_container(OmegaConf.load(path))
        suite = next((get_suite(n) for n in suite_names() if path.stem.startswith(n.split("_")[0])), None)
        if suite is None:
            continue
        problems += disagreements(path, _env_schema(suite, data))
    assert problems == []


def test_every_key_of_every_group_option_is_in_its_schema():
    """Variants (runner/ray, model/openai, ...) may change values, never invent keys."""
    from geoeval.core.config.schema import MetricsSpec, ModelSpec

    schemas = {
        "runner": RunnerSpec,
        "tracking": TrackingSpec,
        "judge": JudgeSpec,
        "model": ModelSpec,
        "metrics": MetricsSpec,
    }
    unknown = []
    for group, schema in schemas.items():
        for path in sorted((CONF / group).glob("*.yaml")):
            data = OmegaConf.to_container(OmegaConf.load(path), resolve=False) or {}
            unknown += [f"{group}/{path.name}: {k}" for k in data if k not in schema.model_fields and k != "defaults"]
    assert unknown == []


@pytest.mark.parametrize(
    ("overrides", "live"),
    [
        (["model=table_baseline"], False),  # an offline agent: samples take milliseconds
        (["model=table_baseline", "runner.log_realtime=true"], True),
        (["model=openai_api"], True),  # a real model: worth watching in `inspect view`
        (["model=openai_api", "runner.log_realtime=false"], False),
    ],
)
def test_the_live_sample_buffer_is_on_for_real_models_and_off_for_offline_agents(tmp_path, overrides, live):
    from geoeval.core.run.inspect_bridge import live_sample_buffer
    from tests.conftest import compose_spec

    spec = compose_spec(tmp_path, *overrides)
    assert spec.runner.log_realtime in ("auto", True, False)
    assert live_sample_buffer(spec) is live
