"""Secrets scrubbed by value from what models, tools and providers write (answers, raw outputs,
errors, traces, logs): a job remembers its config's and its environment's secret values
(`remember_secrets`) and everything it stores passes through `scrub_known`. Which values are
secrets, and how text is scrubbed of them, is `secrets.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
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
