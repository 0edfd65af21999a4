"""Claims on samples (`warehouse/claims.py`, `run/sample_claims.py`): one process's claimed
samples are not claimed by another while its owner lives; a gone owner's (a dead pid on this
host, a stale heartbeat on another) are taken over; a job lets its claims go when it ends."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone

from geoeval.core.warehouse import claims
from geoeval.core.warehouse.store import Warehouse

KEYS = {("s1", 1), ("s2", 1), ("s3", 1)}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_owners_claims_are_left_to_it_and_a_gone_owners_taken_over(tmp_path):
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        first, second = claims.Owner(), claims.Owner()  # two jobs of this process
        assert claims.claim(wh, "h", {("s1", 1), ("s2", 1)}, first) == {}
        theirs = claims.claim(wh, "h", KEYS, second)
        assert set(theirs) == {("s1", 1), ("s2", 1)}  # only s3 is the second's
        assert claims.claim(wh, "h", KEYS, first).keys() == {("s3", 1)}  # and the first leaves it alone
        claims.release(wh, first)
        assert claims.claim(wh, "h", KEYS, second) == {}  # released: the second has them all
        claims.release(wh, second)

        gone = claims.Owner(pid=dead_pid())  # a job killed with SIGKILL on this host
        assert claims.claim(wh, "h", KEYS, gone) == {}
        assert claims.claim(wh, "h", KEYS, first) == {}  # taken over at once
        claims.release(wh, first)

        elsewhere = claims.Owner(host="another-host", pid=1234)
        assert claims.claim(wh, "h", KEYS, elsewhere) == {}
        assert set(claims.claim(wh, "h", KEYS, first)) == KEYS  # its heartbeat is fresh: alive
        old = datetime.now(timezone.utc) - timedelta(seconds=claims.LEASE_S + 60)
        wh.query("UPDATE claims SET heartbeat_at = ? WHERE owner = ?", [old, elsewhere.id])
        assert claims.claim(wh, "h", KEYS, first) == {}  # no heartbeat for a lease: taken over
        assert wh.query("SELECT DISTINCT owner FROM claims")[1] == [(first.id,)]


def test_a_job_waits_for_another_owners_samples_until_they_are_stored(tmp_path, capsys):
    from geoeval.core.run.sample_claims import claimed_samples
    from tests.core.test_results_cli import r

    with Warehouse(tmp_path / "wh.duckdb") as wh:
        other = claims.Owner()
        claims.claim(wh, "h", {("s1", 1)}, other)
        polls: list[int] = []
        real_finished = wh.finished_keys

        def finished_keys(run_hash, include_errors=True):
            polls.append(1)
            if len(polls) == 3:  # the other process stores its sample while this one waits
                wh.write_results([r("h", "s1", "m", {"ema": 1.0}, "easy")])
                claims.release(wh, other)
            return real_finished(run_hash, include_errors=include_errors)

        wh.finished_keys = finished_keys  # type: ignore[method-assign]
        with claimed_samples(wh, "h", KEYS, include_errors=True, poll_s=0) as owner:
            held = wh.query("SELECT sample_id FROM claims WHERE owner = ? ORDER BY 1", [owner.id])[1]
            claims.release(wh, owner)  # what the job does in its last bookkeeping
        assert held == [("s2",), ("s3",)]  # s1 was stored by the other: read, not claimed
        assert len(polls) == 3
        assert wh.query("SELECT count(*) FROM claims")[1] == [(0,)]
        try:  # a job that fails lets its claims go too
            with claimed_samples(wh, "h", KEYS, include_errors=True, poll_s=0):
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            pass
        assert wh.query("SELECT count(*) FROM claims")[1] == [(0,)]
    err = capsys.readouterr().err
    assert err.count("being evaluated by another process") == 1 and "each sample is evaluated once" in err
