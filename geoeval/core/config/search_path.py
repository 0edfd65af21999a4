"""Puts the user's `./experiments/` folder and the plugins' `conf/` folders on Hydra's search path.

`python -m geoeval +experiment=my_study` finds `experiments/my_study.yaml` in the current
directory (or in $GEOEVAL_EXPERIMENTS_DIR) before the experiments shipped in `conf/experiment/`.
Hydra maps a group to a sub-folder of a search-path root, so a plain `file://` entry would need
`experiments/experiment/my_study.yaml`; this config source serves the folder itself as that group.

A plugin ships config groups in a `conf/` folder of the top-level package of its
`geoeval.plugins` entry point (`mypkg/conf/suite/my_suite.yaml`, `mypkg/conf/env/...`,
`mypkg/conf/metrics/...`, `mypkg/conf/experiment/...`): each such folder is appended to the search
path, after geoeval's own `conf/` (a plugin adds options; it does not replace geoeval's). The
folders are found without importing the plugins.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
from importlib.metadata import entry_points
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from geoeval.core.config.home import project_home
from geoeval.core.private_api import bound_omegaconf_yaml, hydra_sources_registry

GROUP = "experiment"


def experiments_dir() -> Path:
    """`$GEOEVAL_EXPERIMENTS_DIR`, else `./experiments`, else the project home's `experiments/`
    (a project marked with `geoeval init` finds its experiments from any subfolder)."""
    if os.environ.get("GEOEVAL_EXPERIMENTS_DIR"):
        return Path(os.environ["GEOEVAL_EXPERIMENTS_DIR"]).resolve()
    here = Path.cwd() / "experiments"
    if here.is_dir():
        return here.resolve()

    return project_home() / "experiments"


class ExperimentsDirConfigSource(ConfigSource):
    """Serves `<dir>/<name>.yaml` as `experiment/<name>`; nothing else."""

    def __init__(self, provider: str, path: str) -> None:
        if path.find("://") == -1:
            path = f"{self.scheme()}://{path}"
        super().__init__(provider=provider, path=path)

    @staticmethod
    def scheme() -> str:
        return "geoeval-experiments"

    def _real(self, config_path: str) -> Path | None:
        config_path = config_path.strip("/")
        if config_path == GROUP:
            return Path(self.path)
        if config_path.startswith(GROUP + "/"):
            return Path(self.path) / config_path[len(GROUP) + 1 :]
        if config_path == "":
            return Path(self.path).parent / "__geoeval_root__"
        return None

    def load_config(self, config_path: str) -> ConfigResult:
        real = self._real(self._normalize_file_name(config_path))
        if real is None or not real.is_file():
            raise ConfigLoadError(f"Config not found : {config_path}")
        text = real.read_text(encoding="utf-8")
        header = ConfigSource._get_header_dict(text[:512])
        return ConfigResult(
            config=OmegaConf.create(OmegaConf.load(real)),
            path=f"{self.scheme()}://{self.path}",
            provider=self.provider,
            header=header,
        )

    def available(self) -> bool:
        return Path(self.path).is_dir()

    def is_group(self, config_path: str) -> bool:
        if config_path.strip("/") == "":
            return True
        real = self._real(config_path)
        return real is not None and real.is_dir()

    def is_config(self, config_path: str) -> bool:
        real = self._real(self._normalize_file_name(config_path))
        return real is not None and real.is_file()

    def list(self, config_path: str, results_filter: ObjectType | None) -> builtins.list[str]:
        files: list[str] = []
        if config_path.strip("/") == "":
            if results_filter in (None, ObjectType.GROUP):
                files.append(GROUP)
            return files
        real = self._real(config_path)
        if real is None or not real.is_dir():
            return files
        for entry in sorted(os.listdir(real)):
            self._list_add_result(
                files=files, file_path=f"{config_path}/{entry}", file_name=entry, results_filter=results_filter
            )
        return sorted(set(files))


class GeoevalExperimentsSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        folder = experiments_dir()
        if folder.is_dir():
            # prepend so that a user's experiment of the same name wins over the shipped one
            search_path.prepend(
                provider="geoeval-experiments", path=f"{ExperimentsDirConfigSource.scheme()}://{folder}"
            )


def plugin_config_dirs() -> list[Path]:
    """The `conf/` folders of the top-level packages of the `geoeval.plugins` entry points (and
    of the dotted paths in `GEOEVAL_PLUGINS`), geoeval's own left out, in entry-point order."""
    from geoeval.core.registry import PLUGIN_GROUP

    modules = [ep.value.split(":", 1)[0] for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda e: e.name)]
    modules += [p.strip().split(":", 1)[0] for p in os.environ.get("GEOEVAL_PLUGINS", "").split(",") if p.strip()]
    found: list[Path] = []
    for package in dict.fromkeys(m.split(".", 1)[0] for m in modules):
        if package == "geoeval":
            continue
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            conf = Path(location) / "conf"
            if conf.is_dir() and conf.resolve() not in found:
                found.append(conf.resolve())
    return found


class GeoevalPluginsSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for folder in plugin_config_dirs():
            search_path.append(provider="geoeval-plugin", path=f"file://{folder}")


def register() -> None:
    """Register the config source and the search-path plugin with Hydra, and bound the YAML it
    loads (`yaml_bounds`) (idempotent). Done in
    code rather than through the `hydra_plugins` namespace package, which editable installs
    hide from Hydra's plugin scan."""
    from hydra.core.plugins import Plugins

    from geoeval.core.config.yaml_bounds import bounded

    bound_omegaconf_yaml(bounded)  # a YAML bomb fails in one line before OmegaConf expands it
    hydra_sources_registry().register(ExperimentsDirConfigSource)
    plugins = Plugins.instance()
    for plugin in (GeoevalExperimentsSearchPath, GeoevalPluginsSearchPath):
        if plugin not in plugins.class_name_to_class.values():
            plugins.register(plugin)
