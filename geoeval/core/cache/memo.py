"""Small in-process memos for deterministic results that are rebuilt job after job.

A sweep runs many jobs in one process, and each job rebuilds what the previous one built from the
same inputs (MapTab: the maps read back from the environment's DuckDB file, the RP queries with
their optimal routes, a map's full-size drawing). `LruMemo` keeps the last few results as they
are, for a caller that never changes them (or copies them itself, as the renderer does);
`CopyingMemo` hands each caller a fresh copy (a pickle round trip, ~1 ms where the rebuild took
~50), so no caller can change what another one gets. Keys name every input; `file_key` names a
file by its path and its state, so a rebuilt file is never served from a memo; `file_digest` is
a file's content hash, memoised that way.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def file_key(path: str | Path) -> tuple[str, int, int]:
    """A file's identity for a memo key: its resolved path, modification time and size."""
    resolved = Path(path).resolve()
    st = os.stat(resolved)
    return str(resolved), st.st_mtime_ns, st.st_size


def file_digest(path: str | Path) -> str:
    """The sha256 of a file's contents, read once per state of the file in this process (a
    sweep builds an environment's fingerprint once per job)."""
    return _DIGESTS.get(file_key(path), lambda: hashlib.sha256(Path(path).read_bytes()).hexdigest())


class LruMemo:
    """The `maxsize` most recently used results, kept as they are. A failure is not kept."""

    def __init__(self, maxsize: int = 8) -> None:
        self._maxsize = maxsize
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def _store(self, value: Any) -> Any:
        """What is kept for a computed value (the value itself)."""
        return value

    def _load(self, kept: Any) -> Any:
        """What a caller gets for what is kept (the kept value itself)."""
        return kept

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            found = key in self._kept
            if found:
                self._kept.move_to_end(key)
                kept = self._kept[key]
        if not found:
            kept = self._store(compute())
            with self._lock:
                self._kept[key] = kept
                while len(self._kept) > self._maxsize:
                    self._kept.popitem(last=False)
        return self._load(kept)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


class CopyingMemo(LruMemo):
    """An `LruMemo` that keeps each result pickled and hands every caller, the first one too, a
    new copy."""

    def _store(self, value: Any) -> bytes:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def _load(self, kept: bytes) -> Any:
        return pickle.loads(kept)


#: file_key -> sha256, for file_digest
_DIGESTS = LruMemo(maxsize=4096)
