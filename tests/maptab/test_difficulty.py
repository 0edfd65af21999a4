"""Difficulty indices (appendix C.2) against hand-computed values."""

import networkx as nx
import pytest

from geoeval.suites.maptab.generator.difficulty import (
    gs,
    map_difficulty_score,
    mc,
    simple_path_stats,
    spci,
    spli,
    tercile_levels,
    wasp,
)
from geoeval.suites.maptab.generator.metro import generate_metro_map


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


# ---------------------------------------------------------------- Algorithm 1 (appendix B.4)

from geoeval.core.errors import GeoevalError  # noqa: E402
from geoeval.suites.maptab.generator.difficulty import allocate_queries, train_test_split  # noqa: E402


def test_allocation_by_hand():
    # Q = 300: every level 100 -> 80 train / 20 test; alpha 1, q_min 5
    cities = [
        ("e1", "Easy", "train", 10),
        ("e2", "Easy", "train", 30),
        ("e3", "Easy", "test", 7),
        ("m1", "Medium", "train", 5),
        ("m2", "Medium", "train", 15),
        ("m3", "Medium", "train", 20),
        ("m4", "Medium", "test", 9),
        ("h1", "Hard", "train", 1),
        ("h2", "Hard", "train", 99),
        ("h3", "Hard", "test", 3),
        ("h4", "Hard", "test", 1),
    ]
    q = allocate_queries(cities, 300, alpha=1.0, q_min=5)
    # e1 = 10/40*80; m1 = 5/40*80, m2 = 15/40*80; h1 = max(round(0.8), 5); h3 = 3/4*20; the last
    # city of each group takes the rest; tests 20 + 20 + 20 = 60 = 0.2 Q, so no compensation
    assert q == {
        "e1": 20,
        "e2": 60,
        "e3": 20,
        "m1": 10,
        "m2": 30,
        "m3": 40,
        "m4": 20,
        "h1": 5,
        "h2": 75,
        "h3": 15,
        "h4": 5,
    }


def test_allocation_compensates_the_test_excess():
    # Q = 301: Easy 101 -> 80 train / 21 test, so 61 test queries against round(60.2) = 60: the last
    # Easy-test city gives one, which goes to the last Hard-train city (Medium gets floor(1/2) = 0)
    cities = [
        ("e1", "Easy", "train", 4),
        ("e2", "Easy", "test", 4),
        ("m1", "Medium", "train", 4),
        ("m2", "Medium", "test", 4),
        ("h1", "Hard", "train", 4),
        ("h2", "Hard", "test", 4),
    ]
    q = allocate_queries(cities, 301, alpha=1.5, q_min=5)
    assert q == {"e1": 80, "e2": 20, "m1": 80, "m2": 20, "h1": 81, "h2": 20}


def test_allocation_at_paper_scale():
    import random

    rng = random.Random(0)
    for scenario_total, n in ((8000, 160), (8400, 168)):
        levels = ["Easy", "Medium", "Hard"] * (n // 3) + ["Easy"] * (n % 3)
        # every third map of each level is a test map (the image split is 2:1)
        cities = [
            (f"c{i}", lv, "test" if (i // 3) % 3 == 0 else "train", rng.randint(12, 300)) for i, lv in enumerate(levels)
        ]
        q = allocate_queries(cities, scenario_total)
        assert sum(q.values()) == scenario_total
        assert sum(q[c[0]] for c in cities if c[2] == "test") == scenario_total // 5  # strict 4:1
        assert min(q.values()) >= 5
        per_level = {lv: sum(q[c[0]] for c in cities if c[1] == lv) for lv in ("Easy", "Medium", "Hard")}
        base = scenario_total // 3
        excess = sum(per_level.values()) - scenario_total
        assert excess == 0 and abs(per_level["Medium"] - base) <= 1 and abs(per_level["Hard"] - base) <= 1
        # the weight is |V|^1.5: a bigger map of the same group never gets fewer queries
        ranked = sorted((c for c in cities if c[1] == "Medium" and c[2] == "train"), key=lambda c: c[3])
        assert [q[c[0]] for c in ranked] == sorted(q[c[0]] for c in ranked)
        assert q[ranked[-1][0]] > 3 * q[ranked[0][0]]


def test_allocation_refuses_impossible_groups():
    with pytest.raises(GeoevalError, match="no Hard test city"):
        allocate_queries(
            [
                ("e", "Easy", "train", 5),
                ("e2", "Easy", "test", 5),
                ("m", "Medium", "train", 5),
                ("m2", "Medium", "test", 5),
                ("h", "Hard", "train", 5),
            ],
            300,
        )
    with pytest.raises(GeoevalError, match="minimum of 5 queries each exceeds"):
        others = [
            (d + s, d, s, 5)
            for d in ("Easy", "Medium", "Hard")
            for s in ("train", "test")
            if (d, s) != ("Easy", "test")
        ]
        allocate_queries(others + [(f"e{i}", "Easy", "test", 5) for i in range(10)], 60, q_min=5)
    with pytest.raises(GeoevalError, match="level must be one of"):
        allocate_queries([("x", "easy", "train", 5)], 30)


def test_train_test_split_takes_one_of_every_three():
    split = train_test_split([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8], seed=3)
    assert split.count("test") == 2
    order = sorted(range(7), key=lambda i: [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8][i])
    assert [split[i] for i in order[:3]].count("test") == 1 and [split[i] for i in order[3:6]].count("test") == 1
    assert split[order[6]] == "train"
    assert train_test_split([0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8], seed=3) == split
