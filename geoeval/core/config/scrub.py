"""Secrets scrubbed by value from what models, tools and providers write (answers, raw outputs,
errors, traces, logs): a job remembers its config's and its environment's secret values
(`remember_secrets`) and everything it stores passes through `scrub_known`; files already
written (Hydra's outputs, Inspect's `.eval` logs) are rewritten in place (`scrub_file`,
`scrub_tree`, `scrub_zip`). Which values are secrets, and how text is scrubbed of them, is
`secrets.py`'s.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from geoeval.core.config.secrets import redact_string, scrub_text, worth_scrubbing

#: The secret values of the job running in this process (its config's and the environment's):
#: text a model, a tool or a provider's error writes can echo a key, so results, traces and logs
#: are scrubbed by value, not only by field name.
_KNOWN_SECRETS: set[str] = set()


def remember_secrets(values: Iterable[str]) -> None:
    """Add values to the secrets `scrub_known` removes (a job calls it with its config's and the
    environment's secrets before any sample runs)."""
    _KNOWN_SECRETS.update(v for v in values if isinstance(v, str) and worth_scrubbing(v))


def known_secrets() -> set[str]:
    return set(_KNOWN_SECRETS)


def scrub_known(value: Any) -> Any:
    """`value` (text, or nested dicts and lists of it) with every remembered secret, URL
    credential and key-shaped substring replaced by `***`; other values unchanged."""
    if isinstance(value, str):
        if not value:
            return value
        return scrub_text(value, _KNOWN_SECRETS) if _KNOWN_SECRETS else redact_string(value)
    if isinstance(value, dict):
        return {k: scrub_known(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_known(v) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub_known(v) for v in value)
    return value


def scrub_file(path: str | Path, secrets: Iterable[str]) -> bool:
    """Rewrite the text file at `path` in place with `scrub_text` when that changes it; returns
    whether it did. Bytes that are not UTF-8 pass through unchanged (surrogate escapes), and the
    new content replaces the old atomically (a crash leaves the old file or the new one)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    scrubbed = scrub_text(text, secrets)
    if scrubbed == text:
        return False
    tmp = path.with_name(f".{path.name}.scrub-{os.getpid()}")
    tmp.write_text(scrubbed, encoding="utf-8", errors="surrogateescape")
    os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
    return True


#: Files `scrub_tree` rewrites: configs and text logs (never images or binary stores).
TEXT_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".txt", ".log")


def scrub_tree(root: str | Path, secrets: Iterable[str], *, suffixes: tuple[str, ...] = TEXT_SUFFIXES) -> list[Path]:
    """`scrub_file` on every file under `root` with one of `suffixes` (e.g. a Hydra output
    folder with its `.hydra/config.yaml`, `hydra.yaml` and `overrides.yaml`); returns the files
    rewritten."""
    secrets = list(secrets)
    root = Path(root)
    if not root.exists():
        return []
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in suffixes)
    return [p for p in files if scrub_file(p, secrets)]


def scrub_zip(path: str | Path, secrets: Iterable[str]) -> bool:
    """Rewrite a zip archive (an Inspect `.eval` log is one: JSON members) with `scrub_text`
    applied to every member that is UTF-8 text, when that changes any; returns whether it did.
    Inspect writes the model's base URL and args into its logs, so a credential given in the
    config is blanked there after the run. Atomic, like `scrub_file`.

    One member at a time: a first pass only looks for anything to change (the usual case is
    nothing), a second, when there is, writes the new archive. Holding every member and its
    scrubbed copy at once took ~4x the log's uncompressed size at the end of a run (a 10,000-sample
    log: most of the driver's peak memory)."""

    path = Path(path)
    secrets = list(secrets)

    def scrubbed(data: bytes) -> bytes | None:
        """The member scrubbed, or None when it is not text or nothing in it changes."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        clean = scrub_text(text, secrets)
        return None if clean == text else clean.encode("utf-8")

    with zipfile.ZipFile(path) as archive:
        if not any(scrubbed(archive.read(info)) is not None for info in archive.infolist()):
            return False
        tmp = path.with_name(f".{path.name}.scrub-{os.getpid()}")
        with zipfile.ZipFile(tmp, "w") as out:
            for info in archive.infolist():
                data = archive.read(info)
                new = scrubbed(data)
                out.writestr(info, data if new is None else new, compress_type=info.compress_type)
    os.replace(tmp, path)
    return True
