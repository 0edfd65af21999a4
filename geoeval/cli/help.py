"""The command line's help: `geoeval --help` (the commands, and how to run an evaluation), the
examples every command's `--help` ends with (`EXAMPLES`, one place for all of them), and the help
of the commands that are not argparse parsers of their own (`rescore`, `score`, `env`, `init`).

Hydra's own `--help` printed the whole composed config and no command; it stays one flag away
(`--hydra-help`), and the composed config of a run is `geoeval [overrides] --cfg job`.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import geoeval.conf

#: The commands of `geoeval COMMAND`, in the order `geoeval --help` lists them, with one line each.
COMMANDS: dict[str, str] = {
    "results": "leaderboards of the runs in the results warehouse, grouped, exported, or any SQL",
    "compare": "two runs on their common samples: paired differences, intervals and tests",
    "estimate": "the samples, tokens and dollars a run or sweep would cost, before any model call",
    "rescore": "score stored trajectories again with the current scorers: the model is not called",
    "score": "score answers written outside geoeval (--answers), or an authors' results file",
    "meta-eval": "do a suite's metrics order answers of known quality as they should?",
    "data": "fetch and verify the benchmark authors' public files (list, fetch, path)",
    "env": "build a suite's environment file (env build lifeplanner ...)",
    "runs": "MLflow runs left RUNNING by a killed job (--clean), and ends a server missed (--sync)",
    "cache": "the offline agents' on-disk cache (info, path, clear)",
    "warm": "a server that starts runs with everything imported, seconds sooner (start, stop, status)",
    "init": "mark a folder as the project home of results, logs and the MLflow store",
}

#: Each command's examples, shown at the end of its `--help` (and run by tests/harness/test_help.py
#: as far as they run offline).
EXAMPLES: dict[str, list[str]] = {
    "run": [
        "geoeval suite=maptab model=oracle runner=local     # the self-check: 1.000 for every mean metric",
        "geoeval +experiment=maptab_resolution_sweep        # the main job: a sweep of 30 jobs",
        "geoeval -m suite.resolution=1,0.5 model=perception_baseline   # a sweep of your own",
        "geoeval limit=5 epochs=2 seed=7                    # any key of the config",
        "geoeval model=openai model.name=openai/gpt-4o      # a real model (OPENAI_API_KEY)",
    ],
    "results": [
        "geoeval results",
        "geoeval results --by model,setting --metric ema,pma",
        'geoeval results --sql "SELECT model, count(*) FROM runs GROUP BY 1"',
        "geoeval results export --output scores.parquet",
    ],
    "results export": ["geoeval results export --output scores.parquet --db results/geoeval.duckdb"],
    "compare": [
        "geoeval compare 1a2b3c 4d5e6f                      # run hashes, or unique prefixes of them",
        "geoeval compare 1a2b3c 4d5e6f --by level --metrics ema,pma",
    ],
    "estimate": [
        "geoeval estimate +experiment=maptab_resolution_sweep model=openai model.name=openai/gpt-4.1",
        "geoeval estimate +experiment=lifeplanner model=openai --pilot 5",
    ],
    "rescore": [
        "geoeval rescore model=openai scoring.protocol=paper   # the same config: 0 requests",
        "geoeval rescore +experiment=maptab_resolution_sweep",
    ],
    "score": [
        "geoeval score maptab --answers answers.jsonl --output scored.jsonl",
        "geoeval score mapsatisfy --answers answers.jsonl +experiment=mapsatisfy_demo",
        "geoeval score maptab results.json --output scored.json   # the authors' own format",
    ],
    "score maptab": ["geoeval score maptab results.json --output scored.json"],
    "meta-eval": ["geoeval meta-eval maptab limit=24", "geoeval meta-eval lifeplanner --output meta_eval.json"],
    "data": ["geoeval data list", "geoeval data fetch maptab-sample", "geoeval data path maptab-sample"],
    "data list": ["geoeval data list"],
    "data fetch": ["geoeval data fetch mapsatisfy-demo", "geoeval data fetch maptab-sample --url-base http://mirror/"],
    "data path": ["geoeval data path maptab-sample"],
    "env": ["geoeval env build lifeplanner --out city.duckdb --places 800 --notes 4000"],
    "env build lifeplanner": [
        "geoeval env build lifeplanner --out city.duckdb --places 800 --notes 4000",
        "geoeval env build lifeplanner --source osm --pbf helsinki.osm.pbf --out helsinki.duckdb",
    ],
    "runs": ["geoeval runs", "geoeval runs --clean --lease-minutes 30", "geoeval runs --sync"],
    "warm": ["geoeval warm start", "geoeval warm status", "geoeval warm stop"],
    "cache": ["geoeval cache info", "geoeval cache clear --namespace maptab-perception"],
    "cache info": ["geoeval cache info"],
    "cache path": ["geoeval cache path"],
    "cache clear": ["geoeval cache clear", "geoeval cache clear --namespace maptab-perception"],
    "init": ["geoeval init                      # this folder", "geoeval init ~/studies/maps"],
}


def examples(command: str) -> str:
    """The `examples:` block of `command`'s help (an argparse epilog, kept line by line by
    `HelpWithExamples`)."""
    return "examples:\n" + "".join(f"  {line}\n" for line in EXAMPLES[command])


class HelpWithExamples(argparse.HelpFormatter):
    """argparse's formatter, except that the examples block keeps its lines (argparse would fill
    them into one paragraph)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:\n"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def wants_help(args: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in args)


def config_groups() -> dict[str, list[str]]:
    """{config group: its options}: geoeval's `conf/`, the plugins' `conf/` folders and
    `./experiments/` (found without composing a config or importing a plugin)."""
    from geoeval.core.config.search_path import experiments_dir, plugin_config_dirs

    groups: dict[str, set[str]] = {}
    for root in [Path(geoeval.conf.__file__).parent, *plugin_config_dirs()]:
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "hydra"):
            groups.setdefault(folder.name, set()).update(p.stem for p in folder.glob("*.yaml"))
    if experiments_dir().is_dir():
        groups.setdefault("experiment", set()).update(p.stem for p in experiments_dir().glob("*.yaml"))
    return {group: sorted(options) for group, options in sorted(groups.items()) if options}


def top_help() -> str:
    lines = [
        "usage: geoeval [OVERRIDES ...]          run an evaluation (the same as python -m geoeval)",
        "       geoeval -m [OVERRIDES ...]       a sweep: one job per combination of comma-separated values",
        "       geoeval COMMAND [ARGS ...]       one of the commands below",
        "",
        "An evaluation is a config composed from groups (group=option, +experiment=NAME) and keys",
        "(key=value); it runs offline by default, stores every sample's scores in",
        "results/geoeval.duckdb (a rerun resumes), records an MLflow run in mlruns/ and Inspect logs in",
        "logs/, and ends with its summary table. `geoeval` alone runs a small offline default (MapTab,",
        "the table baseline).",
        "",
        examples("run").rstrip("\n"),
        "",
        "config groups (group=option; the options shipped and your ./experiments/):",
    ]
    for group, options in config_groups().items():
        prefix = "+" if group == "experiment" else ""
        lines.append(
            textwrap.fill(", ".join(options), 100, initial_indent=f"  {prefix}{group}: ", subsequent_indent="      ")
        )
    lines += ["", "commands:"]
    lines += [f"  {name:<10}  {text}" for name, text in COMMANDS.items()]
    lines += [
        "",
        "Each command's usage, arguments and examples: geoeval COMMAND --help.",
        "A run's composed config, without running it: geoeval [OVERRIDES] --cfg job; Hydra's own",
        "options: geoeval --hydra-help. Config groups and keys: docs/running.md; results:",
        "docs/results.md.",
    ]
    return "\n".join(lines)


def _command_help(usage: list[str], description: str, command: str) -> str:
    """A command's help: its usage lines, what it does (filled to 95 columns) and its examples."""
    return "\n".join([*usage, "", textwrap.fill(description, 95), "", examples(command).rstrip("\n")])


def rescore_help() -> str:
    return _command_help(
        ["usage: geoeval rescore [OVERRIDES ...]"],
        "Runs the config as `geoeval` does, but every sample's model calls are replayed from its stored "
        "trajectory (generation=replay_only): the current scorers score them again and the evaluated model is "
        "never called; a sample without a stored trajectory is an error, not a call (docs/cost.md). "
        "OVERRIDES: as for `geoeval` (geoeval --help).",
        "rescore",
    )


def score_help(suites: list[str]) -> str:
    return _command_help(
        [
            "usage: geoeval score SUITE --answers FILE.jsonl [--output FILE] [OVERRIDES ...]",
            "       geoeval score SUITE RESULTS_FILE ... [options]",
        ],
        "Scores answers written outside geoeval exactly as a run scores them (--answers: JSON Lines of "
        "{sample_id, answer[, messages]}; `geoeval score SUITE --answers x --help` for the options), or a results "
        "file in a benchmark authors' own format with that suite's scorer (`geoeval score maptab --help`; "
        f"suites with one: {', '.join(suites)}).",
        "score",
    )


def env_help(suites: list[str]) -> str:
    return _command_help(
        ["usage: geoeval env build SUITE [options]"],
        "Builds a suite's environment file (a city database, ...) with that suite's own options "
        f"(`geoeval env build SUITE --help`). Suites with environments to build: {', '.join(suites)}.",
        "env",
    )


def init_help() -> str:
    return _command_help(
        ["usage: geoeval init [FOLDER]"],
        "Marks FOLDER (by default the current one) as the project home: runs started in it or in any of its "
        "subfolders write results/, logs/, outputs/, multirun/ and mlruns/ there (docs/running.md#the-project-home).",
        "init",
    )
