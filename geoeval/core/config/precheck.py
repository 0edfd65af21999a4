"""Checks a single run's command line before Hydra starts the job, so that a bad config fails
with geoeval's own message, naming the key, and before Hydra creates the job's `outputs/` folder.

Hydra would otherwise answer a typo'd key first with its advice to add it with `+` (which is
wrong for a typo) and create `outputs/<date>/<time>/` for a call that does no work. The schemas,
not the YAML files, decide which keys exist (`compose.compose_config`): `precheck` returns the
command line with each override of a key the schema has and the YAML lacks written `++key=value`,
which is what the main command hands to Hydra. A sweep's jobs
are validated by `SweepCallback` before the first runs; the `hydra:` section, which Hydra acts on
before that, is checked here for sweeps too (`hydra_section.check_hydra_section`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from geoeval.core.config.hydra_section import check_hydra_section
from geoeval.core.errors import GeoevalError

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

_MULTIRUN_FLAGS = ("-m", "--multirun")


def _command_lines(overrides: list[str]) -> tuple[list[list[str]], bool] | None:
    """The single-job command lines whose `hydra:` sections a call can produce, and whether it
    is a sweep: the overrides as they are, or for a sweep each value of each sweep override on its
    own (the others at their first value), except the values of a dotted key outside `hydra.`
    (`suite.resolution=1,0.5`): a value cannot name code in the `hydra:` section (an
    interpolated target is refused), so one composition stands for all of them. None for
    overrides Hydra's parser refuses (its own error says it best)."""
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
        key = keys[i].lstrip("+~")
        if "." in key and not key.startswith("hydra."):
            continue  # a value: the base line's composition checks its hydra section
        for value in values[i][1:]:
            line = list(base)
            line[i] = f"{keys[i]}={value}"
            lines.append(line)
    return lines, True


def precheck(args: list[str], validated: Callable[[RunSpec], None] | None = None) -> list[str]:
    """Compose and validate `args` as one job would; raise GeoevalError naming the bad key.
    The `hydra:` section is checked for every call, sweeps included (`check_hydra_section`: Hydra
    instantiates what it names before any job starts); a sweep's jobs are validated by
    `SweepCallback` before the first runs. Hydra's other flags (`--help`, `--cfg`, ...) pass.
    Returns `args` with the overrides of keys that the schema has and the YAML lacks written
    `++key=value` (the sweep's values kept), for Hydra to run. `validated` is given a single
    run's spec once it is valid (the run's start: its endpoint probes go out then)."""
    flags = [a for a in args if a.startswith("-")]
    if any(f not in _MULTIRUN_FLAGS for f in flags):
        return args
    found = _command_lines([a for a in args if not a.startswith("-")])
    if found is None:
        return args
    lines, sweep = found
    import yaml
    from hydra import initialize_config_module
    from hydra.errors import ConfigCompositionException, MissingConfigException

    from geoeval.core.config.compose import compose_config
    from geoeval.core.config.search_path import register
    from geoeval.core.config.validate import validate_config
    from geoeval.core.config.yaml_bounds import YamlTooLarge

    register()
    forced: set[str] = set()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        for line in lines:
            try:
                cfg, used = compose_config(line, return_hydra_config=True)
            except ConfigCompositionException:
                return _forcing(args, forced)  # other composition errors: Hydra reports them as it runs
            except MissingConfigException:
                return _forcing(args, forced)  # Hydra lists the options of the group
            except YamlTooLarge as exc:  # a YAML bomb: refused before it is expanded
                raise GeoevalError(f"Invalid config: {exc}") from None
            except yaml.YAMLError as exc:  # an experiment or config file that is not YAML
                raise GeoevalError(f"Invalid config: a file is not valid YAML: {' '.join(str(exc).split())}") from None
            forced.update(_key(o) for o in used if o.startswith("++"))
            check_hydra_section(cfg.hydra)
            if sweep or bool(flags) or str(cfg.hydra.get("mode", "RUN")).endswith("MULTIRUN"):
                continue  # a sweep (or an experiment that is one): SweepCallback validates its jobs
            spec = validate_config(cfg)
            if validated is not None:
                validated(spec)
    return _forcing(args, forced)


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _forcing(args: list[str], keys: set[str]) -> list[str]:
    """`args` with the overrides of `keys` written `++key=value` (sweep values and flags kept)."""
    return [
        ("++" + a.lstrip("+")) if not a.startswith(("-", "~")) and "=" in a and _key(a) in keys else a for a in args
    ]
