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
