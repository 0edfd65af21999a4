"""The trajectory journal: every model call a sample pays for is written down the moment its
reply arrives, before Inspect sees it, so that a killed run loses no answered call.

A sample reaches the warehouse (with its trajectory, `run/replay.py`) only once Inspect has
scored and logged it and the writer's next group commit has run: a few tenths of a second after
its last answer, longer on a busy machine. A `kill -9` inside that gap lost every answered sample
of it (0 of 6 stored; all paid again by the rerun). Now the recorder (`replay.record_and_replay`)
appends each new call to this process's journal file, `<work_dir>/journal/<generation hash>/`
`<pid>-<ns>.jsonl`, one JSON line per call, flushed to the operating system before the reply is
returned: a killed process (`kill -9`, OOM) loses only the requests still in flight. (Not fsynced:
a power cut may lose the last lines, as it may lose the warehouse's last commit.) The rerun of the
same generation identity reads the journals of the samples it still has to run and replays their
calls as a stored trajectory, without a request; they are then stored with the sample, priced as
spent once (the killed invocation never recorded them). A journal is deleted once every sample of
the job that wrote or read it is in the warehouse. Each line carries the call's integrity digest
(`warehouse.rows.call_integrity`), and its text is scrubbed of the job's secrets as the
warehouse's is. A Ray shard's calls are not journaled (its worker may be on another node): a
killed Ray run loses what its outbox had not sent (`runner.ResultOutbox`, 0.1 s). Calls that cost
nothing (geoeval's offline agents, Inspect's mock model: `replay.FREE_PROVIDERS`) are not journaled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from geoeval.core.config.scrub import scrub_known
from geoeval.core.text import clean_value
from geoeval.core.warehouse.rows import INTEGRITY, call_integrity

#: the mark of a call replayed from a journal: stored and priced as the call it was (it was paid
#: for once, by the invocation that was killed), though no request is sent now
JOURNALED = "journaled"


def journal_dir(work_dir: str | Path, generation_hash: str) -> Path:
    return Path(work_dir) / "journal" / generation_hash


class Journal:
    """This process's journal file for one generation identity, opened on the first call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{os.getpid()}-{time.time_ns()}.jsonl"
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        self.keys: set[tuple[str, int]] = set()  # the samples it holds calls of

    def write(self, key: tuple[str, int], call: dict[str, Any]) -> None:
        """Append one answered call of the sample `key`; raises OSError (a full disk) to the caller."""
        call = scrub_known(clean_value({k: v for k, v in call.items() if k != INTEGRITY}))
        line = json.dumps(
            {"sample_id": key[0], "epoch": key[1], "call": {**call, INTEGRITY: call_integrity(call)}},
            ensure_ascii=True,
            separators=(",", ":"),
        )
        with self._lock:
            if self._file is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="ascii")  # noqa: SIM115 - open for the job
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # live: no other job deletes it
            self._file.write(line + "\n")
            self._file.flush()  # in the OS's hands: a killed process loses nothing written
            self.keys.add(key)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _Current:
    journal: Journal | None = None


_CURRENT = _Current()


@contextlib.contextmanager
def journaling(journal: Journal | None) -> Iterator[None]:
    """Within the block, the recorder of this process journals each new call to `journal`."""
    _CURRENT.journal = journal
    try:
        yield
    finally:
        _CURRENT.journal = None
        if journal is not None:
            journal.close()


def current() -> Journal | None:
    return _CURRENT.journal


def read_journals(folder: Path, keys: set[tuple[str, int]] | None = None) -> dict[tuple[str, int], list[dict]]:
    """The journaled calls of the samples in `keys` (all when None), oldest file first. A line cut
    short (the process was killed while writing it) is skipped; a call that fails its integrity
    check is kept with its digest, for the replay's check to refuse its sample."""
    found: dict[tuple[str, int], list[dict]] = {}
    for _, entries in _files(folder):
        for key, call in entries:
            if keys is None or key in keys:
                found.setdefault(key, []).append({**call, JOURNALED: True})
    return found


def _files(folder: Path) -> Iterator[tuple[Path, list[tuple[tuple[str, int], dict]]]]:
    """Each journal file in `folder`, oldest first, with its readable (sample key, call) lines."""
    for path in sorted(folder.glob("*.jsonl"), key=_age) if folder.is_dir() else []:
        yield path, _entries(path)


def _entries(path: Path) -> list[tuple[tuple[str, int], dict]]:
    try:
        lines = path.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
            key, call = (str(entry["sample_id"]), int(entry["epoch"])), entry["call"]
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line
        if isinstance(call, dict):
            entries.append((key, call))
    return entries


def journal_problem(calls: list[dict[str, Any]]) -> str | None:
    """Why journaled `calls` fail their integrity check (each line is sealed on its own), or None."""
    for call in calls:
        plain = {k: v for k, v in call.items() if k not in (INTEGRITY, JOURNALED)}
        if call.get(INTEGRITY) != call_integrity(plain):
            return "a journaled call fails its integrity check (the journal was edited since it was written)"
    return None


def settle(folder: Path, stored: Callable[[], set[tuple[str, int]]], own: Journal | None = None) -> None:
    """Delete the journal files of `folder` whose every sample is in `stored()` (the samples
    whose trajectories the warehouse holds now; asked only when there is a file); a file another
    job still writes (it holds its lock) is left alone, and so is one with a sample not stored yet
    (a later run replays it). `own`: this job's journal, whose samples are known without reading it."""
    if not folder.is_dir():
        return
    held = stored()
    for path in sorted(folder.glob("*.jsonl")):
        keys = own.keys if own is not None and path == own.path else {key for key, _ in _entries(path)}
        if not keys <= held:
            continue
        try:
            with open(path, "a", encoding="ascii") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
        except OSError:  # written by a live job, or gone already
            continue
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty
        folder.parent.rmdir()


def _age(path: Path) -> tuple[int, str]:
    stem = path.stem.split("-", 1)
    return (int(stem[1]) if len(stem) == 2 and stem[1].isdigit() else 0, path.name)
