"""A whole-suite plugin: "Which lines serve station X?", answered from an Edge table or with a tool.

It brings everything a suite needs (plugins/README.md builds it step by step): config schemas and
the configs themselves (`conf/`), an environment handle, samples whose references come from the
map itself, an Inspect task that offers tools to an agent (`suite.solver=react`), an answer reader on
geoeval's reading layer (`read_line_sets`, behind `extract_answer`, which also gives
`geoeval score station_lines --answers ...`), a metric
(`line_set_acc`), meta-evaluation tiers, and an offline agent (`geoeval/table_baseline`) that reads
the table or calls the `lines_of_station` tool. Its scoring version is a hash of its scoring code.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import basic_agent, generate
from pydantic import Field

from geoeval.agents.policies import PolicyReply, answer_or_submit, register_policy
from geoeval.api import (
    AnswerPair,
    Dimensions,
    Found,
    MetaEvalAnswer,
    MetricInput,
    Strict,
    Suite,
    assign_roles,
    decide,
    geoeval_scorer,
    get_tool,
    parse,
    reading_family_answers,
    register_metric,
    register_suite,
)
from geoeval.suites.maptab.api import edge_table, format_table, generate_metro_map

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage
    from inspect_ai.tool import ToolInfo

    from geoeval.api import RunSpec

SUITE = "station_lines"
TOOL = "lines_of_station"


class StationLinesEnvConfig(Strict):
    """The `env` group (conf/env/station_lines_env.yaml)."""

    name: Literal["station_lines_env"] = "station_lines_env"
    n_maps: int = Field(default=2, ge=1)


class StationLinesSuiteConfig(Strict):
    """The `suite` group (conf/suite/station_lines.yaml). A key left out of the YAML still exists:
    `suite.tools=[lines_of_station]` sets it from the command line."""

    name: Literal["station_lines"] = "station_lines"
    n_questions: int = Field(default=4, ge=1)
    solver: Literal["generate", "react"] = "generate"  # react: an agent with tools and `submit`
    tools: list[str] = Field(default_factory=list)
    message_limit: int = Field(default=8, ge=2)


@dataclass(frozen=True)
class StationLinesTables:
    """The environment handle: picklable, with absolute paths only, because it is shipped to Ray
    workers whose working directory is another one. Maps a map's name to its Edge table (CSV)."""

    tables: dict[str, str]


def parse_lines(text: str) -> set[str]:
    return {p.strip().lower() for p in text.replace(";", ",").split(",") if p.strip()}


def read_table(path: str) -> dict[str, set[str]]:
    """Station -> the lines of the edges that touch it, from an Edge table."""
    lines: dict[str, set[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for row in csv.DictReader(io.StringIO(handle.read().lstrip("\ufeff"))):
            for station in row["Edge"].split("-"):
                lines.setdefault(station.strip(), set()).update(x.strip() for x in row["Line"].split(","))
    return lines


def read_line_sets(raw: str, known_lines: list[str]) -> list[frozenset[str]]:
    """The robust reading, on geoeval's reading layer (`geoeval.core.reading`): each sentence (of
    a line, a list item, a table row) or JSON value that names lines of the map is a candidate
    answer (the set of lines it names), and so is a list naming one line an item; the core gives each its role from the words around it and applies the
    one-answer rule ("Red, Blue. Wait, actually: Red, Green." is Red, Green; "Red or Green" two
    answers). A set another live one contains adds nothing ("Red, Blue. Red serves the north.")."""
    doc = parse(raw)
    pattern = re.compile("|".join(rf"\b{re.escape(x)}\b" for x in known_lines) or "(?!)", re.IGNORECASE)
    found = []
    listed: set[int] = set()
    for items in doc.groups("item").values():  # a list of lines, one an item, is one answer
        named = [frozenset(m.group().lower() for m in pattern.finditer(it.text)) for it in items]
        if len(items) > 1 and all(named):
            found.append(Found(items[0].index, 0, 0, frozenset().union(*named), frozenset().union(*named)))
            listed |= {it.index for it in items}
    for seg in doc.segments:
        if seg.index in listed:
            continue
        if seg.kind == "json":
            named = frozenset(m.group().lower() for m in pattern.finditer(json.dumps(seg.value)))
            found += [Found(seg.index, 0, 0, named, named)] if named else []
            continue
        # one candidate a sentence: the lines it names, from the first named to the last
        for sentence in re.finditer(r"[^.!?;。！？；]+[.!?;。！？；]?", seg.text):
            mentions = list(pattern.finditer(sentence.group()))
            if mentions:
                named = frozenset(m.group().lower() for m in mentions)
                start, end = sentence.start() + mentions[0].start(), sentence.start() + mentions[-1].end()
                found.append(Found(seg.index, start, end, named, named))
    candidates, retractions = assign_roles(doc, found)
    return decide(candidates, retractions, subsumes=lambda bigger, smaller: smaller < bigger).values


@register_metric("line_set_acc", suites=[SUITE], description="1 when the answered line set is exact")
def line_set_acc(inp: MetricInput) -> float:
    """1 when the answer's line set is the reference's; under robust every live candidate (one
    per line of the extracted answer) must be, the worst candidate counts."""
    if not inp.target:
        return 0.0
    answers = inp.answer.splitlines() if inp.protocol == "robust" else [inp.answer]
    return float(all(parse_lines(a) == parse_lines(inp.target[0]) for a in answers or [""]))


class StationLinesSuite(Suite):
    name = SUITE
    config_schema = StationLinesSuiteConfig
    env_schema = StationLinesEnvConfig
    headline_metrics = ("line_set_acc",)
    # `geoeval station_lines lines --seed 0`: its own command, imported only when it runs
    commands = {"lines": "geoeval_example_plugins.commands:lines"}
    # no `scoring_version`: it defaults to a hash of this module's and the metric's source, so an
    # edit of the reader or the metric scores stored answers again by itself

    def build_env(self, spec: RunSpec) -> StationLinesTables:
        # generated files go under `spec.work_dir` (an absolute path in the handle: see above)
        folder = Path(spec.work_dir).resolve() / SUITE / f"seed{spec.seed}"
        folder.mkdir(parents=True, exist_ok=True)
        tables = {}
        for i in range(spec.env.n_maps):
            m = generate_metro_map(spec.seed * 100 + i, n_lines=3, name=f"lines{i}")
            path = folder / f"{m.name}.csv"
            if not path.is_file():  # written once, atomically: concurrent workers may build it too
                partial = path.with_suffix(f".{os.getpid()}.tmp")
                partial.write_text(format_table(edge_table(m, ["Edge", "Line"]), "csv"), encoding="utf-8")
                partial.replace(path)
            tables[m.name] = str(path)
        return StationLinesTables(tables)

    def build_samples(self, spec: RunSpec, env: StationLinesTables) -> list[Sample]:
        samples = []
        for map_name, path in env.tables.items():
            lines = read_table(path)
            every_line = sorted({line for found in lines.values() for line in found})
            rng = random.Random(f"{spec.seed}-{map_name}")
            for k, station in enumerate(rng.sample(sorted(lines), min(spec.suite.n_questions, len(lines)))):
                if spec.suite.solver == "react":
                    prompt = (
                        f"Which lines serve station {station} on map {map_name}? Use the `{TOOL}` tool, then "
                        "submit the line names separated by ', '."
                    )
                else:
                    table = Path(path).read_text(encoding="utf-8")
                    prompt = (
                        f"Edge Table (csv):\n```csv\n{table}\n```\nWhich lines serve station {station}? "
                        "Answer with the line names separated by ', '."
                    )
                dims = Dimensions(
                    suite=SUITE,
                    task_family="qa",
                    task="lines_of_station",
                    level="hard" if len(lines[station]) > 1 else "easy",
                    setting="tool" if spec.suite.solver == "react" else "edge_tab",
                    capabilities=("tool_use",) if spec.suite.solver == "react" else ("table_understanding",),
                )
                samples.append(
                    Sample(
                        id=f"{map_name}-{k}",
                        input=prompt,
                        target=", ".join(sorted(lines[station])),
                        # `suite` chooses the offline agent's policy for this sample
                        metadata={
                            "suite": SUITE,
                            "map": map_name,
                            "station": station,
                            "all_lines": every_line,
                            "dims": dims.model_dump(mode="json"),
                        },
                    )
                )
        return samples

    def build_task(self, spec: RunSpec, env: StationLinesTables, samples: list[Sample]) -> Task:
        if spec.suite.solver == "react":
            tools = [get_tool(name).factory(env) for name in spec.suite.tools]
            solver = basic_agent(tools=tools, message_limit=spec.suite.message_limit)
        else:
            solver = generate()
        return Task(
            dataset=MemoryDataset(samples),
            solver=solver,
            scorer=geoeval_scorer(list(spec.metrics.metrics), self.extract_answer, spec.scoring.protocol),
        )

    def extract_answer(self, raw: str, protocol: str = "robust", metadata: dict[str, Any] | None = None):
        """The answered line names: under `robust`, the live candidates of `read_line_sets` (one
        a line: the metric takes the worst); under `paper` the completion as it is."""
        if protocol == "robust":
            sets = read_line_sets(raw, list((metadata or {}).get("all_lines") or []))
            text = "\n".join(", ".join(sorted(s)) for s in sets)
        else:
            text = raw.strip()
        return text, "" if text else "empty answer"

    def meta_eval_tiers(self, spec: RunSpec, env: StationLinesTables, sample: Sample) -> list[MetaEvalAnswer]:
        reference = str(sample.target)
        served = sorted(parse_lines(reference))
        others = [line for line in sample.metadata["all_lines"] if line.lower() not in served]
        answers = [
            MetaEvalAnswer.reference(reference),
            MetaEvalAnswer.worthless("empty", ""),
            MetaEvalAnswer.worthless("refusal", "I cannot tell which lines serve this station."),
        ]
        if others:
            answers.append(MetaEvalAnswer.defect("extra_line", f"{reference}, {others[0]}", lowers=["line_set_acc"]))
        names = reference.split(", ")
        if len(names) > 1:
            answers.append(MetaEvalAnswer.defect("missing_line", ", ".join(names[:-1]), lowers=["line_set_acc"]))
            answers.append(MetaEvalAnswer("surface:reordered", 0, ", ".join(reversed(names)), family="surface"))
        # geoeval's reading families (long reasoning, JSON and lists, other languages, corrections,
        # hedges, echoes), composed from this sample's right and wrong answers
        pair = AnswerPair(
            right=reference,
            wrong=f"{reference}, {others[0]}" if others else None,
            affects=frozenset({"line_set_acc"}),
            question=next((q for q in str(sample.input).splitlines() if "serve station" in q), ""),
            forms={"json": json.dumps({"lines": names}), "bullets": "\n".join(f"- {n}" for n in names)},
        )
        rng = random.Random(f"{spec.seed}/{sample.id}")
        answers += [MetaEvalAnswer.of_tier(tier, text) for tier, text in reading_family_answers(pair, rng)]
        return answers


def _question(messages: list[ChatMessage]) -> str:
    return next((m.text for m in messages if m.role == "user"), "")


def table_baseline(messages: list[ChatMessage], tools: list[ToolInfo], args: dict[str, Any]) -> PolicyReply:
    """`geoeval/table_baseline` on station_lines: reads the Edge table in the prompt; without one,
    calls the `lines_of_station` tool and submits what it returned."""
    question = _question(messages)
    station = question.rsplit("serve station ", 1)[1].split(" on map ")[0].split("?")[0]
    if "```csv\n" in question:
        table = question.split("```csv\n", 1)[1].split("```", 1)[0]
        lines: set[str] = set()
        for row in csv.DictReader(io.StringIO(table.lstrip("\ufeff"))):
            if station in row["Edge"].split("-"):
                lines.update(x.strip() for x in row["Line"].split(","))
        return answer_or_submit(", ".join(sorted(lines)), tools, messages)
    results = [m for m in messages if m.role == "tool" and getattr(m, "function", "") == TOOL]
    if not results and any(t.name == TOOL for t in tools):
        return PolicyReply(tool=TOOL, arguments={"station": station})
    return answer_or_submit(results[-1].text if results else "", tools, messages)


register_suite(StationLinesSuite)
register_policy("table_baseline", SUITE, table_baseline)
