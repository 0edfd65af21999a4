"""The authors' public data, one command away: a registry of datasets and a verified downloader.

    geoeval data list                     # names, sizes, and whether each is in the cache
    geoeval data fetch maptab-sample      # -> ~/.cache/geoeval/data/maptab-sample/

Datasets (`DATASETS`, registered in `geoeval.core.data.catalogue`, which says what each holds
and where it is published): `maptab-sample` and `mapsatisfy-demo` (static file lists pinned to a
commit) and `maptab-full` (its file list read from the Hugging Face Hub at fetch time).

How a fetch works: each file is downloaded with urllib into `<file>.part`, resumed with an HTTP
Range request when a `.part` is already there (a broken connection is retried twice within one
fetch), then its size and checksum are checked and it is renamed into place atomically. A
checksum mismatch deletes the download and stops with an error naming the file. Verified files
are recorded (`.geoeval-verified.json`: size, mtime, checksum), so a repeated or resumed fetch
skips them without reading them again; a file whose size or mtime changed is checked again.

The cache: `$GEOEVAL_DATA_DIR/<name>` when that is set, else `~/.cache/geoeval/data/<name>`; a
`--cache DIR` option puts it under `DIR/<name>`. `--url-base URL` fetches every file from
`URL/<path in the cache>` instead (a mirror holding a copy of the cache; for `maptab-full`, a Hub
endpoint, as `$HF_ENDPOINT` also sets). `resolve_root` is how an environment reads the cache when its
`env.root` is unset, with the fetch command in its error when the data is not there.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote
from urllib.request import Request, urlopen

# The registry has a module of its own (it is mostly data).
from geoeval.core.data.catalogue import (
    DataFile,
    Dataset,
    HubSource,
    get_dataset,
)
from geoeval.core.errors import GeoevalError

#: The variable that moves the whole data cache.
DATA_DIR_ENV = "GEOEVAL_DATA_DIR"
#: Where the cache lives when nothing else says.
DEFAULT_DATA_HOME = Path("~/.cache/geoeval/data")
#: What a dataset folder records about its verified files, and (Hub datasets) its file list.
VERIFIED_FILE = ".geoeval-verified.json"
MANIFEST_FILE = ".geoeval-manifest.json"
#: Attempts per file within one fetch (the later ones resume the partial download).
ATTEMPTS = 3
#: Seconds a connection may stay silent.
TIMEOUT_S = 60.0
_USER_AGENT = "geoeval-data-fetch"
_CHUNK = 1 << 20


class FetchError(GeoevalError):
    """A download that failed or did not verify; the message names the file and what to do."""


# -- where -------------------------------------------------------------------------------------


def data_home(cache: str | Path | None = None) -> Path:
    """The folder that holds every dataset: `cache`, else `$GEOEVAL_DATA_DIR`, else
    ~/.cache/geoeval/data."""
    chosen = cache if cache is not None else os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_HOME
    return Path(chosen).expanduser()


def dataset_dir(name: str, cache: str | Path | None = None) -> Path:
    return data_home(cache) / get_dataset(name).name


# -- checking ----------------------------------------------------------------------------------


def _safe_relative(path: str) -> str:
    """`path` if it stays inside the dataset folder (a Hub listing is remote data)."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("", ".", "..") for part in pure.parts) or "\\" in path:
        raise FetchError(f"refusing the file path {path!r}: it would leave the dataset folder")
    return pure.as_posix()


def file_digest(path: Path, expected: DataFile) -> str:
    """The checksum of `path` in the form `expected.checksum` uses."""
    if expected.sha256:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()
        digest.update(b"blob %d\0" % path.stat().st_size)  # the git object header
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return f"{'sha256' if expected.sha256 else 'git-sha1'}:{digest.hexdigest()}"


def _stamp(path: Path, expected: DataFile) -> dict[str, Any]:
    stat = path.stat()
    return {"checksum": expected.checksum, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_json_atomic(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _is_verified(folder: Path, expected: DataFile, stamps: dict[str, Any]) -> bool:
    """The file is there and was verified as it is now (same checksum, size and mtime)."""
    target = folder / expected.path
    stamp = stamps.get(expected.path)
    if not isinstance(stamp, dict) or not target.is_file():
        return False
    return stamp == _stamp(target, expected)


# -- the file list -----------------------------------------------------------------------------


def _hub_files(hub: HubSource, endpoint: str) -> tuple[DataFile, ...]:
    """Every file of a Hub repository with its checksum, from the tree API (all pages)."""
    url: str | None = hub.tree_url(endpoint)
    files: list[DataFile] = []
    while url:
        try:
            with urlopen(
                Request(url, headers={"User-Agent": _USER_AGENT, "Accept": "application/json"}), timeout=TIMEOUT_S
            ) as response:
                entries = json.loads(response.read().decode("utf-8"))
                url = _next_link(response.headers.get("Link", ""))
        except HTTPError as error:
            raise FetchError(f"listing {hub.repo_id} failed: HTTP {error.code} from {url}") from None
        except (URLError, OSError, ValueError) as error:
            raise FetchError(
                f"listing {hub.repo_id} failed ({_reason(error)}) at {url}: check the network "
                "or give a Hub mirror with --url-base"
            ) from None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or entry.get("type") != "file":
                continue
            path = _safe_relative(str(entry.get("path", "")))
            lfs = entry.get("lfs") if isinstance(entry.get("lfs"), dict) else None
            if lfs and lfs.get("oid"):
                files.append(
                    DataFile(
                        path,
                        hub.file_url(endpoint, path),
                        int(lfs.get("size", entry.get("size"))),
                        sha256=str(lfs["oid"]),
                    )
                )
            elif entry.get("oid"):
                files.append(
                    DataFile(path, hub.file_url(endpoint, path), int(entry["size"]), git_sha1=str(entry["oid"]))
                )
            else:
                raise FetchError(f"the Hub listing of {hub.repo_id} gives no checksum for {path}")
    if not files:
        raise FetchError(f"the Hub listing of {hub.repo_id} at {hub.revision} has no files")
    return tuple(sorted(files, key=lambda f: f.path))


def _next_link(header: str) -> str | None:
    """The `rel="next"` target of an HTTP Link header (how the Hub pages long listings)."""
    for part in header.split(","):
        match = re.match(r'\s*<([^>]+)>\s*;\s*rel="?next"?', part)
        if match:
            return match.group(1)
    return None


def _manifest_to_json(files: Iterable[DataFile]) -> list[dict[str, Any]]:
    return [{"path": f.path, "url": f.url, "size": f.size, "sha256": f.sha256, "git_sha1": f.git_sha1} for f in files]


def _manifest_from_json(value: Any) -> tuple[DataFile, ...] | None:
    if not isinstance(value, list):
        return None
    try:
        return tuple(
            DataFile(_safe_relative(v["path"]), v["url"], v["size"], v.get("sha256"), v.get("git_sha1")) for v in value
        )
    except (KeyError, TypeError, FetchError):
        return None


def known_files(dataset: Dataset, folder: Path) -> tuple[DataFile, ...] | None:
    """The dataset's files: the static list, or the Hub listing a fetch saved (None before)."""
    if dataset.hub is None:
        return dataset.files
    return _manifest_from_json(_read_json(folder / MANIFEST_FILE))


def _files_to_fetch(dataset: Dataset, folder: Path, url_base: str | None) -> tuple[DataFile, ...]:
    if dataset.hub is not None:
        files = _hub_files(dataset.hub, dataset.hub.resolved_endpoint(url_base))
        folder.mkdir(parents=True, exist_ok=True)
        _write_json_atomic(folder / MANIFEST_FILE, _manifest_to_json(files))
        return files
    if url_base:
        base = url_base if url_base.endswith("/") else url_base + "/"
        return tuple(DataFile(f.path, base + quote(f.path), f.size, f.sha256, f.git_sha1) for f in dataset.files)
    return dataset.files


# -- downloading -------------------------------------------------------------------------------


def _reason(error: BaseException) -> str:
    if isinstance(error, URLError) and not isinstance(error, HTTPError):
        return str(error.reason)
    return str(error) or type(error).__name__


def _download(expected: DataFile, part: Path) -> None:
    """Bring `expected.url` into `part`, resuming what is there; raises `FetchError` when the
    server refuses it or the connection keeps breaking (the partial file is kept for a resume)."""
    last_problem, unreachable = "", False
    for _attempt in range(ATTEMPTS):
        unreachable = False  # describes the last attempt only
        have = part.stat().st_size if part.exists() else 0
        if part.exists() and expected.size is not None and have >= expected.size:
            if have == expected.size:
                return
            part.unlink()  # longer than the file can be: start again
            have = 0
        headers = {"User-Agent": _USER_AGENT}
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            with urlopen(Request(expected.url, headers=headers), timeout=TIMEOUT_S) as response:
                resumed = have > 0 and response.status == 206
                with part.open("ab" if resumed else "wb") as out:
                    for block in iter(lambda: response.read(_CHUNK), b""):
                        out.write(block)
        except HTTPError as error:
            if error.code == 416 and have:  # the range is past the end: the .part is stale
                part.unlink()
                last_problem = "the partial download did not fit the file"
                continue
            raise FetchError(f"{expected.path}: HTTP {error.code} from {expected.url}") from None
        except (URLError, OSError, http.client.HTTPException) as error:
            last_problem = _reason(error)
            unreachable = isinstance(error, URLError) and not part.exists()
            continue
        got = part.stat().st_size
        if expected.size is None or got == expected.size:
            return
        last_problem = f"got {got} of {expected.size} bytes"
    if unreachable:
        raise FetchError(
            f"{expected.path}: cannot reach {expected.url} ({last_problem}): check the network, "
            "or fetch from a mirror with --url-base"
        )
    got = part.stat().st_size if part.exists() else 0
    raise FetchError(
        f"{expected.path}: download from {expected.url} was interrupted ({last_problem}; {got} bytes kept) "
        f"after {ATTEMPTS} attempts: run the same command again to resume"
    )


def _fetch_one(folder: Path, expected: DataFile) -> None:
    target = folder / expected.path
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    _download(expected, part)
    size = part.stat().st_size
    if expected.size is not None and size != expected.size:
        part.unlink()
        raise FetchError(
            f"{expected.path}: size mismatch ({size} bytes, expected {expected.size}); "
            "the download was deleted: run the command again"
        )
    found = file_digest(part, expected)
    if found != expected.checksum:
        part.unlink()
        raise FetchError(
            f"{expected.path}: checksum mismatch (got {found}, expected {expected.checksum}); the "
            f"download from {expected.url} was deleted: run the command again, and if it "
            "persists the published file has changed"
        )
    os.replace(part, target)


@dataclass
class FetchSummary:
    """What a fetch did: the dataset folder, files downloaded and files already verified."""

    name: str
    folder: Path
    downloaded: list[str] = field(default_factory=list)
    already: int = 0
    total_bytes: int = 0


def fetch(
    name: str,
    cache: str | Path | None = None,
    url_base: str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> FetchSummary:
    """Download dataset `name` into its cache folder, verifying every file (see the module
    docstring); returns what was done. Raises `FetchError` on a failed or bad download."""
    dataset = get_dataset(name)
    folder = dataset_dir(dataset.name, cache)
    folder.mkdir(parents=True, exist_ok=True)
    files = _files_to_fetch(dataset, folder, url_base)
    stamps_path = folder / VERIFIED_FILE
    stamps = _read_json(stamps_path)
    stamps = stamps if isinstance(stamps, dict) else {}
    summary = FetchSummary(dataset.name, folder, total_bytes=sum(f.size or 0 for f in files))
    for index, expected in enumerate(files, start=1):
        target = folder / expected.path
        if _is_verified(folder, expected, stamps):
            summary.already += 1
            continue
        # a file put there by hand (or by an older fetch) counts when it checks out
        if (
            target.is_file()
            and (expected.size is None or target.stat().st_size == expected.size)
            and file_digest(target, expected) == expected.checksum
        ):
            summary.already += 1
        else:
            if progress is not None:
                progress(f"[{index}/{len(files)}] {expected.path} ({format_size(expected.size)})")
            _fetch_one(folder, expected)
            summary.downloaded.append(expected.path)
        stamps[expected.path] = _stamp(target, expected)
        _write_json_atomic(stamps_path, stamps)
    return summary


# -- state -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheState:
    """How much of a dataset the cache holds: `verified` of `total` files (total None: a Hub
    dataset never fetched)."""

    folder: Path
    verified: int
    total: int | None
    size: int | None

    @property
    def complete(self) -> bool:
        return self.total is not None and self.verified == self.total

    @property
    def label(self) -> str:
        if self.complete:
            return "cached"
        if self.verified:
            return f"partial ({self.verified}/{self.total} files)"
        return "not cached"


def cache_state(name: str, cache: str | Path | None = None) -> CacheState:
    """Which files of `name` the cache holds verified (from the records a fetch leaves; no file
    is read, so this is cheap)."""
    dataset = get_dataset(name)
    folder = dataset_dir(dataset.name, cache)
    files = known_files(dataset, folder)
    if files is None:
        return CacheState(folder, 0, None, None)
    stamps = _read_json(folder / VERIFIED_FILE)
    stamps = stamps if isinstance(stamps, dict) else {}
    verified = sum(1 for f in files if _is_verified(folder, f, stamps))
    return CacheState(folder, verified, len(files), sum(f.size or 0 for f in files))


def resolve_root(
    configured: str | Path | None, name: str, *, key: str = "env.root", cache: str | Path | None = None
) -> Path:
    """Where an environment should read dataset `name`.

    `configured` set (a path): that folder, which must exist: a mistyped root is an error, never
    silently replaced by the cache. `configured` None or blank: the cache folder of `name`, which
    a fetch must have completed. Either failure is a `GeoevalError` that names `key` and prints
    the `geoeval data fetch <name>` command."""
    dataset = get_dataset(name)
    if configured is not None and str(configured).strip():
        candidate = Path(configured).expanduser()
        if candidate.is_dir():
            return candidate
        raise GeoevalError(
            f"{key}: {candidate} is not a directory. Get the data with `{dataset.fetch_command()}` and leave "
            f"{key} unset (null) to read it from the cache, or point {key} at a folder holding it (a "
            f"relative {key} is read from the working directory, {Path.cwd()})"
        )
    state = cache_state(dataset.name, cache)
    if state.complete:
        return state.folder
    found = f"holds {state.verified} of {state.total} files" if state.verified else "is empty"
    raise GeoevalError(
        f"{key} is not set and the data cache {state.folder} {found}: fetch the data with "
        f"`{dataset.fetch_command()}` (then run again); on a machine without network, copy a fetched "
        f"{dataset.name}/ folder from another machine's cache to {state.folder} (`{dataset.fetch_command()}` "
        f"then verifies it offline), or set {key} to a folder holding the files"
    )


def format_size(size: int | None) -> str:
    """Bytes for people: 870 B, 1.1 MB."""
    if size is None:
        return "?"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"
