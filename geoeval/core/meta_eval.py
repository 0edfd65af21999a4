"""Deprecated: `geoeval.core.meta_eval` moved to `geoeval.core.analysis.meta_eval` (the numbers)
and `geoeval.core.records` (`Tier`, `ScoredAnswer`); a suite or plugin imports them from
`geoeval.api`. This module keeps the old import working for one release, with a
`DeprecationWarning` on import (docs/plugins.md, "Moved names"); it goes in the next release.
"""

from __future__ import annotations

import warnings

from geoeval.core.analysis.meta_eval import (
    DEFAULT_TARGET,
    DEFECT,
    MAX_EXAMPLES,
    REFERENCE,
    WORTHLESS,
    ordering_report,
    run_meta_eval,
    tier_means,
)
from geoeval.core.errors import GeoevalDeprecationWarning
from geoeval.core.records import ScoredAnswer, Tier

warnings.warn(
    "`geoeval.core.meta_eval` is deprecated and goes in the next release: import Tier, ScoredAnswer, "
    "REFERENCE, DEFECT and WORTHLESS from `geoeval.api`, the meta-evaluation's numbers "
    "(ordering_report, tier_means, run_meta_eval) from `geoeval.core.analysis.meta_eval`",
    GeoevalDeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "DEFAULT_TARGET",
    "DEFECT",
    "MAX_EXAMPLES",
    "REFERENCE",
    "WORTHLESS",
    "ScoredAnswer",
    "Tier",
    "ordering_report",
    "run_meta_eval",
    "tier_means",
]
