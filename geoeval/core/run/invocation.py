"""One invocation of a run: who runs it (recorded in the warehouse's `invocations`), the MLflow
run it goes on in (`mlflow_run_key`), the Inspect logs it and the run's earlier invocations
wrote (`log_files`), and the invocations a killed process left `running` (`mark_killed`)."""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path

from geoeval.core.processes import process_is_gone
from geoeval.core.tracking.owners import researcher
from geoeval.core.warehouse.invocations import start_invocation
from geoeval.core.warehouse.store import Warehouse

#: the status of an invocation whose process was found gone while it was recorded `running`
KILLED = "killed"


def stored_beyond(wh: Warehouse, run_hash: str, wanted: set[tuple[str, int]]) -> int:
    """How many (sample, epoch) results the warehouse holds for `run_hash` outside `wanted`: more
    than 0 makes this invocation a subset of the run (`limit=4` after a full run of the config,
    which shares its run hash), whose MLflow run is its own (`mlflow_run_key`'s `subset`), so the
    run's record keeps agreeing with the warehouse."""
    return len(wh.finished_keys(run_hash, include_errors=True) - wanted)


def mlflow_run_key(
    run_hash: str,
    results_db: str | Path,
    *,
    parent_run_id: str | None,
    run_name: str,
    subset: set[tuple[str, int]] | None = None,
) -> str:
    """The MLflow identity of a job: one MLflow run per run of this config in this warehouse by
    this researcher, so a resumed job (killed, failed, or finished with errors the rerun retries)
    goes on in the run it had, while a colleague's rerun of the same config on a shared warehouse
    gets a run of their own (its samples are reused from the warehouse, not evaluated again).
    Under a sweep parent the point's name is part of it too: two points whose samples are the
    same (MapTab's edge table does not change with the resolution) are two child runs, each
    named by its own values. A `subset` (the samples of an invocation that asks for fewer than
    the warehouse holds, `stored_beyond`) is a run of its own, keyed by those samples: its numbers
    never replace the whole run's, and a rerun of the same subset goes on in it."""
    point = f"|{parent_run_id}|{run_name}" if parent_run_id else ""
    if subset is not None:
        point += "|subset:" + hashlib.sha256(repr(sorted(subset)).encode()).hexdigest()[:16]
    identity = f"{run_hash}|{Path(results_db).resolve()}|{researcher()}{point}"
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def log_files(recorded: list[str]) -> list[str]:
    """The Inspect logs among the paths a run recorded: files as they are, an invocation's folder
    as the `.eval` files in it (a killed invocation recorded only its folder), once each."""
    out: dict[str, None] = {}
    for path in map(Path, recorded):
        if path.is_dir():
            out.update(dict.fromkeys(str(p) for p in sorted(path.glob("*.eval"))))
        elif path.is_file():
            out[str(path)] = None
    return list(out)


def begin_invocation(wh: Warehouse, run_hash: str, *, n_reused: int) -> str:
    """Records who runs `run_hash` now in the warehouse (`invocations`); returns its id."""
    invocation = uuid.uuid4().hex
    start_invocation(
        wh, invocation, run_hash, researcher=researcher(), host=socket.gethostname(), pid=os.getpid(), n_reused=n_reused
    )
    return invocation


def mark_killed(wh: Warehouse) -> list[str]:
    """Invocations recorded `running` whose process on this host is gone (killed with SIGKILL,
    or by the machine's OOM killer: nothing could mark them) are marked `killed`, and a run of
    theirs still `running` with no live invocation is marked `interrupted`, as a stopped run is.
    Returns the run hashes of the invocations marked. Another host's invocations are left alone:
    nothing here can tell whether they still run."""
    _, rows = wh.query(
        "SELECT invocation_id, run_hash, host, pid, started_at FROM invocations WHERE status = 'running'"
    )
    gone = [
        (inv, run_hash) for inv, run_hash, host, pid, started in rows if process_is_gone(host, pid, started.timestamp())
    ]
    if not gone:
        return []
    now = datetime.now(timezone.utc)
    for invocation_id, _ in gone:
        wh.query(
            "UPDATE invocations SET status = ?, ended_at = ? WHERE invocation_id = ? AND status = 'running'",
            [KILLED, now, invocation_id],
        )
    marked = {inv for inv, _ in gone}
    for run_hash in sorted({run_hash for _, run_hash in gone}):
        live = [r for r in rows if r[1] == run_hash and r[0] not in marked]
        if not live:
            wh.query("UPDATE runs SET status = 'interrupted' WHERE run_hash = ? AND status = 'running'", [run_hash])
    return sorted({run_hash for _, run_hash in gone})
