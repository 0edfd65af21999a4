"""The one error type for mistakes a user can cause.

A `GeoevalError` means "something you gave geoeval (a config, an input, a file) is wrong"; its
message says what to change. Anything else that escapes geoeval is a bug and should surface as one,
so the CLI prints a `GeoevalError` as one line and lets every other exception show its traceback.
"""

from __future__ import annotations

import warnings


class GeoevalError(Exception):
    """A mistake the user can fix (config, inputs, files). The message says what to change."""


class JobExit(SystemExit):
    """The exit of a job stopped by a `GeoevalError` (already printed): `reason` is what a sweep's
    summary says about the job."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(code)
        self.reason = reason


class GeoevalDeprecationWarning(DeprecationWarning):
    """A name a plugin imports that moved (it works for one release; the message names the new
    import). Shown by default, once per place: Python shows a plain `DeprecationWarning` only
    when `__main__` triggers it, and a plugin's import is never `__main__`."""


warnings.filterwarnings("default", category=GeoevalDeprecationWarning)
