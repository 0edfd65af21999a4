"""Config schemas (`schema`: RunSpec and every group), the early check of a command line (`precheck`), the experiments search path and secrets in configs.

In the previous release this package was one module, `geoeval.core.config`, and plugins imported its
names from it (`from geoeval.core.config import Strict`). Those names still resolve here for one
release, with a `DeprecationWarning` that names the new import: `geoeval.api` for the public
ones, the core module for the rest (docs/plugins.md, "Moved names").
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from geoeval.core.errors import GeoevalDeprecationWarning

#: the old module's names -> (where they live now, the import to write instead)
_MOVED: dict[str, tuple[str, str]] = {
    **{name: ("geoeval.core.config.schema", "geoeval.api") for name in ("Strict", "RunSpec", "JudgeSpec")},
    **{
        name: ("geoeval.core.config.schema", "geoeval.core.config.schema")
        for name in (
            "GenerateSettings",
            "ModelSpec",
            "MetricsSpec",
            "RunnerSpec",
            "TrackingSpec",
            "SERVE_EXECUTION_KEYS",
            "EXECUTION_SETTINGS",
            "format_errors",
            "to_container",
        )
    },
    "validate_config": ("geoeval.core.config.validate", "geoeval.api"),
}


def __getattr__(name: str) -> Any:
    # only for a name the package does not have: its submodules (`schema`, `validate`, ...) are
    # imported as usual (an AttributeError here makes `from geoeval.core.config import schema` import it)
    if name not in _MOVED:
        raise AttributeError(f"module 'geoeval.core.config' has no attribute '{name}'")
    module, public = _MOVED[name]
    warnings.warn(
        f"`geoeval.core.config.{name}` is deprecated and goes in the next release: use `from {public} import {name}`",
        GeoevalDeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)
