"""One composition per job config in a sweep's process.

Hydra composes each job's config three times in a sweep: geoeval's check of every job before the
first starts (`geoeval.cli.app.SweepCallback`), Hydra's basic sweeper checking that its batch composes
(`Sweeper.validate_batch_is_legal`), and the launcher for the job itself. A composition of
geoeval's config takes ~65 ms on a 2-core machine: 6 s of a 30-job sweep went to composing the
same configs again. `share_compositions` makes the process's config loader keep each result and
hand out copies. Composition is a function of the config name, the overrides and the run mode
while the config files stay as they are, which they do for the few seconds between the checks and
the launch; every caller gets its own copy, as it got its own composition before.
"""

from __future__ import annotations

import copy
from typing import Any

_SHARED_FLAG = "_geoeval_shares_compositions"


def share_compositions(loader: Any) -> None:
    """Memoize `loader.load_configuration` (Hydra's public `ConfigLoader` method) on this
    loader instance; idempotent. Failures are not kept: a bad config raises each time."""
    if getattr(loader, _SHARED_FLAG, False):
        return
    compose = loader.load_configuration
    kept: dict[tuple, Any] = {}

    def load_configuration(
        config_name: Any,
        overrides: list[str],
        run_mode: Any,
        from_shell: bool = True,
        validate_sweep_overrides: bool = True,
    ) -> Any:
        key = (config_name, tuple(overrides), str(run_mode), from_shell, validate_sweep_overrides)
        if key not in kept:
            kept[key] = compose(
                config_name=config_name,
                overrides=list(overrides),
                run_mode=run_mode,
                from_shell=from_shell,
                validate_sweep_overrides=validate_sweep_overrides,
            )
        return copy.deepcopy(kept[key])

    loader.load_configuration = load_configuration
    setattr(loader, _SHARED_FLAG, True)
