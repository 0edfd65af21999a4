"""A YAML bomb (nested anchors and aliases) fails in one line naming its file, before OmegaConf
copies what it expands to (issue 43: an experiment file of ten lines hung the run with no
output); real configs, anchors included, load as before."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from geoeval.core.config.search_path import register
from geoeval.core.config.yaml_bounds import MAX_NODES, YamlTooLarge, expanded_nodes


def bomb(levels: int = 9) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def _bounded():
    register()  # what every geoeval command does before Hydra loads a config


def test_a_bomb_is_refused_naming_its_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())  # 9**10 = 3.5 billion strings once expanded
    with pytest.raises(YamlTooLarge, match=rf"{path}: its anchors and aliases expand to more than 20,000 nodes"):
        OmegaConf.load(path)


def test_a_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a\n  b: *a\n")
    with pytest.raises(YamlTooLarge, match="an alias refers to a node that contains it"):
        OmegaConf.load(path)


def test_deep_nesting_and_huge_files_are_refused(tmp_path):
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(YamlTooLarge, match="nested too deep"):
        OmegaConf.load(deep)
    huge = tmp_path / "huge.yaml"
    huge.write_text("a: '" + "x" * 5_000_000 + "'\n")
    with pytest.raises(YamlTooLarge, match="longer than"):
        OmegaConf.load(huge)


def test_configs_with_anchors_load_as_before(tmp_path):
    path = tmp_path / "fine.yaml"
    path.write_text("base: &base {lr: 0.1, layers: [1, 2]}\nrun1: *base\nrun2: {<<: *base, lr: 0.2}\n")
    cfg = OmegaConf.load(path)
    assert cfg.run1.layers == [1, 2] and cfg.run2.lr == 0.2 and cfg.run2.layers == [1, 2]
    small = tmp_path / "small.yaml"
    small.write_text(bomb(levels=2))  # 9**3 = 729 strings: aliases used as aliases are
    assert len(OmegaConf.load(small).l2[8][8]) == 9


def test_expansion_is_counted_without_expanding():
    import yaml

    node = yaml.compose(bomb(levels=30))  # 9**31 nodes: counted from 31 distinct ones
    assert expanded_nodes(node, MAX_NODES) == MAX_NODES + 1
