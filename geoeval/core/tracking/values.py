"""MLflow names and values: a nested config as params (`flatten`), any name as a valid key
(`mlflow_key`), param and tag values within MLflow's limits, a job's final status, and the run
page's description.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from geoeval.core.stop import stop_requested
from geoeval.core.text import clean_text

# MLflow's limits (mlflow.utils.validation): 100 params or tags per batch, 1000 metrics per
# batch, 6000 characters per param value, 8000 per tag value, 250 per key.
PARAMS_PER_BATCH = 100
METRICS_PER_BATCH = 1000
MAX_PARAM_CHARS = 6000
MAX_TAG_CHARS = 8000
MAX_KEY_CHARS = 250
# room for clean_text's truncation marker ("…[123456 more characters cut]")
_MARKER_ROOM = 40


def run_description(metrics: Mapping[str, float], headline: Iterable[str], note: str = "") -> str:
    """The run page's description (MLflow's `mlflow.note.content`): the headline metrics with
    their 95% intervals and n, where a reader looks first, then the provenance note if any."""
    parts = []
    for name in headline:
        value = metrics.get(name)
        if value is None or value != value:  # absent or NaN
            continue
        low, high, n = metrics.get(f"{name}/ci95_low"), metrics.get(f"{name}/ci95_high"), metrics.get(f"{name}/n")
        interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        parts.append(f"**{name}** {value:.3f}{interval}" + (f" (n={int(n)})" if n else ""))
    text = " · ".join(parts)
    return "\n\n".join(p for p in (text, f"> {note}" if note else "") if p)


def flatten(d: Any, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into MLflow params (`suite.resolution` -> "0.5")."""
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(d, (list, tuple)):
        out[prefix[:-1]] = ",".join(str(x) for x in d)
    else:
        out[prefix[:-1]] = "" if d is None else str(d)
    return out


_BAD_KEY_CHARS = re.compile(r"[^/\w.\- :]")


def mlflow_key(name: str) -> str:
    """`name` as a valid MLflow param/metric/tag key: characters MLflow refuses become `_`, and a
    key that would resolve to another path (`a//b`, `./a`) has its slashes replaced."""
    key = _BAD_KEY_CHARS.sub("_", clean_text(str(name))) or "_"
    if posixpath.normpath(key) != key or key.startswith("/"):
        key = key.replace("/", "_")
    if len(key) > MAX_KEY_CHARS:
        key = key[: MAX_KEY_CHARS - 9] + "_" + hashlib.sha256(str(name).encode("utf-8", "replace")).hexdigest()[:8]
    return key


def param_value(value: Any) -> str:
    """A param value within MLflow's limit; a longer one is cut with a visible marker."""
    return clean_text("" if value is None else str(value), max_chars=MAX_PARAM_CHARS - _MARKER_ROOM)


def tag_value(value: Any) -> str:
    return clean_text("" if value is None else str(value), max_chars=MAX_TAG_CHARS - _MARKER_ROOM)


def status_for_exception(exc: BaseException | None) -> str:
    """The MLflow status a job ends with: KILLED for an interrupt (Ctrl-C, a signal turned into
    KeyboardInterrupt or SystemExit), FAILED for any other exception, FINISHED for none."""

    if exc is None:
        return "FINISHED"
    if isinstance(exc, (KeyboardInterrupt, SystemExit)) or stop_requested():
        return "KILLED"  # also an interrupt a library turned into another error (DuckDB's "Query interrupted")
    return "FAILED"
