"""Difficulty indices (appendix C.2) against hand-computed values."""

import networkx as nx
import pytest

from geoeval.suites.maptab.difficulty import (
    gs,
    map_difficulty_score,
    mc,
    simple_path_stats,
    spci,
    spli,
    tercile_levels,
    wasp,
)
from geoeval.suites.maptab.generator import generate_metro_map


@pytest.fixture
def path4():
    return nx.path_graph(["a", "b", "c", "d"])


@pytest.fixture
def cycle4():
    return nx.cycle_graph(["a", "b", "c", "d"])


def test_path_of_four(path4):
    assert gs(path4) == 7
    # distances 1+2+3+1+2+1 over 6 pairs
    assert wasp(path4) == pytest.approx(10 / 6)
    assert mc(path4) == pytest.approx((3 - 4 + 2) / 3)
    assert spli(path4, "a", "d") == 3
    assert spci(path4, "a", "d") == 3


def test_cycle_of_four(cycle4):
    assert gs(cycle4) == 8
    assert wasp(cycle4) == pytest.approx(8 / 6)
    assert mc(cycle4) == pytest.approx(0.5)
    assert spci(cycle4, "a", "c") == 2  # two paths of length 2
    assert spci(cycle4, "a", "b") == 2  # lengths 1 and 3
    assert spli(cycle4, "a", "b") == 1


def test_wasp_weights_components_by_size():
    g = nx.path_graph(["a", "b", "c"])
    g.add_node("z")
    # ASPD(path of 3) = (1+2+1)/3, ASPD(single node) = 0 -> (3 * 4/3 + 1 * 0) / 4
    assert wasp(g) == pytest.approx(1.0)


def test_spci_cap_reports_truncation(cycle4):
    mean, count, truncated = simple_path_stats(cycle4, "a", "b", max_paths=1)
    assert count == 1 and truncated
    mean, count, truncated = simple_path_stats(cycle4, "a", "b")
    assert (mean, count, truncated) == (2.0, 2, False)


def test_indices_accept_a_metro_map():
    m = generate_metro_map(4)
    assert gs(m) == len(m.stations) + len(m.edges)
    assert wasp(m) > 1


def test_map_difficulty_score_min_max(path4, cycle4):
    # GS 7, 8 -> 0, 1; WASP 1.667, 1.333 -> 1, 0; MC 1/3, 1/2 -> 0, 1
    assert map_difficulty_score([path4, cycle4]) == [pytest.approx(0.5), pytest.approx(0.5)]
    assert map_difficulty_score([path4, cycle4], "travelmap") == [pytest.approx(1 / 3), pytest.approx(2 / 3)]
    assert map_difficulty_score([path4, path4]) == [0.0, 0.0]


def test_tercile_levels():
    assert tercile_levels([5, 1, 3]) == ["Hard", "Easy", "Medium"]
    assert tercile_levels([4, 3, 2, 1]) == ["Hard", "Medium", "Easy", "Easy"]
    assert tercile_levels([1, 2, 3, 4, 5]) == ["Easy", "Easy", "Easy", "Medium", "Hard"]
    assert tercile_levels([7, 7, 7]) == ["Easy", "Medium", "Hard"]  # ties: input order
    levels = tercile_levels(list(range(30, 0, -1)))
    assert levels.count("Easy") == levels.count("Medium") == levels.count("Hard") == 10
    assert levels[0] == "Hard" and levels[-1] == "Easy"
    assert tercile_levels([]) == []
