"""Composing a config with the schemas, not the YAML files, as the authority on which keys exist.

Hydra refuses an override of a key that the composed YAML does not have (`suite.tools=[x]` for a
suite whose YAML leaves `tools` at its schema default) and advises `+`. geoeval's schemas say
which keys exist: `compose_config` retries such an override as `++key=value` when the group's
schema (the suite's own for `suite` and `env`) has the key, and refuses it, naming the key and the
schema's keys, when it does not. `schema_authority` gives the rewritten command line, which the
main command hands to Hydra (`precheck`).

`compose_suite_spec` is the composition behind `geoeval meta-eval <suite>`, `geoeval score
<suite>` and `inspect eval geoeval/<suite>`: the suite's own metric set and environment where
configs are named after them (in `conf/` or a plugin's), tracking off.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from geoeval.core.errors import GeoevalError

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from geoeval.core.config.schema import RunSpec

_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'")
#: at most this many overrides are retried as `++` in one composition
_MAX_RETRIES = 16


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (`X`, `X | None`, `Optional[X]`), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [m for m in map(_model_of, typing.get_args(annotation)) if m is not None]
        return found[0] if len(found) == 1 else None
    return None


def _is_mapping(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    if origin in (typing.Union, types.UnionType):
        return any(_is_mapping(a) for a in typing.get_args(annotation))
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _group_schema(group: str, cfg: DictConfig) -> type[BaseModel] | None:
    """The schema of a top-level group in the config `cfg` (the suite's own for `suite`/`env`)."""
    from geoeval.core.config import schema

    if group in ("suite", "env"):
        from geoeval.core.registry import get_suite

        name = cfg.get("suite", {}).get("name") if hasattr(cfg.get("suite", {}), "get") else None
        if not isinstance(name, str):
            return None
        suite = get_suite(name)
        if group == "suite":
            return suite.config_schema
        if not isinstance(suite.env_schema, Mapping):
            return suite.env_schema
        env_name = cfg.get("env", {}).get("name") if hasattr(cfg.get("env", {}), "get") else None
        return suite.env_schema.get(str(env_name))
    found: dict[str, type[BaseModel]] = {
        "model": schema.ModelSpec,
        "judge": schema.JudgeSpec,
        "metrics": schema.MetricsSpec,
        "scoring": schema.ScoringSpec,
        "budget": schema.BudgetSpec,
        "pricing": schema.PricingSpec,
        "runner": schema.RunnerSpec,
        "tracking": schema.TrackingSpec,
    }
    return found.get(group)


def schema_keys(key: str, cfg: DictConfig) -> tuple[bool, list[str]]:
    """Whether the schemas have the dotted `key` (a key under a mapping field, e.g.
    `model.args.x`, exists), and the keys the schema has where `key` points (for a hint)."""
    from geoeval.core.config import schema

    parts = key.split(".")
    if len(parts) == 1:
        fields = sorted(schema.RunSpec.model_fields)
        return parts[0] in fields, fields
    model = _group_schema(parts[0], cfg)
    for depth, part in enumerate(parts[1:], 1):
        if model is None:
            return False, []
        fields = sorted(model.model_fields)
        if part not in model.model_fields:
            return False, fields
        annotation = model.model_fields[part].annotation
        if depth == len(parts) - 1 or _is_mapping(annotation):
            return True, fields
        model = _model_of(annotation)
    return False, []


def compose_config(overrides: Sequence[str], *, return_hydra_config: bool = False) -> tuple[DictConfig, list[str]]:
    """Compose `config` with `overrides` (Hydra must be initialised) and the overrides as used:
    an override of a key that the composed YAML lacks but the schema has is retried as
    `++key=value`; one the schema lacks is a `GeoevalError` naming the key and the schema's keys."""
    from hydra import compose
    from hydra.errors import ConfigCompositionException

    used = list(overrides)
    for _ in range(_MAX_RETRIES):
        try:
            return compose(config_name="config", overrides=used, return_hydra_config=return_hydra_config), used
        except ConfigCompositionException as exc:
            match = _NOT_IN_STRUCT.search(f"{exc} {exc.__cause__ or ''}")
            if not match:
                raise
            key = match.group(1)
            position = next((i for i, o in enumerate(used) if _override_key(o) == key and "=" in o), None)
            if position is None:
                raise
            others = [o for i, o in enumerate(used) if i != position]
            try:  # the others retried the same way: two keys the YAML lacks (model.serve.log_path, ...)
                base, _ = compose_config(others)
            except GeoevalError:
                raise
            except Exception:  # noqa: BLE001 - the other overrides fail on their own: report the first error
                raise exc from None
            exists, allowed = schema_keys(key, base)
            if not exists:
                hint = f" (allowed keys: {', '.join(allowed)})" if allowed else ""
                raise GeoevalError(f"Invalid config:\n  {key}: unknown key{hint}") from None
            used[position] = "++" + used[position].lstrip("+")
    raise GeoevalError(f"Invalid config: more than {_MAX_RETRIES} overrides of keys the YAML files lack")


def schema_authority(overrides: Sequence[str]) -> list[str]:
    """`overrides` with every override of a key that the schema has and the YAML lacks written
    `++key=value`, for Hydra to compose; an unknown key is a `GeoevalError` (see `compose_config`)."""
    from hydra import initialize_config_module

    from geoeval.core.config.search_path import register

    register()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        return compose_config(overrides)[1]


def _has_option(group: str, name: str) -> bool:
    from hydra.core.global_hydra import GlobalHydra

    return name in GlobalHydra.instance().config_loader().get_group_options(group)


def generated_env(suite_name: str, default: str) -> str:
    """The environment a meta-evaluation uses when none is given: the primary config's where the
    suite takes it, else the suite's generated one (no external files needed), else the config
    named after the environment the suite's schema defaults to (a plugin's `env/<name>.yaml`)."""
    from geoeval.core.registry import get_suite

    schemas = get_suite(suite_name).env_schema
    if not isinstance(schemas, Mapping):
        field = schemas.model_fields.get("name")
        named = field.default if field is not None else None
        return named if isinstance(named, str) and named != default and _has_option("env", named) else default
    if default in schemas:
        return default
    generated = [name for name in schemas if name.endswith(("_synthetic", "_generated"))]
    return (generated or list(schemas))[0]


def compose_suite_spec(suite: str, overrides: Sequence[str]) -> RunSpec:
    """The validated RunSpec of `suite=<suite> <overrides>`, tracking off (nothing is logged),
    with the suite's own metric set and environment unless the overrides name them."""
    from hydra import initialize_config_module

    from geoeval.core.config.search_path import register
    from geoeval.core.config.validate import validate_config

    register()
    given = {_override_key(o) for o in overrides}
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        try:
            # the suite's own metric set where one is named after it (maptab_qa, lifeplanner, ...)
            metrics = [f"metrics={suite}"] if "metrics" not in given and _has_option("metrics", suite) else []
            env: list[str] = []
            if "env" not in given:  # the suite's environment, chosen before `env.*` overrides apply
                base, _ = compose_config([f"suite={suite}", *metrics, "tracking=none"])
                chosen = generated_env(str(base.suite.name), str(base.env.name))
                env = [f"env={chosen}"] if chosen != str(base.env.name) else []
            cfg, _ = compose_config([f"suite={suite}", *metrics, *env, "tracking=none", *overrides])
        except GeoevalError:
            raise
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors: one line, naming the override
            raise GeoevalError(f"Invalid config: {exc}") from None
    return validate_config(cfg)
