"""Room kept beside the warehouse for the end of a run on a disk that fills up.

When the disk filled mid-run, the commit that found no room failed, and so did everything after
it: the samples finished since the last commit, the run's status (left `running`) and the
invocation's end. A job's writer therefore claims `RESERVE_BYTES` next to the file when it starts
(`<results_db>.reserve`, allocated, not sparse) and lets them go the first time a write finds the
disk full: the batch that failed is written again into that room, the samples still finishing
are written after it, and the run is marked interrupted, with one line saying the disk is full.
The file is deleted when the writer closes, whatever happened. A disk with less room than the
reserve at the start gets none (the run's free-space check asks for far more).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: what a run's end needs at most: the samples in flight, the status, a DuckDB checkpoint
RESERVE_BYTES = 8 * 2**20


class SpaceReserve:
    """`RESERVE_BYTES` claimed beside the warehouse file `db` until `release`."""

    def __init__(self, db: str | Path, size: int = RESERVE_BYTES) -> None:
        self.path = Path(f"{db}.reserve")
        self.size = size
        self.held = False

    def claim(self) -> SpaceReserve:
        """Allocate the room now (no room: no reserve, and nothing left behind)."""
        try:
            with open(self.path, "wb") as handle:
                os.posix_fallocate(handle.fileno(), 0, self.size)
            self.held = True
        except OSError:
            with contextlib.suppress(OSError):
                self.path.unlink()
        return self

    def release(self) -> bool:
        """Give the room back to the disk; whether there was any to give."""
        held, self.held = self.held, False
        with contextlib.suppress(OSError):
            self.path.unlink()
        return held
