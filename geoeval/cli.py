"""`geoeval` command line:

- `geoeval [hydra overrides]` runs an evaluation (same as `python -m geoeval`);
- `geoeval results ...` prints leaderboards from the warehouse;
- `geoeval score <suite> ...` scores a results file in a benchmark authors' own format, with the
  suite's `score_cli.main(argv)` (e.g. `geoeval score maptab results.json --output scored.json`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int | None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "results":
        from geoeval.core.results_cli import main as results_main

        return results_main(args[1:])
    if args and args[0] == "score":
        return _score(args[1:])
    if argv is not None:
        sys.argv = [sys.argv[0], *args]
    from geoeval.app import hydra_main

    hydra_main()
    return 0


def _score(args: list[str]) -> int:
    import importlib

    suites = ("maptab",)
    if not args or args[0] not in suites:
        print(f"usage: geoeval score <suite> ... (suites with a scorer: {', '.join(suites)})", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(f"geoeval.suites.{args[0]}.score_cli")
    except ModuleNotFoundError:
        print(f"geoeval: error: suite '{args[0]}' has no authors'-format scorer yet", file=sys.stderr)
        return 2
    return int(module.main(args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
