"""The `geoeval` command: a run goes to this Python's warm server when one runs
(`geoeval.cli.warm`), else `geoeval.cli.main` runs it here. This module imports nothing heavy, so
that a run the warm server takes never pays the imports it is there to spare."""

from __future__ import annotations

import sys

from geoeval.cli.warm import run_warm


def main() -> int | None:
    served = run_warm(sys.argv)
    if served is not None:
        return served
    from geoeval.cli.main import main as run_here  # Inspect, MLflow, Hydra: only once no server took the run

    return run_here()
