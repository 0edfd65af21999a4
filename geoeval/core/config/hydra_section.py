"""A config's `hydra:` section is data: it may name only geoeval's and Hydra's own code.

Hydra instantiates what the `hydra:` section names (callbacks, the launcher, the sweeper, logging
handlers and formatters) when it starts, before any job and before geoeval validates the job's
config. An experiment file is something a researcher copies from a colleague or a paper's
repository, so a `_target_: shutil.copyfile` (or `os.system`) there would run with the user's
rights. `check_hydra_section` refuses, before Hydra starts, every target that is not on the
allow-list below, naming the key.

Allowed: geoeval's own callback and launcher, Hydra's (`hydra.*`) and its official plugins
(`hydra_plugins.hydra_*`, e.g. the joblib launcher or the Optuna sweeper), and in the logging
sections the standard library's console, file and null handlers, `logging.Formatter` and
`logging.Filter`. A target must be written out: an interpolation (`${...}`) could name anything at
run time.

Logging writes only inside the run's output folder (`hydra.runtime.output_dir`): a file handler's
`filename` must be `${hydra.runtime.output_dir}/<a relative path>` (Hydra's own default), a console
handler's stream standard output or error, and Hydra's saved config (`hydra.output_subdir`) a
relative folder. An experiment file's `filename: /home/me/notes.txt` with `mode: w` truncated that
file to 0 bytes; a handler that mails or sends logs (`SMTPHandler`, `HTTPHandler`, ...) is refused
with the rest.
"""

from __future__ import annotations

import re
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
#: the logging handlers a config may name: console, files (inside the run's folder) and nothing
CONSOLE_HANDLERS = frozenset({"logging.StreamHandler"})
FILE_HANDLERS = frozenset(
    {
        "logging.FileHandler",
        "logging.handlers.RotatingFileHandler",
        "logging.handlers.TimedRotatingFileHandler",
        "logging.handlers.WatchedFileHandler",
    }
)
LOGGING_CLASSES = {
    "handlers": CONSOLE_HANDLERS | FILE_HANDLERS | {"logging.NullHandler"},
    "formatters": frozenset({"logging.Formatter"}),
    "filters": frozenset({"logging.Filter"}),
}
CONSOLE_STREAMS = frozenset({"ext://sys.stdout", "ext://sys.stderr"})
#: how a file handler's filename names the run's output folder, and the one value it may add
_OUTPUT_DIR = re.compile(r"^\$\{hydra[.:]runtime\.output_dir\}/(?P<rest>.+)$")
_JOB_NAME = re.compile(r"\$\{hydra[.:]job\.name\}")


def _allowed_target(value: str) -> bool:
    return value in GEOEVAL_HYDRA_TARGETS or value.startswith(HYDRA_TARGET_PREFIXES)


def _walk(node: Any, path: str):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
            yield f"{path}.{key}", str(key), value
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


def _relative_inside(path: str) -> bool:
    """A path that stays inside the folder it is relative to: not absolute, no `..`, no `~`."""
    parts = path.replace("\\", "/").split("/")
    return bool(path) and not path.startswith(("/", "~")) and ".." not in parts and ":" not in parts[0]


def _inside_output_dir(filename: Any) -> bool:
    """`${hydra.runtime.output_dir}/<relative path>`, the path written out but for the job's name."""
    found = _OUTPUT_DIR.match(filename) if isinstance(filename, str) else None
    if found is None:
        return False
    rest = _JOB_NAME.sub("job", found.group("rest"))
    return "${" not in rest and _relative_inside(rest)


_REFUSED = (
    "is not allowed (a config's hydra section may name only geoeval's and Hydra's own callbacks, launchers and "
    "sweepers, and logging's console, file and null handlers, Formatter and Filter)"
)


def _logging_problems(section: str, logging: Any) -> list[str]:
    """What a `hydra.job_logging` / `hydra.hydra_logging` section may not do (see the module doc)."""
    if not isinstance(logging, dict):
        return []
    problems = []
    for kind in ("handlers", "formatters", "filters"):
        entries = logging.get(kind)
        for name, entry in (entries or {}).items() if isinstance(entries, dict) else []:
            path = f"hydra.{section}.{kind}.{name}"
            if not isinstance(entry, dict):
                continue
            for key in ("class", "()"):
                value = entry.get(key)
                if key in entry and not (
                    isinstance(value, str)
                    and "${" not in value
                    and (value in LOGGING_CLASSES[kind] or _allowed_target(value))
                ):
                    problems.append(f"{path}.{key}: {value!r} {_REFUSED}")
            cls = entry.get("class") or entry.get("()")
            if (cls in FILE_HANDLERS or "filename" in entry) and not _inside_output_dir(entry.get("filename")):
                problems.append(
                    f"{path}.filename: {entry.get('filename')!r} is outside the run's output folder (a logging "
                    "handler writes only there: write it `${hydra.runtime.output_dir}/<file name>`)"
                )
            if cls in CONSOLE_HANDLERS and entry.get("stream", "ext://sys.stderr") not in CONSOLE_STREAMS:
                problems.append(
                    f"{path}.stream: {entry.get('stream')!r} is not allowed (a console handler writes to "
                    "ext://sys.stdout or ext://sys.stderr)"
                )
    return problems


def _output_problems(data: dict[Any, Any]) -> list[str]:
    """Hydra writes its saved config to `<output dir>/<output_subdir>` and names the job's log
    file after `job.name`: both must stay inside the run's output folder."""
    problems = []
    subdir = data.get("output_subdir")
    if subdir is not None and (not isinstance(subdir, str) or "${" in subdir or not _relative_inside(subdir)):
        problems.append(
            f"hydra.output_subdir: {subdir!r} is outside the run's output folder (Hydra saves the config there: "
            "give a relative folder, e.g. .hydra, or null)"
        )
    name = (data.get("job") or {}).get("name") if isinstance(data.get("job"), dict) else None
    if name is not None and (not isinstance(name, str) or "${" in name or not _relative_inside(name) or "/" in name):
        problems.append(f"hydra.job.name: {name!r} is not allowed (a plain name: the job's log file is named after it)")
    return problems


def hydra_section_problems(hydra: Any) -> list[str]:
    """One line per forbidden target in `hydra` (the composed `hydra:` node, or a plain dict), and
    per logging handler or saved config that would write outside the run's output folder."""
    from omegaconf import DictConfig, OmegaConf

    data = OmegaConf.to_container(hydra, resolve=False) if isinstance(hydra, DictConfig) else hydra
    problems = []
    for path, key, value in _walk(data, "hydra"):
        if any(path.startswith(f"hydra.{s}.") for s in _LOGGING_SECTIONS):
            continue  # `_logging_problems` reads them
        if key in _CALLABLE_KEYS and (not isinstance(value, str) or "${" in value or not _allowed_target(value)):
            problems.append(f"{path}: {value!r} {_REFUSED}")
    if isinstance(data, dict):
        for section in _LOGGING_SECTIONS:
            problems += _logging_problems(section, data.get(section))
        problems += _output_problems(data)
    return problems


def check_hydra_section(hydra: Any) -> None:
    """Raise `GeoevalError` naming every forbidden target in the `hydra:` section."""
    problems = hydra_section_problems(hydra)
    if len(problems) == 1:
        raise GeoevalError(f"Invalid config: {problems[0]}")
    if problems:
        raise GeoevalError("Invalid config:\n  " + "\n  ".join(problems))
