"""Tool results and argument checking shared by every LifePlanner tool: `ToolResult` and its
failure classes, the limits, the `_tool` guard against hostile input and the argument checkers."""

from __future__ import annotations

import inspect
import json
import math
import re
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geoeval.api import clean_text, clean_value, nesting_depth

FAILURE_CLASSES = ("ok", "parameter_error", "truncated", "empty")
MODES = ("time", "distance")
TOOL_LOG_KEY = "lifeplanner_tool_calls"

# How many rows a list tool returns before it truncates (and says so).
STANDARD_LIMITS = {"place_search": 20, "nearby_search": 20, "search_notes": 20}
DATA_ENGINE_LIMITS = {"place_search": 50, "nearby_search": 50, "search_notes": 20}
MAX_RADIUS_M = 5000.0
MAX_LIST_ITEMS = 20
MAX_TEXT = 200
MAX_COMMENTS = 10
MAX_STOPS = 8
MAX_PERMUTATIONS = 5040
MAX_SAMPLES = 50
MAX_AVOID = 200
# Inspect's own bound on tool-call arguments (MAX_TOOL_CALL_ARGUMENTS_DEPTH); no parameter needs more than 2.
MAX_ARGUMENT_DEPTH = 100
MAX_CENTER_CHARS = 2000  # a route object as JSON text is < 200 characters
MAX_RAW_LIST_ITEMS = 1000  # keyword lists before de-duplication
MAX_LOGGED_TEXT = 1000  # characters of one argument string kept in the tool log


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returns: the agent-visible payload and the call's failure class."""

    payload: Any
    failure_class: str

    def text(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)

    @property
    def error(self) -> str | None:
        if self.failure_class == "parameter_error" and isinstance(self.payload, dict):
            return self.payload.get("error")
        return None


class ToolParameterError(Exception):
    """Raised inside a tool for a call that cannot run as given; becomes a `parameter_error`."""


def _error(message: str) -> ToolResult:
    return ToolResult({"error": message}, "parameter_error")


def _tool(fn: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """Check and clean the agent's arguments (see the module docstring), then run `fn`; a
    `ToolParameterError` becomes a parameter_error result; other exceptions are bugs."""
    signature = inspect.signature(fn)

    def wrapper(*args: Any, **kwargs: Any) -> ToolResult:
        bound = signature.bind(*args, **kwargs)  # a TypeError here is the caller's bug, not the agent's
        try:
            for name, value in list(bound.arguments.items())[1:]:  # [0] is the city
                if nesting_depth(value, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
                    raise ToolParameterError(f"{name} is nested more than {MAX_ARGUMENT_DEPTH} levels deep.")
                bound.arguments[name] = clean_value(value)
            return fn(*bound.args, **bound.kwargs)
        except ToolParameterError as exc:
            return _error(str(exc))

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


# --------------------------------------------------------------------------------------------
# Argument checking (what an agent may send: anything JSON can carry)
# --------------------------------------------------------------------------------------------


# Characters that end a line (str.splitlines) other than those clean_text already replaces.
_LINE_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")
_BRIEF = reprlib.Repr()
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlevel = 40, 40, 2


def _quote(text: str, limit: int = 40) -> str:
    """`text` as quoted in an error message: cleaned, at most `limit` characters, on one line."""
    return _LINE_BREAKS.sub(" ", clean_text(text[:limit]))


def _brief(value: Any) -> str:
    """A short one-line repr of any value (strings, lists, dicts of any size or depth)."""
    return _LINE_BREAKS.sub(" ", clean_text(_BRIEF.repr(value)))


def _text(name: str, value: Any, *, required: bool = False) -> str:
    if value is None:
        if required:
            raise ToolParameterError(f"{name} is required.")
        return ""
    if not isinstance(value, str):
        raise ToolParameterError(f"{name} must be a string, got {type(value).__name__}.")
    value = value.strip()
    if required and not value:
        raise ToolParameterError(f"{name} is required and must not be empty.")
    if len(value) > MAX_TEXT:
        raise ToolParameterError(f"{name} is too long ({len(value)} characters, at most {MAX_TEXT}).")
    return value


def _number(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ToolParameterError(f"{name} must be a number, got a boolean.")
    if isinstance(value, str):  # models often quote numbers; accept what parses
        try:
            value = float(value.strip())
        except ValueError:
            raise ToolParameterError(f"{name} must be a number, got '{_quote(value)}'.") from None
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ToolParameterError(f"{name} must be a finite number, got {_brief(value)}.")
    value = float(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ToolParameterError(f"{name} must be between {lo:g} and {hi:g}, got {value:g}.")
    return value


def _text_list(name: str, value: Any) -> list[str]:
    """A list of keywords; a comma-separated string is accepted too (Table 8 documents it)."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ToolParameterError(f"{name} must be a list of strings, got {type(value).__name__}.")
    if len(items) > MAX_RAW_LIST_ITEMS:
        raise ToolParameterError(f"{name}: too many keywords ({len(items)}, at most {MAX_LIST_ITEMS}).")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ToolParameterError(f"{name} must contain only strings, got {type(item).__name__}.")
        item = item.strip()
        if len(item) > 100:
            raise ToolParameterError(f"{name}: keyword too long ({len(item)} characters, at most 100).")
        if item and item.lower() not in out:
            out.append(item.lower())
            if len(out) > MAX_LIST_ITEMS:  # stop here: the membership test above is linear in len(out)
                raise ToolParameterError(f"{name}: too many keywords (more than {MAX_LIST_ITEMS}).")
    return out


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        allowed = ", ".join(f"'{c}'" for c in choices)
        raise ToolParameterError(f"{name} must be one of {allowed}, got {_brief(value)}.")
    return value.strip().lower()


def _range(lo_name: str, lo: float | None, hi_name: str, hi: float | None) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise ToolParameterError(f"{lo_name} ({lo:g}) is greater than {hi_name} ({hi:g}).")
