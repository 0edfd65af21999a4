"""Opening a warehouse file: the cross-process lock beside it, what to say when DuckDB cannot
open it, and the check that a file reads as a write will read it (`probe_reads`; once per process
and file, `CHECKED_FILES`).

A `Warehouse` holds its file under `<file>.lock` (`fcntl.flock`: shared for readers, exclusive
for writers), so several geoeval processes can share one file (see `geoeval.core.warehouse.store`).
A process that waits for the lock also holds `<file>.wait` shared while it waits: a writer that
keeps the file open between its commits (a job's warehouse writer) looks there and lets go as soon
as anyone waits (`FileLock.others_wait`).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import duckdb

from geoeval.core.errors import GeoevalError
from geoeval.core.warehouse.schema import replace_delete_sql

#: DuckDB's words for a file another process holds (`Could not set lock on file ...: Conflicting
#: lock is held`); a whole word, since "block" (as in a corrupt block) contains "lock"
LOCKED = re.compile(r"\block\b", re.IGNORECASE)
#: DuckDB's words for a truncated, overwritten or foreign file
DAMAGED = re.compile(
    r"Corrupt database file|Could not read enough bytes|not a valid DuckDB database file|checksum", re.IGNORECASE
)


#: the words of a write that found no room (the OS's ENOSPC, SQLite's and DuckDB's own)
DISK_FULL = re.compile(
    r"No space left on device|ENOSPC|database or disk is full|disk is full|Disk quota", re.IGNORECASE
)
#: what a warehouse needs free before a run starts (a run's rows are small; a full disk is not)
MIN_FREE_BYTES = 64 * 2**20


def check_free_space(path: Path, key: str, min_free: int = MIN_FREE_BYTES) -> None:
    """A `GeoevalError` naming the file and `key` when the disk that holds `path` has less than
    `min_free` bytes free: found before any work, not after the evaluation."""

    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    if free < min_free:
        raise GeoevalError(
            f"the disk holding {path} is full ({free / 2**20:.0f} MiB free, {min_free / 2**20:.0f} MiB needed): "
            f"free some space, or point {key} at another disk"
        )


def write_failure(path: Path, error: BaseException, key: str) -> GeoevalError | None:
    """The `GeoevalError` for a write to `path` that failed for a reason of the storage (a full
    disk, a damaged file), else None (the error is not the storage's)."""
    message = first_line(error)
    if DISK_FULL.search(message):
        return GeoevalError(
            f"the disk holding {path} is full ({message}); the finished samples are kept and the run is "
            f"marked interrupted: free some space and rerun the same command to resume, or point {key} at "
            "another disk"
        )
    if DAMAGED.search(message):
        return GeoevalError(f"writing to {path} failed: the file is damaged ({message}); point {key} at another file")
    return None


def first_line(error: BaseException) -> str:
    """DuckDB's messages run over several lines (a caret under the SQL); the first one says what
    failed."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def open_failure(path: Path, error: BaseException, key: str = "--db") -> str:
    """What to do when DuckDB cannot open `path`, by its reason. `key` is how the user names the
    file: `--db` (the results command) or `results_db=` (a run)."""
    message = first_line(error)
    if DAMAGED.search(message):
        return (
            f"cannot open {path}: the file is damaged ({message}); move it aside (geoeval starts a new one "
            f"there) or point {key} at another file"
        )
    if LOCKED.search(message):
        return (
            f"cannot open {path}: another program holds it open ({message}). geoeval runs share "
            f"a warehouse, but another DuckDB client keeps it locked: close that client, or point "
            f"{key} at another file"
        )
    if "different configuration" in message:
        return f"cannot open {path} read-only: this process already has it open for writing; use that Warehouse instead"
    return f"cannot open {path} as a DuckDB database ({message}): point {key} at a geoeval results file"


class FileLock:
    """`<path>.lock` across processes (shared for readers, exclusive for writers), taken with
    `acquire` and given back with `release`. While `acquire` waits it holds `<path>.wait` shared,
    so that the holder can see someone waits (`others_wait`) and let go."""

    def __init__(self, path: Path, *, shared: bool, timeout_s: float, key: str) -> None:
        self.path, self.shared, self.timeout_s, self.key = path, shared, timeout_s, key
        self._fd: int | None = None
        self._wait_path = path.with_name(path.name + ".wait")

    def acquire(self) -> bool:
        """Wait at most `timeout_s` for the lock; False when the folder is read-only and the lock
        is shared (a reader of a shared results file goes without it)."""
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            if self.shared:
                return False
            raise GeoevalError(f"cannot create {lock_path}: point {self.key} at a writable place") from None
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                self._wait_for(fd, mode)
            except BaseException:
                os.close(fd)
                raise
        self._fd = fd
        return True

    def _wait_for(self, fd: int, mode: int) -> None:
        wait_fd: int | None = None
        try:  # say that we wait: a holder that keeps the file open lets go when it sees this
            wait_fd = os.open(self._wait_path, os.O_RDWR | os.O_CREAT, 0o666)
            fcntl.flock(wait_fd, fcntl.LOCK_SH)
        except OSError:
            if wait_fd is not None:
                os.close(wait_fd)
            wait_fd = None
        try:
            deadline = time.monotonic() + self.timeout_s
            delay = 0.005
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise GeoevalError(
                            f"{self.path} stayed busy for {self.timeout_s:g} s (another geoeval process holds its "
                            f"lock): wait for it, or point {self.key} at another file"
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
        finally:
            if wait_fd is not None:
                os.close(wait_fd)  # closing the file gives its lock back

    def others_wait(self) -> bool:
        """Whether another process (or another `FileLock` of this one) waits for this lock."""
        try:
            fd = os.open(self._wait_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


class LockedConnection:
    """A DuckDB connection to a shared file, opened under its `FileLock` by the outermost of
    nested sessions (`enter`/`exit`) and closed when that one ends, unless kept (`keep`): then it
    stays open, and the lock held, until `keep(False)`, `close()` or another process waits for it
    (`yield_to_waiters`). The caller serialises the calls (the `Warehouse`'s own lock)."""

    def __init__(self, path: Path, *, read_only: bool, timeout_s: float, key: str) -> None:
        self.path, self.read_only, self.key = path, read_only, key
        self._lock = FileLock(path, shared=read_only, timeout_s=timeout_s, key=key)
        self._con: Any = None
        self._depth = 0  # sessions in progress (nested ones share the connection)
        self._keeping = False

    def enter(self) -> Any:
        if self._con is None:
            self._lock.acquire()
            try:
                self._con = duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as error:
                self._lock.release()
                raise GeoevalError(open_failure(self.path, error, self.key)) from None
            except BaseException:
                self._lock.release()
                raise
        self._depth += 1
        return self._con

    def exit(self, failed: bool) -> None:
        self._depth -= 1
        if self._depth == 0 and (failed or not self._keeping):  # a connection that failed is not kept
            self.close()

    def keep(self, keep: bool) -> None:
        self._keeping = keep and not self.read_only
        if not keep and self._depth == 0:
            self.close()

    def yield_to_waiters(self) -> bool:
        """Close a kept connection when someone waits for the lock; whether it did."""
        if self._depth == 0 and self._con is not None and self._lock.others_wait():
            self.close()
            return True
        return False

    def close(self) -> None:
        con, self._con = self._con, None
        if con is not None:
            try:
                con.close()
            finally:
                self._lock.release()


def probe_reads(con: Any, path: Path, key: str) -> None:
    """Read what a write will read, on an open connection: the key columns of `samples` and
    `scores` (the join each write's replace step scans), in a transaction rolled back. A file that
    opens but is cut short or overwritten past its header is named damaged (`open_failure`)."""
    try:
        con.begin()
        try:
            for table in ("scores", "samples"):
                no_key = "(SELECT ''::VARCHAR AS run_hash, ''::VARCHAR AS sample_id, -1 AS epoch)"
                con.execute(replace_delete_sql(table, no_key))
                # ... and one row through the table's key index, as an insert goes
                con.execute(
                    f"INSERT INTO {table} SELECT * REPLACE ('\x00geoeval-probe' AS run_hash) FROM {table} LIMIT 1"
                )
        finally:
            con.rollback()
    except duckdb.Error as error:
        raise GeoevalError(open_failure(path, error, key)) from None


#: the results files whose schema this process has created and whose reads it has checked
#: (`check_readable=True`), by identity: a sweep's jobs open one file one after another, and the
#: schema and the check cost an open of ~90 ms each job. A file replaced (or deleted and made
#: again) is another identity, checked anew.
CHECKED_FILES: set[tuple[int, int]] = set()


def file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)
