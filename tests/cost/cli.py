"""`geoeval ...` as a user runs it, in a process of its own, for the tests of `tests/cost/`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def run_geoeval(
    cwd: Path, args: Sequence[str], env: Mapping[str, str], *, patch: str = ""
) -> subprocess.CompletedProcess:
    """`geoeval args` in `cwd` (created) with exactly the environment `env`; `patch`: Python run
    first in the same process (e.g. a bumped scoring version)."""
    cwd.mkdir(parents=True, exist_ok=True)
    code = f"{patch}\nimport sys\nfrom geoeval.cli.main import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=600, env=dict(env)
    )
