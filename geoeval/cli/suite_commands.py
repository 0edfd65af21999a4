"""A suite's own commands, found through the registry: `Suite.commands` maps a command's name to
the `"module:function"` that runs it, `function(argv) -> int | None`. A plugin suite declares its
commands as a built-in one does; nothing here names a suite.

- `geoeval <suite> <command> [args]` runs any of them (`geoeval <suite>` lists them);
- `geoeval env build <suite> ...` runs the suite's `env_build`;
- `geoeval score <suite> FILE ...` runs the suite's `score` (a results file in the benchmark
  authors' own format; `geoeval score <suite> --answers` is the core's `geoeval.cli.score`).

The module of a command is imported only when the command runs, so declaring one costs a suite
nothing when it is imported for a run.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from geoeval.core.errors import GeoevalError

#: a first argument that can name a suite (a Hydra override has `=`, `+`, `~` or starts with `-`)
_SUITE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _suite(name: str) -> Any | None:
    from geoeval.core.registry import get_suite

    try:
        return get_suite(name)
    except GeoevalError:
        return None


def _names() -> str:
    from geoeval.core.registry import suite_names

    return ", ".join(suite_names())


def command_of(suite: Any, command: str) -> Callable[[list[str]], int | None] | None:
    """The function of `suite`'s `command`, imported now; None when the suite has no such command."""
    from geoeval.core.registry import load_target

    target = dict(getattr(suite, "commands", {}) or {}).get(command)
    return None if target is None else load_target(target)


def suites_with(command: str) -> list[str]:
    """The registered suites that declare `command` (`score`, `env_build`), without importing it."""
    from geoeval.core.registry import get_suite, suite_names

    return [name for name in suite_names() if command in (getattr(get_suite(name), "commands", {}) or {})]


def run(suite_name: str, command: str, argv: list[str], usage: str) -> int:
    """Run `suite_name`'s `command` with `argv`; one line on stderr and status 2 when the suite or
    the command does not exist."""
    suite = _suite(suite_name)
    if suite is None:
        print(f"geoeval: error: unknown suite '{suite_name}' (suites: {_names()}); usage: {usage}", file=sys.stderr)
        return 2
    fn = command_of(suite, command)
    if fn is None:
        have = ", ".join(getattr(suite, "commands", {}) or {}) or "none"
        print(
            f"geoeval: error: suite '{suite_name}' has no `{command}` command (its commands: {have}); "
            f"suites with one: {', '.join(suites_with(command)) or 'none'}",
            file=sys.stderr,
        )
        return 2
    return int(fn(argv) or 0)


def is_suite_word(arg: str) -> bool:
    """Whether a command line's first argument may name a suite (`geoeval <suite> ...`)."""
    return _SUITE_WORD.fullmatch(arg) is not None


def main(args: list[str]) -> int | None:
    """`geoeval <suite> [<command> [args]]`; None when `args[0]` is no registered suite (the
    command line is then Hydra's, which says what is wrong with it)."""
    suite = _suite(args[0])
    if suite is None:
        return None
    commands = dict(getattr(suite, "commands", {}) or {})
    if len(args) < 2 or args[1] in ("-h", "--help"):
        text = (
            f"usage: geoeval {args[0]} <command> [args]  (commands of suite '{args[0]}': {', '.join(commands) or 'none'}; "
            f"a run of the suite: geoeval suite={args[0]} [overrides])"
        )
        print(text, file=sys.stdout if len(args) >= 2 else sys.stderr)
        return 0 if len(args) >= 2 else 2
    return run(args[0], args[1], args[2:], f"geoeval {args[0]} <command> [args]")
