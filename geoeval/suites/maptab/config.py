"""MapTab's config schemas (`env=maptab_synthetic|maptab_authors|maptab_real`, `suite=maptab`) and
the names they are written in: the RP categories with the input setting each one shows
(appendix B.2), the QA types (appendix D.2), the scenarios, and which metrics score which task
family. The YAML defaults under `conf/env/maptab_*.yaml` and `conf/suite/maptab*.yaml` are checked
against these schemas (tests/core/test_config_defaults.py)."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import Field, field_validator

from geoeval.api import GeoevalError, Strict
from geoeval.suites.maptab.qa.questions import QA_TYPES
from geoeval.suites.maptab.rp.queries import SETTINGS

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
    root: str | None = Field(
        default=None,
        description="the release root (a relative path is read from the working directory); "
        "null: the download cache of `geoeval data fetch maptab-sample`",
    )
    scenario: Literal["metromap", "travelmap", "both"] = "both"
    categories: list[Category] | None = Field(
        default=None, min_length=1, description="test-set categories to load; null: every one present"
    )
    on_quality_failure: Literal["exclude", "fail"] = Field(
        default="exclude",
        description="a map or item failing the B.5/B.6 checks is left out (reported), or stops the run",
    )

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key but `root`, where the files lie (what
        they hold is the environment's fingerprint, which the identity carries)."""
        return self.model_dump(mode="json", exclude={"root"})


class MapTabRealEnvConfig(Strict):
    """`env=maptab_real`: Metromaps with real station names and topology (`env/real.py`)."""

    name: Literal["maptab_real"] = "maptab_real"
    source: Literal["tokyo", "gtfs"] = Field(
        default="tokyo", description="tokyo: Tokyo Metro + Toei lines of the tokyo-train-board package; gtfs: gtfs_path"
    )
    gtfs_path: str | None = Field(default=None, description="GTFS feed folder (stops/routes/trips/stop_times.txt)")
    # five connected Tokyo Metro lines (94 stations) by default, as the YAML says: on the whole
    # network the exact solver exceeds its search limit on criteria queries
    lines: list[str] | None = Field(
        default_factory=lambda: ["ginza", "marunouchi", "hibiya", "tozai", "chiyoda"],
        min_length=1,
        description="lines to keep: tokyo keys/names/symbols, or GTFS route ids/names; null: all",
    )
    n_maps: int = Field(default=1, ge=1, le=500, description="maps sharing the topology, attributes drawn per map")
    seed: int | None = None

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key but `gtfs_path`, where the feed lies
        (what it holds is the environment's fingerprint, which the identity carries)."""
        return self.model_dump(mode="json", exclude={"gtfs_path"})


def _default_categories() -> list[Category]:
    return ["map_only", "edge_only", "map_edge", "T"]


def _default_qa_types() -> list[QAType]:
    return cast("list[QAType]", list(QA_TYPES))  # QA_TYPES lists exactly the QAType names


class MapTabSuiteConfig(Strict):
    """`suite=maptab`."""

    name: Literal["maptab"] = "maptab"
    task_family: Literal["rp", "qa"] = Field(default="rp", description="rp: route planning; qa: diagnostic QA")
    scenario: Literal["metromap", "travelmap", "both"] = "metromap"
    categories: list[Category] = Field(default_factory=_default_categories, min_length=1)
    qa_types: list[QAType] = Field(
        default_factory=_default_qa_types, min_length=1, description="QA types asked when task_family=qa"
    )
    setting: Literal[
        "all", "map", "edge_tab", "vertex_tab", "map_edge_tab", "map_edge_tab_vertex_tab", "map_mix_tab"
    ] = "all"
    n_per_category: int = Field(
        default=4, ge=1, le=10000, description="rp: origin-destination pairs per map; qa: questions per type per map"
    )
    resolution: float = Field(default=1.0, gt=0.0, le=1.0, description="image size factor, 0 < r <= 1")
    table_format: Literal["csv", "json"] = "csv"
    language: Literal["en", "zh"] = "en"
    style: Literal["all", 0, 1, 2, 3, 4] = Field(
        default="all", description="instruction style: all (cycled, B.3) or one of 0-4 for every query"
    )
    row_order: Literal["shuffled", "fixed"] = Field(
        default="shuffled", description="table rows: shuffled per sample, seeded (the paper), or fixed map order"
    )
    solver: Literal["generate", "react"] = "generate"
    tools: list[str] = Field(default_factory=list)
    message_limit: int = Field(default=12, ge=2)
    answer_channel: Literal["text", "tool"] = Field(
        default="text",
        description="text: the answer as text, as the paper asks; tool: submit_route / submit_answer (submit.py)",
    )

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key, except `resolution` when no
        selected category or QA type shows an image (the result cannot depend on it), and
        `answer_channel` at its default (the paper's text answer, as every run before it had)."""
        data = self.model_dump(mode="json")
        if not self.shows_image():
            data.pop("resolution")
        if data["answer_channel"] == "text":
            data.pop("answer_channel")
        return data

    def shows_image(self) -> bool:
        from geoeval.suites.maptab.qa.questions import setting_of

        try:
            settings = (
                {setting_of(t) for t in self.selected_qa_types()}
                if self.task_family == "qa"
                else {SETTING_OF[c] for c in self.selected_categories()}
            )
        except GeoevalError:
            return True  # an empty selection is reported by validation, not here
        return any(s.startswith("map") for s in settings)

    def scenarios(self) -> tuple[str, ...]:
        return SCENARIOS[self.scenario]

    def fixed_style(self) -> int | None:
        return None if self.style == "all" else int(self.style)

    def selected_qa_types(self) -> list[str]:
        from geoeval.suites.maptab.qa.questions import setting_of

        types: list[str] = [t for t in self.qa_types if self.setting == "all" or setting_of(t) == self.setting]
        if not types:
            raise GeoevalError(
                f"Invalid config: suite.setting={self.setting!r} keeps none of suite.qa_types={self.qa_types} "
                f"(that setting's types: {[t for t in QA_TYPES if setting_of(t) == self.setting]})"
            )
        return types

    def selected_categories(self) -> list[str]:
        cats: list[str] = [c for c in self.categories if self.setting == "all" or SETTING_OF[c] == self.setting]
        if not cats:
            raise GeoevalError(
                f"Invalid config: suite.setting={self.setting!r} keeps none of suite.categories={self.categories} "
                f"(that setting's categories: {sorted(c for c, s in SETTING_OF.items() if s == self.setting)})"
            )
        return cats
