"""The text and values of a trace: Inspect content as clean, bounded text (`_text`), any value as
clean, bounded JSON (`_clip`), timestamps in nanoseconds, and a sample's prompt and completion.
A hostile model can send any text or JSON: everything a span holds goes through here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from geoeval.core.config.scrub import scrub_known
from geoeval.core.config.secrets import redact_urls
from geoeval.core.text import clean_text

FIELD_CHARS = 20_000  # per text field of a span
MAX_LIST_ITEMS = 200  # of a tool argument or result list


def _short(exc: BaseException) -> str:
    """An error in one line; a URL's credentials (MLflow names the tracking URI it called) redacted."""

    return clean_text(redact_urls(f"{type(exc).__name__}: {exc}"), max_chars=300)


def _text(value: Any, max_chars: int = FIELD_CHARS) -> str:
    """Any Inspect content (str, content list, message) as clean, bounded text, with the job's
    secrets scrubbed by value (a model or tool can echo a key)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return scrub_known(clean_text(value, max_chars=max_chars))
    if isinstance(value, list):
        return clean_text("\n".join(_text(v, max_chars) for v in value), max_chars=max_chars)
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return scrub_known(clean_text(text, max_chars=max_chars))
    return scrub_known(clean_text(str(value), max_chars=max_chars))


def _clip(value: Any, depth: int = 0) -> Any:
    """JSON-safe, clean and bounded: strings cut at FIELD_CHARS, lists at MAX_LIST_ITEMS, deep
    nesting flattened to text (a hostile model can send any JSON as tool arguments)."""
    if isinstance(value, str):
        return scrub_known(clean_text(value, max_chars=FIELD_CHARS))
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 8:
        return scrub_known(clean_text(str(value), max_chars=FIELD_CHARS))
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {clean_text(str(k), max_chars=200): _clip(v, depth + 1) for k, v in items[:MAX_LIST_ITEMS]}
        if len(items) > MAX_LIST_ITEMS:
            out["…"] = f"{len(items) - MAX_LIST_ITEMS} more keys cut"
        return out
    if isinstance(value, (list, tuple)):
        out_list = [_clip(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
        if len(value) > MAX_LIST_ITEMS:
            out_list.append(f"…[{len(value) - MAX_LIST_ITEMS} more items cut]")
        return out_list
    if hasattr(value, "model_dump"):
        return _clip(value.model_dump(mode="json", exclude_none=True), depth + 1)
    return scrub_known(clean_text(str(value), max_chars=FIELD_CHARS))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _ns(when: Any) -> int | None:
    if when is None:
        return None
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when)
        except ValueError:
            return None
    if isinstance(when, datetime):
        return int(when.timestamp() * 1e9)
    return None


def _prompt(sample: Any) -> str:
    """The first user message (the task as posed), else the whole input."""
    value = sample.input
    if isinstance(value, str):
        return _text(value)
    for message in value or []:
        if getattr(message, "role", None) == "user":
            return _text(getattr(message, "text", None) or getattr(message, "content", ""))
    return _text(value)


def _completion(sample: Any) -> str:
    output = getattr(sample, "output", None)
    return _text(getattr(output, "completion", "") if output is not None else "")
