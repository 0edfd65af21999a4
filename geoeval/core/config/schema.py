"""Typed schemas for every config group, and validation of a composed Hydra config.

Hydra composes YAML; these pydantic models say what each group may contain. `validate_config`
runs before any work starts: an unknown key, a wrong type or an out-of-range value stops the run
with a `GeoevalError` that names the key (`suite.resolution`, `runner.num_workers`, ...) and says
what is allowed. Suite-specific groups (`env`, `suite`) are validated by the schemas their suite
registers, so a plugin suite brings its own schema.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, cast, runtime_checkable

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator
from typing_extensions import TypeVar  # a default (PEP 696): `RunSpec` alone is what the core reads

import geoeval
from geoeval.core.config.secrets import strip_secrets
from geoeval.core.errors import GeoevalError


class Strict(BaseModel):
    """Base for every schema: unknown keys are errors, values are not silently coerced."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class GenerateSettings(Strict):
    """Inspect `GenerateConfig` fields a researcher sets per model (None = provider default)."""

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    reasoning_tokens: int | None = Field(default=None, gt=0)
    max_connections: int | None = Field(default=None, gt=0)
    timeout: int | None = Field(default=None, gt=0, description="seconds for a whole request, retries included")
    attempt_timeout: int | None = Field(default=None, gt=0, description="seconds for one attempt, then retried")
    max_retries: int | None = Field(default=None, ge=0, description="retries of a failed request (429, 5xx, timeout)")


#: `model.serve` keys that say how a local server runs or what it logs, not what it answers: where
#: it is (`base_url`), its logs (`log_path`, `prompt_log_path`), its timeouts, its threads and
#: weight buffers (speed), whether a crash stops the run. Left out of both identities, so that
#: turning a log on, or giving the server more threads, replays the calls stored without them.
SERVE_EXECUTION_KEYS = frozenset(
    {
        "base_url",
        "log_path",
        "prompt_log_path",
        "startup_timeout_s",
        "request_timeout_s",
        "interrupt_on_crash",
        "n_threads",
        "n_threads_batch",
        "extra_buffers",
    }
)

#: GenerateSettings that change how a request is sent, not what the model answers: they are left
#: out of the run identity (a rerun with more connections or a longer timeout resumes the run).
EXECUTION_SETTINGS = frozenset({"max_connections", "timeout", "attempt_timeout", "max_retries"})

#: `model.args` (provider arguments) that configure the HTTP client, not the model: its retries
#: and its timeout (secret ones, such as `api_key`, are dropped from the identity anyway).
MODEL_ARGS_EXECUTION_KEYS = frozenset({"max_retries", "timeout"})


_CACHE_EXPIRY = re.compile(r"^\d+[mhDWMY]$")


def check_cache_expiry(v: bool | str) -> bool | str:
    """A cache setting: a bool, or an Inspect expiry ("30m", "1h", "1D", "2W", "1M", "1Y")."""
    if isinstance(v, str) and not _CACHE_EXPIRY.match(v):
        raise ValueError("must be true, false or an expiry such as '1D', '2W', '1M' (m, h, D, W, M, Y)")
    return v


class ModelSpec(Strict):
    """`model=`: any Inspect model string, e.g. `geoeval/oracle`, `openai/gpt-4o`,
    `openai-api/local/qwen2.5`, `vllm/...`, `ollama/llama3.1`, `mockllm/model`."""

    name: str
    base_url: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)  # provider model_args
    config: GenerateSettings = Field(default_factory=GenerateSettings)
    # a local server geoeval starts for the run and stops after it (`model=local_llm`); its URL
    # becomes `base_url`. None: the model is served elsewhere (or needs no server).
    serve: dict[str, Any] | None = None
    # Inspect's model-call cache for the evaluated model: false (off, the default: an agent's
    # samples are what is measured, and a stored trajectory is replayed anyway), true (Inspect's
    # default expiry, one week) or an expiry such as "1D", "2W", "1M"
    cache: bool | str = False

    @field_validator("cache")
    @classmethod
    def _cache_expiry(cls, v: bool | str) -> bool | str:
        return check_cache_expiry(v)

    @field_validator("name")
    @classmethod
    def _has_provider(cls, v: str) -> str:
        if "/" not in v:
            raise ValueError("must be '<provider>/<model>', e.g. 'geoeval/oracle' or 'openai/gpt-4o'")
        return v

    @property
    def provider(self) -> str:
        return self.name.split("/", 1)[0]


class JudgeSpec(Strict):
    """`judge=`: an ensemble of judges whose scores are averaged. `rules` is the deterministic
    offline judge of each suite; any other entry is an Inspect model string run at
    `temperature` (0 by default, as the papers require)."""

    models: list[str] = Field(default_factory=lambda: ["rules"], min_length=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    votes: int = Field(default=1, ge=1, description="runs per judge; the majority/mean is taken")
    # Inspect's model-call cache for model judges (on by default: a rerun or a rescore asks the
    # same question of the same judge; a judge at temperature 0 answers it the same)
    cache: bool | str = "1M"

    @field_validator("cache")
    @classmethod
    def _cache_expiry(cls, v: bool | str) -> bool | str:
        return check_cache_expiry(v)


class MetricsSpec(Strict):
    """`metrics=`: which metrics (by registered name) to compute, and which are totals."""

    name: str
    metrics: list[str] = Field(min_length=1)
    sum_metrics: list[str] = Field(default_factory=list)


class ScoringSpec(Strict):
    """`scoring=`: how answers are read. `robust` (the default) reads what an answer says whatever
    its typesetting and applies the one-answer rule (each suite's README, "Answer protocol");
    `paper` reads answers exactly as the papers' authors' evaluators do (byte-identical scores).
    Every run also scores each sample under the other protocol and counts where they differ."""

    protocol: Literal["robust", "paper"] = "robust"


class BudgetSpec(Strict):
    """`budget.*`: what a run, or a whole sweep, may spend (None: no limit). Before each sample
    starts the run checks what it has spent (every invocation of it, from the warehouse) plus what
    the samples let in with it and the sample itself are expected to cost (`core.cost.budget`);
    past a limit no new sample starts, the samples in flight finish and are stored, and the run
    ends BUDGET_EXCEEDED (exit status 3). Raising the budget and rerunning resumes it. Dollars
    need a price for every model that is called (`pricing`)."""

    usd: float | None = Field(default=None, gt=0, description="dollars per run")
    tokens: int | None = Field(default=None, gt=0, description="tokens (input + output) per run")
    sweep_usd: float | None = Field(default=None, gt=0, description="dollars per sweep (all its jobs)")
    sweep_tokens: int | None = Field(default=None, gt=0, description="tokens per sweep (all its jobs)")


class ModelPrice(Strict):
    """USD per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0, description="None: priced as input")
    local: bool = Field(
        default=False, description="runs on this machine: its cost is compute, not dollars (the console says so)"
    )


class PricingSpec(Strict):
    """`pricing=`: USD per million tokens by model (an Inspect model name, or an fnmatch pattern
    such as `geoeval/*`; the exact name wins over a pattern, a longer pattern over a shorter).
    `file`: a YAML file with more `models:` entries, which win over the group's. A model with no
    price costs *unknown*, never 0."""

    name: str = "default"
    as_of: str | None = Field(default=None, description="the date the prices were read from the providers")
    models: dict[str, ModelPrice] = Field(default_factory=dict)
    file: str | None = None


class RunnerSpec(Strict):
    """`runner=`: `local` runs in-process; `ray` shards samples over Ray workers."""

    name: Literal["local", "ray"] = "local"
    num_workers: int = Field(default=2, ge=1)
    num_cpus: int | None = Field(default=None, ge=1, description="CPUs for a local Ray")
    worker_niceness: int | None = Field(
        default=None,
        ge=0,
        le=19,
        description="the nice value of a local Ray's workers; null: the driver's own (Ray's default, 15, "
        "starved runs on a shared machine). A cluster's workers keep the cluster's setting",
    )
    address: str | None = Field(default=None, description="None: start a local Ray; 'auto' or 'ray://host:port'")
    max_retries: int = Field(default=2, ge=0)
    connect_timeout_s: float = Field(default=30.0, gt=0)
    max_samples: int | None = Field(
        default=None,
        ge=1,
        description="samples run concurrently per worker; null: follow the model "
        "(`model.config.max_connections`, split among Ray workers; see `run.models.samples_in_flight`)",
    )
    log_realtime: bool | Literal["auto"] = Field(
        default="auto",
        description="Inspect's live sample buffer, for `inspect view` of running samples (a "
        "SQLite write per event, ~3 ms a sample); auto: on for real models, off for geoeval's offline agents",
    )
    env_vars: list[str] = Field(
        default_factory=list,
        description="more environment variables for the workers "
        "(names, or prefixes ending in *), besides geoeval's, Inspect's and the providers'",
    )
    ship_code: bool = Field(default=True, description="ship the driver's geoeval and plugins to a cluster's workers")
    max_concurrent_jobs: int = Field(
        default=1,
        ge=1,
        description="jobs of a sweep (-m) run at once; 1: one "
        "after another in the sweep's process, more: a process each (docs/cluster.md)",
    )


class TrackingSpec(Strict):
    """`tracking=`: MLflow. `tracking_uri` None means the local store under `mlruns/`."""

    enabled: bool = True
    tracking_uri: str | None = None
    artifact_location: str | None = None
    experiment_name: str | None = None
    traces: Literal["all", "errors", "none"] = Field(
        default="all", description="samples logged as MLflow traces: all, only errored ones, or none"
    )
    max_traces: int = Field(default=500, ge=0, description="traces logged per job at most (the rest are counted)")
    outage_wait_s: float = Field(
        default=60.0,
        ge=0,
        description="how long a job's end waits for a tracking server that stopped answering before it "
        "keeps what the server missed for later (docs/results.md, 'When the tracking server is down')",
    )


class SuiteConfig(Protocol):
    """What the core reads of a validated `suite` group, whatever suite's `config_schema` it is."""

    @property
    def name(self) -> str: ...
    def model_dump(self, *, mode: str = "python") -> dict[str, Any]: ...


@runtime_checkable
class IdentityDict(Protocol):
    """A suite or env config that says which of its values are part of the run identity (MapTab
    leaves out `resolution` where no image is shown; an env whose files the suite fingerprints
    leaves out the folder they are in); one without it is wholly part of the identity. A suite
    config may also name, as `scoring_keys`, its keys that change only how answers are scored
    (a judge's votes, a metric's threshold): they are in the run identity, not the generation one."""

    def identity_dict(self) -> dict[str, Any]: ...


def _identity_part(config: Any) -> dict[str, Any]:
    return config.identity_dict() if isinstance(config, IdentityDict) else config.model_dump(mode="json")


#: the type of a run's `suite` and `env` groups: `RunSpec[MapTabSuiteConfig, MapTabEnvConfig]` is
#: the spec a suite's own methods see (`Suite`'s parameters); `RunSpec` alone, the core's view;
#: covariant: a suite's own spec is a spec wherever the core takes one
SuiteConfigT = TypeVar("SuiteConfigT", bound=SuiteConfig, default=SuiteConfig, covariant=True)
EnvConfigT = TypeVar("EnvConfigT", bound=BaseModel, default=BaseModel, covariant=True)


class RunSpec(Strict, Generic[SuiteConfigT, EnvConfigT]):
    """The whole validated run: one job of a (multi)run. Generic for the type checker only: no
    field uses the parameters at run time (pydantic validates `suite` and `env` as `BaseModel`)."""

    seed: int = 0
    experiment_name: str = "default"
    # under the current directory, or `$GEOEVAL_ROOT` (the YAML's interpolation; docs/cluster.md)
    results_db: str = "./results/geoeval.duckdb"
    log_dir: str = "./logs"
    work_dir: str = "./results/work"
    limit: int | None = Field(default=None, ge=1)
    epochs: int = Field(default=1, ge=1)
    # Inspect's convention: true = fail on any error, false = never, 0 < x < 1 = a fraction of the
    # samples, an integer >= 1 = a count. A run past it ends FAILED and exits non-zero; below it,
    # errors are still counted and shown loudly.
    fail_on_error: bool | int | float = 0.1
    retry_on_error: int = Field(default=1, ge=0, description="Inspect's in-run retries of an errored sample")
    retry_errors_on_resume: bool = True
    # one small request to each configured model endpoint before any work: a dead or refusing
    # endpoint stops the run in seconds, naming the role, the endpoint and the status
    preflight: bool = True
    # how long each probe waits for an answer (a cold model load, a far endpoint may want more)
    preflight_timeout_s: float = Field(default=5.0, gt=0)
    # per-job plots (metrics by setting/level, a suite's paper figures): `auto` draws them for a
    # single run and skips them for a sweep's jobs, whose curves the sweep draws once (the
    # per-job tables and per-sample Parquet are always written)
    job_plots: Literal["auto", "always", "never"] = "auto"
    if TYPE_CHECKING:
        env: EnvConfigT
        suite: SuiteConfigT  # the suite's own schema; `SuiteConfig` (what the core reads) by default
    else:
        # validated by the suite's own schemas (`validate_config`); any pydantic model is kept as it is
        env: BaseModel
        suite: BaseModel
    model: ModelSpec
    judge: JudgeSpec
    metrics: MetricsSpec
    scoring: ScoringSpec = Field(default_factory=ScoringSpec)
    # stored trajectories (docs/cost.md): `reuse` replays a sample's stored model calls when its
    # generation identity matches (no model call; scoring runs anew) and generates the rest;
    # `replay_only` (what `geoeval rescore` sets) never calls the evaluated model: a sample
    # without a stored trajectory is an error; `fresh` generates every sample anew
    generation: Literal["reuse", "replay_only", "fresh"] = "reuse"
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    pricing: PricingSpec = Field(default_factory=PricingSpec)
    runner: RunnerSpec
    tracking: TrackingSpec
    # set by the job from the suite's `env_fingerprint(spec)`: the content of external inputs
    # (e.g. the authors' files), so that changed inputs never resume stale scores
    env_fingerprint: str = ""
    # set by `validate_config` from the suite: its scoring version and its offline agents' versions,
    # which the run identity holds (kept out of the fields: they are the code's, not the config's)
    _suite_declarations: tuple[str, dict[str, str]] | None = PrivateAttr(default=None)
    # the suite's `generation_version` (what the model sees: environments, samples, prompts, tools)
    _generation_version: str = PrivateAttr(default="1")

    @field_validator("fail_on_error")
    @classmethod
    def _threshold(cls, v: bool | int | float) -> bool | int | float:
        if not isinstance(v, bool) and v <= 0:
            raise ValueError("must be true, false, a fraction in (0, 1) or a count >= 1")
        if isinstance(v, float) and v >= 1 and not v.is_integer():
            raise ValueError("a fraction must be below 1; a count must be a whole number")
        return v

    def identity(self) -> dict[str, Any]:
        """What a sample's result depends on, and nothing else: the run identity.

        In: the code (geoeval's version and the suite's `scoring_version`, bumped when its
        references or metrics change), seed, epochs, env, suite, model, judges, metrics, and the
        content of external inputs. Out: where and how the run executes and what it logs (runner,
        `limit`, the model's base URL, connection, timeout and retry settings, its cache, a served
        model's logs, threads and timeouts, tracking, paths, budgets, prices, preflight), secrets (a
        rotated key is the same experiment), and what a suite or env declares irrelevant (MapTab's
        `resolution` when no image is shown, the folder of fingerprinted files), through the
        config's optional `identity_dict()`. `tests/core/test_identity_keys.py` lists every key of
        the generation identity and why it is there."""

        if self._suite_declarations is None:
            raise RuntimeError("a RunSpec's identity needs its suite's declarations: build it with validate_config")
        scoring_version, agent_versions = self._suite_declarations
        # where the model is served is not what it is (a local server gets a new port each run);
        # a served model's own settings (its weights, context, chat format) are
        model = self.model.model_dump(mode="json", exclude={"serve", "base_url"})
        if self.model.serve:
            model["serve"] = {k: v for k, v in self.model.serve.items() if k not in SERVE_EXECUTION_KEYS}
        model["config"] = {k: v for k, v in model["config"].items() if k not in EXECUTION_SETTINGS}
        model["args"] = {k: v for k, v in model["args"].items() if k not in MODEL_ARGS_EXECUTION_KEYS}
        model.pop("cache", None)  # a cached reply is the reply: how it was obtained is not the run's identity
        extra = {"env_fingerprint": self.env_fingerprint} if self.env_fingerprint else {}
        provider, _, agent = self.model.name.partition("/")
        agent_version = agent_versions.get(agent) if provider == "geoeval" else None
        if agent_version is not None:  # a changed offline agent answers differently: a new run
            model["agent_version"] = agent_version
        return strip_secrets(
            {
                **extra,
                "geoeval_version": geoeval.__version__,
                "scoring_version": scoring_version,
                "seed": self.seed,
                "epochs": self.epochs,
                "env": _identity_part(self.env),
                "suite": _identity_part(self.suite),
                "model": model,
                "judge": self.judge.model_dump(mode="json", exclude={"cache"}),
                "metrics": self.metrics.model_dump(mode="json"),
                "scoring": self.scoring.model_dump(mode="json"),
            }
        )

    def config_hash(self) -> str:
        """Keys the warehouse: the run identity's hash (see `identity`)."""
        blob = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def generation_identity(self) -> dict[str, Any]:
        """What can change what the model sees or does, and nothing that only changes how its
        answers are scored: the run identity without geoeval's version, the suite's scoring
        version, the judges, the metrics, the answer protocol and the epochs (a trajectory is
        stored per sample and epoch), plus the suite's `generation_version` (its environments,
        samples, prompts and tools). Stored trajectories are keyed by it (`run/replay.py`), and
        each replayed call is also checked against the input it was recorded for, so a prompt or
        tool output that changed without a version bump is generated anew, never replayed."""
        identity = self.identity()
        for key in ("geoeval_version", "scoring_version", "judge", "metrics", "scoring", "epochs"):
            identity.pop(key, None)
        for key in getattr(self.suite, "scoring_keys", ()):  # the suite's own judging and metric settings
            identity["suite"].pop(key, None)
        identity["generation_version"] = self._generation_version
        return identity

    def generation_hash(self) -> str:
        """Keys stored trajectories: the generation identity's hash (see `generation_identity`)."""
        blob = json.dumps(self.generation_identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The whole validated config (every key, for MLflow params and the warehouse); secrets
        are redacted by the callers that store it."""
        extra = {"env_fingerprint": self.env_fingerprint} if self.env_fingerprint else {}
        d: dict[str, Any] = {
            **extra,
            "seed": self.seed,
            "epochs": self.epochs,
            "limit": self.limit,
            "fail_on_error": self.fail_on_error,
            "retry_on_error": self.retry_on_error,
            "retry_errors_on_resume": self.retry_errors_on_resume,
            "preflight": self.preflight,
            "preflight_timeout_s": self.preflight_timeout_s,
            "job_plots": self.job_plots,
            "env": self.env.model_dump(mode="json"),
            "suite": self.suite.model_dump(mode="json"),
            "model": self.model.model_dump(mode="json"),
            "judge": self.judge.model_dump(mode="json"),
            "metrics": self.metrics.model_dump(mode="json"),
            "scoring": self.scoring.model_dump(mode="json"),
            "generation": self.generation,
            "budget": self.budget.model_dump(mode="json"),
            "pricing": self.pricing.model_dump(mode="json"),
        }
        d.update(
            experiment_name=self.experiment_name,
            results_db=self.results_db,
            log_dir=self.log_dir,
            work_dir=self.work_dir,
            runner=self.runner.model_dump(mode="json"),
            tracking=self.tracking.model_dump(mode="json"),
        )
        return d


_TOP_LEVEL = {
    "seed",
    "experiment_name",
    "results_db",
    "log_dir",
    "work_dir",
    "limit",
    "epochs",
    "fail_on_error",
    "retry_on_error",
    "retry_errors_on_resume",
    "preflight",
    "preflight_timeout_s",
    "job_plots",
    "env",
    "suite",
    "model",
    "judge",
    "metrics",
    "scoring",
    "generation",
    "budget",
    "pricing",
    "runner",
    "tracking",
}


def format_errors(group: str, err: ValidationError, model: type[BaseModel]) -> str:
    lines = []
    for e in err.errors():
        key = ".".join([group, *(str(p) for p in e["loc"])]) if group else ".".join(str(p) for p in e["loc"])
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(model.model_fields))
            msg = f"unknown key (allowed keys: {allowed})"
        elif "input" in e and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {e['input']!r})"
        lines.append(f"  {key}: {msg}")
    return "\n".join(lines)


def to_container(cfg: DictConfig | dict) -> dict[str, Any]:
    data: dict[str, Any]
    if isinstance(cfg, DictConfig):
        try:
            # Hydra's own node is not ours to validate, and holds values only set per job
            cfg = OmegaConf.masked_copy(cfg, [str(k) for k in cfg if k != "hydra"])
            container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
        except Exception as exc:  # omegaconf raises several types; all mean a bad value
            raise GeoevalError(f"Invalid config: {exc}") from None
        if not isinstance(container, dict):  # a DictConfig converts to a dict, never to anything else
            raise GeoevalError(f"Invalid config: expected a mapping, got {type(container).__name__}")
        data = cast("dict[str, Any]", container)  # a composed config's top-level keys are strings
    else:
        data = dict(cfg)
    data.pop("hydra", None)
    return data
