"""MapSatisfy's config schemas: `env=mapsatisfy_demo` (the authors' demo release),
`env=mapsatisfy_generated` (instances generated over a city) and `suite=mapsatisfy`. The YAML
defaults under `conf/env/mapsatisfy_*.yaml` and `conf/suite/mapsatisfy.yaml` are checked against
these schemas (tests/core/test_config_defaults.py)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from geoeval.api import Strict


class MapSatisfyDemoEnvConfig(Strict):
    """`env=mapsatisfy_demo`: the authors' demo release under `root`."""

    name: Literal["mapsatisfy_demo"] = "mapsatisfy_demo"
    root: str | None = Field(
        default=None,
        description="release root (a relative path is read from the working directory); "
        "null: the download cache of `geoeval data fetch mapsatisfy-demo`",
    )
    bench: str = Field(default="demo_bench.xlsx", description="instances (.xlsx/.json/.jsonl), relative to root")
    mock_data: str = Field(default="mock_data", description="recorded tool calls (<tool>.csv), relative to root")
    embedder: Literal["e5", "hashing"] = Field(default="e5", description="the vector stage's embedder")

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key but `root`, where the files are (what
        they hold is the environment's fingerprint, which the identity carries)."""
        return self.model_dump(mode="json", exclude={"root"})


class MapSatisfyGeneratedEnvConfig(Strict):
    """`env=mapsatisfy_generated`: instances generated over a city (generate/generator.py), with the replay
    store filled from the city's POI table."""

    name: Literal["mapsatisfy_generated"] = "mapsatisfy_generated"
    n: int = Field(default=60, ge=1, description="instances (the six domains in turn)")
    seed: int = Field(default=0, description="the generation seed: same seed, same instances and store")
    city: Literal["synthetic", "lifeplanner"] = Field(
        default="synthetic", description="synthetic: a seeded POI table; lifeplanner: the places of `lifeplanner_db`"
    )
    n_pois: int = Field(default=360, ge=24, description="POIs of the synthetic city")
    lifeplanner_db: str | None = Field(default=None, description="a LifePlanner city DuckDB (city=lifeplanner)")
    out_dir: str = Field(
        default="results/mapsatisfy_generated",
        description="where instances.jsonl, mock_data/ and coverage.md are written "
        "(relative to the working directory), one folder per seed/n/city",
    )
    embedder: Literal["e5", "hashing"] = Field(default="e5", description="the vector stage's embedder")

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key but `out_dir`, where the generated
        files are written (what they hold is the environment's fingerprint, which the identity carries)."""
        return self.model_dump(mode="json", exclude={"out_dir"})


class MapSatisfySuiteConfig(Strict):
    """`suite=mapsatisfy`."""

    #: keys that change only how a dialogue is judged, not the dialogue: a rescore with other
    #: judge settings replays the stored dialogues (`RunSpec.generation_identity`)
    scoring_keys: ClassVar[frozenset[str]] = frozenset({"judge_votes", "judge_temperature", "judge_evidence_chars"})

    name: Literal["mapsatisfy"] = "mapsatisfy"
    setting: Literal["normal", "profile"] = Field(
        default="normal", description="normal: the main sandbox; profile: the profile is in the prompt (B.4)"
    )
    answer_channel: Literal["text", "tool"] = Field(
        default="text",
        description="text: the reply in text (the paper); tool: submit_reply(reply, recommended) (submit.py)",
    )
    map_tools: list[str] | None = Field(
        default=None, description="sandbox tools offered to the agent; null: the whole catalogue"
    )
    max_turns: int = Field(default=8, ge=1, description="assistant turns before the dialogue is cut")
    max_tool_calls: int = Field(default=40, ge=1)
    user_model: str | None = Field(
        default=None, description="model of the C.1 user simulator (the `user` role); null: the rule-based simulator"
    )
    tool_simulator: str | None = Field(
        default=None,
        description="model simulating unrecorded tool responses (the `tool_simulator` role); null: typed no_record",
    )
    judge_votes: int = Field(
        default=3,
        ge=1,
        description="evaluations of each model judge, majority-voted "
        "(section 4.2: three); the judge group's `votes` does not apply to this suite",
    )
    judge_temperature: float | None = Field(
        default=1.0,
        ge=0.0,
        le=2.0,
        description="sampling temperature of the model judges (section 4.2: 1.0, "
        "so the three votes can differ); null: the judge group's `temperature`",
    )
    judge_evidence_chars: int = Field(
        default=200_000,
        ge=1_000,
        description="tool-output characters a model judge's prompt carries; a response "
        "cut to fit is marked and counted in the verdicts (raw.evidence)",
    )
    record_simulated: bool = Field(
        default=False,
        description="record mode: simulated responses are added to the "
        "store and written to <run output>/mapsatisfy_recorded (authors' CSV layout)",
    )

    def identity_dict(self) -> dict[str, Any]:
        """This config's part of the run identity: every key, `answer_channel` only off its
        default (the paper's text reply, as every run before it had)."""
        data = self.model_dump(mode="json")
        if data["answer_channel"] == "text":
            data.pop("answer_channel")
        return data
