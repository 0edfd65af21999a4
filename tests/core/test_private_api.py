"""Each private Inspect/Hydra/Ray name geoeval relies on resolves in the installed versions, and a
moved one is one clear error naming it."""

from __future__ import annotations

import sys

import pytest

from geoeval.core import private_api
from geoeval.core.errors import GeoevalError


def test_every_private_name_resolves_here():
    assert private_api.sample_state() is None  # outside a sample
    assert private_api.sample_model_usage() == {}
    names = {str(o.__registry_info__.name).split("/")[-1] for o in private_api.registered_model_apis()}
    assert {"openai", "anthropic", "mockllm"} <= names
    assert private_api.http_retries_count() >= 0
    assert isinstance(private_api.mcp_tool_source_local(), type)
    assert hasattr(private_api.hydra_sources_registry(), "register")
    assert isinstance(private_api.ray_local_node_processes(), dict)  # {} unless this process started a Ray
    import importlib

    for name in private_api.inspect_first_sample_modules():  # what the warm server imports for its runs
        importlib.import_module(name)
    from omegaconf import _utils

    from geoeval.core.config.yaml_bounds import bounded

    private_api.bound_omegaconf_yaml(bounded)
    assert _utils.get_yaml_loader().__name__ == "BoundedOmegaConfLoader"  # OmegaConf's loader, bounded
    from inspect_ai import Task
    from inspect_ai._eval.loader import resolve_task_args  # what the log reads its task args with
    from inspect_ai.dataset import Sample

    task = Task(dataset=[Sample(input="x")])
    private_api.label_task(task, {"resolution": 0.25}, "maptab resolution=0.25")
    assert resolve_task_args(task) == {"resolution": 0.25} and task.display_name == "maptab resolution=0.25"


def test_the_basic_sweeper_expansion_is_the_cartesian_product_in_order():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(["a=1,2", "b=x,y", "c=3"])
    assert private_api.basic_sweeper_batches(parsed) == [
        ["a=1", "b=x", "c=3"],
        ["a=1", "b=y", "c=3"],
        ["a=2", "b=x", "c=3"],
        ["a=2", "b=y", "c=3"],
    ]


def test_a_moved_name_is_one_error_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai._util.retry", None)  # import of it now fails
    with pytest.raises(GeoevalError, match=r"inspect_ai\._util\.retry\.http_retries_count is not where"):
        private_api.http_retries_count()


def test_token_estimates_fall_back_offline_instead_of_failing_the_call(monkeypatch):
    from inspect_ai.model import _model

    private_api.install_offline_token_estimate()
    private_api.install_offline_token_estimate()  # idempotent: wrapped once
    assert _model.count_text_tokens.__qualname__.startswith("install_offline_token_estimate")
    monkeypatch.setitem(private_api._OFFLINE_TOKENS, "fallback", True)  # as after a failed download
    assert _model.count_text_tokens("abcd" * 10) == 11  # 40 chars / 4 per token x Inspect's 1.1 buffer


def test_a_hydra_loader_shows_its_config_sources():
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        sources = private_api.hydra_loader_config_sources(GlobalHydra.instance().config_loader())
    assert "pkg" in {s.scheme() for s in sources}
