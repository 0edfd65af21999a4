"""A config's `hydra:` section is data: it may name only geoeval's and Hydra's own code.

Hydra instantiates what the `hydra:` section names (callbacks, the launcher, the sweeper, logging
handlers and formatters) when it starts, before any job and before geoeval validates the job's
config. An experiment file is something a researcher copies from a colleague or a paper's
repository, so a `_target_: shutil.copyfile` (or `os.system`) there would run with the user's
rights. `check_hydra_section` refuses, before Hydra starts, every target that is not on the
allow-list below, naming the key.

Allowed: geoeval's own callback and launcher, Hydra's (`hydra.*`) and its official plugins
(`hydra_plugins.hydra_*`, e.g. the joblib launcher or the Optuna sweeper), and the standard
library's `logging` classes for handlers, formatters and filters. A target must be written out: an
interpolation (`${...}`) could name anything at run time.
"""

from __future__ import annotations

from typing import Any

from geoeval.core.errors import GeoevalError

#: geoeval's own code that its shipped config names in the hydra section
GEOEVAL_HYDRA_TARGETS = frozenset({"geoeval.cli.app.SweepCallback", "hydra_plugins.geoeval_launcher.GeoevalLauncher"})
#: Hydra and its official plugins
HYDRA_TARGET_PREFIXES = ("hydra.", "hydra_plugins.hydra_")
#: keys whose value is imported and called: Hydra's `_target_`, logging.config's `()` factories,
#: and logging.config's `class` (handlers) and `class`/`()` of formatters and filters
_CALLABLE_KEYS = ("_target_", "()")
_LOGGING_SECTIONS = ("job_logging", "hydra_logging")


def _allowed_target(value: str) -> bool:
    return value in GEOEVAL_HYDRA_TARGETS or value.startswith(HYDRA_TARGET_PREFIXES)


def _allowed_logging_class(value: str) -> bool:
    return value.startswith("logging.") or _allowed_target(value)


def _walk(node: Any, path: str):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
            yield f"{path}.{key}", str(key), value
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def hydra_section_problems(hydra: Any) -> list[str]:
    """One line per forbidden target in `hydra` (the composed `hydra:` node, or a plain dict)."""
    from omegaconf import DictConfig, OmegaConf

    data = OmegaConf.to_container(hydra, resolve=False) if isinstance(hydra, DictConfig) else hydra
    problems = []
    for path, key, value in _walk(data, "hydra"):
        in_logging = any(path.startswith(f"hydra.{s}.") for s in _LOGGING_SECTIONS)
        if key in _CALLABLE_KEYS or (key == "class" and in_logging):
            allowed = _allowed_logging_class if in_logging else _allowed_target
            if not isinstance(value, str) or "${" in value or not allowed(value):
                problems.append(
                    f"{path}: {value!r} is not allowed (a config's hydra section may name only geoeval's and "
                    f"Hydra's own callbacks, launchers and sweepers, and logging's classes)"
                )
    return problems


def check_hydra_section(hydra: Any) -> None:
    """Raise `GeoevalError` naming every forbidden target in the `hydra:` section."""
    problems = hydra_section_problems(hydra)
    if problems:
        raise GeoevalError("Invalid config:\n  " + "\n  ".join(problems))
