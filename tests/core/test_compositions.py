"""`share_compositions`: a sweep's job config is composed once, and every caller gets a copy it
can change without touching the others'."""

from __future__ import annotations

from hydra import initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

from geoeval.core.config.search_path import register
from geoeval.core.sweep.compositions import share_compositions


def test_one_composition_per_config_and_copies_for_each_caller():
    register()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        plain = OmegaConf.to_yaml(
            loader.load_configuration(config_name="config", overrides=["seed=3"], run_mode=RunMode.RUN)
        )
        calls = []
        compose = loader.load_configuration

        def counting(**kwargs):
            calls.append(kwargs["overrides"])
            return compose(**kwargs)

        loader.load_configuration = counting
        share_compositions(loader)
        share_compositions(loader)  # idempotent
        first = loader.load_configuration(config_name="config", overrides=["seed=3"], run_mode=RunMode.RUN)
        with open_dict(first):
            first.hydra.job.num = 7  # what a launcher does to its copy
            first.seed = 99
        second = loader.load_configuration(config_name="config", overrides=["seed=3"], run_mode=RunMode.RUN)
        other = loader.load_configuration(config_name="config", overrides=["seed=4"], run_mode=RunMode.RUN)
        assert calls == [["seed=3"], ["seed=4"]]
        assert OmegaConf.to_yaml(second) == plain  # the same config as an unshared composition
        assert second.seed == 3 and other.seed == 4


def test_config_files_are_parsed_once_and_compose_the_same_configs():
    from geoeval.core.private_api import hydra_loader_config_sources
    from geoeval.core.sweep.compositions import share_config_files

    register()
    overrides = [["+experiment=maptab_resolution_sweep", "seed=3"], ["+experiment=lifeplanner"], ["runner=ray"]]
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        plain = [
            OmegaConf.to_yaml(loader.load_configuration(config_name="config", overrides=o, run_mode=RunMode.RUN))
            for o in overrides
        ]
        reads: list[str] = []
        for source in hydra_loader_config_sources(loader):
            if source.scheme() == "pkg":
                read = source.load_config
                source.load_config = lambda config_path, read=read: reads.append(config_path) or read(config_path)
        share_config_files(loader)
        share_config_files(loader)  # idempotent
        for _ in range(2):
            shared = [
                OmegaConf.to_yaml(loader.load_configuration(config_name="config", overrides=o, run_mode=RunMode.RUN))
                for o in overrides
            ]
            assert shared == plain  # Hydra takes `defaults` out of what it gets: each gets a copy
    assert reads and len(reads) == len(set(reads))  # every file parsed once over six compositions


def test_an_edited_config_file_is_read_again(tmp_path):
    from types import SimpleNamespace

    from hydra._internal.core_plugins.file_config_source import FileConfigSource  # noqa: PLC2701 -- a test double

    from geoeval.core.sweep.compositions import share_config_files

    (tmp_path / "run.yaml").write_text("a: 1\n")
    source = FileConfigSource(provider="test", path=f"file://{tmp_path}")
    reads: list[str] = []
    read = source.load_config
    source.load_config = lambda config_path: reads.append(config_path) or read(config_path)
    share_config_files(SimpleNamespace(repository=SimpleNamespace(get_sources=lambda: [source])))
    first = source.load_config(config_path="run")
    first.config.a = 5  # a caller's change stays in its copy
    assert source.load_config(config_path="run").config.a == 1
    assert reads == ["run"]
    (tmp_path / "run.yaml").write_text("a: 22\n")  # another size: seen even within the clock's tick
    assert source.load_config(config_path="run").config.a == 22
    assert reads == ["run", "run"]
