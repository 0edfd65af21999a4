"""Requests and dollars of one sweep against a local OpenAI-compatible server (run by hand):

    .venv/bin/python scripts/cost_walkthrough.py [--workdir /tmp/cost-walkthrough]

The server (tests/cost/policy_server.py) plays MapTab's table baseline over the wire and reports
usage; the model is priced at $3 / $15 per million input / output tokens. The sweep
(`suite.n_per_category=2,4`, the map image in every prompt) runs four times:

1. first run (with `model.cache=1D`, which fills Inspect's cache);
2. rerun after a scoring change (the suite's scoring version bumped, as a release does; cache off);
3. `geoeval rescore scoring.protocol=paper`;
4. the same sweep in a new directory (a new warehouse: nothing to replay), answered by the cache.

For each it prints the requests the server answered and the cost geoeval reports.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.cost.policy_server import PolicyServer  # noqa: E402
from tests.cost.test_replay_and_cost import SUITES, bump_scoring_version, geoeval  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/cost-walkthrough"))
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    agent, suite, overrides = SUITES["maptab"]
    sweep = ["-m", *[o for o in overrides if not o.startswith("suite.n_per_category")], "suite.n_per_category=2,4"]
    steps = [
        ("first run", args.workdir / "a", [*sweep, "model.cache=1D"], "", ""),
        ("rerun after a scoring change", args.workdir / "a", sweep, "", bump_scoring_version(suite)),
        ("rescore, paper protocol", args.workdir / "a", [*sweep, "scoring.protocol=paper"], "rescore", ""),
        ("rerun in a new directory, cache on", args.workdir / "b", [*sweep, "model.cache=1D"], "", ""),
    ]
    print("| step | server requests | sweep cost (geoeval) | replayed calls | cache hits | saved |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with PolicyServer(agent, suite) as server:
        for name, cwd, step_overrides, command, patch in steps:
            server.reset()
            proc = geoeval(cwd, server, *step_overrides, command=command, patch=patch)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            line = next((x for x in proc.stdout.splitlines() if x.startswith("sweep cost:")), "")
            cost = re.search(r"sweep cost: (\S+)", line)
            replayed = re.search(r"replayed: (\d+)", line)
            hits = re.search(r"cache hits: (\d+)", line)
            saved = re.search(r"saved: (\S+)", line)
            print(
                f"| {name} | {server.requests} | {cost.group(1) if cost else '?'} | "
                f"{replayed.group(1) if replayed else '?'} | {hits.group(1) if hits else '?'} | "
                f"{saved.group(1) if saved else '?'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
