"""The registry of suites, metrics and tools, and plugin discovery.

The core never imports a suite or an agent: suites, metrics, tools and agents (built-in or
plugin) register themselves here when their module is imported, and the modules are found the
same way for all: the `geoeval.plugins` entry-point group (geoeval's own `pyproject.toml` names
its built-in suites and agents there), or a `_target_`-style dotted path in `GEOEVAL_PLUGINS`
(comma-separated). `tests/core/test_architecture.py` fails on any import from the core into a
suite or an agent.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol

from pydantic import BaseModel

from geoeval.core.errors import GeoevalError

PLUGIN_GROUP = "geoeval.plugins"


class MetricContext(Protocol):
    """What a metric function sees for one sample (see `geoeval.core.scoring.MetricInput`)."""

    answer: str
    target: list[str]
    metadata: dict[str, Any]


MetricFn = Callable[[Any], float]


@dataclass
class MetricSpec:
    name: str
    fn: MetricFn
    suites: tuple[str, ...] | None  # None: applies to every suite
    description: str = ""


@dataclass
class ToolSpec:
    """A tool factory: called with the sample-independent environment handle of the suite,
    returns an Inspect `Tool`."""

    name: str
    factory: Callable[..., Any]
    suites: tuple[str, ...] | None
    description: str = ""


class SuiteSpec(Protocol):
    """What a suite provides (see `geoeval.suites.maptab.suite.MapTabSuite` for the reference one)."""

    name: str
    config_schema: type[BaseModel]
    env_schema: type[BaseModel]
    # optional declarations the core's reports read (a plugin suite gets the same reports):
    # scoring_version: str                part of the run identity; bump when scoring changes
    # agent_versions: dict[str, str]      offline agent -> version of its own algorithm (run identity)
    # headline_metrics: tuple[str, ...]   what sweep tables and plots lead with
    # log2_sweep_axes: tuple[str, ...]    swept keys plotted on a log2 axis (e.g. "suite.resolution")

    def build_env(self, spec: Any) -> Any: ...  # returns a picklable environment handle
    def build_samples(self, spec: Any, env: Any) -> list[Any]: ...  # Inspect Samples
    def build_task(self, spec: Any, env: Any, samples: list[Any]) -> Any: ...  # Inspect Task
    def after_run(self, spec: Any, env: Any, results: list[Any], out_dir: Any) -> list[Any]: ...


@dataclass
class _Registry:
    suites: dict[str, Any] = field(default_factory=dict)
    # a metric name may be registered once per suite (e.g. `acc` by two suites), or once for all
    metrics: dict[str, list[MetricSpec]] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    loaded: bool = False


_REG = _Registry()


def register_suite(suite: Any) -> Any:
    """Register a suite instance (or class, instantiated with no arguments)."""
    obj = suite() if isinstance(suite, type) else suite
    _REG.suites[obj.name] = obj
    return suite


def register_metric(name: str, *, suites: list[str] | tuple[str, ...] | None = None, description: str = ""):
    """Decorator: `@register_metric("ema", suites=["maptab"])` on `fn(ctx) -> float`."""

    def deco(fn: MetricFn) -> MetricFn:
        spec = MetricSpec(name, fn, tuple(suites) if suites else None, description or (fn.__doc__ or "").strip())
        # re-registering the same scope replaces it (module reloads, tests)
        others = [m for m in _REG.metrics.get(name, []) if m.suites != spec.suites]
        _REG.metrics[name] = [*others, spec]
        return fn

    return deco


def register_tool(name: str, *, suites: list[str] | tuple[str, ...] | None = None, description: str = ""):
    """Decorator: `@register_tool("station_neighbors", suites=["maptab"])` on `factory(env) -> Tool`."""

    def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
        _REG.tools[name] = ToolSpec(name, factory, tuple(suites) if suites else None, description)
        return factory

    return deco


#: Set by the driver in a cluster worker's environment: the driver's entry-point modules, which
#: a worker running shipped code (no installed geoeval, so no entry-point metadata) imports instead
SHIPPED_ENTRY_POINTS_ENV = "GEOEVAL_SHIPPED_ENTRY_POINTS"


def _plugin_entry_points() -> list[Any]:
    found = entry_points(group=PLUGIN_GROUP)
    return sorted(found, key=lambda ep: (not ep.name.startswith("builtin_"), ep.name))


def entry_point_modules() -> list[str]:
    """The modules of this installation's `geoeval.plugins` entry points, built-ins first."""
    return [ep.value.split(":", 1)[0] for ep in _plugin_entry_points()]


def load_plugins(extra: list[str] | None = None) -> None:
    """Import built-in suites, every `geoeval.plugins` entry point (or, in a cluster worker that
    runs the driver's shipped code, the driver's entry-point modules), and dotted paths in
    `extra` or `GEOEVAL_PLUGINS`. Idempotent."""
    if not _REG.loaded:
        found = [(ep.name, ep.value, ep.load) for ep in _plugin_entry_points()]
        if not any(name == "builtin_suites" for name, _, _ in found):
            shipped = [m for m in os.environ.get(SHIPPED_ENTRY_POINTS_ENV, "").split(",") if m]
            if not shipped:
                raise GeoevalError(
                    "geoeval's built-in suites are not registered: install geoeval "
                    "(pip install -e .) so that its `geoeval.plugins` entry points exist"
                )
            found = [(m, m, lambda m=m: importlib.import_module(m)) for m in shipped]
        for name, value, load in found:
            try:
                load()
            except Exception as exc:  # a broken plugin must not hide which one it is
                raise GeoevalError(f"Plugin entry point '{name}' ({value}) failed to load: {exc}") from exc
        _REG.loaded = True
    paths = list(extra or []) + [p for p in os.environ.get("GEOEVAL_PLUGINS", "").split(",") if p.strip()]
    for path in paths:
        load_target(path.strip())


def load_target(path: str) -> Any:
    """Import `pkg.module` or `pkg.module:attr` / `pkg.module.attr` (Hydra `_target_` style)."""
    module_name, _, attr = path.partition(":")
    try:
        if attr:
            return getattr(importlib.import_module(module_name), attr)
        try:
            return importlib.import_module(path)
        except ModuleNotFoundError:
            mod, _, attr = path.rpartition(".")
            return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as exc:
        raise GeoevalError(f"Cannot import plugin target '{path}': {exc}") from None


def get_suite(name: str) -> Any:
    load_plugins()
    if name not in _REG.suites:
        raise GeoevalError(
            f"Invalid config: suite.name: unknown suite '{name}' (available: {', '.join(sorted(_REG.suites))})"
        )
    return _REG.suites[name]


def suite_names() -> list[str]:
    load_plugins()
    return sorted(_REG.suites)


def get_metric(name: str, suite: str | None = None) -> MetricSpec:
    """The metric `name` for `suite`: the suite's own registration first, else a global one."""
    load_plugins()
    specs = _REG.metrics.get(name, [])
    for spec in specs:
        if suite is not None and spec.suites is not None and suite in spec.suites:
            return spec
    for spec in specs:
        if spec.suites is None:
            return spec
    if suite is None and specs:
        return specs[0]
    raise KeyError(f"no metric '{name}' for suite '{suite}'")


def metric_names(suite: str | None = None) -> set[str]:
    load_plugins()
    return {
        n
        for n, specs in _REG.metrics.items()
        if any(suite is None or m.suites is None or suite in m.suites for m in specs)
    }


def get_tool(name: str) -> ToolSpec:
    load_plugins()
    if name not in _REG.tools:
        raise GeoevalError(f"unknown tool '{name}' (available: {', '.join(sorted(_REG.tools)) or 'none'})")
    return _REG.tools[name]


def tool_names() -> set[str]:
    load_plugins()
    return set(_REG.tools)


def provider_names() -> set[str]:
    """Every provider a model string may name: Inspect's built-in ones and every `@modelapi`
    registered so far (geoeval's offline agents included), read from Inspect's registry."""
    from geoeval.core.private_api import registered_model_apis

    load_plugins()  # geoeval's offline agents and any plugin's providers register on import

    return {str(o.__registry_info__.name).split("/")[-1] for o in registered_model_apis()}


def check_provider(model: str, *, key: str) -> None:
    provider = model.split("/", 1)[0]
    valid = provider_names()
    if provider not in valid:
        raise GeoevalError(
            f"Invalid config: {key}: unknown model provider '{provider}' in '{model}' "
            f"(valid providers: {', '.join(sorted(valid))})"
        )
