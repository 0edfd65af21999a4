"""`geoeval runs [--clean] [--lease-minutes N] [--experiment NAME] [--tracking-uri URI]`

The MLflow runs still RUNNING in the tracking store (`MLFLOW_TRACKING_URI`, else the local
`mlruns/`), with their owner and whether they are still going (`geoeval.core.tracking.stale`): a
run whose process on this host is gone, or a job on another host with no heartbeat for the lease,
is stale. `--clean` ends the stale ones KILLED (with the reason in the tag
`geoeval.killed_reason`). Exit status 0, 2 on a bad store or argument.

    geoeval runs
    geoeval runs --clean --lease-minutes 30
"""

from __future__ import annotations

import argparse
import sys
import time
from types import SimpleNamespace

from geoeval.core.errors import GeoevalError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="geoeval runs", description=__doc__.split("\n\n")[1])
    p.add_argument("--clean", action="store_true", help="end the stale runs KILLED")
    p.add_argument(
        "--lease-minutes",
        type=float,
        default=10.0,
        help="a job on another host with no heartbeat for this long is stale",
    )
    p.add_argument("--experiment", help="only this experiment (default: every experiment)")
    p.add_argument("--tracking-uri", help="the tracking store (default: $MLFLOW_TRACKING_URI, else ./mlruns)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from geoeval.core.analysis.reports import markdown_table
    from geoeval.core.tracking.owners import TAG_HOST, TAG_PID
    from geoeval.core.tracking.stale import TAG_HEARTBEAT, end_stale_runs, running_runs, stale_reason
    from geoeval.core.tracking.store import client_for

    tracking = SimpleNamespace(enabled=True, tracking_uri=args.tracking_uri, artifact_location=None)
    try:
        client = client_for(tracking)
        if args.experiment:
            found = client.get_experiment_by_name(args.experiment)
            if found is None:
                raise GeoevalError(f"no experiment {args.experiment!r} in the tracking store")
            experiments = [found]
        else:
            experiments = client.search_experiments()
        names = {e.experiment_id: e.name for e in experiments}
        runs = running_runs(client, list(names))
    except GeoevalError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    lease_s = args.lease_minutes * 60
    now = time.time()
    rows = []
    for run in runs:
        tags = run.data.tags
        beat = tags.get(TAG_HEARTBEAT)
        rows.append(
            {
                "run": run.info.run_id[:12],
                "experiment": names.get(run.info.experiment_id, run.info.experiment_id),
                "name": (run.info.run_name or "")[:40],
                "kind": tags.get("geoeval.kind", ""),
                "host": tags.get(TAG_HOST, ""),
                "pid": tags.get(TAG_PID, ""),
                "last heartbeat": f"{(now - float(beat)) / 60:.0f} min ago" if beat else "-",
                "state": stale_reason(run, now=now, lease_s=lease_s) or "running",
            }
        )
    if not rows:
        print("no run is RUNNING")
        return 0
    print(markdown_table(rows, ["run", "experiment", "name", "kind", "host", "pid", "last heartbeat", "state"]))
    if args.clean:
        ended = end_stale_runs(client, runs, lease_s=lease_s)
        print(f"\n{len(ended)} stale run(s) marked KILLED")
    return 0
