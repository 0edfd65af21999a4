"""The registry of suites, metrics and tools, and plugin discovery.

The core never imports a suite or an agent: suites, metrics, tools and agents (built-in or
plugin) register themselves here when their module is imported, and the modules are found the
same way for all: the `geoeval.plugins` entry-point group (geoeval's own `pyproject.toml` names
its built-in suites and agents there), or a `_target_`-style dotted path in `GEOEVAL_PLUGINS`
(comma-separated). `tests/core/test_architecture.py` fails on any import from the core into a
suite or an agent.
"""

from __future__ import annotations

import abc
import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

from pydantic import BaseModel

from geoeval.core.errors import GeoevalError
from geoeval.core.records import MetaEvalAnswer  # a suite's meta-evaluation answers (`Suite.meta_eval_tiers`)

if TYPE_CHECKING:
    from pathlib import Path

    from inspect_ai import Task
    from inspect_ai.dataset import Sample

    from geoeval.core.config.schema import RunSpec, SuiteConfig
    from geoeval.core.records import AnswerScore, AnswerToScore, SampleResult, ScoredAnswer

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


#: A suite's environment schema: one pydantic model, or {env name: model} when the suite offers
#: several environments (the core validates `env` with the one `env.name` chooses)
EnvSchema: TypeAlias = "type[BaseModel] | Mapping[str, type[BaseModel]]"


class SuiteSpec(Protocol):
    """What a suite declares: the contract between the core and every suite, built-in or plugin
    (see `geoeval.suites.maptab.suite.MapTabSuite` for the reference one).

    Required (`register_suite` fails, naming the member, when one is missing): `name`,
    `config_schema`, `env_schema`, `build_env`, `build_samples`, `build_task`. Optional: the rest,
    whose defaults `Suite` gives; a suite subclasses `Suite` and declares only what it has."""

    # read-only members: a suite may declare each as a class attribute of a narrower type

    # ---- required
    @property
    def name(self) -> str: ...
    @property
    def config_schema(self) -> type[BaseModel]: ...  # validates the `suite` config group
    @property
    def env_schema(self) -> EnvSchema: ...  # validates the `env` config group
    def build_env(self, spec: RunSpec[Any, Any]) -> Any: ...  # a picklable environment handle
    def build_samples(self, spec: RunSpec[Any, Any], env: Any) -> list[Sample]: ...
    def build_task(self, spec: RunSpec[Any, Any], env: Any, samples: list[Sample]) -> Task: ...

    # ---- optional (defaults in `Suite`)
    @property
    def scoring_version(self) -> str: ...  # part of the run identity (default: a hash of the scoring code)
    @property
    def generation_version(self) -> str: ...  # bump when what the model sees changes (envs, samples, prompts, tools)
    @property
    def agent_versions(self) -> Mapping[str, str]: ...  # offline agent -> its algorithm's version (its run identity)
    @property
    def headline_metrics(self) -> tuple[str, ...]: ...  # what sweep tables, plots and run descriptions lead with
    @property
    def log2_sweep_axes(self) -> tuple[str, ...]: ...  # swept keys plotted on a log2 axis ("suite.resolution")
    @property
    def report_dimensions(self) -> tuple[str, ...]: ...  # every report and MLflow metric is also split by these
    @property
    def uses_judges(self) -> bool: ...  # scores come from the judge ensemble (provenance names offline judges)
    @property
    def meta_eval_targets(self) -> Mapping[str, float]: ...  # per-metric ordering-accuracy targets (else 1.0)
    @property
    def has_meta_eval(self) -> bool: ...  # whether `meta_eval_answers` is defined
    def meta_eval_answers(self, spec: RunSpec[Any, Any], env: Any, samples: list[Sample]) -> list[ScoredAnswer]: ...
    @property
    def has_score_answers(self) -> bool: ...  # whether `score_answers` is defined
    def score_answers(
        self, spec: RunSpec[Any, Any], env: Any, samples: Mapping[str, Sample], answers: list[AnswerToScore]
    ) -> list[AnswerScore]: ...  # the public scoring entry point (`geoeval.core.scoring.score_answers`)
    def after_run(
        self, spec: RunSpec[Any, Any], env: Any, results: list[SampleResult], out_dir: Path
    ) -> list[Path]: ...
    def summary_notes(self, spec: RunSpec[Any, Any], env: Any, results: list[SampleResult]) -> list[str]: ...
    @property
    def commands(self) -> Mapping[str, str]: ...  # its CLI commands: {name: "module:function"} (`Suite.commands`)
    @property
    def mcp_servers(self) -> Mapping[str, str]: ...  # its MCP servers: {toolset: "module:function"}


#: The members every suite declares itself, and those `Suite` gives defaults for.
REQUIRED_SUITE_MEMBERS = ("name", "config_schema", "env_schema", "build_env", "build_samples", "build_task")
OPTIONAL_SUITE_MEMBERS = (
    "scoring_version",
    "generation_version",
    "agent_versions",
    "headline_metrics",
    "log2_sweep_axes",
    "report_dimensions",
    "uses_judges",
    "meta_eval_targets",
    "has_meta_eval",
    "meta_eval_answers",
    "has_score_answers",
    "score_answers",
    "after_run",
    "summary_notes",
    "commands",
    "mcp_servers",
)


#: a suite's `suite` group schema, its `env` group schema(s), and its environment handle
ConfigT = TypeVar("ConfigT", bound="SuiteConfig")
EnvConfigT = TypeVar("EnvConfigT", bound=BaseModel)
EnvT = TypeVar("EnvT")


class Suite(abc.ABC, Generic[ConfigT, EnvConfigT, EnvT]):
    """The base class of a suite (`SuiteSpec`): the required members are abstract, the optional
    ones have their defaults here. A suite class sets `name`, `config_schema` and `env_schema`,
    implements the three `build_*` methods, and overrides what else it has. Generic over its
    config, env config and handle (`Suite[MapTabSuiteConfig, MapTabEnvConfig, MapTabEnv]`): its
    methods see `spec.suite`, `spec.env` and `env` as those; `Suite` alone is `Suite[Any, Any, Any]`."""

    name: str
    config_schema: type[ConfigT]
    env_schema: EnvSchema

    @abc.abstractmethod
    def build_env(self, spec: RunSpec[ConfigT, EnvConfigT]) -> EnvT:
        """The environment of `spec` (built or loaded from a cache): a picklable handle that
        workers, tools and scorers receive."""

    @abc.abstractmethod
    def build_samples(self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT) -> list[Sample]:
        """The Inspect samples of `spec`, deterministic for a spec and environment."""

    @abc.abstractmethod
    def build_task(self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT, samples: list[Sample]) -> Task:
        """The Inspect task that evaluates `samples`."""

    generation_version: str = "1"
    agent_versions: Mapping[str, str] = MappingProxyType({})
    headline_metrics: tuple[str, ...] = ()
    log2_sweep_axes: tuple[str, ...] = ()
    report_dimensions: tuple[str, ...] = ()
    uses_judges: bool = False
    meta_eval_targets: Mapping[str, float] = MappingProxyType({})
    #: modules whose source the default `scoring_version` hashes besides the suite's own (e.g.
    #: where its scorer or answer reader lives, when that is not the suite's or a metric's module)
    scoring_modules: tuple[str, ...] = ()
    #: its own commands, {name: "module:function"}, `function(argv) -> int | None`, imported when
    #: run: `geoeval <suite> <name>`; `env_build` and `score` also `geoeval env build|score <suite>`
    commands: Mapping[str, str] = MappingProxyType({})
    #: its MCP servers (`geoeval.mcp`), {toolset: "module:function"}, the first the default
    mcp_servers: Mapping[str, str] = MappingProxyType({})

    @property
    def scoring_version(self) -> str:
        """Part of the run identity: a changed version scores stored answers again. By default a
        hash of the scoring code (`scoring_code_hash`), so an edit re-scores by itself; a suite
        that declares `scoring_version = "..."` (the built-in ones) bumps it by hand."""
        from geoeval.core.scoring import scoring_code_hash

        metric_modules = [
            str(getattr(m.fn, "__module__", "") or "")
            for specs in _REG.metrics.values()
            for m in specs
            if m.suites is not None and self.name in m.suites
        ]
        return scoring_code_hash(self, metric_modules)

    @property
    def has_meta_eval(self) -> bool:
        return _overrides(self, "meta_eval_answers") or _overrides(self, "meta_eval_tiers")

    def meta_eval_tiers(self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT, sample: Sample) -> list[MetaEvalAnswer]:
        """The answers of known quality to one `sample` (`MetaEvalAnswer.reference`, `.defect`,
        `.worthless`), depending on that sample alone; the default `meta_eval_answers` scores them
        through `score_answers`. A suite without a meta-evaluation defines neither."""
        return []

    def meta_eval_answers(
        self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT, samples: list[Sample]
    ) -> list[ScoredAnswer]:
        """Answers of known quality per sample, scored through the suite's real scorers
        (`geoeval.core.scoring.score_tiers`): by default `meta_eval_tiers` of each sample, scored
        by `score_answers`. Called on chunks of samples (progress is shown between them)."""
        if not _overrides(self, "meta_eval_tiers"):
            raise GeoevalError(
                f"suite '{self.name}' has no meta-evaluation (it defines no `meta_eval_tiers` or `meta_eval_answers`)"
            )
        from geoeval.core.scoring import score_tiers  # registry and scoring are one layer (see scoring.py)

        return score_tiers(self, spec, env, samples)

    @property
    def has_score_answers(self) -> bool:
        return _overrides(self, "score_answers") or _overrides(self, "extract_answer")

    def extract_answer(
        self, raw: str, protocol: str = "robust", metadata: dict[str, Any] | None = None
    ) -> tuple[str, str]:
        """The answer a completion gives and a problem note ("" when none), under `protocol`
        ("robust" or "paper"). Defining it gives the suite the default `score_answers` (and
        `geoeval score <suite> --answers`); pass it to `geoeval_scorer` in `build_task`."""
        raise GeoevalError(f"suite '{self.name}' defines no `extract_answer`")

    def score_answers(
        self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT, samples: Mapping[str, Sample], answers: list[AnswerToScore]
    ) -> list[AnswerScore]:
        """Score answers written outside a run exactly as the suite's Inspect scorer (and judges)
        score a run's samples, under `spec.scoring.protocol`; `samples` maps sample id to sample.
        The public entry point behind `geoeval.core.scoring.score_answers`. The default reads each
        answer with `extract_answer` and applies `spec.metrics.metrics`, as `geoeval_scorer` does."""
        if not _overrides(self, "extract_answer"):
            raise GeoevalError(
                f"suite '{self.name}' has no scoring entry point (it defines no `score_answers` or `extract_answer`)"
            )
        from geoeval.core.scoring import score_final_answers

        return score_final_answers(spec, samples, answers, self.extract_answer)

    def after_run(
        self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT | None, results: list[SampleResult], out_dir: Path
    ) -> list[Path]:
        """The suite's own reports of a finished run, written under `out_dir` (logged by the
        harness); `env` is None when the run's environment is not at hand."""
        return []

    def summary_notes(
        self, spec: RunSpec[ConfigT, EnvConfigT], env: EnvT | None, results: list[SampleResult]
    ) -> list[str]:
        """Lines printed under the run's summary tables (console, `summary.md`): what explains
        its numbers that the tables cannot say (e.g. what the environment could not ground)."""
        return []


def _overrides(suite: Any, member: str) -> bool:
    """Whether `suite`'s class defines `member` itself rather than inheriting `Suite`'s default."""
    return getattr(type(suite), member, None) is not getattr(Suite, member)


def _label(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    name = getattr(obj, "name", None)
    where = f"{cls.__module__}.{cls.__qualname__}"
    return f"'{name}' ({where})" if isinstance(name, str) and name else where


def _missing_members(obj: Any) -> list[str]:
    """The `SuiteSpec` members `obj` lacks: required ones (also when abstract in `Suite`), and, for
    a suite that does not subclass `Suite`, optional ones (it has no defaults for them)."""
    wanted = REQUIRED_SUITE_MEMBERS if isinstance(obj, Suite) else REQUIRED_SUITE_MEMBERS + OPTIONAL_SUITE_MEMBERS
    missing = []
    for member in wanted:
        value = getattr(obj, member, None)
        if value is None or getattr(value, "__isabstractmethod__", False):
            missing.append(member)
    return missing


def _check_suite(obj: Any) -> None:
    missing = _missing_members(obj)
    if missing:
        hint = (
            ""
            if isinstance(obj, Suite) or not set(missing) & set(OPTIONAL_SUITE_MEMBERS)
            else " (subclass geoeval.core.registry.Suite for the optional members' defaults)"
        )
        raise GeoevalError(f"suite {_label(obj)} cannot be registered: it does not define {', '.join(missing)}{hint}")
    if not isinstance(obj.name, str) or not obj.name:
        raise GeoevalError(f"suite {_label(obj)} cannot be registered: `name` must be a non-empty string")
    schemas = obj.env_schema.values() if isinstance(obj.env_schema, Mapping) else [obj.env_schema]
    for member in ("commands", "mcp_servers"):
        found = getattr(obj, member)
        if not isinstance(found, Mapping) or not all(isinstance(v, str) and ":" in v for v in found.values()):
            raise GeoevalError(
                f'suite {_label(obj)} cannot be registered: `{member}` must map names to "module:function"'
            )
    for member, values in (("config_schema", [obj.config_schema]), ("env_schema", schemas)):
        if not all(isinstance(v, type) and issubclass(v, BaseModel) for v in values):
            raise GeoevalError(
                f"suite {_label(obj)} cannot be registered: `{member}` must be a pydantic model class"
                + (" (or {env name: model class})" if member == "env_schema" else "")
            )


@dataclass
class _Registry:
    suites: dict[str, SuiteSpec] = field(default_factory=dict)
    # a metric name may be registered once per suite (e.g. `acc` by two suites), or once for all
    metrics: dict[str, list[MetricSpec]] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    loaded: bool = False  # every entry point imported (else only those `load_suite_plugins` needed)
    loaded_entry_points: set[str] = field(default_factory=set)


_REG = _Registry()


_S = TypeVar("_S", bound="SuiteSpec | type[SuiteSpec]")


def _with_defaults(cls: type) -> type:
    """`cls` itself when it subclasses `Suite`; else a subclass of it and `Suite`, which gives a
    suite class written to the bare protocol (the required members only) the optional defaults."""
    if issubclass(cls, Suite):
        return cls
    missing = [m for m in ("build_env", "build_samples", "build_task") if getattr(cls, m, None) is None]
    if missing:  # `Suite` would only make them abstract: say what is missing instead (data members: `_check_suite`)
        raise GeoevalError(f"suite {_label(cls)} cannot be registered: it does not define {', '.join(missing)}")
    return type(cls.__name__, (cls, Suite), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


def register_suite(suite: _S) -> _S:
    """Register a suite instance (or class, instantiated with no arguments). A `Suite` subclass
    declares what it has; a class that does not subclass `Suite` gets its optional members'
    defaults; an instance of another class must have every `SuiteSpec` member. A missing member is
    a `GeoevalError` naming the suite and the member. Returns `suite` (usable as a decorator)."""
    if isinstance(suite, type):
        cls = _with_defaults(suite)
        abstract = sorted(getattr(cls, "__abstractmethods__", ()))
        if abstract:  # cannot be instantiated: say which members it lacks
            raise GeoevalError(f"suite {_label(suite)} cannot be registered: it does not define {', '.join(abstract)}")
        obj = cls()
    else:
        obj = suite
    _check_suite(obj)
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
#: the built-in suites' entry points (pyproject.toml): an installation without them must be (re)installed
BUILTIN_SUITE_ENTRY_POINTS = frozenset({"builtin_lifeplanner", "builtin_mapsatisfy", "builtin_maptab"})


def _plugin_entry_points() -> list[Any]:
    found = entry_points(group=PLUGIN_GROUP)
    return sorted(found, key=lambda ep: (not ep.name.startswith("builtin_"), ep.name))


def entry_point_modules() -> list[str]:
    """The modules of this installation's `geoeval.plugins` entry points, built-ins first, each once
    (a plugin may name one module in several entry points: one per suite it registers)."""
    return list(dict.fromkeys(ep.value.split(":", 1)[0] for ep in _plugin_entry_points()))


def _load_entry_point(name: str, value: str, load: Callable[[], Any]) -> None:
    try:
        load()
    except Exception as exc:  # a broken plugin must not hide which one it is
        raise GeoevalError(f"Plugin entry point '{name}' ({value}) failed to load: {exc}") from exc
    _REG.loaded_entry_points.add(name)


def _extra_targets(extra: list[str] | None) -> list[str]:
    return [p.strip() for p in list(extra or []) + os.environ.get("GEOEVAL_PLUGINS", "").split(",") if p.strip()]


def load_plugins(extra: list[str] | None = None) -> None:
    """Import built-in suites, every `geoeval.plugins` entry point (or, in a cluster worker that
    runs the driver's shipped code, the driver's entry-point modules), and dotted paths in
    `extra` or `GEOEVAL_PLUGINS`. Idempotent."""
    if not _REG.loaded:
        found = [(ep.name, ep.value, ep.load) for ep in _plugin_entry_points()]
        if not {name for name, _, _ in found} >= BUILTIN_SUITE_ENTRY_POINTS:
            shipped = [m for m in os.environ.get(SHIPPED_ENTRY_POINTS_ENV, "").split(",") if m]
            if not shipped:
                raise GeoevalError(
                    "geoeval's built-in suites are not registered: (re)install geoeval "
                    "(pip install -e .) so that its `geoeval.plugins` entry points exist"
                )
            found = [(m, m, lambda m=m: importlib.import_module(m)) for m in shipped]
        for name, value, load in found:
            if name not in _REG.loaded_entry_points:
                _load_entry_point(name, value, load)
        _REG.loaded = True
    for path in _extra_targets(extra):
        load_target(path)


def _serves(entry_point: str, suite: str) -> bool:
    """Whether an entry point is named after `suite`: `maptab` or `builtin_maptab` serve the suites
    `maptab` and `maptab_qa`; entry points named `*agents` (model providers) serve every suite."""
    base = entry_point.removeprefix("builtin_")
    return suite == base or suite.startswith(base + "_") or base == "agents" or base.endswith("_agents")


def load_suite_plugins(suite: str) -> None:
    """Import only the entry points named after `suite` (and the agents'), and the dotted paths
    of `GEOEVAL_PLUGINS`: a command about one suite does not import the others. Everything is
    imported when none of them registers `suite` (an entry point named otherwise)."""
    if suite not in _REG.suites and not _REG.loaded:
        for ep in _plugin_entry_points():
            if _serves(ep.name, suite) and ep.name not in _REG.loaded_entry_points:
                _load_entry_point(ep.name, ep.value, ep.load)
        for path in _extra_targets(None):
            load_target(path)
    if suite not in _REG.suites:
        load_plugins()


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


def get_suite(name: str) -> SuiteSpec:
    load_suite_plugins(name)
    if name not in _REG.suites:
        known = ", ".join(sorted(_REG.suites))
        raise GeoevalError(f"Invalid config: suite.name: unknown suite '{name}' (available: {known})")
    return _REG.suites[name]


def suite_names(*, loaded_only: bool = False) -> list[str]:
    """Every suite (every plugin imported), or with `loaded_only` those registered so far."""
    if not loaded_only:
        load_plugins()
    return sorted(_REG.suites)


def _find_metric(name: str, suite: str | None) -> MetricSpec | None:
    specs = _REG.metrics.get(name, [])
    for spec in specs:
        if suite is not None and spec.suites is not None and suite in spec.suites:
            return spec
    for spec in specs:
        if spec.suites is None:
            return spec
    if suite is None and specs:
        return specs[0]
    return None


def get_metric(name: str, suite: str | None = None) -> MetricSpec:
    """The metric `name` for `suite`: the suite's own registration first, else a global one
    (every plugin is imported only when the ones imported so far do not have it)."""
    found = _find_metric(name, suite)
    if found is None and not _REG.loaded:
        load_plugins()
        found = _find_metric(name, suite)
    if found is None:
        raise KeyError(f"no metric '{name}' for suite '{suite}'")
    return found


def has_metric(name: str, suite: str | None = None) -> bool:
    try:
        get_metric(name, suite)
    except KeyError:
        return False
    return True


def metric_names(suite: str | None = None) -> set[str]:
    load_plugins()
    return {
        n
        for n, specs in _REG.metrics.items()
        if any(suite is None or m.suites is None or suite in m.suites for m in specs)
    }


def get_tool(name: str) -> ToolSpec:
    if name not in _REG.tools:
        load_plugins()
    if name not in _REG.tools:
        raise GeoevalError(f"unknown tool '{name}' (available: {', '.join(sorted(_REG.tools)) or 'none'})")
    return _REG.tools[name]


def has_tool(name: str) -> bool:
    try:
        get_tool(name)
    except GeoevalError:
        return False
    return True


def tool_names() -> set[str]:
    load_plugins()
    return set(_REG.tools)
