"""The MapTab suite: config schemas, environment, samples, task and metrics, registered with the
core registry.

Route planning (RP) only, for now: the 12 categories of appendix B.2 with the cost model of the
"Task Definition" section. A sample is one RP query; its input is the system prompt, the question
with the tables its category allows, and (for settings with a map) the map image at
`suite.resolution` × full size.

Two environments (`env=`):
* `maptab_synthetic`: seeded synthetic Metromaps; queries are drawn per run (`suite.categories`,
  `suite.n_per_category`).
* `maptab_authors`: the authors' released files as they are (`authors_env.py`): their maps, their
  images and the items of their test-set files. The files fix the queries, so `suite.categories`,
  `suite.n_per_category` and `suite.scenario` do not apply there (choose with `env.categories` and
  `env.scenario`); `suite.setting`, `suite.resolution` and `suite.table_format` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ContentImage, ContentText
from pydantic import Field, ValidationError, field_validator

from geoeval.core.config import Strict
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions
from geoeval.core.registry import register_suite
from geoeval.suites.maptab.queries import SETTINGS

Category = Literal["map_only", "edge_only", "map_edge", "T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR", "mix"]
Setting = Literal["map", "edge_tab", "map_edge_tab", "map_edge_tab_vertex_tab", "map_mix_tab"]

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
    root: str = Field(default="../shared/peers/maptab", description="the release root (relative to the working directory)")
    scenario: Literal["metromap", "travelmap", "both"] = "both"
    categories: list[Category] | None = Field(
        default=None, min_length=1, description="test-set categories to load; null: every one present")


class MapTabSuiteConfig(Strict):
    """`suite=maptab`."""

    name: Literal["maptab"] = "maptab"
    scenario: Literal["metromap"] = "metromap"
    categories: list[Category] = Field(default_factory=lambda: ["map_only", "edge_only", "map_edge", "T"], min_length=1)
    setting: Literal["all", "map", "edge_tab", "map_edge_tab", "map_edge_tab_vertex_tab", "map_mix_tab"] = "all"
    n_per_category: int = Field(default=4, ge=1, le=10000)
    resolution: float = Field(default=1.0, gt=0.0, le=1.0, description="image size factor, 0 < r <= 1")
    table_format: Literal["csv", "json"] = "csv"
    language: Literal["en"] = "en"
    solver: Literal["generate", "react"] = "generate"
    tools: list[str] = Field(default_factory=list)
    message_limit: int = Field(default=12, ge=2)

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
    config_schema = MapTabSuiteConfig
    # one schema per environment, chosen by `env.name`
    env_schema = {"maptab_synthetic": MapTabEnvConfig, "maptab_authors": MapTabAuthorsEnvConfig}

    # ------------------------------------------------------------ environment
    def build_env(self, spec: Any):
        if spec.env.name == "maptab_authors":
            from geoeval.suites.maptab.authors_env import build_authors_env

            return build_authors_env(spec.env, Path(spec.work_dir))
        from geoeval.suites.maptab.difficulty import gs, mc, tercile_levels, wasp
        from geoeval.suites.maptab.environment import MapTabEnv, env_key, load_maps, save_maps
        from geoeval.suites.maptab.generator import generate_metro_map, run_quality_checks

        seed = _env_seed(spec)
        cfg = spec.env.model_dump(mode="json")
        key = env_key(cfg, seed)
        root = Path(spec.work_dir) / "envs" / f"maptab-{key}"
        db = root / "env.duckdb"
        if not db.exists():
            maps = []
            for i in range(spec.env.n_maps):
                m = generate_metro_map(
                    seed * 1000 + i,
                    n_lines=spec.env.n_lines,
                    stations_per_line=tuple(spec.env.stations_per_line),
                    width=spec.env.width,
                    height=spec.env.height,
                    loop_probability=spec.env.loop_probability,
                    name=f"metro{seed:03d}_{i:03d}",
                )
                problems = run_quality_checks(m)
                if problems:
                    raise GeoevalError(f"generated map {m.name} failed quality checks: {problems}")
                maps.append(m)
            # Map difficulty (appendix C.2): Metromap uses GS and WASP, min-max normalised over the
            # maps of this environment, averaged, then split 1:1:1.
            raw = {m.name: {"gs": gs(m), "wasp": wasp(m), "mc": mc(m)} for m in maps}
            levels = _map_levels(raw, tercile_levels)
            diff = {n: {**raw[n], "level": levels[n]} for n in raw}
            save_maps(db, maps, diff, {"env_key": key, "seed": str(seed)})
        maps = load_maps(db)
        import duckdb

        con = duckdb.connect(str(db), read_only=True)
        try:
            levels = dict(con.execute("SELECT name, map_difficulty FROM maps").fetchall())
        finally:
            con.close()
        return MapTabEnv(db_path=str(db.resolve()), image_dir=str((root / "images").resolve()),
                         map_names=tuple(m.name for m in maps), map_difficulty=levels)

    # ------------------------------------------------------------ samples
    def build_samples(self, spec: Any, env: Any) -> list[Sample]:
        if env.source == "authors":
            from geoeval.suites.maptab.authors_env import authors_samples

            return authors_samples(spec.suite, env)
        from geoeval.suites.maptab.environment import image_data_uri, map_image
        from geoeval.suites.maptab.queries import prompt_tables

        suite_cfg: MapTabSuiteConfig = spec.suite
        samples: list[Sample] = []
        for m, queries in self.synthetic_queries(spec, env):
            image_uri = None
            for q in queries:
                if SETTING_OF[q.category].startswith("map") and image_uri is None:
                    image_uri = image_data_uri(map_image(env, m, suite_cfg.resolution, suite_cfg.language))
                # only the columns the query needs are given to the model (appendix B.2)
                tables = prompt_tables(m, q.category, suite_cfg.table_format)
                samples.append(rp_sample(q, tables, image_uri, suite_cfg))
        return samples

    def synthetic_queries(self, spec: Any, env: Any) -> list[tuple[Any, list[Any]]]:
        """(map, its RP queries) of a synthetic environment, as `build_samples` asks them."""
        from geoeval.suites.maptab.environment import load_maps
        from geoeval.suites.maptab.queries import build_rp_queries

        if env.source != "synthetic":
            raise GeoevalError("synthetic_queries needs a maptab_synthetic environment")
        suite_cfg: MapTabSuiteConfig = spec.suite
        categories = suite_cfg.selected_categories()
        return [
            (m, build_rp_queries(m, categories, suite_cfg.n_per_category, seed=_env_seed(spec) * 7919 + i,
                                 map_difficulty=env.map_difficulty.get(m.name, "Easy")))
            for i, m in enumerate(load_maps(env.db_path))
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

    # ------------------------------------------------------------ task
    def build_task(self, spec: Any, env: Any, samples: list[Sample]) -> Task:
        from geoeval.suites.maptab.task import make_task

        return make_task(spec.suite, env, samples, spec.metrics.metrics)

    def after_run(self, spec: Any, env: Any, results: list[Any], out_dir: Path) -> list[Path]:
        return []


def rp_sample(
    q: Any, tables: dict[str, str], image_uri: str | None, suite_cfg: MapTabSuiteConfig, *, objective: str = "mean"
) -> Sample:
    """The Inspect sample of one RP query (`queries.RPQuery`): system prompt (stating `objective`,
    the cost model the references are optimal under), user prompt with `tables` ({title: text},
    already masked to the category's columns), and the map image when the setting shows one.
    A query whose instruction style is unknown (`style` < 0: the authors' own wording) is tagged
    style "unknown"."""
    from geoeval.suites.maptab.queries import system_prompt, user_prompt

    setting = SETTING_OF[q.category]
    content: list[Any] = [ContentText(text=user_prompt(q, tables, suite_cfg.table_format))]
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
        input=[ChatMessageSystem(content=system_prompt(q.category, q.scenario, q.weights, objective)),  # type: ignore[arg-type]
               ChatMessageUser(content=content)],
        target=list(q.routes),
        metadata={
            "suite": "maptab", "scenario": q.scenario, "category": q.category, "setting": setting,
            "map": q.map_name, "shard_key": q.map_name, "source": q.source, "destination": q.target,
            "weights": list(q.weights) if q.weights else None, "routes": list(q.routes),
            "totals": q.totals, "map_difficulty": q.map_difficulty, "query_difficulty": q.query_difficulty,
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
