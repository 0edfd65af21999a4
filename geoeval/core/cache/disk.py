"""A small on-disk memo for expensive, deterministic per-input computations (an offline agent's
reading of an image), shared by every job, Ray worker and rerun on the machine.

Layout: `<home>/<namespace>/<version>/<key[:2]>/<key>.pkl`. `home` is resolved as the data cache
is (`core/data/fetch.py`): `$GEOEVAL_CACHE_DIR` when set, else `~/.cache/geoeval/cache`.

- **Keys** are content hashes the caller computes (`content_key`); **versions** name the code that
  produced a value. A value is only ever read back under the exact version it was written with,
  so a changed version never serves a stale result (the old version's folder is simply not read;
  `geoeval cache clear` removes it).
- **Concurrent writers** are safe: a value is written to a temporary file in the same folder and
  moved into place with `os.replace` (atomic on POSIX), so a reader sees either no file or a whole
  one. Two processes computing the same key both write the same value; the last rename wins.
- **A damaged file** (a disk-full write, a file from an incompatible Python) is a miss: it is
  removed and recomputed, never an error.
- **Off switch**: `GEOEVAL_NO_CACHE=1` makes every lookup a miss and writes nothing.

Values are pickled: the cache is the user's own, on their own disk (as Ray's object store is).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

#: The variable that moves the cache.
CACHE_DIR_ENV = "GEOEVAL_CACHE_DIR"
#: Set to 1 (or true/yes) to turn the cache off: nothing read, nothing written.
NO_CACHE_ENV = "GEOEVAL_NO_CACHE"
#: Where the cache lives when nothing else says (beside the data cache, ~/.cache/geoeval/data).
DEFAULT_CACHE_HOME = Path("~/.cache/geoeval/cache")

_SAFE = re.compile(r"[^A-Za-z0-9._-]")
T = TypeVar("T")


def cache_home(root: str | Path | None = None) -> Path:
    """The folder that holds every namespace: `root`, else `$GEOEVAL_CACHE_DIR`, else
    ~/.cache/geoeval/cache."""
    chosen = root if root is not None else os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_HOME
    return Path(chosen).expanduser()


def cache_enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() not in ("1", "true", "yes", "on")


def content_key(*parts: bytes | str) -> str:
    """A sha256 over the parts (length-prefixed, so ("ab", "c") and ("a", "bc") differ)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else bytes(part)
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def installed_versions(*dists: str) -> list[str]:
    """`"<dist>=<version>"` for each of `dists` that is installed, in order: the libraries a cached
    value depends on, for its cache version."""

    found = []
    for dist in dists:
        try:
            found.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            continue
    return found


def code_version(label: str, sources: list[Path], dists: tuple[str, ...] = ()) -> str:
    """A cache version for values computed by code: `label` (a hand-bumped number, for what the
    source cannot show) followed by a hash of every source file and the installed versions of
    `dists`, so an edit of the code or an upgrade of a library never serves an old value."""
    parts = [label, *(hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sources), *installed_versions(*dists)]
    return f"{label}-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _safe(name: str) -> str:
    cleaned = _SAFE.sub("_", name.strip())
    if not cleaned or cleaned in (".", ".."):
        raise ValueError(f"not a usable cache name: {name!r}")
    return cleaned


class DiskCache:
    """Values of one computation (`namespace`) at one code `version`."""

    def __init__(self, namespace: str, version: str, root: str | Path | None = None) -> None:
        self.namespace = _safe(namespace)
        self.version = _safe(version)
        self._root = root  # resolved on use: the environment may change after construction

    @property
    def directory(self) -> Path:
        return cache_home(self._root) / self.namespace / self.version

    def path_for(self, key: str) -> Path:
        key = _safe(key)
        return self.directory / key[:2] / f"{key}.pkl"

    def get(self, key: str, default: Any = None) -> Any:
        """The stored value of `key`, else `default` (also when the cache is off or the file is
        damaged; a damaged file is removed)."""
        if not cache_enabled():
            return default
        path = self.path_for(key)
        try:
            with open(path, "rb") as f:
                stored_key, value = pickle.load(f)
        except FileNotFoundError:
            return default
        except Exception:  # noqa: BLE001 -- truncated, foreign or unreadable: a miss, gone for the next reader
            _remove(path)
            return default
        if stored_key != key:  # a file renamed by hand: never serve another input's value
            return default
        return value

    def put(self, key: str, value: Any) -> None:
        """Store `value` under `key` (atomically; a no-op when the cache is off). A full or
        read-only disk loses the entry, not the job."""
        if not cache_enabled():
            return
        path = self.path_for(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump((key, value), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except Exception:  # noqa: BLE001 -- a failed write loses the entry, never the job
            _remove(Path(tmp))

    def get_or_compute(self, key: str, compute: Callable[[], T]) -> tuple[T, bool]:
        """(value, hit): the stored value, or `compute()` stored and returned."""
        sentinel = _MISSING
        value = self.get(key, sentinel)
        if value is not sentinel:
            return value, True
        value = compute()
        self.put(key, value)
        return value, False


_MISSING = object()


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


# ------------------------------------------------------------------ whole-cache operations


@dataclass(frozen=True)
class CacheUsage:
    namespace: str
    version: str
    entries: int
    bytes: int


def usage(root: str | Path | None = None) -> list[CacheUsage]:
    """Entries and bytes per namespace and version under the cache home (sorted by name)."""
    home = cache_home(root)
    rows: list[CacheUsage] = []
    if not home.is_dir():
        return rows
    for ns in sorted(p for p in home.iterdir() if p.is_dir()):
        for ver in sorted(p for p in ns.iterdir() if p.is_dir()):
            files = [f for f in ver.glob("*/*.pkl") if f.is_file()]
            rows.append(CacheUsage(ns.name, ver.name, len(files), sum(f.stat().st_size for f in files)))
    return rows


def clear(root: str | Path | None = None, namespace: str | None = None) -> int:
    """Remove the cache (or one namespace of it); returns the number of entries removed."""
    home = cache_home(root)
    targets = (
        [home / _safe(namespace)] if namespace else ([p for p in home.iterdir() if p.is_dir()] if home.is_dir() else [])
    )
    removed = 0
    for target in targets:
        if target.is_dir():
            removed += sum(1 for _ in target.glob("*/*/*.pkl"))
            shutil.rmtree(target, ignore_errors=True)
    return removed
