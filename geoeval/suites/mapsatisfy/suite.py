"""The MapSatisfy suite: environment, samples and task, registered with the core (config schemas: config.py).

`env=mapsatisfy_demo` runs the authors' ten demo instances (`demo_bench.xlsx`) against their
recorded tool calls (`mock_data/*.csv`) as they are; `env=mapsatisfy_generated` generates instances
over a city (generate/generator.py) and fills the store from its POI table. A sample is one
dialogue (solver.py): the C.2 business-agent prompt (normal or profile version, `suite.setting`)
with the root query; the simulated user, the sandbox and the judges are run inside the solver; the
scorer's metric functions (scorers.py) compute ECR ... CEI from what the solver recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from geoeval.api import Dimensions, GeoevalError, Suite, register_suite
from geoeval.suites.mapsatisfy import SCORING_VERSION
from geoeval.suites.mapsatisfy.config import (
    MapSatisfyDemoEnvConfig,
    MapSatisfyGeneratedEnvConfig,
    MapSatisfySuiteConfig,
)
from geoeval.suites.mapsatisfy.meta_eval import TARGETS as META_EVAL_TARGETS
from geoeval.suites.mapsatisfy.metrics import _carried
from geoeval.suites.mapsatisfy.replay.catalogue import ARGUMENT_ALIASES, PROFILE_TOOLS, TOOL_SPECS
from geoeval.suites.mapsatisfy.submit import TOOL_LINE

if TYPE_CHECKING:
    from typing import TypeAlias

    from geoeval.api import AnswerScore, AnswerToScore, RunSpec, SampleResult, ScoredAnswer

PROMPTS = Path(__file__).parent / "prompts"


@dataclass(frozen=True)
class MapSatisfyEnv:
    """Picklable handle: where the instances and the recorded calls are. The sandbox is opened
    once per process (`sandbox()`)."""

    bench_path: str
    mock_dir: str
    embedder: str = "e5"
    record: bool = False
    fingerprint: str = ""

    def sandbox(self) -> Any:
        return _open_sandbox(self.mock_dir, self.embedder, self.record)


_SANDBOXES: dict[tuple[str, str, bool], Any] = {}
_LOCK = threading.Lock()


def _open_sandbox(mock_dir: str, embedder: str, record: bool) -> Any:
    from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store

    # No simulator is given to the sandbox: stage 3 uses the running eval's `tool_simulator` model
    # role (`build_task`), so one cached sandbox serves evals with and without a simulator.
    key = (mock_dir, embedder, record)
    with _LOCK:
        if key not in _SANDBOXES:
            emb = HashingEmbedder() if embedder == "hashing" else None
            _SANDBOXES[key] = ReplaySandbox(load_mock_store(mock_dir), embedder=emb, record=record)
        return _SANDBOXES[key]


def _fingerprint(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            digest.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def tools_brief(names: list[str]) -> str:

    return "\n".join(f"- {n}: {TOOL_SPECS[n].description}" for n in names)


def agent_prompt(instance: Any, setting: str, tool_names: list[str]) -> str:
    """The C.2 business-agent prompt of `setting` filled for `instance`."""
    template = (PROMPTS / f"agent_{setting}.txt").read_text(encoding="utf-8")
    context = json.dumps(instance.context.model_dump(mode="json"), ensure_ascii=False)
    profile = (
        "(no profile)"
        if instance.user_profile is None
        else json.dumps(instance.user_profile.model_dump(mode="json"), ensure_ascii=False)
    )
    for key, value in (
        ("{query}", instance.query),
        ("{context}", context),
        ("{user_profile}", profile),
        ("{tools_brief}", tools_brief(tool_names)),
    ):
        template = template.replace(key, value)
    return template


def capabilities_of(instance: Any) -> tuple[str, ...]:
    """What a case exercises: tool use always; evidence acquisition from the profile when a
    profile tool is expected; clarification when the case allows a question; the implicit-factor
    sources its metadata names."""
    caps = ["tool_use"]
    if any(t in PROFILE_TOOLS for t in instance.expected_tools):
        caps.append("profile_evidence")
    if instance.max_allowed_clarifications > 0:
        caps.append("clarification")
    caps += [f"{s}_reasoning" for s in instance.metadata.implicit_factor_source]
    return tuple(dict.fromkeys(caps))


def oracle_plan(instance: Any, store: Any) -> list[dict[str, Any]]:
    """The oracle's tool calls: for each expected tool, the first recorded call of this case that
    carries every required parameter (aliases renamed to the catalogue's names), one whose
    response has results first (`_has_results`); without one, a call built from the context and
    the query."""

    plan = []
    for tool in instance.expected_tools:
        required = instance.required_parameters.get(tool, [])
        rename = ARGUMENT_ALIASES.get(tool, {})
        known = set(TOOL_SPECS[tool].param_names) if tool in TOOL_SPECS else None
        chosen = None
        for record in sorted(store.records(tool), key=lambda r: not _has_results(r.result)):
            if record.trace_id != instance.task_id:
                continue
            args = {rename.get(k, k): v for k, v in record.arguments.items()}
            if known is not None:
                args = {k: v for k, v in args.items() if k in known}
            if all(_carried(args.get(p)) for p in required):
                chosen = args
                break
        plan.append(
            {"tool": tool, "arguments": chosen if chosen is not None else _synthesized_call(instance, tool, required)}
        )
    return plan


def _has_results(result: str) -> bool:
    """False for a recorded response that found nothing (a search with `count` 0 or an empty
    `pois` list): the oracle prefers a call of the case whose response has results."""
    try:
        obj = json.loads(result)
    except (json.JSONDecodeError, TypeError):
        return bool(str(result or "").strip())
    return not (isinstance(obj, dict) and (str(obj.get("count", "1")) == "0" or obj.get("pois") == []))


def _synthesized_call(instance: Any, tool: str, required: list[str]) -> dict[str, Any]:
    """A call from what the agent sees: the user id, the location, the city, the query."""
    ctx = instance.context
    city = ctx.city.split("/")[-1] if ctx.city else ""
    values: dict[str, Any] = {}
    for param in required:
        p = param.lower()
        if p in ("uid", "adiu"):
            values[param] = ctx.uid
        elif p in ("query", "keywords", "query_write"):
            values[param] = instance.query
        elif p in ("cur_adcode", "city"):
            values[param] = city
        elif p == "city_limit":
            values[param] = True
        elif p == "query_location" or p.endswith("loc"):
            values[param] = ctx.user_current_loc
        elif p.endswith("lon") or p in ("x", "start_x", "end_x"):
            values[param] = ctx.lon
        elif p.endswith("lat") or p in ("y", "start_y", "end_y"):
            values[param] = ctx.lat
        else:
            values[param] = instance.query
    return values


def build_sample(
    instance: Any, setting: str, tool_names: list[str], store: Any, thinking: str, answer_channel: str = "text"
) -> Sample:
    from geoeval.suites.mapsatisfy.schema import instance_to_record

    meta = instance.metadata
    dims = Dimensions(
        suite="mapsatisfy",
        task_family="dialogue",
        task=(meta.sub_task[0] if meta.sub_task else ""),
        level=(meta.difficulty or "").lower(),
        setting=setting,
        capabilities=capabilities_of(instance),
        extra={
            "domain": ";".join(meta.domain),
            "sub_task": ";".join(meta.sub_task),
            "implicit_factor_source": ";".join(meta.implicit_factor_source),
            "thinking": thinking,
        },
    )
    return Sample(
        id=instance.task_id,
        input=[
            ChatMessageSystem(
                content=agent_prompt(instance, setting, tool_names) + (TOOL_LINE if answer_channel == "tool" else "")
            ),
            ChatMessageUser(content=instance.query),
        ],
        target="",
        metadata={
            "suite": "mapsatisfy",
            "setting": setting,
            "tools": tool_names,
            "shard_key": instance.task_id,
            "instance": instance_to_record(instance),
            "oracle_plan": oracle_plan(instance, store),
            "dims": dims.model_dump(mode="json"),
        },
    )


def save_simulated(sandbox: Any, out_dir: Path) -> list[Path]:
    """Record mode's output: the sandbox's whole store (recordings plus the simulated responses
    captured in this process) in the authors' CSV layout, so `env.mock_data` pointed at it replays
    the simulated calls exactly. Nothing is written when nothing was simulated. The store lives in
    the process that ran the eval: the local runner's; Ray workers' captures are not gathered."""
    store = sandbox.store
    if not any(r.origin == "simulated" for tool in store.tools for r in store.records(tool)):
        return []
    return store.save_csv(out_dir)


def thinking_of(spec: MapSatisfySpec) -> str:
    """on / off / default, from the model's generate config (reasoning_effort, reasoning_tokens)."""
    cfg = spec.model.config
    if cfg.reasoning_effort == "none":
        return "off"
    if cfg.reasoning_effort is not None or cfg.reasoning_tokens is not None:
        return "on"
    return "default"


if TYPE_CHECKING:
    #: the spec this suite's methods see: its own config and env config schemas
    MapSatisfySpec: TypeAlias = RunSpec[MapSatisfySuiteConfig, MapSatisfyDemoEnvConfig | MapSatisfyGeneratedEnvConfig]


class MapSatisfySuite(
    Suite[MapSatisfySuiteConfig, MapSatisfyDemoEnvConfig | MapSatisfyGeneratedEnvConfig, MapSatisfyEnv]
):
    name = "mapsatisfy"
    scoring_version = SCORING_VERSION  # see geoeval/suites/mapsatisfy/__init__.py
    # what the core's reports lead with, and which swept keys read on a log2 axis (sweep plot)
    headline_metrics = ("ar", "ses", "ecr")
    uses_judges = True  # ECR, IISR and IFS come from the judge ensemble (provenance labels say which)
    log2_sweep_axes: tuple[str, ...] = ()
    # what the model sees changed: the generated store answers search_poi by the city's name too
    generation_version = "2"
    # an offline agent's algorithm is part of its run and generation identity: a changed one is
    # evaluated anew, never replayed from the old one's stored trajectories
    agent_versions = {"clarify_baseline": "clarify-2"}
    # meta-evaluation (meta_eval.py): ordering-accuracy targets, 0.9 for the rules judge's metrics
    meta_eval_targets = dict(META_EVAL_TARGETS)
    config_schema = MapSatisfySuiteConfig
    env_schema = {"mapsatisfy_demo": MapSatisfyDemoEnvConfig, "mapsatisfy_generated": MapSatisfyGeneratedEnvConfig}

    def build_env(self, spec: MapSatisfySpec) -> MapSatisfyEnv:
        if spec.env.name == "mapsatisfy_generated":
            return self._build_generated_env(spec)
        from geoeval.api import resolve_root

        # a set root must exist; an unset one reads the verified download cache (`geoeval data fetch`)
        root = resolve_root(spec.env.root, "mapsatisfy-demo")
        bench, mock = root / spec.env.bench, root / spec.env.mock_data
        for path, what in ((bench, "env.bench"), (mock, "env.mock_data")):
            if not path.exists():
                raise GeoevalError(
                    f"Invalid config: {what}: {path} does not exist (env.root={spec.env.root!r}, "
                    f"relative to the working directory {Path.cwd()}); the authors' demo is one "
                    "`geoeval data fetch mapsatisfy-demo` away"
                )
        return MapSatisfyEnv(
            bench_path=str(bench.resolve()),
            mock_dir=str(mock.resolve()),
            embedder=spec.env.embedder,
            record=spec.suite.record_simulated,
            fingerprint=_fingerprint([bench, mock]),
        )

    def _build_generated_env(self, spec: MapSatisfySpec) -> MapSatisfyEnv:
        from geoeval.suites.mapsatisfy.generate.generator import generate, write_generated
        from geoeval.suites.mapsatisfy.generate.poi_city import city_from_lifeplanner, synthetic_city

        e = cast(MapSatisfyGeneratedEnvConfig, spec.env)  # `build_env` calls this for env=mapsatisfy_generated
        if e.city == "lifeplanner":
            if not e.lifeplanner_db or not Path(e.lifeplanner_db).is_file():
                raise GeoevalError(
                    f"Invalid config: env.lifeplanner_db: {e.lifeplanner_db!r} is not a file "
                    "(city=lifeplanner reads its places table)"
                )
            city = city_from_lifeplanner(e.lifeplanner_db)
            tag = f"lifeplanner_{hashlib.sha256(Path(e.lifeplanner_db).read_bytes()).hexdigest()[:8]}"
        else:
            city, tag = synthetic_city(e.seed, n_pois=e.n_pois), f"synthetic{e.n_pois}"
        # regenerated on every run (a second or two): the files are a cache for reading, never an input
        gen = generate(e.n, seed=e.seed, city=city)
        bench, mock = write_generated(gen, Path(e.out_dir) / f"seed{e.seed}_n{e.n}_{tag}")
        return MapSatisfyEnv(
            bench_path=str(bench.resolve()),
            mock_dir=str(mock.resolve()),
            embedder=e.embedder,
            record=spec.suite.record_simulated,
            fingerprint=_fingerprint([bench, mock]),
        )

    def meta_eval_answers(self, spec: MapSatisfySpec, env: MapSatisfyEnv, samples: list[Sample]) -> list[ScoredAnswer]:
        """Answers of known quality per sample, scored by the run's judges (meta_eval.py)."""
        from geoeval.suites.mapsatisfy.meta_eval import meta_eval_answers

        return meta_eval_answers(spec, env, samples)

    def score_answers(
        self, spec: MapSatisfySpec, env: MapSatisfyEnv, samples: Mapping[str, Sample], answers: list[AnswerToScore]
    ) -> list[AnswerScore]:
        """Answers written outside a run, scored as the solver and scorer score a run's dialogue:
        the record built from the answer and its trajectory (`solver.record_from_messages`), judged
        under both protocols by the run's judges (`solver.judge_into_record`), and the metrics
        computed by the core's scorer (`core.scoring.score_both_protocols`) under
        `spec.scoring.protocol`. `reading`: the rules judge's reading under that protocol (what it
        named, the recommended candidates, the rules that fired: negation, correction, echo, …) and
        every item's verdict."""

        from geoeval.api import SAMPLE_ERROR_KEY, AnswerScore, score_both_protocols
        from geoeval.suites.mapsatisfy.judging.ensemble import judge_settings
        from geoeval.suites.mapsatisfy.schema import parse_instance
        from geoeval.suites.mapsatisfy.scorers import extract_answer
        from geoeval.suites.mapsatisfy.solver import judge_into_record, record_from_messages

        protocol = spec.scoring.protocol
        settings = judge_settings(spec)
        out = []
        for item in answers:
            sample_metadata = samples[item.sample_id].metadata or {}
            instance = parse_instance(sample_metadata["instance"])
            record = record_from_messages(instance, item.answer, item.messages, spec.suite.setting)
            verdicts = asyncio.run(judge_into_record(instance, record, settings, protocol))
            metadata = {**sample_metadata, "mapsatisfy": record}
            if verdicts.all_failed():
                metadata[SAMPLE_ERROR_KEY] = "every judge failed on every rubric item: the case cannot be judged"
            answer, _problem, values, failures, disagreement = score_both_protocols(
                list(spec.metrics.metrics), extract_answer, record["answer"], [], metadata, {}, protocol
            )
            reading = {
                "protocol": protocol,
                "explicit_met": verdicts.explicit_met,
                "implicit_satisfied": verdicts.implicit_satisfied,
                "judges": verdicts.raw,
                "tool_calls": [c["name"] for c in record["tool_calls"]],
                "turns": record["turns"],
            }
            errors = [e for e in [metadata.get(SAMPLE_ERROR_KEY), *failures] if e]
            out.append(
                AnswerScore(
                    sample_id=item.sample_id,
                    scores=values,
                    answer=answer,
                    reading=reading,
                    explanation="; ".join(errors),
                    protocol_disagreement=disagreement,
                    epoch=item.epoch,
                )
            )
        return out

    def after_run(self, spec: MapSatisfySpec, env: Any, results: list[SampleResult], out_dir: Path) -> list[Path]:
        """The Table 1/2 layout and the Figure 5 groupings (Markdown + PNG), logged by the harness."""
        from geoeval.api import plots_wanted
        from geoeval.suites.mapsatisfy.reports import write_reports

        paths = write_reports(results, Path(out_dir) / "mapsatisfy_reports", plots=plots_wanted(spec))
        if getattr(env, "record", False):
            paths += save_simulated(env.sandbox(), Path(out_dir) / "mapsatisfy_recorded")
        return paths

    def summary_notes(self, spec: MapSatisfySpec, env: Any, results: list[SampleResult]) -> list[str]:
        """The served tool calls, and the rubric lines no recording grounds with the run's scores
        on the rest (`grounding.summary_notes`)."""
        from geoeval.suites.mapsatisfy.grounding import summary_notes
        from geoeval.suites.mapsatisfy.schema import load_instances

        if env is None:
            return []
        return summary_notes(
            load_instances(env.bench_path), env.sandbox(), results, spec.scoring.protocol, spec.suite.setting
        )

    def build_samples(self, spec: MapSatisfySpec, env: MapSatisfyEnv) -> list[Sample]:
        from geoeval.suites.mapsatisfy.schema import load_instances

        names = list(spec.suite.map_tools) if spec.suite.map_tools else sorted(TOOL_SPECS)
        unknown = [n for n in names if n not in TOOL_SPECS]
        if unknown:
            raise GeoevalError(
                f"Invalid config: suite.map_tools: unknown MapSatisfy tool(s) {unknown} "
                f"(available: {', '.join(sorted(TOOL_SPECS))})"
            )
        store = env.sandbox().store
        thinking = thinking_of(spec)
        channel = spec.suite.answer_channel
        return [
            build_sample(i, spec.suite.setting, names, store, thinking, channel) for i in load_instances(env.bench_path)
        ]

    def build_task(self, spec: MapSatisfySpec, env: MapSatisfyEnv, samples: list[Sample]) -> Task:
        from inspect_ai.model import GenerateConfig

        from geoeval.api import RETRY_DEFAULTS, build_role_model, geoeval_scorer
        from geoeval.suites.mapsatisfy.judging.ensemble import judge_settings
        from geoeval.suites.mapsatisfy.replay.simulator import SIMULATOR_ROLE
        from geoeval.suites.mapsatisfy.scorers import extract_answer
        from geoeval.suites.mapsatisfy.solver import mapsatisfy_dialogue

        # bounded retries, as for every model geoeval builds: a dead endpoint fails, never hangs
        bounded = GenerateConfig(**RETRY_DEFAULTS)
        roles = {}
        if spec.suite.user_model:
            roles["user"] = build_role_model(spec.suite.user_model, bounded)
        if spec.suite.tool_simulator:
            roles[SIMULATOR_ROLE] = build_role_model(spec.suite.tool_simulator, bounded)
        return Task(
            name="mapsatisfy",
            dataset=MemoryDataset(samples, name="mapsatisfy"),
            solver=mapsatisfy_dialogue(
                env,
                max_turns=spec.suite.max_turns,
                max_tool_calls=spec.suite.max_tool_calls,
                answer_channel=spec.suite.answer_channel,
                protocol=spec.scoring.protocol,
                metric_names=list(spec.metrics.metrics),
                **judge_settings(spec),
            ),
            scorer=geoeval_scorer(list(spec.metrics.metrics), extract_answer, protocol=spec.scoring.protocol),
            model_roles=roles or None,
            metadata={"suite": "mapsatisfy"},
        )


register_suite(MapSatisfySuite)

# metrics and agent policies of the suite register on import
from geoeval.suites.mapsatisfy import agents as _agents  # noqa: E402,F401
from geoeval.suites.mapsatisfy import scorers as _scorers  # noqa: E402,F401
