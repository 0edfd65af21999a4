"""A small in-process memo for deterministic results that are rebuilt job after job.

A sweep runs many jobs in one process, and each job rebuilds what the previous one built from the
same inputs (MapTab: the maps read back from the environment's DuckDB file, the RP queries with
their optimal routes). `CopyingMemo` keeps the last few results and hands each caller a fresh
copy (a pickle round trip, ~1 ms where the rebuild took ~50), so no caller can change what
another one gets. Keys name every input; `file_key` names a file by its path and its state, so a
rebuilt file is never served from the memo.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def file_key(path: str | Path) -> tuple[str, int, int]:
    """A file's identity for a memo key: its resolved path, modification time and size."""
    resolved = Path(path).resolve()
    st = os.stat(resolved)
    return str(resolved), st.st_mtime_ns, st.st_size


class CopyingMemo:
    """The `maxsize` most recently used results, kept pickled; each `get` is a new copy."""

    def __init__(self, maxsize: int = 8) -> None:
        self._maxsize = maxsize
        self._kept: OrderedDict[Hashable, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            blob = self._kept.get(key)
            if blob is not None:
                self._kept.move_to_end(key)
        if blob is None:
            value = compute()
            blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            with self._lock:
                self._kept[key] = blob
                while len(self._kept) > self._maxsize:
                    self._kept.popitem(last=False)
            return pickle.loads(blob)  # the caller's copy, like every later caller's
        return pickle.loads(blob)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


__all__ = ["CopyingMemo", "file_key"]
