"""Argument normalisation: the canonical form of a call's arguments, so that formatting
differences do not matter for the exact stage.

Key order, whitespace, Unicode width (NFKC), number formatting (`"29.90"` = 29.9, 6 decimals),
`null`/empty values (= not given), JSON lists passed as strings, one-element lists
(`["驾车"]` = `"驾车"`) and the authors' parameter aliases (`adiu` = `uid`, `ARGUMENT_ALIASES`).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from geoeval.suites.mapsatisfy.replay.catalogue import ARGUMENT_ALIASES

NUMBER_DECIMALS = 6  # 1e-6 degree is about 0.1 m: finer digits are formatting, not location
_DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")  # no exponents: ids like "12e4" stay text
_SPACES = re.compile(r"\s+")
_SEPARATOR_SPACES = re.compile(r"\s*([,;])\s*")
_EMPTY: tuple[Any, ...] = (None, "", [], {})


def _normalize_number(x: float) -> float:
    if isinstance(x, (bool, int)):
        return x
    if not math.isfinite(x):
        return x
    r = round(float(x), NUMBER_DECIMALS)
    if r == int(r) and abs(r) < 2**53:
        return int(r)
    return r + 0.0  # -0.0 -> 0.0


def _normalize_string(s: str) -> Any:
    text = unicodedata.normalize("NFKC", s)
    text = _SPACES.sub(" ", text).strip()
    text = _SEPARATOR_SPACES.sub(r"\1", text)
    lowered = text.lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if _DECIMAL.match(text):
        return _normalize_number(float(text)) if ("." in text) else int(text)
    if text[:1] in "[{":
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            return text
        return normalize_value(decoded)
    return text


def normalize_value(value: Any) -> Any:
    """A JSON value in canonical form (see the module docstring). Empty values become None."""
    if isinstance(value, str):
        value = _normalize_string(value)
        if not isinstance(value, str):
            return value
        return value if value else None
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return _normalize_number(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            nv = normalize_value(v)
            if nv not in _EMPTY:
                out[str(k)] = nv
        return out or None
    if isinstance(value, (list, tuple)):
        items = [normalize_value(v) for v in value]
        items = [v for v in items if v not in _EMPTY]
        if not items:
            return None
        if len(items) == 1 and not isinstance(items[0], (dict, list)):
            return items[0]  # the demo passes mode both as "驾车" and ["驾车"]
        return items
    return str(value)


def normalize_arguments(tool: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The canonical arguments of a call: aliases resolved, values normalised, empty values
    (not given) dropped. Keys are sorted by `canonical_text`, not here."""
    aliases = ARGUMENT_ALIASES.get(tool, {})
    out: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        name = aliases.get(str(key), str(key))
        nv = normalize_value(value)
        if nv in _EMPTY:
            continue
        if name in out and name != key:  # the canonical name was given too: it wins
            continue
        out[name] = nv
    return out


def canonical_text(arguments: Mapping[str, Any]) -> str:
    """Normalised arguments as compact JSON with sorted keys: the exact-match key."""
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def argument_key(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """The exact-match key of a call: its normalised arguments as canonical text."""
    return canonical_text(normalize_arguments(tool, arguments))
