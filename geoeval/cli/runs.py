"""`geoeval runs [--clean] [--sync] [--lease-minutes N] [--experiment NAME] [--tracking-uri URI]`

The MLflow runs still RUNNING in the tracking store (`MLFLOW_TRACKING_URI`, else the local
`mlruns/`), with their owner and whether they are still going (`geoeval.core.tracking.stale`): a
run whose process on this host is gone, or a job on another host with no heartbeat for the lease,
is stale. `--clean` ends the stale ones KILLED (with the reason in the tag
`geoeval.killed_reason`). `--sync` first sends what a tracking server that was down missed (the
ends of runs kept under `<work_dir>/tracking_pending/`, `geoeval.core.tracking.delivery`). Exit
status 0, 2 on a bad store or argument, 4 when something is still waiting for the server.

    geoeval runs
    geoeval runs --clean --lease-minutes 30
    geoeval runs --sync
"""

from __future__ import annotations

import argparse
import sys
import time
from types import SimpleNamespace

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.config.secrets import redact_urls
from geoeval.core.errors import GeoevalError
from geoeval.core.tracking.delivery import EXIT_TRACKING_PENDING, send_pending, shorten_mlflow_retries
from geoeval.core.tracking.owners import TAG_HOST, TAG_PID
from geoeval.core.tracking.stale import TAG_HEARTBEAT, end_stale_runs, running_runs, stale_reason


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geoeval runs",
        description=__doc__.split("\n\n")[1],
        epilog=examples("runs"),
        formatter_class=HelpWithExamples,
    )
    p.add_argument("--clean", action="store_true", help="end the stale runs KILLED")
    p.add_argument(
        "--lease-minutes",
        type=float,
        default=10.0,
        help="a job on another host with no heartbeat for this long is stale",
    )
    p.add_argument(
        "--sync",
        action="store_true",
        help="send what the tracking server missed while it was down (runs' ends kept under WORK_DIR/tracking_pending)",
    )
    p.add_argument("--work-dir", help="where the runs kept it (default: $GEOEVAL_ROOT/results/work, as `work_dir`)")
    p.add_argument("--experiment", help="only this experiment (default: every experiment)")
    p.add_argument("--tracking-uri", help="the tracking store (default: $MLFLOW_TRACKING_URI, else ./mlruns)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from geoeval.core.analysis.reports import markdown_table
    from geoeval.core.tracking.store import check_tracking_server, client_for

    tracking = SimpleNamespace(enabled=True, tracking_uri=args.tracking_uri, artifact_location=None)
    left = 0
    if args.sync:
        from geoeval.core.tracking.store import geoeval_root

        shorten_mlflow_retries()
        work_dir = args.work_dir or geoeval_root() / "results" / "work"
        sent, left = send_pending(work_dir)
        print(f"sent {sent} run end(s) the tracking server missed; {left} still waiting (server not answering)")
    try:
        check_tracking_server(tracking)  # a server that is down is one line in seconds, not MLflow's retries
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
    except Exception as exc:  # noqa: BLE001 - a store that fails mid-listing (MLflow's errors): one line too
        from geoeval.core.warehouse.lock import first_line

        said = str(exc) if isinstance(exc, GeoevalError) else f"the tracking store failed: {first_line(exc)}"
        said = said.replace("(tracking.tracking_uri)", "(--tracking-uri)")
        print(f"geoeval: error: {redact_urls(said)}", file=sys.stderr)
        return EXIT_TRACKING_PENDING if left else 2
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
        return EXIT_TRACKING_PENDING if left else 0
    print(markdown_table(rows, ["run", "experiment", "name", "kind", "host", "pid", "last heartbeat", "state"]))
    if args.clean:
        ended = end_stale_runs(client, runs, lease_s=lease_s)
        print(f"\n{len(ended)} stale run(s) marked KILLED")
    return EXIT_TRACKING_PENDING if left else 0
