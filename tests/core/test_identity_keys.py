"""Which config keys make the generation identity (what stored model calls are keyed by), and
which stay out of it (issue 41).

A trajectory is replayed only under the same generation identity (`RunSpec.generation_hash`),
so a key in it that does not change what the model is shown or answers makes stored calls
unreplayable: turning on a served model's prompt log made a rescore fail 8 of 8. Here every key
of the generation identity of the shipped configs is listed with why it is there (a new key must
be added here, with its reason, or kept out), and every other key of the config is toggled and
shown to leave the generation hash as it was: observability, execution, cost and scoring keys
alike (the observability and execution keys leave the run identity as it was too).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from geoeval.core.config.schema import SERVE_EXECUTION_KEYS, ModelPrice
from tests.conftest import compose_spec

#: every key of a generation identity, and why it is there
WHY: dict[str, str] = {
    "seed": "the run's seed: the environments, the samples and the offline agents draw from it",
    "generation_version": "the suite's version of what the model is shown (environments, samples, prompts, tools)",
    "env_fingerprint": "the content of the files the environment is read from (the authors' releases, a GTFS feed)",
    "model.name": "which model answers",
    "model.agent_version": "an offline agent's algorithm version (a changed baseline answers differently)",
    "model.args": "provider arguments can change the model or the request (less the client's retries and "
    "timeout, and secrets)",
    "model.config.temperature": "sampling",
    "model.config.top_p": "sampling",
    "model.config.seed": "sampling",
    "model.config.max_tokens": "where an answer is cut",
    "model.config.reasoning_effort": "how much the model reasons",
    "model.config.reasoning_tokens": "how much the model reasons",
    # a served model (model=local_llm): what serves it, not how fast or what it logs
    "model.serve._target_": "the server factory: which server answers",
    "model.serve.kind": "the server (llama.cpp)",
    "model.serve.model_path": "the weights",
    "model.serve.n_ctx": "the context length: a longer prompt is cut or refused",
    "model.serve.chat_format": "how the messages and tools are rendered into the prompt",
    "model.serve.tools_first": "whether the first reply offered tools must call one",
    # MapTab
    "env.name": "which environment the model acts in",
    "env.n_maps": "the maps shown",
    "env.n_lines": "the maps shown",
    "env.stations_per_line": "the maps shown",
    "env.width": "the map images shown",
    "env.height": "the map images shown",
    "env.loop_probability": "the maps shown",
    "env.seed": "the environment's own seed (null: the run's)",
    "env.source": "which real network the maps are drawn from",
    "env.lines": "which lines of it are kept",
    "env.scenario": "which of the authors' scenarios are loaded",
    "env.categories": "which of the authors' test sets are loaded",
    "env.on_quality_failure": "which of the authors' items are kept",
    "suite.name": "which suite",
    "suite.task_family": "route planning or QA: the questions asked",
    "suite.scenario": "which maps are asked about",
    "suite.categories": "which route-planning questions are asked",
    "suite.qa_types": "which QA questions are asked",
    "suite.n_per_category": "how many questions (the samples themselves)",
    "suite.setting": "what the prompt shows (map, tables, both)",
    "suite.resolution": "the map image's resolution (dropped where no image is shown)",
    "suite.language": "the label language of what is shown",
    "suite.style": "the map style shown",
    "suite.table_format": "how the tables in the prompt are written",
    "suite.row_order": "the order of the tables' rows in the prompt",
    "suite.solver": "the agent loop (generate or react): the calls made",
    "suite.tools": "the tools offered",
    "suite.message_limit": "where an agent's conversation is cut",
    # LifePlanner
    "env.n_places": "the city the agent searches",
    "env.n_notes": "the city's social notes",
    "env.area_km2": "the city's size",
    "env.comments_per_note": "the city's social notes",
    "env.pbf": "the OpenStreetMap extract the city is built from",
    "env.notes_per_place": "the city's social notes",
    "suite.n_cases": "how many cases (the samples themselves)",
    "suite.tasks": "which tasks are asked",
    "suite.levels": "which levels are asked",
    "suite.tool_budget": "how many tool calls an agent may make",
    "suite.transport": "how the agent reaches its tools (in process or MCP): what the tool replies look like",
    "suite.phrasing_model": "the model that rewrites the queries the agent is given",
    "suite.l2_phrasing": "how L2 queries are worded",
    "suite.l1_social": "which L1 questions are asked",
    # MapSatisfy
    "env.n": "how many instances (the samples themselves)",
    "env.city": "the city the instances are generated over",
    "env.n_pois": "the synthetic city's size",
    "env.lifeplanner_db": "the LifePlanner city the instances are generated over",
    "env.embedder": "how the sandbox matches a tool call to a recorded reply: the replies the agent gets",
    "env.bench": "which instance file of the release",
    "env.mock_data": "which recorded tool calls of the release",
    "suite.map_tools": "the tools offered",
    "suite.max_turns": "where a dialogue is cut",
    "suite.max_tool_calls": "how many tool calls an agent may make",
    "suite.user_model": "the simulated user's model: the user's turns the agent answers",
    "suite.tool_simulator": "the model that writes tool replies no record holds",
    "suite.record_simulated": "simulated replies recorded in the store answer later calls",
}

#: keys in the generation identity only off their default: a key added later whose default is
#: what every earlier run did keeps those runs' identities (and their stored calls replayable)
OFF_DEFAULT: dict[str, tuple[tuple[str, str], ...]] = {
    "suite.answer_channel": (
        ("maptab", "tool"),
        ("maptab_qa", "tool"),
        ("lifeplanner", "text"),
        ("mapsatisfy_generated", "tool"),
        ("mapsatisfy_demo", "tool"),
    ),  # how the answer is asked for and taken (text, or a submit tool): the prompt and the tools
}

#: the shipped configurations whose identity keys are checked
CONFIGS: dict[str, tuple[str, ...]] = {
    "maptab": (),
    "maptab_qa": ("suite=maptab_qa",),
    "maptab_real": ("env=maptab_real",),
    "maptab_authors": ("+experiment=maptab_authors_sample",),
    "local_llm": ("model=local_llm",),
    "lifeplanner": ("+experiment=lifeplanner_offline",),
    "lifeplanner_osm": ("suite=lifeplanner", "env=lifeplanner_osm", "metrics=lifeplanner", "model=heuristic_baseline"),
    "mapsatisfy_generated": ("+experiment=mapsatisfy_generated",),
    "mapsatisfy_demo": ("+experiment=mapsatisfy_demo",),
}


def leaves(value: Any, prefix: str = "") -> set[str]:
    """The dotted paths of `value`'s leaves (an empty mapping is a leaf)."""
    if isinstance(value, dict) and value:
        return set().union(*(leaves(v, f"{prefix}{k}.") for k, v in value.items()))
    return {prefix.rstrip(".")}


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("identity")
    return {name: compose_spec(root, *overrides) for name, overrides in CONFIGS.items()}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_generation_identity_key_is_listed_with_why(specs, name):
    spec = specs[name].model_copy(update={"env_fingerprint": "f" * 16})  # as a job sets it
    keys = leaves(spec.generation_identity())
    assert not keys - set(WHY), f"keys in the generation identity that no one decided on: {sorted(keys - set(WHY))}"


def test_every_served_model_setting_is_decided():
    """Each `model.serve` option of the local server is either what the model is (listed above)
    or how the server runs (`SERVE_EXECUTION_KEYS`): a new option must be put on one side."""
    from geoeval.agents.local_llm import ServeSettings

    decided = {k.removeprefix("model.serve.") for k in WHY if k.startswith("model.serve.")} | SERVE_EXECUTION_KEYS
    assert set(ServeSettings.model_fields) <= decided, sorted(set(ServeSettings.model_fields) - decided)
    assert not {k.removeprefix("model.serve.") for k in WHY if k.startswith("model.serve.")} & SERVE_EXECUTION_KEYS


def with_value(obj: Any, path: list[str], value: Any) -> Any:
    """A copy of `obj` (a spec, a config or a mapping) with the value at `path` replaced."""
    head, rest = path[0], path[1:]
    current = obj.get(head) if isinstance(obj, dict) else getattr(obj, head)
    new = with_value(current if current is not None else {}, rest, value) if rest else value
    if isinstance(obj, BaseModel):
        return obj.model_copy(update={head: new})
    return {**obj, head: new}


#: keys that say where or how a run executes, what it logs, or what it may spend: (config, key, another value)
OBSERVABILITY_AND_EXECUTION: list[tuple[str, str, Any]] = [
    *(
        (name, key, value)
        for name in ("maptab", "lifeplanner", "mapsatisfy_generated")
        for key, value in [
            ("experiment_name", "elsewhere"),
            ("results_db", "/srv/other.duckdb"),
            ("log_dir", "/srv/logs"),
            ("work_dir", "/srv/work"),
            ("limit", 3),
            ("fail_on_error", 0.5),
            ("retry_on_error", 4),
            ("retry_errors_on_resume", False),
            ("preflight", False),
            ("preflight_timeout_s", 60.0),
            ("job_plots", "never"),
            ("generation", "fresh"),
            ("budget.usd", 5.0),
            ("budget.tokens", 1000),
            ("budget.sweep_usd", 50.0),
            ("budget.sweep_tokens", 10_000),
            ("pricing.name", "mine"),
            ("pricing.as_of", "2030-01"),
            ("pricing.file", "prices.yaml"),
            ("pricing.models", {"openai/x": ModelPrice(input=1.0, output=2.0)}),
            ("runner.name", "ray"),
            ("runner.num_workers", 4),
            ("runner.num_cpus", 4),
            ("runner.worker_niceness", 10),
            ("runner.address", "ray://head:10001"),
            ("runner.max_retries", 5),
            ("runner.connect_timeout_s", 5.0),
            ("runner.max_samples", 3),
            ("runner.log_realtime", True),
            ("runner.env_vars", ["MY_*"]),
            ("runner.ship_code", False),
            ("runner.max_concurrent_jobs", 2),
            ("tracking.enabled", True),
            ("tracking.tracking_uri", "http://mlflow.lab:5000"),
            ("tracking.artifact_location", "file:///srv/artifacts"),
            ("tracking.experiment_name", "other"),
            ("tracking.traces", "errors"),
            ("tracking.max_traces", 5),
            ("tracking.outage_wait_s", 1.0),
            ("model.base_url", "http://127.0.0.1:9/v1"),
            ("model.cache", "2W"),
            ("model.config.max_connections", 7),
            ("model.config.timeout", 99),
            ("model.config.attempt_timeout", 50),
            ("model.config.max_retries", 9),
            ("model.args.max_retries", 2),
            ("model.args.timeout", 30),
            ("model.args.api_key", "sk-rotated-key-0123456789"),
            ("judge.cache", False),
        ]
    ),
    *(
        ("local_llm", f"model.serve.{key}", value)
        for key, value in [
            ("base_url", "http://127.0.0.1:8080/v1"),
            ("log_path", "/tmp/server.log"),
            ("prompt_log_path", "/tmp/prompts.jsonl"),
            ("startup_timeout_s", 600.0),
            ("request_timeout_s", 60.0),
            ("interrupt_on_crash", False),
            ("n_threads", 2),
            ("n_threads_batch", 2),
            ("extra_buffers", True),
        ]
    ),
    ("maptab_authors", "env.root", "/srv/maptab-release"),
    ("maptab_real", "env.gtfs_path", "/srv/gtfs"),
    ("mapsatisfy_demo", "env.root", "/srv/mapsatisfy-release"),
    ("mapsatisfy_generated", "env.out_dir", "/srv/generated"),
]

#: keys that change only how answers are scored: in the run identity, not the generation one
SCORING_ONLY: list[tuple[str, str, Any]] = [
    *(
        (name, key, value)
        for name in ("maptab", "lifeplanner", "mapsatisfy_generated")
        for key, value in [
            ("epochs", 3),
            ("judge.models", ["rules", "openai/gpt-4o"]),
            ("judge.temperature", 0.5),
            ("judge.votes", 3),
            ("metrics.metrics", ["only_this"]),
            ("metrics.sum_metrics", ["only_this"]),
            ("metrics.name", "mine"),
            ("scoring.protocol", "paper"),
        ]
    ),
    ("lifeplanner", "suite.alpha", 0.5),
    ("mapsatisfy_generated", "suite.judge_votes", 5),
    ("mapsatisfy_generated", "suite.judge_temperature", 0.0),
    ("mapsatisfy_generated", "suite.judge_evidence_chars", 5000),
]


def _toggled(specs: dict[str, Any], name: str, key: str, value: Any) -> tuple[Any, Any]:
    spec = specs[name]
    if key == "tracking.enabled":
        value = not spec.tracking.enabled
    toggled = with_value(spec, key.split("."), value)
    assert leaves(toggled.to_dict()) >= {key} or key.startswith("pricing.models"), f"{key} is not a config key"
    assert toggled.to_dict() != spec.to_dict(), f"{key}={value!r} changed nothing in the config"
    return spec, toggled


@pytest.mark.parametrize(("name", "key", "value"), OBSERVABILITY_AND_EXECUTION)
def test_an_observability_or_execution_key_leaves_both_identities(specs, name, key, value):
    spec, toggled = _toggled(specs, name, key, value)
    assert toggled.generation_hash() == spec.generation_hash(), f"{key} is in the generation identity"
    assert toggled.config_hash() == spec.config_hash(), f"{key} is in the run identity"


@pytest.mark.parametrize(("name", "key", "value"), SCORING_ONLY)
def test_a_scoring_key_leaves_the_generation_identity_but_not_the_run_identity(specs, name, key, value):
    spec, toggled = _toggled(specs, name, key, value)
    assert toggled.generation_hash() == spec.generation_hash(), f"{key} is in the generation identity"
    assert toggled.config_hash() != spec.config_hash(), f"{key} is missing from the run identity"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_config_key_is_either_in_the_generation_identity_or_toggled_here(specs, name):
    """Nothing escapes the audit: each key of the whole config (`to_dict`) is a generation key
    listed above, or one of the keys the two tests above toggle."""
    spec = specs[name]
    generation = leaves(spec.generation_identity())
    toggled = {key for _, key, _ in [*OBSERVABILITY_AND_EXECUTION, *SCORING_ONLY]}
    unaudited = {
        key
        for key in leaves(spec.to_dict())
        if key not in generation
        and key not in toggled
        and key not in OFF_DEFAULT
        # toggled as a whole or per key (`model.serve` is None without a served model: local_llm's are toggled)
        and not key.startswith(("pricing.models.", "model.serve", "model.args."))
    }
    assert not unaudited, f"config keys that are neither in the generation identity nor toggled: {sorted(unaudited)}"


def test_changing_what_the_model_sees_changes_the_generation_hash(specs):
    """The other side: the listed keys are not dropped wholesale (a sample of them, one per kind)."""
    base = specs["maptab"]
    for key, value in [
        ("seed", 7),
        ("model.config.temperature", 0.7),
        ("model.args.reasoning_summary", "auto"),
        ("env.n_maps", 5),
        ("suite.table_format", "json"),
    ]:
        assert with_value(base, key.split("."), value).generation_hash() != base.generation_hash(), key
    served = specs["local_llm"]
    for key, value in [("model.serve.n_ctx", 2048), ("model.serve.chat_format", "chatml")]:
        assert with_value(served, key.split("."), value).generation_hash() != served.generation_hash(), key
    generated = specs["mapsatisfy_generated"]
    assert with_value(generated, ["suite", "max_turns"], 3).generation_hash() != generated.generation_hash()


@pytest.mark.parametrize("key", sorted(OFF_DEFAULT))
def test_a_key_added_later_is_in_the_identity_only_off_its_default(specs, key):
    for name, other in OFF_DEFAULT[key]:
        spec = specs[name]
        assert key not in leaves(spec.generation_identity()), (name, key)
        changed = with_value(spec, key.split("."), other)
        assert key in leaves(changed.generation_identity()), (name, key)
        assert changed.generation_hash() != spec.generation_hash() and changed.config_hash() != spec.config_hash()
