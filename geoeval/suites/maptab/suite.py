"""The MapTab suite: environment, samples, task and metrics, registered with the core registry
(config schemas: `config.py`; the samples of one question: `samples.py`; the synthetic maps:
`env/synthetic.py`).

Two task families (`suite.task_family`):
* `rp` (the default): route planning, the 12 categories of appendix B.2 with the cost model of the
  "Task Definition" section. A sample is one RP query; its input is the system prompt, the question
  with the tables its category allows, and (for settings with a map) the map image at
  `suite.resolution` x full size. Scored by EMA, PMA, DS (`metrics=maptab_rp`).
* `qa`: diagnostic QA, the 12 types per scenario of appendix D.2 (`qa/`), scored by Acc
  (`metrics=maptab_qa`; `suite=maptab_qa` or `+experiment=maptab_qa` set both).

Three environments (`env=`):
* `maptab_synthetic`: seeded synthetic Metromaps and, with `suite.scenario` travelmap or both,
  Travelmaps; queries are drawn per run (`suite.categories` / `suite.qa_types`,
  `suite.n_per_category`), in `suite.language` and `suite.style`.
* `maptab_real`: real station names and line topology (Tokyo Metro + Toei, or a GTFS feed) with
  synthetic attributes (`env/real.py`); queries drawn per run as on synthetic maps. Metromap only.
* `maptab_authors`: the authors' released files as they are (`authors/env.py`): their maps, their
  images and the items of their test-set files (RP only). The files fix the queries, so
  `suite.categories`, `suite.n_per_category` and `suite.scenario` do not apply there (choose with
  `env.categories` and `env.scenario`); `suite.setting`, `suite.resolution` and
  `suite.table_format` do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from inspect_ai import Task
from inspect_ai.dataset import Sample

from geoeval.api import CopyingMemo, GeoevalError, Suite, register_suite
from geoeval.suites.maptab import SCORING_VERSION

# the schemas, the sample builders and the synthetic maps live in their own modules
from geoeval.suites.maptab.config import (
    QA_METRICS,
    RP_METRICS,
    SETTING_OF,
    MapTabAuthorsEnvConfig,
    MapTabEnvConfig,
    MapTabRealEnvConfig,
    MapTabSuiteConfig,
)
from geoeval.suites.maptab.env.synthetic import generate_env_maps, maps_difficulty
from geoeval.suites.maptab.generator.parallel import synthetic_rp_queries
from geoeval.suites.maptab.samples import qa_sample, rp_sample

if TYPE_CHECKING:
    from typing import TypeAlias

    from geoeval.api import AnswerScore, AnswerToScore, RunSpec, SampleResult, ScoredAnswer


def _env_seed(spec: MapTabSpec) -> int:
    # called for the synthetic and real environments only (the authors' has no seed)
    env = cast("MapTabEnvConfig | MapTabRealEnvConfig", spec.env)
    return env.seed if env.seed is not None else spec.seed


if TYPE_CHECKING:
    #: the spec this suite's methods see: its own config and env config schemas
    MapTabSpec: TypeAlias = RunSpec[MapTabSuiteConfig, MapTabEnvConfig | MapTabAuthorsEnvConfig | MapTabRealEnvConfig]


class MapTabSuite(Suite[MapTabSuiteConfig, MapTabEnvConfig | MapTabAuthorsEnvConfig | MapTabRealEnvConfig, Any]):
    name = "maptab"
    scoring_version = SCORING_VERSION  # see geoeval/suites/maptab/__init__.py
    #: Offline agents whose answers depend on an algorithm of their own, with its version: part of
    #: their runs' identity, so a changed reader never resumes from, or is compared as, the old
    #: one's answers. perception.PERCEPTION_VERSION, written out so that the driver does not
    #: import OpenCV and the OCR engine (a test keeps the two equal).
    agent_versions = {"perception_baseline": "perception-2"}
    # what the core's reports lead with, and which swept keys read on a log2 axis (sweep plot)
    headline_metrics = ("ema", "pma", "acc")
    log2_sweep_axes: tuple[str, ...] = ("suite.resolution",)
    # splits every report and MLflow metric by scenario (ema/scenario/metromap, ...), which the
    # paper's tables report apart
    report_dimensions: tuple[str, ...] = ("scenario",)
    # `geoeval score maptab results.json`: a results file in the authors' format (cli.py)
    commands = {"score": "geoeval.suites.maptab.cli:score"}
    config_schema = MapTabSuiteConfig
    # one schema per environment, chosen by `env.name`
    env_schema = {
        "maptab_synthetic": MapTabEnvConfig,
        "maptab_authors": MapTabAuthorsEnvConfig,
        "maptab_real": MapTabRealEnvConfig,
    }

    # ------------------------------------------------------------ environment
    def build_env(self, spec: MapTabSpec) -> Any:
        check_metrics(spec)
        if spec.env.name == "maptab_authors":
            if spec.suite.task_family == "qa":
                raise GeoevalError(
                    "Invalid config: suite.task_family=qa: QA is generated on synthetic maps; "
                    "use env=maptab_synthetic (the authors' sample ships no QA items)"
                )
            from geoeval.suites.maptab.authors.env import build_authors_env

            return build_authors_env(spec.env, Path(spec.work_dir))
        if spec.env.name == "maptab_real":
            if spec.suite.scenarios() != ("metromap",):
                raise GeoevalError(
                    f"Invalid config: env=maptab_real builds Metromaps only; "
                    f"suite.scenario={spec.suite.scenario} (use suite.scenario=metromap)"
                )
            from geoeval.suites.maptab.env.real import build_real_env

            return build_real_env(spec.env, _env_seed(spec), Path(spec.work_dir))
        from geoeval.suites.maptab.env.environment import MapTabEnv, env_key, load_maps, map_levels, save_maps

        seed = _env_seed(spec)
        cfg = spec.env.model_dump(mode="json")
        scenarios = spec.suite.scenarios()
        # Metromap-only environments keep the key they had before Travelmap maps could be added.
        key = env_key(cfg if scenarios == ("metromap",) else {**cfg, "scenarios": list(scenarios)}, seed)
        root = Path(spec.work_dir) / "envs" / f"maptab-{key}"
        db = root / "env.duckdb"
        if not db.exists():
            maps, diff = [], {}
            for scenario in scenarios:
                generated = generate_env_maps(spec.env, seed, scenario)
                diff.update(maps_difficulty(generated, scenario))
                maps += generated
            save_maps(db, maps, diff, {"env_key": key, "seed": str(seed)})
        maps = load_maps(db)
        levels = map_levels(db)
        return MapTabEnv(
            db_path=str(db.resolve()),
            image_dir=str((root / "images").resolve()),
            map_names=tuple(m.name for m in maps),
            map_difficulty=levels,
        )

    # ------------------------------------------------------------ samples
    def build_samples(self, spec: MapTabSpec, env: Any) -> list[Sample]:
        if env.source == "authors":
            from geoeval.suites.maptab.authors.env import authors_samples

            return authors_samples(spec.suite, env, spec.seed)
        from geoeval.suites.maptab.env.environment import image_data_uri, map_image

        suite_cfg: MapTabSuiteConfig = spec.suite
        samples: list[Sample] = []
        if suite_cfg.task_family == "qa":
            from geoeval.suites.maptab.qa.questions import qa_tables

            for m, queries in self.synthetic_qa_queries(spec, env):
                image_uri = None
                for q in queries:
                    if q.setting.startswith("map") and image_uri is None:
                        image_uri = image_data_uri(map_image(env, m, suite_cfg.resolution, suite_cfg.language))
                    samples.append(qa_sample(q, qa_tables(m, q, suite_cfg.table_format), image_uri, suite_cfg))
            return samples
        from geoeval.suites.maptab.rp.queries import prompt_tables, row_seed

        for m, queries in self.synthetic_queries(spec, env):
            image_uri = None
            for q in queries:
                if SETTING_OF[q.category].startswith("map") and image_uri is None:
                    image_uri = image_data_uri(map_image(env, m, suite_cfg.resolution, suite_cfg.language))
                # only the columns the query needs are given to the model (appendix B.2)
                tables = prompt_tables(
                    m, q.category, suite_cfg.table_format, row_seed=row_seed(spec.seed, q.id, suite_cfg.row_order)
                )
                samples.append(rp_sample(q, tables, image_uri, suite_cfg, stations=list(m.stations)))
        return samples

    def _maps(self, spec: MapTabSpec, env: Any) -> list[Any]:
        """The environment's maps of `suite.scenario`, in `suite.language`."""
        from geoeval.suites.maptab.env.environment import load_maps
        from geoeval.suites.maptab.generator.language import localize_map

        _need_generated_maps(env)
        wanted = spec.suite.scenarios()
        return [localize_map(m, spec.suite.language) for m in load_maps(env.db_path) if m.scenario in wanted]

    def synthetic_queries(self, spec: MapTabSpec, env: Any) -> list[tuple[Any, list[Any]]]:
        """(map, its RP queries) of a synthetic environment, as `build_samples` asks them (map i
        seeded `seed * 7919 + i`; large jobs are built in processes, identically)."""
        from geoeval.api import file_key

        _need_generated_maps(env)
        suite_cfg: MapTabSuiteConfig = spec.suite
        categories, style = suite_cfg.selected_categories(), suite_cfg.fixed_style()
        # every input of the queries: the environment file, the maps chosen and localised, the
        # categories, the count, the seed, the map levels and the style
        key = (
            file_key(env.db_path),
            suite_cfg.language,
            tuple(suite_cfg.scenarios()),
            tuple(categories),
            suite_cfg.n_per_category,
            _env_seed(spec),
            tuple(sorted(env.map_difficulty.items())),
            repr(style),
        )
        return _QUERIES.get(
            key,
            lambda: synthetic_rp_queries(
                self._maps(spec, env),
                categories,
                suite_cfg.n_per_category,
                _env_seed(spec) * 7919,
                env.map_difficulty,
                style,
            ),
        )

    def synthetic_qa_queries(self, spec: MapTabSpec, env: Any) -> list[tuple[Any, list[Any]]]:
        """(map, its QA queries) of a synthetic environment: `suite.n_per_category` questions of each
        type of `suite.qa_types` per map, styles cycled over maps and types (B.3)."""
        from geoeval.suites.maptab.qa.questions import build_qa_queries

        suite_cfg: MapTabSuiteConfig = spec.suite
        types = suite_cfg.selected_qa_types()
        return [
            (
                m,
                build_qa_queries(
                    m,
                    types,
                    suite_cfg.n_per_category,
                    seed=_env_seed(spec),
                    map_difficulty=env.map_difficulty.get(m.name, "Easy"),
                    style=suite_cfg.fixed_style(),
                    style_offset=i,
                    shuffle_seed=spec.seed if suite_cfg.row_order == "shuffled" else None,
                ),
            )
            for i, m in enumerate(self._maps(spec, env))
        ]

    def write_authors_layout(self, spec: MapTabSpec, env: Any, root: Path) -> list[Path]:
        """Write a synthetic environment's maps (full-size images, tables) and the queries of
        `spec.suite` in the authors' release layout under `root`; `env=maptab_authors` with that
        root loads them back as the same samples."""
        from geoeval.suites.maptab.authors.format import write_authors_layout

        written: list[Path] = []
        for m, queries in self.synthetic_queries(spec, env):
            written += write_authors_layout(m, queries, Path(root))
        return written

    # ------------------------------------------------------------ meta-evaluation
    # every MapTab answer metric is deterministic (meta_eval.py): each must order every known pair
    # of the reference / one-defect / worthless tiers; the answer families of what real models
    # write (surface forms, gaming, partly right, trajectories) must be ordered at least 95% of the
    # time (issue 22's target; the robust protocol orders all of them on the synthetic and the
    # authors' samples, README "Answer protocol")
    meta_eval_targets = {
        **{m: 1.0 for m in ("ema", "pma", "ds", "acc")},
        **{
            f"{f}:{m}": 0.95
            for f in ("surface", "gaming", "partial", "trajectory")
            for m in ("ema", "pma", "ds", "acc")
        },
    }

    def meta_eval_answers(self, spec: MapTabSpec, env: Any, samples: list[Sample]) -> list[ScoredAnswer]:
        """Answers of known quality per sample (reference, one-defect, worthless), scored through
        the suite's real scorer path (`meta_eval.py`)."""
        from geoeval.suites.maptab.meta_eval import meta_eval_answers

        return meta_eval_answers(spec, env, samples)

    # ------------------------------------------------------------ public scoring entry point
    def score_answers(
        self, spec: MapTabSpec, env: Any, samples: Mapping[str, Sample], answers: list[AnswerToScore]
    ) -> list[AnswerScore]:
        """Answers written outside a run, scored exactly as the Inspect scorer scores a completion,
        under `spec.scoring.protocol` (the other protocol's differing values kept). The answer is
        the completion; with `messages` and no answer, the last assistant message's text (MapTab
        scores the final answer only: its paper has no tools, so a trajectory earns nothing)."""
        from geoeval.suites.maptab.scorers import score_answers

        return score_answers(spec, samples, answers)

    # ------------------------------------------------------------ task
    def build_task(self, spec: MapTabSpec, env: Any, samples: list[Sample]) -> Task:
        from geoeval.suites.maptab.task import make_task

        check_metrics(spec)
        return make_task(spec.suite, env, samples, spec.metrics.metrics, spec.scoring.protocol)

    def after_run(self, spec: MapTabSpec, env: Any, results: list[SampleResult], out_dir: Path) -> list[Path]:
        """Paper-style reports of the run, written to `out_dir` (the harness logs them to MLflow):
        for QA results, Acc per QA type x scenario (Table 8) and per capability (Table 3); for RP
        results, EMA/PMA/DS per category and difficulty (Table 2 layout), the G.2 difficulty matrix
        and the FR/PR/NR and T/P/C/R analyses of Table 4 (`rp/analysis.py`, `rp/report.py`)."""
        from geoeval.api import plots_wanted
        from geoeval.suites.maptab.reports import protocol_section, write_qa_report

        plots = plots_wanted(spec)
        qa = [r for r in results if r.dims.task_family == "qa"]
        files = write_qa_report(results, Path(out_dir), plots=plots, notes=protocol_section(qa))
        if env is not None and any(r.dims.task_family == "rp" for r in results):
            from geoeval.suites.maptab.rp.analysis import analyse
            from geoeval.suites.maptab.rp.report import write_rp_report

            queries = self.rp_queries(spec, env)
            models = sorted({r.model for r in results if r.model})
            rp = [r for r in results if r.dims.task_family == "rp"]
            files += write_rp_report(
                analyse(results, queries), Path(out_dir), models, plots=plots, notes=protocol_section(rp)
            )
        return files

    def rp_queries(self, spec: MapTabSpec, env: Any) -> dict[str, tuple[Any, Any]]:
        """{sample id: (map, RPQuery)} of the run's RP samples (rebuilt: they are deterministic)."""
        if env.source == "authors":
            from geoeval.suites.maptab.authors.env import authors_query
            from geoeval.suites.maptab.env.environment import load_maps

            maps = {m.name: m for m in load_maps(env.db_path)}
            counters: dict[tuple[str, str], int] = {}
            out: dict[str, tuple[Any, Any]] = {}
            # the ids are numbered as authors_samples numbers them (per map and category, file order)
            for it in json.loads(Path(env.items_path).read_text("utf-8")):
                if spec.suite.setting != "all" and SETTING_OF[it["category"]] != spec.suite.setting:
                    continue
                m = maps[it["map"]]
                i = counters.get((m.name, it["category"]), 0)
                counters[(m.name, it["category"])] = i + 1
                q = authors_query(it, m, f"{m.name}-{it['category']}-{i:03d}")
                out[q.id] = (m, q)
            return out
        return {q.id: (m, q) for m, queries in self.synthetic_queries(spec, env) for q in queries}


#: RP queries of recent jobs: a job asks for them twice (samples, then its report) and the jobs of
#: a resolution sweep ask for the same ones at every resolution (copies each time).
_QUERIES = CopyingMemo(maxsize=8)


def _need_generated_maps(env: Any) -> None:
    if env.source not in ("synthetic", "real"):
        raise GeoevalError("synthetic_queries needs a maptab_synthetic or maptab_real environment")


def check_metrics(spec: MapTabSpec) -> None:
    """RP is scored by EMA/PMA/DS and QA by Acc (plus the token counts, which fit both); a metric
    set of the other family would score every sample 0, so it stops the run here."""
    names = set(spec.metrics.metrics)
    wrong = names & (RP_METRICS if spec.suite.task_family == "qa" else QA_METRICS)
    if wrong:
        fix = "metrics=maptab_qa" if spec.suite.task_family == "qa" else "metrics=maptab_rp"
        raise GeoevalError(
            f"Invalid config: metrics.metrics: {sorted(wrong)} do not score "
            f"suite.task_family={spec.suite.task_family} samples (use {fix})"
        )


register_suite(MapTabSuite)

# metrics, tools and agent policies of the suite register on import
from geoeval.suites.maptab import agents as _agents  # noqa: E402,F401
from geoeval.suites.maptab import scorers as _scorers  # noqa: E402,F401
