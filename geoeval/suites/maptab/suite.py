"""The MapTab suite: config schemas, environment, samples, task and metrics, registered with the
core registry.

Two task families (`suite.task_family`):
* `rp` (the default): route planning, the 12 categories of appendix B.2 with the cost model of the
  "Task Definition" section. A sample is one RP query; its input is the system prompt, the question
  with the tables its category allows, and (for settings with a map) the map image at
  `suite.resolution` x full size. Scored by EMA, PMA, DS (`metrics=maptab_rp`).
* `qa`: diagnostic QA, the 12 types per scenario of appendix D.2 (`qa.py`), scored by Acc
  (`metrics=maptab_qa`; `suite=maptab_qa` or `+experiment=maptab_qa` set both).

Three environments (`env=`):
* `maptab_synthetic`: seeded synthetic Metromaps and, with `suite.scenario` travelmap or both,
  Travelmaps; queries are drawn per run (`suite.categories` / `suite.qa_types`,
  `suite.n_per_category`), in `suite.language` and `suite.style`.
* `maptab_real`: real station names and line topology (Tokyo Metro + Toei, or a GTFS feed) with
  synthetic attributes (`real_env.py`); queries drawn per run as on synthetic maps. Metromap only.
* `maptab_authors`: the authors' released files as they are (`authors_env.py`): their maps, their
  images and the items of their test-set files (RP only). The files fix the queries, so
  `suite.categories`, `suite.n_per_category` and `suite.scenario` do not apply there (choose with
  `env.categories` and `env.scenario`); `suite.setting`, `suite.resolution` and
  `suite.table_format` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
from pydantic import Field, field_validator

from geoeval.suites.maptab import SCORING_VERSION
from geoeval.core.config import Strict
from geoeval.core.memo import CopyingMemo
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions
from geoeval.core.registry import register_suite
from geoeval.suites.maptab.qa import QA_TYPES
from geoeval.suites.maptab.queries import SETTINGS

Category = Literal["map_only", "edge_only", "map_edge", "T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR", "mix"]
Setting = Literal["map", "edge_tab", "map_edge_tab", "map_edge_tab_vertex_tab", "map_mix_tab"]
QAType = Literal["M-GP", "M-LP", "M-SR", "E-GP", "E-LP", "E-SR", "V-GP", "V-LP", "V-SR", "MM-GP", "MM-LP", "MM-SR"]
SCENARIOS = {"metromap": ("metromap",), "travelmap": ("travelmap",), "both": ("metromap", "travelmap")}
RP_METRICS = frozenset({"ema", "pma", "ds"})
QA_METRICS = frozenset({"acc"})

# Input setting of each RP category (appendix B.2), as config/metric-safe names:
# "map+edge_tab" -> "map_edge_tab".
SETTING_OF: dict[str, str] = {c: s.replace("+", "_") for c, s in SETTINGS.items()}

# Capabilities an RP category exercises. Table 1 of the paper maps only the QA types; for RP
# geoeval tags path planning always, plus what the input setting demands (documented in README).
def capabilities_of(category: str) -> tuple[str, ...]:
    setting = SETTING_OF[category]
    caps = ["path_planning"]
    if setting.startswith("map"):
        caps.append("visual_perception")
    if "tab" in setting:
        caps.append("table_understanding")
    if setting.startswith("map") and "tab" in setting:
        caps.append("cross_modal_alignment")
    if category not in ("map_only", "edge_only", "map_edge"):
        caps.append("numerical_reasoning")
    return tuple(caps)


class MapTabEnvConfig(Strict):
    """`env=maptab_synthetic`: seeded synthetic Metromaps (appendix E.1 ranges)."""

    name: Literal["maptab_synthetic"] = "maptab_synthetic"
    n_maps: int = Field(default=3, ge=1, le=500)
    n_lines: int = Field(default=3, ge=1, le=12)
    stations_per_line: tuple[int, int] = (6, 9)
    width: int = Field(default=2000, ge=400, le=20000)
    height: int = Field(default=1600, ge=300, le=20000)
    loop_probability: float = Field(default=0.2, ge=0.0, le=1.0)
    seed: int | None = None

    @field_validator("stations_per_line")
    @classmethod
    def _range(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not (2 <= v[0] <= v[1]):
            raise ValueError("must be [min, max] with 2 <= min <= max")
        return v


class MapTabAuthorsEnvConfig(Strict):
    """`env=maptab_authors`: the authors' released MapTab files under `root` (one folder per
    scenario, with images/, tabulars/ and data/test_set/), evaluated as they are."""

    name: Literal["maptab_authors"] = "maptab_authors"
    root: str | None = Field(default="../shared/peers/maptab", description="the release root (relative to the working "
                             "directory); null: the download cache of `geoeval data fetch maptab-sample`")
    scenario: Literal["metromap", "travelmap", "both"] = "both"
    categories: list[Category] | None = Field(
        default=None, min_length=1, description="test-set categories to load; null: every one present")
    on_quality_failure: Literal["exclude", "fail"] = Field(
        default="exclude", description="a map or item failing the B.5/B.6 checks is left out (reported), or stops the run")


class MapTabRealEnvConfig(Strict):
    """`env=maptab_real`: Metromaps with real station names and topology (`real_env.py`)."""

    name: Literal["maptab_real"] = "maptab_real"
    source: Literal["tokyo", "gtfs"] = Field(
        default="tokyo", description="tokyo: Tokyo Metro + Toei lines of the tokyo-train-board package; gtfs: gtfs_path")
    gtfs_path: str | None = Field(default=None, description="GTFS feed folder (stops/routes/trips/stop_times.txt)")
    # five connected Tokyo Metro lines (94 stations) by default, as the YAML says: on the whole
    # network the exact solver exceeds its search limit on criteria queries
    lines: list[str] | None = Field(
        default_factory=lambda: ["ginza", "marunouchi", "hibiya", "tozai", "chiyoda"], min_length=1,
        description="lines to keep: tokyo keys/names/symbols, or GTFS route ids/names; null: all")
    n_maps: int = Field(default=1, ge=1, le=500, description="maps sharing the topology, attributes drawn per map")
    seed: int | None = None


class MapTabSuiteConfig(Strict):
    """`suite=maptab`."""

    name: Literal["maptab"] = "maptab"
    task_family: Literal["rp", "qa"] = Field(default="rp", description="rp: route planning; qa: diagnostic QA")
    scenario: Literal["metromap", "travelmap", "both"] = "metromap"
    categories: list[Category] = Field(default_factory=lambda: ["map_only", "edge_only", "map_edge", "T"], min_length=1)
    qa_types: list[QAType] = Field(default_factory=lambda: list(QA_TYPES), min_length=1,
                                   description="QA types asked when task_family=qa")
    setting: Literal["all", "map", "edge_tab", "vertex_tab", "map_edge_tab", "map_edge_tab_vertex_tab",
                     "map_mix_tab"] = "all"
    n_per_category: int = Field(default=4, ge=1, le=10000,
                                description="rp: origin-destination pairs per map; qa: questions per type per map")
    resolution: float = Field(default=1.0, gt=0.0, le=1.0, description="image size factor, 0 < r <= 1")
    table_format: Literal["csv", "json"] = "csv"
    language: Literal["en", "zh"] = "en"
    style: Literal["all", 0, 1, 2, 3, 4] = Field(
        default="all", description="instruction style: all (cycled, B.3) or one of 0-4 for every query")
    row_order: Literal["shuffled", "fixed"] = Field(
        default="shuffled", description="table rows: shuffled per sample, seeded (the paper), or fixed map order")
    solver: Literal["generate", "react"] = "generate"
    tools: list[str] = Field(default_factory=list)
    message_limit: int = Field(default=12, ge=2)

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key, except `resolution` when no
        selected category or QA type shows an image (the result cannot depend on it)."""
        data = self.model_dump(mode="json")
        if not self.shows_image():
            data.pop("resolution")
        return data

    def shows_image(self) -> bool:
        from geoeval.suites.maptab.qa import setting_of

        try:
            settings = ({setting_of(t) for t in self.selected_qa_types()} if self.task_family == "qa"
                        else {SETTING_OF[c] for c in self.selected_categories()})
        except GeoevalError:
            return True  # an empty selection is reported by validation, not here
        return any(s.startswith("map") for s in settings)

    def scenarios(self) -> tuple[str, ...]:
        return SCENARIOS[self.scenario]

    def fixed_style(self) -> int | None:
        return None if self.style == "all" else int(self.style)

    def selected_qa_types(self) -> list[str]:
        from geoeval.suites.maptab.qa import setting_of

        types = [t for t in self.qa_types if self.setting == "all" or setting_of(t) == self.setting]
        if not types:
            raise GeoevalError(
                f"Invalid config: suite.setting={self.setting!r} keeps none of suite.qa_types={self.qa_types} "
                f"(that setting's types: {[t for t in QA_TYPES if setting_of(t) == self.setting]})"
            )
        return types

    def selected_categories(self) -> list[str]:
        cats = [c for c in self.categories if self.setting == "all" or SETTING_OF[c] == self.setting]
        if not cats:
            raise GeoevalError(
                f"Invalid config: suite.setting={self.setting!r} keeps none of suite.categories={self.categories} "
                f"(that setting's categories: {sorted(c for c, s in SETTING_OF.items() if s == self.setting)})"
            )
        return cats


def _env_seed(spec: Any) -> int:
    return spec.env.seed if spec.env.seed is not None else spec.seed


class MapTabSuite:
    name = "maptab"
    scoring_version = SCORING_VERSION  # see geoeval/suites/maptab/__init__.py
    # what the core's reports lead with, and which swept keys read on a log2 axis (sweep plot)
    headline_metrics = ("ema", "pma", "acc")
    log2_sweep_axes: tuple[str, ...] = ("suite.resolution",)
    # splits every report and MLflow metric by scenario (ema/scenario/metromap, ...), which the
    # paper's tables report apart
    report_dimensions: tuple[str, ...] = ("scenario",)
    config_schema = MapTabSuiteConfig
    # one schema per environment, chosen by `env.name`
    env_schema = {"maptab_synthetic": MapTabEnvConfig, "maptab_authors": MapTabAuthorsEnvConfig,
                  "maptab_real": MapTabRealEnvConfig}

    # ------------------------------------------------------------ environment
    def build_env(self, spec: Any):
        check_metrics(spec)
        if spec.env.name == "maptab_authors":
            if spec.suite.task_family == "qa":
                raise GeoevalError("Invalid config: suite.task_family=qa: QA is generated on synthetic maps; "
                                   "use env=maptab_synthetic (the authors' sample ships no QA items)")
            from geoeval.suites.maptab.authors_env import build_authors_env

            return build_authors_env(spec.env, Path(spec.work_dir))
        if spec.env.name == "maptab_real":
            if spec.suite.scenarios() != ("metromap",):
                raise GeoevalError(f"Invalid config: env=maptab_real builds Metromaps only; "
                                   f"suite.scenario={spec.suite.scenario} (use suite.scenario=metromap)")
            from geoeval.suites.maptab.real_env import build_real_env

            return build_real_env(spec.env, _env_seed(spec), Path(spec.work_dir))
        from geoeval.suites.maptab.environment import MapTabEnv, env_key, load_maps, map_levels, save_maps

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
                generated = _generate_maps(spec.env, seed, scenario)
                diff.update(_difficulty(generated, scenario))
                maps += generated
            save_maps(db, maps, diff, {"env_key": key, "seed": str(seed)})
        maps = load_maps(db)
        levels = map_levels(db)
        return MapTabEnv(db_path=str(db.resolve()), image_dir=str((root / "images").resolve()),
                         map_names=tuple(m.name for m in maps), map_difficulty=levels)

    # ------------------------------------------------------------ samples
    def build_samples(self, spec: Any, env: Any) -> list[Sample]:
        if env.source == "authors":
            from geoeval.suites.maptab.authors_env import authors_samples

            return authors_samples(spec.suite, env, spec.seed)
        from geoeval.suites.maptab.environment import image_data_uri, map_image

        suite_cfg: MapTabSuiteConfig = spec.suite
        samples: list[Sample] = []
        if suite_cfg.task_family == "qa":
            from geoeval.suites.maptab.qa import qa_tables

            for m, queries in self.synthetic_qa_queries(spec, env):
                image_uri = None
                for q in queries:
                    if q.setting.startswith("map") and image_uri is None:
                        image_uri = image_data_uri(map_image(env, m, suite_cfg.resolution, suite_cfg.language))
                    samples.append(qa_sample(q, qa_tables(m, q, suite_cfg.table_format), image_uri, suite_cfg))
            return samples
        from geoeval.suites.maptab.queries import prompt_tables, row_seed

        for m, queries in self.synthetic_queries(spec, env):
            image_uri = None
            for q in queries:
                if SETTING_OF[q.category].startswith("map") and image_uri is None:
                    image_uri = image_data_uri(map_image(env, m, suite_cfg.resolution, suite_cfg.language))
                # only the columns the query needs are given to the model (appendix B.2)
                tables = prompt_tables(m, q.category, suite_cfg.table_format,
                                       row_seed=row_seed(spec.seed, q.id, suite_cfg.row_order))
                samples.append(rp_sample(q, tables, image_uri, suite_cfg))
        return samples

    def _maps(self, spec: Any, env: Any) -> list[Any]:
        """The environment's maps of `suite.scenario`, in `suite.language`."""
        from geoeval.suites.maptab.environment import load_maps
        from geoeval.suites.maptab.language import localize_map

        _need_generated_maps(env)
        wanted = spec.suite.scenarios()
        return [localize_map(m, spec.suite.language) for m in load_maps(env.db_path) if m.scenario in wanted]

    def synthetic_queries(self, spec: Any, env: Any) -> list[tuple[Any, list[Any]]]:
        """(map, its RP queries) of a synthetic environment, as `build_samples` asks them (map i
        seeded `seed * 7919 + i`; large jobs are built in processes, identically)."""
        from geoeval.core.memo import file_key
        from geoeval.suites.maptab.parallel_gen import synthetic_rp_queries

        _need_generated_maps(env)
        suite_cfg: MapTabSuiteConfig = spec.suite
        categories, style = suite_cfg.selected_categories(), suite_cfg.fixed_style()
        # every input of the queries: the environment file, the maps chosen and localised, the
        # categories, the count, the seed, the map levels and the style
        key = (file_key(env.db_path), suite_cfg.language, tuple(suite_cfg.scenarios()), tuple(categories),
               suite_cfg.n_per_category, _env_seed(spec), tuple(sorted(env.map_difficulty.items())), repr(style))
        return _QUERIES.get(key, lambda: synthetic_rp_queries(
            self._maps(spec, env), categories, suite_cfg.n_per_category, _env_seed(spec) * 7919,
            env.map_difficulty, style))

    def synthetic_qa_queries(self, spec: Any, env: Any) -> list[tuple[Any, list[Any]]]:
        """(map, its QA queries) of a synthetic environment: `suite.n_per_category` questions of each
        type of `suite.qa_types` per map, styles cycled over maps and types (B.3)."""
        from geoeval.suites.maptab.qa import build_qa_queries

        suite_cfg: MapTabSuiteConfig = spec.suite
        types = suite_cfg.selected_qa_types()
        return [
            (m, build_qa_queries(m, types, suite_cfg.n_per_category, seed=_env_seed(spec),
                                 map_difficulty=env.map_difficulty.get(m.name, "Easy"),
                                 style=suite_cfg.fixed_style(), style_offset=i,
                                 shuffle_seed=spec.seed if suite_cfg.row_order == "shuffled" else None))
            for i, m in enumerate(self._maps(spec, env))
        ]

    def write_authors_layout(self, spec: Any, env: Any, root: Path) -> list[Path]:
        """Write a synthetic environment's maps (full-size images, tables) and the queries of
        `spec.suite` in the authors' release layout under `root`; `env=maptab_authors` with that
        root loads them back as the same samples."""
        from geoeval.suites.maptab.authors_format import write_authors_layout

        written: list[Path] = []
        for m, queries in self.synthetic_queries(spec, env):
            written += write_authors_layout(m, queries, Path(root))
        return written

    # ------------------------------------------------------------ meta-evaluation
    # every MapTab answer metric is deterministic (meta_eval.py): each must order every known pair
    meta_eval_targets: ClassVar[dict[str, float]] = {"ema": 1.0, "pma": 1.0, "ds": 1.0, "acc": 1.0}

    def meta_eval_answers(self, spec: Any, env: Any, samples: list[Sample]) -> list[Any]:
        """Answers of known quality per sample (reference, one-defect, worthless), scored through
        the suite's real scorer path (`meta_eval.py`)."""
        from geoeval.suites.maptab.meta_eval import meta_eval_answers

        return meta_eval_answers(spec, env, samples)

    # ------------------------------------------------------------ task
    def build_task(self, spec: Any, env: Any, samples: list[Sample]) -> Task:
        from geoeval.suites.maptab.task import make_task

        check_metrics(spec)
        return make_task(spec.suite, env, samples, spec.metrics.metrics)

    def after_run(self, spec: Any, env: Any, results: list[Any], out_dir: Path) -> list[Path]:
        """Paper-style reports of the run, written to `out_dir` (the harness logs them to MLflow):
        for QA results, Acc per QA type x scenario (Table 8) and per capability (Table 3); for RP
        results, EMA/PMA/DS per category and difficulty (Table 2 layout), the G.2 difficulty matrix
        and the FR/PR/NR and T/P/C/R analyses of Table 4 (`rp_analysis.py`, `rp_report.py`)."""
        from geoeval.core.reports_job import plots_wanted
        from geoeval.suites.maptab.report import write_qa_report

        plots = plots_wanted(spec)
        files = write_qa_report(results, Path(out_dir), plots=plots)
        if env is not None and any(r.dims.task_family == "rp" for r in results):
            from geoeval.suites.maptab.rp_analysis import analyse
            from geoeval.suites.maptab.rp_report import write_rp_report

            queries = self.rp_queries(spec, env)
            models = sorted({r.model for r in results if r.model})
            files += write_rp_report(analyse(results, queries), Path(out_dir), models, plots=plots)
        return files

    def rp_queries(self, spec: Any, env: Any) -> dict[str, tuple[Any, Any]]:
        """{sample id: (map, RPQuery)} of the run's RP samples (rebuilt: they are deterministic)."""
        if env.source == "authors":
            import json

            from geoeval.suites.maptab.authors_env import authors_query
            from geoeval.suites.maptab.environment import load_maps

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


def check_metrics(spec: Any) -> None:
    """RP is scored by EMA/PMA/DS and QA by Acc (plus the token counts, which fit both); a metric
    set of the other family would score every sample 0, so it stops the run here."""
    names = set(spec.metrics.metrics)
    wrong = names & (RP_METRICS if spec.suite.task_family == "qa" else QA_METRICS)
    if wrong:
        fix = "metrics=maptab_qa" if spec.suite.task_family == "qa" else "metrics=maptab_rp"
        raise GeoevalError(f"Invalid config: metrics.metrics: {sorted(wrong)} do not score "
                           f"suite.task_family={spec.suite.task_family} samples (use {fix})")


def _generate_maps(env_cfg: Any, seed: int, scenario: str) -> list[Any]:
    from geoeval.suites.maptab.generator import generate_metro_map, generate_travel_map, run_quality_checks

    maps = []
    for i in range(env_cfg.n_maps):
        if scenario == "metromap":
            m = generate_metro_map(
                seed * 1000 + i, n_lines=env_cfg.n_lines, stations_per_line=tuple(env_cfg.stations_per_line),
                width=env_cfg.width, height=env_cfg.height, loop_probability=env_cfg.loop_probability,
                name=f"metro{seed:03d}_{i:03d}",
            )
        else:  # Travelmap at its own E.1 defaults (the env's size and line options are Metromap's)
            m = generate_travel_map(seed * 1000 + 500 + i, name=f"travel{seed:03d}_{i:03d}")
        problems = run_quality_checks(m)
        if problems:
            raise GeoevalError(f"generated map {m.name} failed quality checks: {problems}")
        maps.append(m)
    return maps


def _difficulty(maps: list[Any], scenario: str) -> dict[str, dict[str, Any]]:
    """Map difficulty (appendix C.2) within one scenario's maps of the environment: Metromap by GS and
    WASP, Travelmap by GS, WASP and MC, each min-max normalised, averaged, then split 1:1:1."""
    from geoeval.suites.maptab.difficulty import gs, map_difficulty_score, mc, tercile_levels, wasp

    raw = {m.name: {"gs": gs(m), "wasp": wasp(m), "mc": mc(m)} for m in maps}
    if scenario == "metromap":
        levels = _map_levels(raw, tercile_levels)
    else:
        levels = dict(zip([m.name for m in maps], tercile_levels(map_difficulty_score(maps, scenario))))
    return {n: {**raw[n], "level": levels[n]} for n in raw}


def rp_sample(
    q: Any, tables: dict[str, str], image_uri: str | None, suite_cfg: MapTabSuiteConfig, *,
    objective: str | None = None,
) -> Sample:
    """The Inspect sample of one RP query (`queries.RPQuery`): system prompt (stating `objective`,
    the cost model the references are optimal under; default the scenario's,
    `routing.SCENARIO_OBJECTIVE`), user prompt with `tables` ({title: text},
    already masked to the category's columns), and the map image when the setting shows one.
    A query whose instruction style is unknown (`style` < 0: the authors' own wording) is tagged
    style "unknown"."""
    from geoeval.suites.maptab.rp_prompts import system_prompt, user_prompt
    from geoeval.suites.maptab.routing import objective_for

    objective = objective or objective_for(q.scenario)
    setting = SETTING_OF[q.category]
    system = system_prompt(q.category, q.scenario, q.weights, objective)
    user = user_prompt(q, tables, suite_cfg.table_format)
    content: list[Any] = [ContentText(text=user)]
    if setting.startswith("map"):
        if image_uri is None:
            raise GeoevalError(f"sample {q.id}: setting {setting!r} shows a map but no map image was given")
        content.append(ContentImage(image=image_uri))
    dims = Dimensions(
        suite="maptab", task_family="rp", task=q.category, level=q.map_difficulty.lower(), setting=setting,
        capabilities=capabilities_of(q.category),
        extra={"query_level": q.query_difficulty.lower(), "resolution": f"{suite_cfg.resolution:g}",
               "scenario": q.scenario, "map": q.map_name, "table_format": suite_cfg.table_format,
               "language": suite_cfg.language, "style": str(q.style) if q.style >= 0 else "unknown"},
    )
    return Sample(
        id=q.id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=content)],  # type: ignore[arg-type]
        target=list(q.routes),
        metadata={
            "suite": "maptab", "scenario": q.scenario, "category": q.category, "setting": setting,
            "map": q.map_name, "shard_key": q.map_name, "source": q.source, "destination": q.target,
            "weights": list(q.weights) if q.weights else None, "routes": list(q.routes),
            "totals": q.totals, "map_difficulty": q.map_difficulty, "query_difficulty": q.query_difficulty,
            "task_family": "rp", **_token_counts(system, user, tables), "dims": dims.model_dump(mode="json"),
        },
    )


def _token_counts(system: str, user: str, tables: dict[str, str]) -> dict[str, int]:
    """The prompt's estimated token count (text only; an image is not counted) and that of its
    tables alone (appendix G.3's Table 9), with `tokens.estimate_tokens`."""
    from geoeval.suites.maptab.tokens import estimate_tokens

    return {"prompt_tokens": estimate_tokens(system) + estimate_tokens(user),
            "table_tokens": sum(estimate_tokens(text) for text in tables.values())}


def qa_sample(q: Any, tables: dict[str, str], image_uri: str | None, suite_cfg: MapTabSuiteConfig) -> Sample:
    """The Inspect sample of one QA question (`qa.QAQuery`): the type's system prompt, the question
    with the type's tables, and the map image when its setting shows one. The target is the answer
    text; metadata carries its kind and exact value for `acc`."""
    from geoeval.suites.maptab import qa

    system = qa.system_prompt(q.scenario, q.qa_type)
    user = qa.user_prompt(q, tables, suite_cfg.table_format)
    content: list[Any] = [ContentText(text=user)]
    if q.setting.startswith("map"):
        if image_uri is None:
            raise GeoevalError(f"sample {q.id}: setting {q.setting!r} shows a map but no map image was given")
        content.append(ContentImage(image=image_uri))
    dims = Dimensions(
        suite="maptab", task_family="qa", task=q.qa_type, level=q.map_difficulty.lower(), setting=q.setting,
        capabilities=qa.capabilities_of(q.scenario, q.qa_type),
        extra={"scenario": q.scenario, "map": q.map_name, "qa_category": q.qa_type.split("-")[1],
               "resolution": f"{suite_cfg.resolution:g}", "table_format": suite_cfg.table_format,
               "language": suite_cfg.language, "style": str(q.style)},
    )
    return Sample(
        id=q.id,
        input=[ChatMessageSystem(content=system), ChatMessageUser(content=content)],  # type: ignore[arg-type]
        target=[q.answer],
        metadata={
            "suite": "maptab", "task_family": "qa", "scenario": q.scenario, "qa_type": q.qa_type,
            "setting": q.setting, "map": q.map_name, "shard_key": q.map_name, "params": q.params,
            "answer": q.answer, "answer_kind": q.kind, "answer_value": q.value, "hidden_rows": list(q.hidden_rows),
            "map_difficulty": q.map_difficulty, **_token_counts(system, user, tables),
            "dims": dims.model_dump(mode="json"),
        },
    )


def _map_levels(raw: dict[str, dict[str, float]], tercile_levels) -> dict[str, str]:
    names = sorted(raw)

    def norm(key: str) -> list[float]:
        vals = [raw[n][key] for n in names]
        lo, hi = min(vals), max(vals)
        return [0.0 if hi == lo else (v - lo) / (hi - lo) for v in vals]

    score = [(a + b) / 2 for a, b in zip(norm("gs"), norm("wasp"))]
    return dict(zip(names, tercile_levels(score)))


register_suite(MapTabSuite)

# metrics, tools and agent policies of the suite register on import
from geoeval.suites.maptab import agents as _agents  # noqa: E402,F401
from geoeval.suites.maptab import scorers as _scorers  # noqa: E402,F401
