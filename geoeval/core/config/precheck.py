"""Checks a single run's command line before Hydra starts the job, so that a bad config fails
with geoeval's own message, naming the key, and before Hydra creates the job's `outputs/` folder.

Hydra would otherwise answer a typo'd key first with its advice to add it with `+` (which is
wrong for a typo) and create `outputs/<date>/<time>/` for a call that does no work. Sweeps are
left to Hydra's sweeper and to `SweepCallback`, which validates every job before the first.
"""

from __future__ import annotations

import re

from geoeval.core.errors import GeoevalError

_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'")


def _is_sweep(overrides: list[str]) -> bool:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception:
        return False  # a malformed override: Hydra's own parser error says it best
    return any(o.is_sweep_override() for o in parsed)


def precheck(args: list[str]) -> None:
    """Compose and validate `args` as one job would; raise GeoevalError naming the bad key.
    Does nothing for Hydra's own flags (`--help`, `--cfg`, `-m`, ...) and for sweeps."""
    if any(a.startswith("-") for a in args) or _is_sweep(args):
        return
    from hydra import compose, initialize_config_module
    from hydra.errors import ConfigCompositionException, MissingConfigException

    from geoeval.core.config.schema import validate_config
    from geoeval.core.config.search_path import register

    register()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        try:
            cfg = compose(config_name="config", overrides=args, return_hydra_config=True)
        except ConfigCompositionException as exc:
            message = _unknown_key_message(args, exc)
            if message:
                raise GeoevalError(message) from None
            return  # other composition errors: Hydra reports them as it runs
        except MissingConfigException:
            return  # Hydra lists the options of the group
        if str(cfg.hydra.get("mode", "RUN")).endswith("MULTIRUN"):
            return  # an experiment that is a sweep
        validate_config(cfg)


def _unknown_key_message(args: list[str], exc: Exception) -> str | None:
    """geoeval's message for an override of a key that does not exist: the key, and the keys
    that do exist where it points."""
    from hydra import compose

    text = f"{exc} {exc.__cause__ or ''}"
    match = _NOT_IN_STRUCT.search(text)
    if not match:
        return None
    key = match.group(1)
    parent = key.rpartition(".")[0]
    others = [a for a in args if not a.lstrip("+~").startswith(f"{key}=")]
    allowed: list[str] = []
    try:
        from omegaconf import OmegaConf

        node = compose(config_name="config", overrides=others)
        node = OmegaConf.select(node, parent) if parent else node
        allowed = sorted(str(k) for k in node) if hasattr(node, "keys") else []
    except Exception:  # the hint is a courtesy: the key is named either way
        pass
    hint = f" (allowed keys: {', '.join(allowed)})" if allowed else ""
    return f"Invalid config:\n  {key}: unknown key{hint}"
