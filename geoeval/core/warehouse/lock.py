"""Opening a warehouse file: the cross-process lock beside it and what to say when DuckDB cannot
open it.

A `Warehouse` holds its file only for one operation at a time, under `<file>.lock`
(`fcntl.flock`: shared for readers, exclusive for writers), so several geoeval processes can
share one file (see `geoeval.core.warehouse.store`).
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from geoeval.core.errors import GeoevalError

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
    import shutil

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
            f"the disk holding {path} is full ({message}); the samples stored before are kept and the run is "
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


@contextmanager
def file_lock(path: Path, *, shared: bool, timeout_s: float, key: str) -> Iterator[None]:
    """Hold `<path>.lock` (shared for readers, exclusive for writers) across processes, waiting at
    most `timeout_s` for it."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        # a read-only folder (e.g. a shared results file): readers go without the lock
        if shared:
            yield
            return
        raise GeoevalError(f"cannot create {lock_path}: point {key} at a writable place") from None
    try:
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        deadline = time.monotonic() + timeout_s
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise GeoevalError(
                        f"{path} stayed busy for {timeout_s:g} s (another geoeval process holds its lock): "
                        f"wait for it, or point {key} at another file"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
