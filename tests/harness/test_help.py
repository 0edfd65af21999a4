"""Every command's help (issue 40): `geoeval --help` lists the commands and how to run an
evaluation (not Hydra's config dump), and each command's `--help` shows its usage, arguments and
examples and exits 0; the README's and docs' `geoeval COMMAND ...` lines parse with their
command's own parser."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from geoeval.cli import help as cli_help
from geoeval.cli.main import main
from tests.conftest import REPO
from tests.harness.test_readme import documentation

#: Every command and subcommand whose help a user may ask for, as typed after `geoeval`.
HELP_COMMANDS = [
    [],
    ["rescore"],
    ["results"],
    ["results", "export"],
    ["compare"],
    ["estimate"],
    ["score"],
    ["score", "maptab"],
    ["score", "maptab", "--answers", "answers.jsonl"],
    ["meta-eval"],
    ["data"],
    ["data", "list"],
    ["data", "fetch"],
    ["data", "path"],
    ["env"],
    ["env", "build"],
    ["env", "build", "lifeplanner"],
    ["runs"],
    ["cache"],
    ["cache", "info"],
    ["cache", "path"],
    ["cache", "clear"],
    ["init"],
    ["warm"],
]


def help_of(args: list[str], capsys) -> tuple[int, str]:
    try:
        code = main([*args, "--help"])
    except SystemExit as exc:  # argparse's own exit after printing the help
        code = exc.code
    out = capsys.readouterr()
    return int(code or 0), out.out + out.err


@pytest.mark.parametrize("args", HELP_COMMANDS, ids=lambda a: " ".join(a) or "geoeval")
def test_every_commands_help_shows_usage_arguments_and_an_example(args, capsys):
    code, text = help_of(args, capsys)
    assert code == 0, text
    assert text.lstrip().startswith("usage: geoeval"), text[:300]
    assert "examples:\n  geoeval" in text, text
    assert "== Config ==" not in text and "app is powered by Hydra" not in text  # not Hydra's dump


def test_geoeval_help_lists_every_command_and_how_to_run_an_evaluation(capsys):
    code, text = help_of([], capsys)
    assert code == 0
    dispatched = set(re.findall(r'args\[0\] == "([a-z-]+)"', (REPO / "geoeval" / "cli" / "main.py").read_text()))
    assert dispatched and dispatched <= set(cli_help.COMMANDS), dispatched - set(cli_help.COMMANDS)
    for command in cli_help.COMMANDS:
        assert re.search(rf"^  {re.escape(command)} +\S", text, re.MULTILINE), f"{command} is not listed:\n{text}"
    assert "geoeval suite=maptab model=oracle runner=local" in text and "+experiment=" in text
    for group in ("env", "suite", "model", "judge", "metrics", "runner", "tracking", "+experiment"):
        assert re.search(rf"^  {re.escape(group)}: ", text, re.MULTILINE), f"config group {group} is not listed"
    assert "maptab_resolution_sweep" in text and "oracle" in text  # each group's options


def test_help_of_a_run_with_overrides_is_the_same_help(capsys):
    assert help_of(["model=oracle"], capsys) == help_of([], capsys)


def test_the_console_script_prints_the_help_and_exits_0(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "geoeval", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "commands:" in proc.stdout and "results" in proc.stdout
    assert not (tmp_path / "outputs").exists()  # Hydra did not start a run


def test_every_example_names_a_command_geoeval_has():
    for command, lines in cli_help.EXAMPLES.items():
        for line in lines:
            words = shlex.split(line, comments=True)
            assert words[0] == "geoeval", line
            if command != "run":
                assert words[1] == command.split()[0], (command, line)


def _parsers() -> dict[str, object]:
    """The argparse parser of each command that has one."""
    from geoeval.cli import cache, compare, data, estimate, meta_eval, results, runs, score, warm

    return {
        "results": results.build_parser(),
        "compare": compare.build_parser(),
        "data": data.build_parser(),
        "estimate": estimate._parser(),
        "meta-eval": meta_eval._parser(),
        "runs": runs._parser(),
        "cache": cache._parser(),
        "warm": warm._parser(),
        "score --answers": score._parser(),
    }


def shown_commands() -> list[tuple[str, list[str]]]:
    """(page, argv after `geoeval`) of every `geoeval COMMAND ...` code line in the README and
    docs/ (placeholders such as `<run A>` left out), and every example of the help."""
    shown = []
    for page, text in documentation().items():
        fenced = False
        for raw in text.splitlines():
            if raw.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not (fenced or raw.startswith("    ")):
                continue  # prose, not a command shown as code
            line = re.sub(r"^(\.venv/bin/|[A-Z_]+=\S+ )+", "", raw.strip())
            if re.match(r"^geoeval [a-z]", line) and "<" not in line and "..." not in line:
                try:
                    shown.append((page, shlex.split(line, comments=True)[1:]))
                except ValueError:  # an unclosed quote: prose that wraps, e.g. `geoeval results --sql "...`
                    continue
    for command, lines in cli_help.EXAMPLES.items():
        shown += [(f"help of {command}", shlex.split(line, comments=True)[1:]) for line in lines]
    return shown


def test_every_geoeval_command_the_docs_show_parses_with_its_commands_parser():
    parsers = _parsers()
    shown = shown_commands()
    assert len(shown) >= 40, shown
    for page, argv in shown:
        command = argv[0]
        if "=" in command or command.startswith("-") or command in ("rescore", "init", "env"):
            continue  # a run's overrides (validated by test_readme), and commands without a parser
        if command == "score":
            if "--answers" not in argv:
                continue  # the suite's own results-file scorer
            command, argv = "score --answers", argv[1:]
        else:
            argv = argv[1:]
        assert command in parsers, f"{page}: `geoeval {command}` is no command of geoeval"
        if command == "results" and argv[:1] == ["export"]:
            continue  # its own parser (geoeval results export --help)
        parser = parsers[command]
        try:  # as each command parses: `score` lets overrides follow --answers
            parser.parse_intermixed_args(argv) if command == "score --answers" else parser.parse_args(argv)
        except SystemExit:
            raise AssertionError(f"{page}: `geoeval {' '.join([command, *argv])}` does not parse") from None
