"""Validation of a composed Hydra config into a `RunSpec` (`validate_config`): each group against
its schema (the suite's own for `suite` and `env`, read from the registry), and the checks that
need the registry (known providers, metrics and tools). Apart from `schema`, which holds the
models alone, so that the registry can name `RunSpec` in the suite contract while the schemas
never import the registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from pydantic import BaseModel, ValidationError

from geoeval.core.config.providers import check_provider
from geoeval.core.config.schema import (
    _TOP_LEVEL,
    BudgetSpec,
    JudgeSpec,
    MetricsSpec,
    ModelSpec,
    PricingSpec,
    RunnerSpec,
    RunSpec,
    ScoringSpec,
    TrackingSpec,
    format_errors,
    to_container,
)
from geoeval.core.config.secrets import is_secret_key, secrets_in_plain_fields
from geoeval.core.cost.pricing import price_for
from geoeval.core.errors import GeoevalError

if TYPE_CHECKING:
    from geoeval.core.registry import SuiteSpec


def _validate_group(group: str, model: type[BaseModel], data: Any) -> BaseModel:
    if not isinstance(data, dict):
        raise GeoevalError(f"Invalid config: `{group}` must be a mapping, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise GeoevalError("Invalid config:\n" + format_errors(group, err, model)) from None


def _env_schema(suite: SuiteSpec, env_data: Any) -> type[BaseModel]:
    """A suite's `env_schema` is one pydantic model, or {env name: model} when the suite offers
    several environments (chosen by `env.name`)."""
    schemas = suite.env_schema
    if not isinstance(schemas, Mapping):
        return schemas
    name = env_data.get("name") if isinstance(env_data, dict) else None
    if not isinstance(name, str) or name not in schemas:
        raise GeoevalError(
            f"Invalid config: env.name: unknown environment {name!r} for suite '{suite.name}' "
            f"(available: {', '.join(sorted(schemas))})"
        )
    return schemas[name]


def _pricing_with_file(pricing: Any) -> Any:
    """The `pricing` group with the models of its `file` added (they win): a missing or
    malformed file is an error naming `pricing.file`, before any work."""
    if not isinstance(pricing, dict) or not pricing.get("file"):
        return pricing
    import yaml

    path = str(pricing["file"])
    try:
        with open(path, encoding="utf-8") as handle:
            extra = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise GeoevalError(
            f"Invalid config: pricing.file: cannot read {path!r} ({type(exc).__name__}: {exc})"
        ) from None
    models = extra.get("models") if isinstance(extra, dict) else None
    if not isinstance(models, dict):
        raise GeoevalError(
            f"Invalid config: pricing.file: {path!r} must hold `models:`, a mapping of model name to "
            "{input, output, cached_input} in USD per million tokens"
        )
    return {**pricing, "models": {**(pricing.get("models") or {}), **models}}


def validate_config(cfg: DictConfig | dict) -> RunSpec:
    """Validate a composed config into a RunSpec, or raise GeoevalError naming every bad key."""
    from geoeval.core import registry

    data = to_container(cfg)
    unknown = sorted(set(data) - _TOP_LEVEL)
    if unknown:
        raise GeoevalError(
            f"Invalid config: unknown top-level key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TOP_LEVEL))})"
        )
    for group in ("env", "suite", "model", "judge", "metrics", "runner", "tracking"):
        if group not in data or data[group] is None:
            raise GeoevalError(f"Invalid config: missing config group `{group}` (choose one with {group}=<option>)")

    suite_data = data["suite"]
    if not isinstance(suite_data, dict) or "name" not in suite_data:
        raise GeoevalError("Invalid config: suite.name is required")
    suite = registry.get_suite(str(suite_data["name"]))

    parts: dict[str, Any] = {
        "suite": _validate_group("suite", suite.config_schema, suite_data),
        "env": _validate_group("env", _env_schema(suite, data["env"]), data["env"]),
        "model": _validate_group("model", ModelSpec, data["model"]),
        "judge": _validate_group("judge", JudgeSpec, data["judge"]),
        "metrics": _validate_group("metrics", MetricsSpec, data["metrics"]),
        "scoring": _validate_group("scoring", ScoringSpec, data.get("scoring") or {}),
        "budget": _validate_group("budget", BudgetSpec, data.get("budget") or {}),
        "pricing": _validate_group("pricing", PricingSpec, _pricing_with_file(data.get("pricing") or {})),
        "runner": _validate_group("runner", RunnerSpec, data["runner"]),
        "tracking": _validate_group("tracking", TrackingSpec, data["tracking"]),
    }
    scalars = {k: v for k, v in data.items() if k not in parts}
    try:
        spec = RunSpec.model_validate({**scalars, **parts})
    except ValidationError as err:
        raise GeoevalError("Invalid config:\n" + format_errors("", err, RunSpec)) from None
    spec._suite_declarations = (str(suite.scoring_version), dict(suite.agent_versions))
    spec._generation_version = str(suite.generation_version)

    copied = secrets_in_plain_fields(data)
    if copied:
        raise GeoevalError(
            "Invalid config:\n"
            + "\n".join(
                f"  {path}: holds the value of a secret ({source}); it would be written in clear wherever "
                "this field goes (the warehouse, MLflow, reports): give the field its own value"
                for path, source in copied
            )
        )
    leaked = sorted(k for k in spec.model.args if k != "api_key" and is_secret_key(k))
    if leaked:
        # Inspect writes model_args into every log; only `api_key` travels apart from them
        raise GeoevalError(
            f"Invalid config: model.args.{leaked[0]}: a secret here would be written to the "
            "Inspect logs; pass the key as model.args.api_key or, better, through the "
            "provider's environment variable (e.g. OPENAI_API_KEY, LOCAL_API_KEY)"
        )
    if spec.budget.usd is not None or spec.budget.sweep_usd is not None:
        called = [("model.name", spec.model.name)] + [("judge.models", j) for j in spec.judge.models if j != "rules"]
        for key, name in called:
            if price_for(spec.pricing, name) is None:
                raise GeoevalError(
                    f"Invalid config: budget.usd: {key} {name!r} has no price, so dollars spent could not be "
                    "counted: add it to the prices (pricing.file=<yaml with models: {name: {input, output}}>) "
                    "or limit tokens instead (budget.tokens)"
                )
    serve_timeout = (spec.model.serve or {}).get("request_timeout_s")
    attempt_timeout = spec.model.config.attempt_timeout
    if serve_timeout is not None and attempt_timeout is not None and float(serve_timeout) >= attempt_timeout:
        raise GeoevalError(
            f"Invalid config: model.serve.request_timeout_s: {serve_timeout:g} s must be below "
            f"model.config.attempt_timeout ({attempt_timeout} s): else the client gives up first and the server "
            "goes on with the abandoned request while the retry waits behind it"
        )
    check_provider(spec.model.name, key="model.name")
    for j in spec.judge.models:
        if j != "rules":
            check_provider(j, key="judge.models")
    # each lookup imports every plugin only when the suite's own do not have the name
    bad = [m for m in spec.metrics.metrics if not registry.has_metric(m, suite.name)]
    if bad:
        raise GeoevalError(
            f"Invalid config: metrics.metrics: unknown metric(s) {', '.join(bad)} for suite "
            f"'{suite.name}' (available: {', '.join(sorted(registry.metric_names(suite.name)))})"
        )
    bad_tools = [t for t in getattr(spec.suite, "tools", []) if not registry.has_tool(t)]
    if bad_tools:
        raise GeoevalError(
            f"Invalid config: suite.tools: unknown tool(s) {', '.join(bad_tools)} "
            f"(available: {', '.join(sorted(registry.tool_names())) or 'none'})"
        )
    return spec
