"""The job's background warehouse writer (`geoeval.core.run.writer.GroupCommitWriter`): every result is
written once, in batches, and its last batch can be written inside the job's own held session."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from geoeval.core.run.writer import GroupCommitWriter
from geoeval.core.warehouse import lock as warehouse_lock
from geoeval.core.warehouse.store import Warehouse
from tests.core.test_warehouse import result


def test_every_result_is_written_once_in_batches(tmp_path: Path) -> None:
    written: list[list[str]] = []
    with Warehouse(tmp_path / "r.duckdb") as wh:
        writer = GroupCommitWriter(wh, lambda batch: written.append([r.sample_id for r in batch]), min_window_s=0.05)
        for i in range(30):
            writer.put(result(f"s{i}"))
            if i == 14:
                time.sleep(0.2)  # the thread writes what has gathered, once per window
        writer.close()
        assert sorted(s for batch in written for s in batch) == sorted(f"s{i}" for i in range(30))
        assert 2 <= len(written) < 30  # grouped, not a commit per sample
        assert wh.finished_keys("run1") == {(f"s{i}", 1) for i in range(30)}


@pytest.mark.parametrize("window_s", [5.0, 0.0])  # the thread idle, or busy writing when close() comes
def test_the_rest_is_kept_for_the_callers_held_session(tmp_path: Path, window_s: float) -> None:
    written: list[str] = []
    with Warehouse(tmp_path / "r.duckdb") as wh:
        wh.register_run("run1", suite="maptab", model="m", config={})
        writer = GroupCommitWriter(
            wh, lambda batch: written.extend(r.sample_id for r in batch), min_window_s=window_s, max_window_s=window_s
        )
        for i in range(40):
            writer.put(result(f"s{i}"))
        done = threading.Event()

        def finish() -> None:
            rest = writer.close(keep_rest=True)  # outside held(): a writing thread needs the file
            with wh.held():
                writer.write(rest)
                wh.set_run_status("run1", "finished")
            done.set()

        threading.Thread(target=finish, daemon=True).start()
        assert done.wait(20), "the writer's close and the held block must not wait for each other"
        assert sorted(written) == sorted(f"s{i}" for i in range(40))  # each once
        assert wh.finished_keys("run1") == {(f"s{i}", 1) for i in range(40)}


def test_a_failed_write_surfaces_in_the_evaluating_thread(tmp_path: Path) -> None:
    class Broken:
        def keep_open(self, keep: bool) -> None:
            pass

        def yield_to_waiters(self) -> bool:
            return False

        def write_results(self, batch, generation_hash=None):
            raise OSError("disk full")

    writer = GroupCommitWriter(Broken(), lambda batch: None, min_window_s=0.01)
    writer.put(result("s1"))
    time.sleep(0.2)
    with pytest.raises(OSError, match="disk full"):
        writer.put(result("s2"))
    with pytest.raises(OSError, match="disk full"):
        writer.close()


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    connect = warehouse_lock.duckdb.connect

    def counting_connect(path, *args, **kwargs):
        opened.append(str(path))
        return connect(path, *args, **kwargs)

    monkeypatch.setattr(warehouse_lock.duckdb, "connect", counting_connect)
    return opened


def test_the_writer_opens_the_file_once_however_many_batches(tmp_path: Path, monkeypatch) -> None:
    written: list[int] = []
    with Warehouse(tmp_path / "r.duckdb") as wh:
        opened = _count_opens(monkeypatch)
        writer = GroupCommitWriter(wh, lambda batch: written.append(len(batch)), min_window_s=0.01, max_window_s=0.01)
        for i in range(40):
            writer.put(result(f"s{i}"))
            if i % 4 == 3:
                time.sleep(0.05)  # a batch per pause
        writer.close()
        assert len(written) >= 5  # many commits ...
        assert len(opened) == 1  # ... one open
        assert wh.finished_keys("run1") == {(f"s{i}", 1) for i in range(40)}


def test_a_kept_file_is_let_go_when_another_warehouse_waits(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "r.duckdb"
    with Warehouse(path) as wh:
        writer = GroupCommitWriter(wh, lambda batch: None, min_window_s=0.02, max_window_s=0.02)
        writer.put(result("s1"))
        time.sleep(0.2)  # written, and the file kept open by the writer
        opened = _count_opens(monkeypatch)
        # another process's turn (a second lock on the file conflicts as another process's would):
        # it would wait its whole timeout if the writer kept the file regardless
        with Warehouse(path, lock_timeout_s=10) as other:
            assert other.finished_keys("run1") == {("s1", 1)}
            other.register_run("run2", suite="maptab", model="m", config={})
        writer.put(result("s2"))
        time.sleep(0.2)
        writer.close()
        assert wh.finished_keys("run1") == {("s1", 1), ("s2", 1)}
        assert len(opened) >= 3  # the other's opens, then the writer's again after it let go
