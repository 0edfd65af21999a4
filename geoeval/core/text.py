"""Text hygiene at the boundaries: text from a model or a tool may hold anything.

A reply can carry lone UTF-16 surrogates (valid JSON `"\\ud800"`), NUL and other control
characters, bidi marks, emoji or megabytes of text. Python `str` holds all of them, but UTF-8
encoders (Arrow, DuckDB, MLflow, JSON with `ensure_ascii=False`, sockets) refuse surrogates and
some stores truncate at NUL. `clean_text` is applied wherever such text leaves geoeval's memory
(warehouse, logs, tool arguments, MCP replies), so that it is stored and scored, never a crash.
Printable text, including emoji, CJK and right-to-left marks, passes through unchanged.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

#: U+FFFD stands in for what cannot be encoded (the Unicode convention for a bad code unit).
REPLACEMENT = "\ufffd"

# Lone surrogates, NUL, and the C0/C1 controls other than tab, newline and carriage return.
_BAD = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def clean_text(text: str, *, max_chars: int | None = None) -> str:
    """`text` safe for any UTF-8 store: every lone surrogate and control character other than
    tab/newline/CR becomes U+FFFD. With `max_chars`, longer text is cut and marked with how much
    was dropped (so a truncation is never silent)."""
    if not isinstance(text, str):
        text = str(text)
    if _BAD.search(text):
        text = _BAD.sub(REPLACEMENT, text)
    if max_chars is not None and len(text) > max_chars:
        dropped = len(text) - max_chars
        text = f"{text[:max_chars]}…[{dropped} more characters cut]"
    return text


def is_clean(text: str) -> bool:
    """True when `clean_text` would leave `text` unchanged (no truncation considered)."""
    return not _BAD.search(text)


#: Nesting deeper than this is cut: pydantic and Inspect's own models fail past ~255 levels, and
#: recursion over hostile input must stay bounded.
MAX_DEPTH = 100
TOO_DEEP = "[nested too deep: cut]"


def clean_value(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`clean_text` applied to every string inside nested dicts, lists and tuples (keys too);
    anything nested deeper than `max_depth` is replaced by `TOO_DEEP`."""
    return _clean(value, max_depth)


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (dict, list, tuple)) and depth <= 0:
        return TOO_DEEP
    if isinstance(value, dict):
        return {_clean(k, depth - 1): _clean(v, depth - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean(v, depth - 1) for v in value)
    return value


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply lists, tuples and dicts nest in `value` (a scalar is 0), counted without
    recursion and stopped once past `limit` (so a hostile value costs no more than that): a
    result above `limit` means "too deep"."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, (list, tuple)) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def clean_fields(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`clean_text` applied to every string field of `value` and of what it holds, at any depth:
    pydantic models (declared and extra fields), dataclasses, and the lists and dicts in them are cleaned in
    place, so that objects others already hold (e.g. Inspect's model event holding a reply) see the
    clean values; returns the cleaned value (a new one for a string or a tuple). Nesting deeper than
    `max_depth` is replaced by `TOO_DEEP`. A field no one thought of (a tool call's id, a reply's
    id, a provider's metadata) is cleaned as well as the text is."""
    return _clean_fields(value, max_depth)


def _clean_fields(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    fields = getattr(type(value), "model_fields", None)
    if depth <= 0 and (fields is not None or dataclasses.is_dataclass(value) or isinstance(value, (dict, list, tuple))):
        return TOO_DEEP
    if fields is not None and hasattr(value, "__pydantic_fields_set__"):  # a pydantic model instance
        extra = getattr(value, "__pydantic_extra__", None) or {}
        for name in [*fields, *extra]:
            old = getattr(value, name, None)
            new = _clean_fields(old, depth - 1)
            if new is not old:  # set as stored: no validator or frozen model stands in the way
                (value.__dict__ if name in fields else extra)[name] = new
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # e.g. Inspect's ToolCall
        for field in dataclasses.fields(value):
            old = getattr(value, field.name, None)
            new = _clean_fields(old, depth - 1)
            if new is not old:
                object.__setattr__(value, field.name, new)  # a frozen dataclass too
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            new = _clean_fields(item, depth - 1)
            if new is not item:
                value[i] = new
        return value
    if isinstance(value, tuple):
        cleaned = tuple(_clean_fields(item, depth - 1) for item in value)
        return value if all(a is b for a, b in zip(cleaned, value)) else cleaned
    if isinstance(value, dict):
        items = [(_clean_fields(k, depth - 1), k, _clean_fields(v, depth - 1), v) for k, v in value.items()]
        if any(k2 is not k or v2 is not v for k2, k, v2, v in items):
            value.clear()
            value.update((k2, v2) for k2, _, v2, _ in items)
        return value
    return value
