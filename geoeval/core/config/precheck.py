"""Checks a single run's command line before Hydra starts the job, so that a bad config fails
with geoeval's own message, naming the key, and before Hydra creates the job's `outputs/` folder.

Hydra would otherwise answer a typo'd key first with its advice to add it with `+` (which is
wrong for a typo) and create `outputs/<date>/<time>/` for a call that does no work. A sweep's jobs
are validated by `SweepCallback` before the first runs; the `hydra:` section, which Hydra acts on
before that, is checked here for sweeps too (`hydra_section.check_hydra_section`).
"""

from __future__ import annotations

import re

from geoeval.core.errors import GeoevalError

_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'")


_MULTIRUN_FLAGS = ("-m", "--multirun")


def _command_lines(overrides: list[str]) -> tuple[list[list[str]], bool] | None:
    """The single-job command lines whose `hydra:` sections a call can produce, and whether it
    is a sweep: the overrides as they are, or for a sweep each value of each sweep override on its
    own (the others at their first value). None for overrides Hydra's parser refuses (its own
    error says it best)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception:
        return None
    sweeps = [(i, o) for i, o in enumerate(parsed) if o.is_sweep_override()]
    if not sweeps:
        return [list(overrides)], False

    base = list(overrides)
    keys = {i: overrides[i].split("=", 1)[0] for i, _ in sweeps}  # with its +/++/~ prefix
    values = {i: list(o.sweep_string_iterator()) for i, o in sweeps}
    for i, _ in sweeps:
        base[i] = f"{keys[i]}={values[i][0]}"
    lines = [base]
    for i, _ in sweeps:
        for value in values[i][1:]:
            line = list(base)
            line[i] = f"{keys[i]}={value}"
            lines.append(line)
    return lines, True


def precheck(args: list[str]) -> None:
    """Compose and validate `args` as one job would; raise GeoevalError naming the bad key.
    The `hydra:` section is checked for every call, sweeps included (`check_hydra_section`: Hydra
    instantiates what it names before any job starts); a sweep's jobs are validated by
    `SweepCallback` before the first runs. Hydra's other flags (`--help`, `--cfg`, ...) pass."""
    flags = [a for a in args if a.startswith("-")]
    if any(f not in _MULTIRUN_FLAGS for f in flags):
        return
    found = _command_lines([a for a in args if not a.startswith("-")])
    if found is None:
        return
    lines, sweep = found
    import yaml
    from hydra import compose, initialize_config_module
    from hydra.errors import ConfigCompositionException, MissingConfigException

    from geoeval.core.config.hydra_section import check_hydra_section
    from geoeval.core.config.search_path import register
    from geoeval.core.config.validate import validate_config

    register()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        for line in lines:
            try:
                cfg = compose(config_name="config", overrides=line, return_hydra_config=True)
            except ConfigCompositionException as exc:
                message = None if sweep else _unknown_key_message(line, exc)
                if message:
                    raise GeoevalError(message) from None
                return  # other composition errors: Hydra reports them as it runs
            except MissingConfigException:
                return  # Hydra lists the options of the group
            except yaml.YAMLError as exc:  # an experiment or config file that is not YAML
                raise GeoevalError(f"Invalid config: a file is not valid YAML: {' '.join(str(exc).split())}") from None
            check_hydra_section(cfg.hydra)
            if sweep or bool(flags) or str(cfg.hydra.get("mode", "RUN")).endswith("MULTIRUN"):
                continue  # a sweep (or an experiment that is one): SweepCallback validates its jobs
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
