"""Claims on samples: which process is evaluating which (sample, epoch) of a run now, so that the
same config started at once by two people on one warehouse is evaluated once (a paid model is
billed once). A job claims the samples it is about to evaluate, in one turn of the warehouse's
lock (`claim`); a sample another live process holds is not claimed but waited for
(`geoeval.core.run.sample_claims`), then read from the warehouse like any stored sample.

An owner is its host, pid and process start, with a heartbeat (`heartbeat`, every
`HEARTBEAT_S` while the job runs). A claim is taken over when its owner is known to be gone: on
this host, by its pid (`core.processes.process_is_gone`, as for killed invocations); on another host,
by a heartbeat older than `LEASE_S`. A job lets its claims go when it ends (`release`), however
it ends; a killed job's are taken over by the next process that wants them."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from geoeval.core.processes import process_is_gone, process_started_at
from geoeval.core.warehouse.store import Warehouse

#: how often a job's claims say it is alive, and how old a heartbeat of another host may get
HEARTBEAT_S = 60.0
LEASE_S = 600.0


@dataclass(frozen=True)
class Owner:
    """This process as the owner of claims."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def started_at(self) -> datetime:
        started = process_started_at(self.pid)
        return datetime.fromtimestamp(started, timezone.utc) if started else datetime.now(timezone.utc)


def _alive(host: str, pid: int, started: datetime, beat: datetime, now: datetime, lease_s: float) -> bool:
    if host == socket.gethostname():
        return not process_is_gone(host, pid, beat.timestamp())  # alive at its last heartbeat
    return (now - beat).total_seconds() < lease_s


def claim(
    wh: Warehouse, run_hash: str, keys: Iterable[tuple[str, int]], owner: Owner, *, lease_s: float = LEASE_S
) -> dict[tuple[str, int], tuple[str, int]]:
    """Claims for `owner` every key of `keys` no other live owner holds (taking over a gone
    owner's); returns the others, each with its owner's (host, pid). One turn of the lock: two
    processes that claim at once never both get a key."""
    wanted = set(keys)
    now = datetime.now(timezone.utc)
    with wh.held():
        _, rows = wh.query(
            "SELECT sample_id, epoch, owner, host, pid, started_at, heartbeat_at FROM claims WHERE run_hash = ?",
            [run_hash],
        )
        theirs = {
            (sample_id, int(epoch)): (host, int(pid))
            for sample_id, epoch, who, host, pid, started, beat in rows
            if (sample_id, int(epoch)) in wanted and who != owner.id and _alive(host, pid, started, beat, now, lease_s)
        }
        mine = sorted(wanted - set(theirs))
        if mine:
            wh.query(
                "INSERT OR REPLACE INTO claims SELECT ?, unnest(?), unnest(?), ?, ?, ?, ?, ?",
                [
                    run_hash,
                    [k[0] for k in mine],
                    [k[1] for k in mine],
                    owner.id,
                    owner.host,
                    owner.pid,
                    owner.started_at,
                    now,
                ],
            )
    return theirs


def heartbeat(wh: Warehouse, owner: Owner) -> None:
    wh.query("UPDATE claims SET heartbeat_at = ? WHERE owner = ?", [datetime.now(timezone.utc), owner.id])


def release(wh: Warehouse, owner: Owner) -> None:
    wh.query("DELETE FROM claims WHERE owner = ?", [owner.id])
