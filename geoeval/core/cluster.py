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
  (one machine, a shared filesystem) reads them in place and fetches nothing.
- **Logs.** A shard on another node returns its Inspect logs as bytes; the driver writes them
  into the run's log folder (`receive_logs`), so every log is listed, kept per run and logged to
  MLflow wherever it was written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from geoeval.core.errors import GeoevalError


@lru_cache(maxsize=1)
def code_digest() -> str:
    """geoeval's version and a hash of its Python sources: equal on two nodes iff they run the
    same geoeval."""
    import geoeval

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
            "or keep runner.ship_code=true so that the driver's code is shipped")


def shipped_modules() -> list[str]:
    """The folders Ray ships to a cluster's workers: geoeval's package and each plugin module's
    top-level package (from `GEOEVAL_PLUGINS`)."""
    import importlib.util

    import geoeval

    folders = [str(Path(geoeval.__file__).resolve().parent)]
    for name in [p.strip() for p in os.environ.get("GEOEVAL_PLUGINS", "").split(",") if p.strip()]:
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


def node_cache_root() -> Path:
    return Path(os.environ.get("GEOEVAL_NODE_CACHE") or Path(tempfile.gettempdir()) / "geoeval-node-cache")


def localize_env(env: Any, pack: Any) -> Any:
    """`env` itself when this node sees every file it names; else a copy whose paths point at
    this node's unpacked copy of `pack` (a `[ObjectRef]` to `pack_env`'s bytes, fetched only
    here, when needed)."""
    if not dataclasses.is_dataclass(env) or pack is None:
        return env
    names = [f.name for f in dataclasses.fields(env)
             if isinstance(getattr(env, f.name), str) and os.path.isabs(getattr(env, f.name) or "x")]
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
    import uuid

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
