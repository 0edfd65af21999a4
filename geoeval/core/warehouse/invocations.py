"""Who ran what: one `invocations` row per invocation of a run (a first run, a resume, a
colleague's rerun on a shared warehouse), with how many samples it evaluated and how many it took
from the warehouse as they were. Written through the warehouse's own statements (`Warehouse.query`),
under its lock like every other write."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from geoeval.core.warehouse.store import Warehouse

COLUMNS = (
    "invocation_id",
    "run_hash",
    "researcher",
    "host",
    "pid",
    "started_at",
    "ended_at",
    "status",
    "n_evaluated",
    "n_reused",
    "mlflow_run_id",
)


def start_invocation(
    wh: Warehouse, invocation_id: str, run_hash: str, *, researcher: str, host: str, pid: int, n_reused: int
) -> None:
    """Record who is running `run_hash` now, with how many samples it found already stored."""
    wh.query(
        "INSERT INTO invocations (invocation_id, run_hash, researcher, host, pid, started_at, status, n_reused)"
        " VALUES (?, ?, ?, ?, ?, ?, 'running', ?) ON CONFLICT DO NOTHING",
        [invocation_id, run_hash, researcher, host, pid, datetime.now(timezone.utc), n_reused],
    )


def end_invocation(
    wh: Warehouse, invocation_id: str, *, status: str, n_evaluated: int, mlflow_run_id: str | None = None
) -> None:
    wh.query(
        "UPDATE invocations SET ended_at = ?, status = ?, n_evaluated = ?, mlflow_run_id = ? WHERE invocation_id = ?",
        [datetime.now(timezone.utc), status, n_evaluated, mlflow_run_id, invocation_id],
    )


def invocations(wh: Warehouse, run_hash: str | None = None) -> list[dict[str, Any]]:
    """Who ran what, oldest first: every invocation (of `run_hash`, or of every run)."""
    _, rows = wh.query(
        f"SELECT {', '.join(COLUMNS)} FROM invocations WHERE ? IS NULL OR run_hash = ? ORDER BY started_at",
        [run_hash, run_hash],
    )
    return [dict(zip(COLUMNS, row)) for row in rows]
