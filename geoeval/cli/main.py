"""`geoeval` command line:

- `geoeval [hydra overrides]` runs an evaluation (same as `python -m geoeval`);
- `geoeval init [FOLDER]` marks the project home: runs in it or any subfolder write there
  (`geoeval.core.config.home`);
- `geoeval results ...` prints leaderboards from the warehouse;
- `geoeval compare A B ...` compares two runs on their common samples (paired intervals and tests);
- `geoeval data list|fetch|path ...` fetches the benchmark authors' public data into a verified cache;
- `geoeval meta-eval <suite> ...` checks that the suite's scores order answers of known quality;
- `geoeval cache info|path|clear` shows or clears the on-disk cache of offline agents' work (perception);
- `geoeval warm start|stop|status` keeps a server with everything imported, from which runs start
  (`geoeval.cli.warm`);
- `geoeval runs [--clean]` lists the MLflow runs still RUNNING and ends the stale ones
  (`geoeval.cli.runs`);
- `geoeval rescore [hydra overrides]` runs the config as `geoeval` does, but every sample's model
  calls are replayed from its stored trajectory (`generation=replay_only`): the current scorers
  score them again and the evaluated model is never called (docs/cost.md);
- `geoeval estimate [hydra overrides] [--pilot N]` prints, before any model call, the samples of
  each job and their expected tokens and cost (`geoeval.cli.estimate`);
- `geoeval <suite> <command> [args]` runs a command the suite declares (`Suite.commands`,
  `geoeval.cli.suite_commands`; a plugin suite's too);
- `geoeval env build <suite> ...` builds a suite's environment file with the suite's
  `env_build` command (e.g. `geoeval env build lifeplanner --source osm --out helsinki.duckdb`);
- `geoeval score <suite> --answers FILE.jsonl [overrides]` scores answers written outside geoeval
  through the suite's public scoring entry point (`geoeval.cli.score`); without `--answers`,
  `geoeval score <suite> ...` scores a results file in a benchmark authors' own format, with the
  suite's `score` command (e.g. `geoeval score maptab results.json --output scored.json`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from geoeval.cli import help as cli_help
from geoeval.cli import suite_commands
from geoeval.cli.suite_commands import suites_with
from geoeval.core.config.home import init_home, settle_home
from geoeval.core.config.precheck import precheck
from geoeval.core.errors import GeoevalError
from geoeval.core.stop import request_stop, stop_requested


def main(argv: list[str] | None = None) -> int | None:
    args = sys.argv[1:] if argv is None else argv

    settle_home()  # a project marked by `geoeval init` is found from any of its subfolders
    if _help(args):
        return 0
    if args and args[0] == "init":
        return _init(args[1:])
    if args and args[0] == "results":
        from geoeval.cli.results import main as results_main

        return results_main(args[1:])
    if args and args[0] == "compare":
        from geoeval.cli.compare import main as compare_main

        return compare_main(args[1:])
    if args and args[0] == "data":
        from geoeval.cli.data import main as data_main

        return data_main(args[1:])
    if args and args[0] == "meta-eval":
        from geoeval.cli.meta_eval import main as meta_eval_main

        return meta_eval_main(args[1:])
    if args and args[0] == "cache":
        from geoeval.cli.cache import main as cache_main  # a command's module, loaded when it runs

        return cache_main(args[1:])
    if args and args[0] == "score":
        return _score(args[1:])
    if args and args[0] == "runs":
        from geoeval.cli.runs import main as runs_main  # a command's module, loaded when it runs

        return runs_main(args[1:])
    if args and args[0] == "warm":
        from geoeval.cli.warm import main as warm_main  # a command's module, loaded when it runs

        return warm_main(args[1:])
    if args and args[0] == "estimate":
        from geoeval.cli.estimate import main as estimate_main  # a command's module, loaded when it runs

        return estimate_main(args[1:])
    if args and args[0] == "env":
        return _env(args[1:])
    if args and args[0] != "rescore" and suite_commands.is_suite_word(args[0]):
        ran = suite_commands.main(args)  # `geoeval <suite> <command> ...`: a suite's own command
        if ran is not None:
            return ran
    if args and args[0] == "rescore":
        # a rescore is a run whose evaluated model is never called (the last override wins)
        args = [*args[1:], "generation=replay_only"]
        argv = args
    if argv is not None:
        sys.argv = [sys.argv[0], *args]

    try:
        from geoeval.core.run.startup import start_soon  # the run's start: loaded when a run starts

        # a bad key fails here, before Hydra creates outputs/; a valid run's probes (and Ray) start now
        sys.argv = [sys.argv[0], *precheck(args, validated=start_soon)]
    except GeoevalError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    from geoeval.cli.app import hydra_main

    with _stop_signals():
        try:
            hydra_main()
        except KeyboardInterrupt:
            return _stopped(stop_requested() or "SIGINT")
        except BaseException:
            # a stop that a library turned into another error (DuckDB: "Query interrupted") or
            # that a sweep counted as a failed job is still a stop
            name = stop_requested()
            if name is None:
                raise
            return _stopped(name)
    name = stop_requested()
    return _stopped(name) if name else 0


def _help(args: list[str]) -> bool:
    """Prints the help of the commands that have no argparse parser of their own (`geoeval`
    itself, `rescore`, `score` and `env` without a suite, `init`); True when it did. The others
    print their parser's help (with examples) themselves."""

    if not cli_help.wants_help(args):
        return False
    command = args[0] if args and not args[0].startswith("-") and "=" not in args[0] else None
    if command is None:
        text = cli_help.top_help()
    elif command == "rescore":
        text = cli_help.rescore_help()
    elif command == "init":
        text = cli_help.init_help()
    elif command == "score" and (len(args) < 2 or args[1].startswith("-")) and "--answers" not in args:
        text = cli_help.score_help(suites_with("score"))
    elif command == "env" and (len(args) < 3 or args[2].startswith("-")):
        text = cli_help.env_help(suites_with("env_build"))
    else:
        return False
    print(text)
    return True


def _init(argv: list[str]) -> int:
    """`geoeval init [FOLDER]`: marks FOLDER (the current one) as the project home."""

    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print("usage: geoeval init [FOLDER]  (marks FOLDER, by default the current one, as the project home)")
        return 2
    folder = Path(argv[0] if argv else ".")
    marker = init_home(folder)
    print(
        f"geoeval project home: {marker.parent.parent}; runs there or in any subfolder write results/, logs/, "
        "outputs/, multirun/ and mlruns/ there"
    )
    return 0


def _stopped(name: str) -> int:
    from geoeval.cli.app import end_interrupted_sweep

    end_interrupted_sweep()
    print(
        f"geoeval: stopped by {name}: the samples that finished are stored and the run is marked "
        "interrupted (MLflow: KILLED); the same command resumes the rest",
        file=sys.stderr,
    )
    return 128 + int(getattr(signal, name, signal.SIGINT))


#: seconds a stop may take (storing what finished, marking the runs: ~5 s) before the process
#: prints every thread's stack and exits anyway: a scheduler's SIGTERM must end the process
STOP_GRACE_S = 90.0


def _arm_stop_watchdog(signum: int) -> None:
    """After a stop signal, a daemon timer that ends the process with `128 + signum` if the stop
    has not finished within `STOP_GRACE_S` (a thread the unwinding waits on that never ends),
    printing one line and every thread's stack first: where it hung, for a bug report."""

    def give_up() -> None:
        print(
            f"geoeval: the stop did not finish within {STOP_GRACE_S:g} s; exiting (every thread's stack follows)",
            file=sys.stderr,
            flush=True,
        )
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(128 + signum)

    timer = threading.Timer(STOP_GRACE_S, give_up)
    timer.name = "geoeval-stop-watchdog"
    timer.daemon = True
    timer.start()


@contextlib.contextmanager
def _stop_signals() -> Iterator[None]:
    """SIGTERM (a scheduler's or `kill`'s stop) stops a run as Ctrl-C does: the exception unwinds
    through the job, which stores what finished and marks its warehouse run and MLflow run, instead
    of the process vanishing with both left `running`. The stop is recorded (`core.stop`) for
    where the interrupt is turned into another error."""

    def stop(signum: int, frame: Any) -> None:
        request_stop(signal.Signals(signum).name)
        _arm_stop_watchdog(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (an embedding program): leave its signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _env(args: list[str]) -> int:
    if not args or args[0] != "build":
        print("usage: geoeval env build <suite> [options]", file=sys.stderr)
        return 2
    if len(args) < 2 or args[1].startswith("-"):
        print("usage: geoeval env build <suite> [options]", file=sys.stderr)
        return 2

    return suite_commands.run(args[1], "env_build", args[2:], "geoeval env build <suite> [options]")


def _score(args: list[str]) -> int:
    if "--answers" in args or any(a.startswith("--answers=") for a in args):
        from geoeval.cli.score import main as score_main

        return score_main(args)
    if not args or args[0].startswith("-"):
        print("usage: geoeval score <suite> <results file> [options]", file=sys.stderr)
        return 2

    return suite_commands.run(args[0], "score", args[1:], "geoeval score <suite> <results file> [options]")


if __name__ == "__main__":
    sys.exit(main())
