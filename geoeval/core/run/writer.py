"""The warehouse writer of a job: finished samples are written on a background thread, in
group commits (see `GroupCommitWriter`). A write that fails (a full disk, a damaged file) halts the
job (`core.stop.halt`): no further model call is paid for, and the error reaches the job when it
next hands over a result or closes the writer. The first time the disk is full, the room the writer
reserved beside the warehouse (`warehouse/reserve.py`) takes the batch that failed and the samples
still finishing, and leaves the job room to mark the run interrupted.
"""

from __future__ import annotations

import collections
import threading
import time

from geoeval.core.records import SampleResult
from geoeval.core.stop import halt
from geoeval.core.warehouse.lock import DISK_FULL, first_line
from geoeval.core.warehouse.reserve import SpaceReserve
from geoeval.core.warehouse.store import Warehouse


class GroupCommitWriter:
    """Writes finished samples to the warehouse on a background thread.

    Each commit takes every result that arrived since the last one (group commit), at most once
    per window: `min_window_s`, or five times the last commit's duration when that is longer, up
    to `max_window_s`, so the writer never spends more than ~1/6 of its time committing; a sample
    is durable at most about one window after it finishes (a kill loses at most that much
    finished work, which the rerun re-scores from the calls `run/journal.py` kept: none is paid again). The writer keeps the shared file open between its
    commits (`Warehouse.keep_open`: opening it costs ~10-20 ms, and per batch it was 11.9 % of a
    4,096-sample run's CPU) and lets go within one window whenever another process waits for it
    (`Warehouse.yield_to_waiters`), so opens grow with contention, not with samples. `put` only
    appends to a deque: the thread is not woken per sample (a wake-up per sample took the GIL
    from Inspect's event loop 256 times per 256-sample eval, ~0.3 s)."""

    def __init__(
        self,
        warehouse: Warehouse,
        on_written,
        min_window_s: float = 0.05,
        max_window_s: float = 0.5,
        generation_hash: str | None = None,
    ) -> None:
        self._generation_hash = generation_hash  # the trajectories of the batch are stored under it
        self._min_window_s, self._max_window_s = min_window_s, max_window_s
        self._window_s = min_window_s
        self._wh = warehouse
        self._on_written = on_written
        self._pending: collections.deque = collections.deque()
        self._stop = threading.Event()
        self._handover = threading.Event()
        self._error: BaseException | None = None
        # room for the end of the run should the disk fill up (`warehouse/reserve.py`): after a
        # full disk the writer goes on writing what still finishes into it (`_draining`)
        path = getattr(warehouse, "path", None)
        self._reserve = SpaceReserve(path).claim() if path is not None and str(path) != ":memory:" else None
        self._draining = False
        warehouse.keep_open(True)
        self._thread = threading.Thread(target=self._loop, name="geoeval-warehouse-writer", daemon=True)
        self._thread.start()

    def put(self, result: SampleResult) -> None:
        if self._error is not None and not self._draining:
            raise self._error
        self._pending.append(result)

    def _take(self) -> list[SampleResult]:
        batch = []
        while self._pending:
            batch.append(self._pending.popleft())
        return batch

    def _loop(self) -> None:
        while True:
            stopping = self._stop.wait(self._window_s)
            if stopping and self._handover.is_set() and not self._draining:  # close() writes what is left
                return
            batch = self._take()
            try:
                started = time.monotonic()
                if self.write(batch):
                    spent = time.monotonic() - started
                    self._window_s = min(self._max_window_s, max(self._min_window_s, 5 * spent))
                self._wh.yield_to_waiters()  # another process's turn: the next commit opens the file again
            except BaseException as exc:  # surfaced to the evaluating thread by put()/close()
                if not self._failed(exc, batch):
                    return
            if stopping and not self._pending:
                return

    def _failed(self, exc: BaseException, batch: list[SampleResult]) -> bool:
        """After a failed write: halt the job (its first error is the one reported) and, the first
        time the disk is full, write `batch` again into the reserve's room and go on writing what
        still finishes (`_draining`); whether the thread goes on."""
        if self._error is None:
            self._error = exc
            halt(first_line(exc))  # no more samples start: their results could not be stored
        if self._draining or self._reserve is None or not DISK_FULL.search(str(exc)) or not self._reserve.release():
            self._draining = False
            return False
        self._draining = True
        try:
            self.write(batch)
        except BaseException:  # noqa: BLE001 - still no room: the first error says why
            self._draining = False
            return False
        return True

    def close(self, *, keep_rest: bool = False) -> list[SampleResult]:
        """Stop the thread once it has written what it holds. `keep_rest`: the results it has not
        taken yet are returned instead of written, for `write` to write them inside the job's own
        `Warehouse.held()` block with its other bookkeeping; the file then stays open for that
        block, which lets it go (`Warehouse.keep_open(False)`). Never call this inside such a
        block: a thread that is writing waits for the file, and this waits for the thread."""
        if keep_rest:
            self._handover.set()
        self._stop.set()
        self._thread.join()
        if self._reserve is not None:  # a full disk released it already, for the run's end
            self._reserve.release()
        if not keep_rest:
            self._wh.keep_open(False)
        if self._error is not None:
            raise self._error
        return self._take() if keep_rest else []

    def write(self, batch: list[SampleResult]) -> bool:
        """Write `batch` in the calling thread (the writer's own commits, and what
        `close(keep_rest=True)` returned); whether there was anything to write."""
        if not batch:
            return False
        self._wh.write_results(batch, generation_hash=self._generation_hash)
        self._on_written(batch)
        return True
