"""A plugin written against the previous release's documented names (its example plugin, as a
user wrote it then), kept as it was but for its suite's name (`previous_station_lines`, so that it
sits beside the current example plugin) and one line that reads the meta-evaluation's levels from
the old `geoeval.core.meta_eval`. `tests/plugins/test_previous_release.py` loads it: the moved
names still work, each with a deprecation warning naming the new import.
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import generate
from pydantic import Field

from geoeval.agents.policies import PolicyReply, answer_or_submit, register_policy
from geoeval.core.config import Strict
from geoeval.core.meta_eval import DEFECT, REFERENCE
from geoeval.core.records import Dimensions
from geoeval.core.registry import register_metric, register_suite
from geoeval.core.scoring import MetricInput, geoeval_scorer
from geoeval.suites.maptab.api import edge_table, format_table, generate_metro_map

#: the quality levels of its answers (the meta-evaluation's, read from the old module)
LEVELS = {"reference": REFERENCE, "defect": DEFECT}


class StationLinesEnv(Strict):
    name: Literal["station_lines_env"] = "station_lines_env"
    n_maps: int = Field(default=2, ge=1)


class StationLinesSuiteConfig(Strict):
    name: Literal["previous_station_lines"] = "previous_station_lines"
    n_questions: int = Field(default=4, ge=1)
    tools: list[str] = Field(default_factory=list)


def _parse_lines(text: str) -> set[str]:
    return {p.strip().lower() for p in text.replace(";", ",").split(",") if p.strip()}


@register_metric("line_set_acc", suites=["previous_station_lines"], description="1 when the answered line set is exact")
def line_set_acc(inp: MetricInput) -> float:
    return float(bool(inp.target) and _parse_lines(inp.answer) == _parse_lines(inp.target[0]))


class StationLinesSuite:
    name = "previous_station_lines"
    config_schema = StationLinesSuiteConfig
    env_schema = StationLinesEnv

    def build_env(self, spec: Any) -> list[Any]:
        return [generate_metro_map(spec.seed * 100 + i, n_lines=3, name=f"lines{i}") for i in range(spec.env.n_maps)]

    def build_samples(self, spec: Any, env: list[Any]) -> list[Sample]:
        samples = []
        for m in env:
            rng = random.Random(f"{spec.seed}-{m.name}")
            names = sorted(m.stations)
            table = format_table(edge_table(m, ["Edge", "Line"]), "csv")
            for k, station in enumerate(rng.sample(names, min(spec.suite.n_questions, len(names)))):
                answer = ", ".join(sorted(m.stations[station].lines))
                level = "hard" if len(m.stations[station].lines) > 1 else "easy"
                dims = Dimensions(
                    suite="previous_station_lines",
                    task_family="qa",
                    task="lines_of_station",
                    level=level,
                    setting="edge_tab",
                    capabilities=("table_understanding",),
                )
                samples.append(
                    Sample(
                        id=f"{m.name}-{k}",
                        input=f"Edge Table (csv):\n```csv\n{table}\n```\nWhich lines serve station {station}? "
                        "Answer with the line names separated by ', '.",
                        target=answer,
                        metadata={
                            "suite": "previous_station_lines",
                            "station": station,
                            "dims": dims.model_dump(mode="json"),
                        },
                    )
                )
        return samples

    def build_task(self, spec: Any, env: Any, samples: list[Sample]) -> Task:
        return Task(
            dataset=MemoryDataset(samples),
            solver=generate(),
            scorer=geoeval_scorer(list(spec.metrics.metrics), lambda raw: (raw.strip(), "")),
        )

    def after_run(self, spec: Any, env: Any, results: list[Any], out_dir: Path) -> list[Path]:
        return []


def _table_reader(messages, tools, args) -> PolicyReply:
    text = messages[-1].text
    station = text.rsplit("serve station ", 1)[1].split("?")[0]
    block = text.split("```csv\n", 1)[1].split("```", 1)[0]
    lines: set[str] = set()
    for row in csv.DictReader(io.StringIO(block.lstrip("\ufeff"))):
        if station in row["Edge"].split("-"):
            lines.update(x.strip() for x in row["Line"].split(","))
    return answer_or_submit(", ".join(sorted(lines)), tools, messages)


register_suite(StationLinesSuite)
register_policy("table_baseline", "previous_station_lines", _table_reader)
