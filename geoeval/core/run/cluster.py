"""What a shard on another node needs from the driver: the same code, the environment's files,
and a way to send its Inspect logs back.

- **Code.** For a cluster (`runner.address`), geoeval's package folder and the plugin modules
  named in `GEOEVAL_PLUGINS` are shipped through Ray's runtime env (`py_modules`). Every shard
  also checks that it runs the driver's code (`code_digest`: geoeval's version and a hash of its
  sources) and refuses with one clear error when it does not.
- **Environments.** The driver's environment handle names files (a DuckDB city, map images, the
  authors' files). For a cluster, the driver packs those files once per job into Ray's object
  store (`pack_env`); a shard whose node lacks them unpacks them into a node-local cache, keyed by
  the pack's content, and uses that copy (`localize_env`). A node that can see the driver's paths
  (one machine, a shared filesystem) reads them in place and fetches nothing. The cache keeps
  at most `GEOEVAL_NODE_CACHE_MAX_BYTES` (4 GiB), evicting the least recently used entries
  that no shard has used for 15 minutes (`evict_node_cache`).
- **Logs.** A shard on another node returns its Inspect logs as bytes; the driver writes them
  into the run's log folder (`receive_logs`), so every log is listed, kept per run and logged to
  MLflow wherever it was written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

import geoeval
from geoeval.core.errors import GeoevalError


@lru_cache(maxsize=1)
def code_digest() -> str:
    """geoeval's version and a hash of its Python sources: equal on two nodes iff they run the
    same geoeval."""

    root = Path(geoeval.__file__).resolve().parent
    digest = hashlib.sha256(geoeval.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return f"{geoeval.__version__}+{digest.hexdigest()[:12]}"


def check_code(expected: str) -> None:
    """Refuse to run a shard with code other than the driver's."""
    here = code_digest()
    if here != expected:
        raise GeoevalError(
            f"this node runs geoeval {here}, the driver {expected}: install the driver's geoeval on every node, "
            "or keep runner.ship_code=true so that the driver's code is shipped"
        )


def shipped_env_vars() -> dict[str, str]:
    """What a worker needs to find the driver's plugins in shipped code: the modules of the
    driver's `geoeval.plugins` entry points (a worker where geoeval is not installed has no
    entry-point metadata; the registry then imports these, see `registry.load_plugins`)."""
    from geoeval.core.registry import SHIPPED_ENTRY_POINTS_ENV, entry_point_modules

    return {SHIPPED_ENTRY_POINTS_ENV: ",".join(entry_point_modules())}


def shipped_modules() -> list[str]:
    """The folders Ray ships to a cluster's workers: geoeval's package and the top-level package
    of each plugin, both the `geoeval.plugins` entry points' (an installed plugin such as
    plugins/example) and the modules named in `GEOEVAL_PLUGINS`."""

    from geoeval.core.registry import entry_point_modules

    folders = [str(Path(geoeval.__file__).resolve().parent)]
    named = [p.strip() for p in os.environ.get("GEOEVAL_PLUGINS", "").split(",") if p.strip()]
    for name in [*entry_point_modules(), *named]:
        top = name.split(":", 1)[0].split(".", 1)[0]
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if found is None:
            continue
        # a package (regular or namespace) ships its folder(s); a single module its file
        locations = list(found.submodule_search_locations or []) or ([found.origin] if found.origin else [])
        for location in locations:
            if location and Path(location).exists() and str(Path(location).resolve()) not in folders:
                folders.append(str(Path(location).resolve()))
    return folders


def env_paths(env: Any) -> dict[str, str]:
    """The fields of an environment handle (a dataclass) that name existing files or folders."""
    if not dataclasses.is_dataclass(env):
        return {}
    out = {}
    for field in dataclasses.fields(env):
        value = getattr(env, field.name)
        if isinstance(value, str) and value and os.path.isabs(value) and os.path.exists(value):
            out[field.name] = value
    return out


def pack_env(env: Any) -> bytes | None:
    """The files the environment handle names, as one tar archive (None when it names none)."""
    paths = env_paths(env)
    if not paths:
        return None
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, path in sorted(paths.items()):
            tar.add(path, arcname=f"{name}/{os.path.basename(path.rstrip('/'))}")
    return buffer.getvalue()


#: The node cache keeps at most this many bytes of unpacked environments
#: (`GEOEVAL_NODE_CACHE_MAX_BYTES`); the least recently used go first.
DEFAULT_NODE_CACHE_MAX_BYTES = 4 * 1024**3
#: An entry used this recently is never evicted: a shard of another job may be reading it.
IN_USE_GRACE_S = 15 * 60


def node_cache_root() -> Path:
    return Path(os.environ.get("GEOEVAL_NODE_CACHE") or Path(tempfile.gettempdir()) / "geoeval-node-cache")


def _tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def evict_node_cache(
    root: Path, *, keep: Path | None = None, max_bytes: int | None = None, now: float | None = None
) -> list[str]:
    """Remove the least recently used unpacked environments under `root` until the rest fit in
    `max_bytes`, never `keep` nor one used in the last `IN_USE_GRACE_S` seconds; also remove
    unpack folders abandoned by a killed worker. Returns the names removed. Each removal renames
    the entry first (atomic), so a concurrent shard sees it whole or not at all."""

    if not root.is_dir():
        return []
    limit = (
        max_bytes
        if max_bytes is not None
        else int(os.environ.get("GEOEVAL_NODE_CACHE_MAX_BYTES") or DEFAULT_NODE_CACHE_MAX_BYTES)
    )
    now = time.time() if now is None else now
    removed: list[str] = []
    entries = []
    for entry in root.iterdir():
        if entry.name.startswith((".unpack-", ".evict-")):
            if now - entry.stat().st_mtime > IN_USE_GRACE_S:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
            continue
        marker = entry / ".complete"
        if marker.exists():
            entries.append((marker.stat().st_mtime, entry, _tree_bytes(entry)))
    total = sum(size for _, _, size in entries)
    for used_at, entry, size in sorted(entries, key=lambda e: e[0]):  # least recently used first
        if total <= limit:
            break
        if (keep is not None and entry == keep) or now - used_at < IN_USE_GRACE_S:
            continue
        doomed = root / f".evict-{entry.name}"
        try:
            os.replace(entry, doomed)
        except OSError:
            continue  # another worker evicted it first
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(entry.name)
    return removed


def localize_env(env: Any, pack: Any) -> Any:
    """`env` itself when this node sees every file it names; else a copy whose paths point at
    this node's unpacked copy of `pack` (a `[ObjectRef]` to `pack_env`'s bytes, fetched only
    here, when needed)."""
    if not dataclasses.is_dataclass(env) or isinstance(env, type) or pack is None:
        return env
    names = [
        f.name
        for f in dataclasses.fields(env)
        if isinstance(getattr(env, f.name), str) and os.path.isabs(getattr(env, f.name) or "x")
    ]
    if all(os.path.exists(getattr(env, n)) for n in names):
        return env
    data = pack[0]
    if data is not None and not isinstance(data, bytes):
        import ray

        data = ray.get(data)
    if data is None:
        raise GeoevalError("the environment's files are on the driver only, and it sent none")
    target = node_cache_root() / hashlib.sha256(data).hexdigest()[:16]
    done = target / ".complete"
    if not done.exists():
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=_ensure(node_cache_root())))
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(staging, filter="data")
        (staging / ".complete").write_text("ok")
        try:
            os.replace(staging, target)  # another worker may have won the race: keep its copy
        except OSError:
            pass
        evict_node_cache(node_cache_root(), keep=target)
    else:
        os.utime(done)  # used now: the least recently used entries are evicted first
    updates = {}
    for name in names:
        local = target / name / os.path.basename(getattr(env, name).rstrip("/"))
        if local.exists():
            updates[name] = str(local)
    return dataclasses.replace(env, **updates)


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def driver_marker(log_dir: Path) -> str:
    """A file in the run's log folder that only the driver's filesystem has (a shard that cannot
    see it is on another machine, or in another mount namespace, and sends its logs back). By
    filesystem, not by Ray node: a driver outside the cluster (`ray://`) shares no node with it."""

    log_dir.mkdir(parents=True, exist_ok=True)
    marker = log_dir / f".geoeval-driver-{uuid.uuid4().hex}"
    marker.write_text("the driver's filesystem\n")
    return str(marker)


def logs_for_driver(paths: list[str], driver_marker: str | None) -> list[dict[str, Any]]:
    """A shard's Inspect logs as the driver receives them: the path alone where the driver sees
    this worker's files, the bytes too where it does not."""
    remote = driver_marker is not None and not os.path.exists(driver_marker)
    return [{"path": p, "data": Path(p).read_bytes() if remote and Path(p).exists() else None} for p in paths]


def receive_logs(items: list[Any], log_dir: Path) -> list[str]:
    """Write the logs that came back as bytes into the run's log folder; returns driver paths."""
    paths = []
    for item in items:
        if isinstance(item, str):  # an older shard function's plain path
            paths.append(item)
            continue
        path = Path(item["path"])
        if item.get("data") is not None and not path.exists():
            log_dir.mkdir(parents=True, exist_ok=True)
            path = log_dir / path.name
            path.write_bytes(item["data"])
        paths.append(str(path))
    return paths
