"""A full disk is named, before work and mid-run (issue 24): before work, a warehouse on a disk
with no room stops the run with one line naming `results_db=`; mid-run, a write that finds no room
stops the evaluation (no further model call is paid for), keeps the samples stored before, marks
the run interrupted and says how to resume; the rerun resumes."""

from __future__ import annotations

import duckdb
import pytest

from geoeval.core.errors import GeoevalError
from geoeval.core.run.job import run_job
from geoeval.core.warehouse import lock
from geoeval.core.warehouse.reserve import SpaceReserve
from geoeval.core.warehouse.store import Warehouse
from tests.conftest import compose_spec

OVERRIDES = (
    "model=oracle",
    "+model.args.delay_s=0.05",  # samples finish one by one, so the writer commits several batches
    "runner.max_samples=1",
    "suite.categories=[edge_only]",
    "env.n_maps=1",
    "suite.n_per_category=6",
)


def test_a_disk_without_room_is_named_before_any_work(tmp_path, monkeypatch):
    spec = compose_spec(tmp_path, *OVERRIDES)
    monkeypatch.setattr(lock.check_free_space, "__defaults__", (2**62,))  # more room than any disk has
    with pytest.raises(GeoevalError, match=r"the disk holding .* is full .* point results_db= at another disk"):
        run_job(spec, progress=False)
    assert not list(tmp_path.rglob("*.eval"))  # nothing was evaluated


def test_a_full_disk_mid_run_stops_keeps_what_was_stored_and_resumes(tmp_path, monkeypatch):
    spec = compose_spec(tmp_path, *OVERRIDES)
    real_write = Warehouse._write_batch
    calls = {"n": 0}

    def fills_up(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= 2:
            raise duckdb.IOException('IO Error: Could not write file "x.duckdb.wal": No space left on device')
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Warehouse, "_write_batch", fills_up)
    with pytest.raises(GeoevalError, match=r"is full .*the finished samples are kept.*rerun the same command"):
        run_job(spec, progress=False)
    monkeypatch.setattr(Warehouse, "_write_batch", real_write)
    with Warehouse(spec.results_db) as wh:
        stored = wh.finished_keys(spec.config_hash())
        status = {r["run_hash"]: r["status"] for r in wh.runs()}[spec.config_hash()]
    assert 1 <= len(stored) < 6 and status == "interrupted"
    outcome = run_job(spec, progress=False)  # room again: the rerun resumes
    assert outcome.resumed == len(stored) and len(outcome.results) == 6 and outcome.failed is None


def test_the_room_reserved_beside_the_warehouse_takes_what_finished_after_the_disk_filled(tmp_path, monkeypatch):
    """The first write that finds the disk full gives back the writer's reserve and is made again
    into its room, with the samples still finishing: every finished sample is kept and the run is
    marked interrupted (the second write of the batch stands for the room the reserve freed; on
    a real small filesystem: `test_hostile_battery.py`)."""
    spec = compose_spec(tmp_path, *OVERRIDES)
    real_write = Warehouse._write_batch
    calls = {"n": 0}
    released: list[bool] = []

    def full_once(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise duckdb.IOException('IO Error: Could not write file "x.duckdb.wal": No space left on device')
        return real_write(self, *args, **kwargs)

    real_release = SpaceReserve.release
    monkeypatch.setattr(SpaceReserve, "release", lambda self: released.append(self.held) or real_release(self))
    monkeypatch.setattr(Warehouse, "_write_batch", full_once)
    with pytest.raises(GeoevalError, match=r"is full .*the finished samples are kept"):
        run_job(spec, progress=False)
    with Warehouse(spec.results_db) as wh:
        stored = {r.sample_id: r.status for r in wh.results(spec.config_hash())}
        status = {r["run_hash"]: r["status"] for r in wh.runs()}[spec.config_hash()]
    assert status == "interrupted" and len(stored) == 6  # the batch that failed is kept, and what followed
    assert released[0] is True  # the reserve was held, and given back at the first full write
    assert not list(tmp_path.rglob("*.reserve"))
