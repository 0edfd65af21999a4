"""One composition per job config in a sweep's process.

Hydra composes each job's config three times in a sweep: geoeval's check of every job before the
first starts (`geoeval.cli.app.SweepCallback`), Hydra's basic sweeper checking that its batch composes
(`Sweeper.validate_batch_is_legal`), and the launcher for the job itself. A composition of
geoeval's config takes ~65 ms on a 2-core machine: 6 s of a 30-job sweep went to composing the
same configs again. `share_compositions` makes the process's config loader keep each result and
hand out copies. Composition is a function of the config name, the overrides and the run mode
while the config files stay as they are, which they do for the few seconds between the checks and
the launch; every caller gets its own copy, as it got its own composition before.

Within each composition Hydra reads and parses every config file it uses again (~17 files, ~40 %
of a composition's time: YAML parsing and OmegaConf's nodes). `share_config_files` keeps each
file's parsed result on its config source while the file is unchanged (its modification time
and size), and hands out copies (a copy costs about a quarter of a parse); a sweeper that composes
jobs as it goes (Optuna, Ax) sees an edited file.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from importlib import resources
from typing import Any

from geoeval.core.private_api import hydra_loader_config_sources

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
    share_config_files(loader)


def share_config_files(loader: Any) -> None:
    """Keep each config file's parsed `ConfigResult` on the loader's `pkg://` and `file://`
    sources while the file is unchanged, and return copies of it (Hydra changes what it gets: it
    takes the `defaults` list out). Other sources (structured configs, geoeval's experiments
    folder) read as before; idempotent."""
    for source in hydra_loader_config_sources(loader):
        locate = _file_locator(source)
        if locate is None or getattr(source, _SHARED_FLAG, False):
            continue
        read = source.load_config
        kept: dict[str, tuple[tuple[int, int], Any]] = {}

        def load_config(
            config_path: str, read: Any = read, locate: Callable[[str], Any] = locate, kept: dict = kept
        ) -> Any:
            stamp = _stamp(locate(config_path))
            if stamp is None:  # not a plain file (a zipped package, or missing: the source says so)
                return read(config_path=config_path)
            hit = kept.get(config_path)
            if hit is None or hit[0] != stamp:
                hit = kept[config_path] = (stamp, read(config_path=config_path))
            return copy.deepcopy(hit[1])

        source.load_config = load_config
        setattr(source, _SHARED_FLAG, True)


def _file_locator(source: Any) -> Callable[[str], Any] | None:
    """How to find the file behind a config path in `source`, for `pkg://` and `file://` sources."""
    scheme = source.scheme()

    def file_name(config_path: str) -> str:
        return config_path if config_path.endswith(".yaml") else f"{config_path}.yaml"

    if scheme == "pkg":
        return lambda config_path: resources.files(source.path).joinpath(file_name(config_path))
    if scheme == "file":
        return lambda config_path: os.path.join(source.path, file_name(config_path))
    return None


def _stamp(path: Any) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except (OSError, TypeError, ValueError):  # TypeError: a resource that is no file system path
        return None
    return (found.st_mtime_ns, found.st_size)
