"""The name key of MapTab's robust answer protocol (README "Answer protocol"): what an answer says
is read, how it is typeset is not. Text is normalised by the core (`core.reading.normalise`:
NFKC, emphasis, numbers in words); this is the identity of a station name.

* `name_key`: `plain`, case-folded, apostrophes and full stops dropped, spacing collapsed. Two
  names are the same station only when their keys are equal.
"""

from __future__ import annotations

import re

from geoeval.api import plain

_DROPPED = re.compile(r"[.'\u2018\u2019\u00b4`]")
_SPACES = re.compile(r"\s+")


def name_key(name: str) -> str:
    """The key two names of one station share: case, spacing, emphasis, apostrophes, full stops
    and surrounding punctuation do not count ("**St. James's**" and "st james s" differ only in
    the "s"; "Kensett  Square" and "kensett square" are one key)."""
    text = _DROPPED.sub("", plain(name).replace("_", "")).casefold()
    return _SPACES.sub(" ", text).strip(' \t,;:!?"()[]{}<>')
