"""How often a job opens its results file. Each open of a DuckDB file (with its lock) cost
~15-20 ms (and ~90 ms with the schema and the read check), and a sweep's job opened it seven
times. A job now opens it once, whatever its number of samples, when no other process waits for
it: for the resume's reads and the job's bookkeeping, kept open by the writer through the
evaluation (it lets go for a process that waits, `test_group_commit.py`) up to the end's
bookkeeping; the first job of a process on a file opens it once more before the environment is
built, for the schema and the read check (a file replaced since is checked anew). The file is let
go when the job ends."""

from __future__ import annotations

import pytest

from geoeval.core.run.job import run_job
from geoeval.core.warehouse import lock
from geoeval.core.warehouse.store import Warehouse
from tests.conftest import compose_spec

SMALL = ("model=oracle", "suite.categories=[edge_only]", "env.n_maps=1")


def _count_opens(monkeypatch: pytest.MonkeyPatch, results_db: str) -> list[str]:
    opened: list[str] = []
    connect = lock.duckdb.connect

    def counting_connect(path, *args, **kwargs):
        if str(path) == results_db:
            opened.append(str(path))
        return connect(path, *args, **kwargs)

    monkeypatch.setattr(lock.duckdb, "connect", counting_connect)
    return opened


@pytest.mark.parametrize("n_per_category", [2, 8])
def test_a_job_opens_its_results_file_once_and_lets_it_go(tmp_path, monkeypatch, n_per_category):
    def spec(delay_s: float, results_db: str = "results.duckdb"):
        return compose_spec(
            tmp_path,
            *SMALL,
            f"suite.n_per_category={n_per_category}",
            f"+model.args.delay_s={delay_s}",
            f"results_db={tmp_path / results_db}",
        )

    first = spec(0.01)
    opened = _count_opens(monkeypatch, str(first.results_db))
    run_job(first, progress=False)
    assert len(opened) == 2, opened  # the schema and the check, then the job
    second = spec(0.02)  # another run in the same file
    opened.clear()
    outcome = run_job(second, progress=False)
    assert len(outcome.results) == n_per_category
    assert len(opened) == 1, opened
    opened.clear()
    resumed = run_job(second, progress=False)  # nothing left to run
    assert (resumed.run_hash, resumed.ran, len(resumed.results)) == (outcome.run_hash, 0, n_per_category)
    assert len(opened) == 1, opened
    # nothing holds the file: another warehouse (a lock as another process's would be) opens it at once
    with Warehouse(second.results_db, read_only=True, lock_timeout_s=0.5) as other:
        assert len(other.finished_keys(outcome.run_hash)) == n_per_category


def test_a_results_file_replaced_since_is_created_and_checked_again(tmp_path, monkeypatch):
    path = tmp_path / "r.duckdb"
    opened = _count_opens(monkeypatch, str(path))
    Warehouse(path, check_readable=True).close()
    Warehouse(path, check_readable=True).close()
    assert len(opened) == 1  # checked once in this process
    path.unlink()
    with Warehouse(path, check_readable=True) as wh:  # a new file: its schema is created again
        assert len(opened) == 2
        assert wh.finished_keys("any") == set()
