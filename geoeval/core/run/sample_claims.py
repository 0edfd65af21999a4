"""A job's claims on the samples it evaluates (`warehouse/claims.py`), held for the whole job:
before it evaluates, a job claims what is left of its run, and waits for the samples another
live process has claimed (the same config started at once on a shared warehouse) until that
process has stored them or is gone (its claims are then taken over). It then resumes as from
any stored samples: what the other process evaluated is read, never evaluated again."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

from geoeval.core.warehouse import claims
from geoeval.core.warehouse.store import Warehouse

#: how often a waiting job looks at the warehouse again
POLL_S = 1.0


@contextlib.contextmanager
def claimed_samples(
    wh: Warehouse,
    run_hash: str,
    wanted: set[tuple[str, int]],
    *,
    include_errors: bool,
    poll_s: float = POLL_S,
    heartbeat_s: float = claims.HEARTBEAT_S,
) -> Iterator[claims.Owner]:
    """Claims the samples of `wanted` not stored yet (`include_errors`: an errored one counts as
    stored, as resuming counts it), waiting while another live process holds some of them; the
    claims are kept alive by a heartbeat while the block runs. The block lets them go in its
    last bookkeeping (`claims.release`, sharing that open of the file); an exception lets them go
    here. The claim's open of the file is the job's first: the file stays open into the job's
    first block (`Warehouse.keep_open`), so a job still opens its file once when nobody waits."""
    owner = claims.Owner()
    waited = 0
    stop = threading.Event()
    try:
        while True:
            wh.keep_open(True)
            with wh.held():
                left = wanted - wh.finished_keys(run_hash, include_errors=include_errors)
                theirs = claims.claim(wh, run_hash, left, owner)
            if not theirs:
                break
            wh.keep_open(False)  # never hold the file while waiting: the owner must store its samples
            if not waited:
                holders = ", ".join(sorted({f"{host} pid {pid}" for host, pid in theirs.values()}))
                print(
                    f"[geoeval] {len(theirs)} sample(s) of run {run_hash} are being evaluated by another process "
                    f"({holders}): waiting for it to store them, then reading them (each sample is evaluated once)",
                    file=sys.stderr,
                    flush=True,
                )
            waited += 1
            stop.wait(poll_s)
        if waited:
            print(f"[geoeval] run {run_hash}: the other process's samples are stored; going on", file=sys.stderr)

        def beat() -> None:
            while not stop.wait(heartbeat_s):
                try:
                    claims.heartbeat(wh, owner)
                except Exception:  # noqa: BLE001, S112 -- a missed beat only shortens a lease
                    continue

        threading.Thread(target=beat, name="geoeval-claims-heartbeat", daemon=True).start()
        yield owner
    except BaseException:
        with contextlib.suppress(Exception):  # the error being raised is the one to report
            claims.release(wh, owner)
        raise
    finally:
        stop.set()
