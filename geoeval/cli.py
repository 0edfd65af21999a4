"""`geoeval` command line: `geoeval [hydra overrides]` runs an evaluation; `geoeval results`
prints leaderboards from the warehouse."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int | None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "results":
        from geoeval.core.results_cli import main as results_main

        return results_main(args[1:])
    if argv is not None:
        sys.argv = [sys.argv[0], *args]
    from geoeval.app import hydra_main

    hydra_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
