"""The exact route solver: hand-computed values, brute-force cross-checks, speed, and the
authors' sample labels."""

import itertools
import random
from pathlib import Path

import networkx as nx
import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.authors.format import (
    category_of_test_set,
    load_authors_map,
    load_table_file,
    load_test_set,
)
from geoeval.suites.maptab.env.tables import map_from_rows, mix_map
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.travel import generate_travel_map
from geoeval.suites.maptab.graph import Edge, MetroMap, Station
from geoeval.suites.maptab.routing.cost import route_cost, route_totals
from geoeval.suites.maptab.routing.reference import fewest_station_routes, reference_routes
from geoeval.suites.maptab.routing.search import optimal_routes, relevant_stations
from geoeval.suites.maptab.routing.transfers import annotate, annotated_names, format_route, parse_route, transfer_sets

PEERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "maptab"


def peers_or_skip() -> Path:
    if not PEERS.is_dir():
        pytest.skip("../shared/peers/maptab (the authors' sample) is not present")
    return PEERS


def hand_map(scenario="metromap") -> MetroMap:
    """Red A-B-C-D, Blue B-C-E (sharing B-C with Red), Green A-F-C."""
    metro = scenario == "metromap"

    def st(name, lines, time_, comfort, rel, tt=0.0):
        return Station(name, tuple(lines) if metro else (), 0, 0, time_, 0.0, comfort, rel, tt if metro else 0.0)

    stations = {
        "A": st("A", ["Red", "Green"], 1.0, 0.5, 0.8, 7),
        "B": st("B", ["Red", "Blue"], 0.5, 0.0, 0.6, 5),
        "C": st("C", ["Red", "Blue", "Green"], 1.5, 0.9, 1.0, 10),
        "D": st("D", ["Red"], 2.0, 0.4, 0.7),
        "E": st("E", ["Blue"], 1.0, 0.2, 0.5),
        "F": st("F", ["Green"], 1.0, 0.3, 0.9),
    }

    def ed(a, b, lines, t, p, c):
        return Edge(a, b, tuple(lines) if metro else (), t, p, c, 0.0)

    edges = [
        ed("A", "B", ["Red"], 2.0, 1.0, 0.6),
        ed("B", "C", ["Red", "Blue"], 2.5, 0.5, 0.0),
        ed("C", "D", ["Red"], 3.0, 0.2, 0.8),
        ed("C", "E", ["Blue"], 2.2, 1.5, 0.4),
        ed("A", "F", ["Green"], 2.1, 0.3, 0.5),
        ed("F", "C", ["Green"], 2.4, 0.6, 0.7),
    ]
    return MetroMap("hand", scenario, stations, edges)


# ---------------------------------------------------------------- hand-computed values


def test_fewest_station_routes_keeps_every_optimum():
    m = hand_map()
    assert fewest_station_routes(m, "A", "C") == [["A", "B", "C"], ["A", "F", "C"]]
    assert fewest_station_routes(m, "D", "E") == [["D", "C", "E"]]
    assert fewest_station_routes(m, "A", "A") == [["A"]]


def test_annotation_fewest_transfers_and_ties():
    m = hand_map()
    # Red A-B, Red/Blue B-C, Blue C-E: one transfer, at B or at C -> both are references
    assert annotate(m, ["A", "B", "C", "E"]) == ["A-B(transfer)-C-E", "A-B-C(transfer)-E"]
    # when time counts, the cheaper transfer (B: 5 < C: 10) is the only one
    assert annotate(m, ["A", "B", "C", "E"], time_weight=1.0) == ["A-B(transfer)-C-E"]
    assert annotate(m, ["A", "F", "C", "E"]) == ["A-F-C(transfer)-E"]
    assert annotate(m, ["D", "C", "B", "A"]) == ["D-C-B-A"]  # Red all the way
    assert annotate(m, ["A", "B"]) == ["A-B"]  # endpoints are never annotated
    assert annotate(hand_map("travelmap"), ["A", "B", "C", "E"]) == ["A-B-C-E"]


def test_route_string_helpers():
    assert format_route(annotated_names(["A", "B", "C"], {"A", "B", "C"})) == "A-B(transfer)-C"
    assert parse_route("A-B(transfer)-C") == (["A", "B", "C"], frozenset({"B"}))


def test_route_totals_metromap():
    m = hand_map()
    totals = route_totals(m, ["A", "B", "C", "E"], {"B"})
    # T = edges 2.0+2.5+2.2 + dwell A,B,C 1.0+0.5+1.5 + transfer B 5 ; C over non-zero 0.6,0.4,0.5,0.9
    assert totals == {"Total_Time": 14.7, "Total_Price": 3.0, "Average_Comfort Level": 0.6, "Average_Reliability": 0.8}
    assert route_totals(m, ["A", "B", "C", "E"], {"C"})["Total_Time"] == 19.7
    assert route_totals(m, ["A", "B", "C", "E"])["Total_Time"] == 9.7


def test_route_cost_metromap_mean_and_sum():
    m = hand_map()
    w = (0.25, 0.25, 0.25, 0.25)
    assert route_cost(m, ["A", "B", "C", "E"], {"B"}, w) == pytest.approx(0.25 * (14.7 / 3 + 3.0 / 1.5 + 0.4 + 0.2))
    # sum objective: sum(1-c) = 0.4+0.6+0.5+0.1, sum(1-r) = 0.2+0.4+0.0
    assert route_cost(m, ["A", "B", "C", "E"], {"B"}, w, "sum") == pytest.approx(0.25 * (4.9 + 2.0 + 1.6 + 0.6))


def test_route_totals_and_cost_travelmap_include_destination():
    m = hand_map("travelmap")
    totals = route_totals(m, ["A", "B", "C", "E"])
    assert totals == {
        "Total_Time": 10.7,
        "Total_Price": 3.0,
        "Average_Comfort Level": 0.52,
        "Average_Reliability": 0.725,
    }
    assert route_cost(m, ["A", "B", "C", "E"], (), (1, 0, 0, 0)) == pytest.approx(10.7 / 180)
    assert route_cost(m, ["A", "B", "C", "E"], (), (0, 0, 1, 0)) == pytest.approx(1 - 0.52 / 5)
    assert route_cost(m, ["A", "B", "C", "E"], (), (0, 1, 0, 0)) == pytest.approx(3.0 / 200)


def test_optimal_routes_on_the_hand_map():
    m = hand_map()
    assert optimal_routes(m, "A", "E", (1, 0, 0, 0)) == ["A-B(transfer)-C-E"]  # 14.7 < 20.2
    assert optimal_routes(m, "A", "E", (0, 1, 0, 0)) == ["A-F-C(transfer)-E"]  # 2.4 < 3.0
    # comfort 0.6 vs 0.55; time not weighted, so both one-transfer annotations are references
    assert optimal_routes(m, "A", "E", (0, 0, 1, 0)) == ["A-B(transfer)-C-E", "A-B-C(transfer)-E"]
    assert reference_routes(m, "A", "C") == ["A-B-C", "A-F-C"]  # criteria-free; endpoints unannotated


def test_relevant_stations_prune_dead_ends():
    m = hand_map()
    assert relevant_stations(m, "A", "E") == {"A", "B", "C", "E", "F"}
    assert relevant_stations(m, "D", "C") == {"D", "C"}


def test_exact_ties_are_all_returned():
    st = {n: Station(n, ("L",), 0, 0, 1.0, 0.0, 0.5, 0.7) for n in "STXY"}
    edges = [
        Edge("S", "X", ("L",), 2.0, 1.0, 0.5, 0.0),
        Edge("X", "T", ("L",), 2.0, 1.0, 0.5, 0.0),
        Edge("S", "Y", ("L",), 2.0, 1.0, 0.5, 0.0),
        Edge("Y", "T", ("L",), 2.0, 1.0, 0.5, 0.0),
    ]
    m = MetroMap("square", "metromap", st, edges)
    assert optimal_routes(m, "S", "T", (0.25, 0.25, 0.25, 0.25)) == ["S-X-T", "S-Y-T"]


def test_user_errors():
    m = hand_map()
    with pytest.raises(GeoevalError):
        optimal_routes(m, "A", "Nowhere", (1, 0, 0, 0))
    with pytest.raises(GeoevalError):
        optimal_routes(m, "A", "E", (0, 0, 0, 0))
    with pytest.raises(GeoevalError):
        optimal_routes(m, "A", "E", (1, 0, 0, 0), objective="median")
    with pytest.raises(GeoevalError):
        route_totals(m, ["A", "E"])


# ---------------------------------------------------------------- brute force


def random_map(seed: int, scenario: str) -> MetroMap:
    rng = random.Random(seed)
    n = rng.randint(5, 9)
    while True:
        g = nx.gnm_random_graph(n, rng.randint(n, n + 5), seed=rng.randint(0, 10**6))
        if nx.is_connected(g):
            break
    metro = scenario == "metromap"
    edges, station_lines = [], {i: set() for i in g}
    for a, b in g.edges:
        lines = tuple(sorted(rng.sample(["L1", "L2", "L3"], rng.choice([1, 1, 2])))) if metro else ()
        for x in (a, b):
            station_lines[x].update(lines)
        edges.append(
            Edge(
                f"S{a}",
                f"S{b}",
                lines,
                rng.randint(200, 300) / 100,
                rng.randint(0, 150) / 100,
                rng.choice([0.0, rng.randint(0, 100) / 100]),
                rng.choice([0.0, 0.0, rng.randint(50, 100) / 100]),
            )
        )
    stations = {}
    for i in g:
        lines = tuple(sorted(station_lines[i])) if metro else ()
        stations[f"S{i}"] = Station(
            f"S{i}",
            lines,
            0,
            0,
            rng.randint(50, 200) / 100,
            rng.choice([0.0, 0.3]),
            rng.choice([0.0, rng.randint(0, 100) / 100]),
            rng.randint(50, 100) / 100,
            float(rng.randint(5, 15)) if len(lines) > 1 else 0.0,
        )
    return MetroMap(f"r{seed}", scenario, stations, edges)


def brute_force(m, s, t, w, objective):
    g = nx.Graph([(e.a, e.b) for e in m.edges])
    costs = {}
    for path in nx.all_simple_paths(g, s, t):
        for tr in transfer_sets(m, path, w[0]):
            costs[format_route(annotated_names(path, tr))] = route_cost(m, path, tr, w, objective)
    low = min(costs.values())
    return sorted(r for r, j in costs.items() if j <= low + 1e-9)


WEIGHT_SETS = [
    (1, 0, 0, 0),
    (0, 1, 0, 0),
    (0, 0, 1, 0),
    (0, 0, 0, 1),
    (0.25, 0.25, 0.25, 0.25),
    (0.1, 0, 0.6, 0.3),
    (0, 0.2, 0.5, 0.3),
    (0.5, 0.3, 0, 0.2),
]


@pytest.mark.parametrize("objective", ["mean", "sum"])
def test_optimal_routes_equal_brute_force_on_small_maps(objective):
    for seed in range(150):
        scenario = "travelmap" if seed % 4 == 0 else "metromap"
        m = random_map(seed, scenario)
        rng = random.Random(seed)
        s, t = rng.sample(sorted(m.stations), 2)
        w = WEIGHT_SETS[seed % len(WEIGHT_SETS)]
        assert optimal_routes(m, s, t, w, objective=objective) == brute_force(m, s, t, w, objective), (seed, w)


@pytest.mark.parametrize("objective", ["mean", "sum"])
def test_optimal_routes_equal_brute_force_on_generated_travel_maps_with_hubs(objective):
    for seed in range(12):
        m = generate_travel_map(seed, n_spots=(7, 10), n_hubs=(2, 2), width=800, height=900)
        hubs = sorted(v for v, st in m.stations.items() if st.time == 0)
        others = sorted(v for v in m.stations if v not in hubs)
        rng = random.Random(seed)
        # hubs as source, destination and (often) on the way
        for s, t in ((hubs[0], rng.choice(others)), (rng.choice(others), hubs[1]), tuple(rng.sample(others, 2))):
            w = WEIGHT_SETS[(seed + len(s)) % len(WEIGHT_SETS)]
            assert optimal_routes(m, s, t, w, objective=objective) == brute_force(m, s, t, w, objective), (seed, s, t)


def test_travelmap_hub_price_counts_only_at_the_destination():
    def spot(name, time_, price):
        return Station(name, (), 0, 0, time_, price, 3.0, 0.5)

    stations = {
        "Air": spot("Air", 0.0, 300.0),
        "B": spot("B", 30.0, 20.0),
        "Rail": spot("Rail", 0.0, 200.0),
        "D": spot("D", 40.0, 50.0),
    }
    edges = [
        Edge("Air", "B", (), 10.0, 11.0, 4.0, 0.9),
        Edge("B", "Rail", (), 20.0, 12.0, 4.0, 0.9),
        Edge("Rail", "D", (), 30.0, 13.0, 4.0, 0.9),
    ]
    m = MetroMap("hubs", "travelmap", stations, edges)
    # source hub and intermediate hub add no price; every time counts (hubs' is 0)
    assert route_totals(m, ["Air", "B", "Rail", "D"])["Total_Price"] == 11 + 12 + 13 + 20 + 50
    assert route_totals(m, ["Air", "B", "Rail", "D"])["Total_Time"] == 10 + 20 + 30 + 30 + 40
    # a hub as the destination is priced
    assert route_totals(m, ["D", "Rail"])["Total_Price"] == 13 + 50 + 200
    assert route_cost(m, ["D", "Rail"], (), (0, 1, 0, 0)) == pytest.approx((13 + 50 + 200) / 200)
    # the rule is Travelmap's: the same stations in a metro map are all priced
    metro = MetroMap("hubs", "metromap", stations, edges)
    assert route_totals(metro, ["Air", "B", "Rail", "D"])["Total_Price"] == 11 + 12 + 13 + 300 + 20 + 200


def test_transfer_sets_equal_brute_force_over_line_assignments():
    checked = 0
    for seed in range(60):
        m = random_map(seed, "metromap")
        g = nx.Graph([(e.a, e.b) for e in m.edges])
        rng = random.Random(seed)
        s, t = rng.sample(sorted(m.stations), 2)
        for path in itertools.islice(nx.all_simple_paths(g, s, t), 5):
            for tw in (0.0, 1.0):
                options = [m.edge_between(a, b).lines for a, b in zip(path, path[1:])]
                scored = {}
                for assignment in itertools.product(*options):
                    tr = frozenset(path[i] for i in range(1, len(path) - 1) if assignment[i - 1] != assignment[i])
                    key = (round(sum(m.stations[v].transfer_time for v in tr) * tw, 9), len(tr))
                    scored.setdefault(key, set()).add(tr)
                best = scored[min(scored)]
                assert set(transfer_sets(m, path, tw)) == best
                checked += 1
    assert checked > 100


def test_routes_on_forty_station_maps():
    # how fast: bench/fail_fast.py (40-station maps against 10-station ones)
    for seed in range(3):
        m = generate_metro_map(seed, n_lines=6, loop_probability=1.0)
        assert len(m.stations) >= 30
        rng = random.Random(seed)
        for _ in range(8):
            s, t = rng.sample(sorted(m.stations), 2)
            for w in WEIGHT_SETS:
                assert optimal_routes(m, s, t, w)


# ---------------------------------------------------------------- the authors' sample


def _items(root: Path, scenario: str):
    for f in sorted((root / scenario / "data" / "test_set").glob("*_test_set.json")):
        for item in load_test_set(f):
            yield category_of_test_set(f), item


def _sample_map(root: Path, scenario: str, country: str, city: str, fmt: str) -> MetroMap:
    """The sample map read from its .json or its .csv tables (the two must say the same)."""
    if fmt == "json":
        return load_authors_map(root, scenario, country, city)
    folder = root / scenario / "tabulars" / country
    return map_from_rows(
        load_table_file(folder / f"{city}_edge.csv"),
        load_table_file(folder / f"{city}_vertex.csv"),
        None,
        scenario,
        name=city,
        country=country,
    )


@pytest.mark.conformance
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_cleveland_references_and_totals_are_reproduced(fmt):
    root = peers_or_skip()
    m = _sample_map(root, "metromap", "america", "cleveland", fmt)
    seen = set()
    for category, item in _items(root, "metromap"):
        plan_on = mix_map(m) if category == "mix" else m
        weights = item.get("weights")
        assert reference_routes(plan_on, item["station_1"], item["station_2"], weights) == item["routes"], category
        # the counts the authors store beside the routes follow from them
        assert item["route_vertex_numbers"] == [len(parse_route(r)[0]) for r in item["routes"]], category
        assert item["transfer_vertex_numbers"] == [len(parse_route(r)[1]) for r in item["routes"]], category
        if weights:
            path, transfers = parse_route(item["routes"][0])
            totals = route_totals(plan_on, path, transfers)
            for key, value in totals.items():
                assert value == pytest.approx(item[key], abs=1e-9), (category, key)
        seen.add(category)
    assert len(seen) == 12
    # the only_vertex2 (Map+Mix_tab) label is station-only: 4.4 / 2.09 / 0.6375 / 0.755
    mix_totals = route_totals(
        mix_map(m),
        *parse_route("Triskett-West 117th_Madison-West Boulevard_Cudell-West 65th_Lorain-West 25th_Ohio City"),
    )
    assert mix_totals == {
        "Total_Time": 4.4,
        "Total_Price": 2.09,
        "Average_Comfort Level": 0.6375,
        "Average_Reliability": 0.755,
    }


@pytest.mark.conformance
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_travelmap_sample_matches_the_additive_objective(fmt):
    root = peers_or_skip()
    m = _sample_map(root, "travelmap", "cambodia", "angkorWar", fmt)
    differ_under_mean = set()
    seen = set()
    for category, item in _items(root, "travelmap"):
        seen.add(category)
        assert item["route_vertex_numbers"] == [len(r.split("-")) for r in item["routes"]], category
        plan_on = mix_map(m) if category == "mix" else m
        weights = item.get("weights")
        s, t = item["spot_1"], item["spot_2"]
        assert reference_routes(plan_on, s, t, weights, objective="sum") == item["routes"], category
        if weights:
            path, _ = parse_route(item["routes"][0])
            for key, value in route_totals(plan_on, path).items():
                assert value == pytest.approx(item[key], abs=1e-9), (category, key)
            if reference_routes(plan_on, s, t, weights, objective="mean") != item["routes"]:
                differ_under_mean.add(category)
    # the paper's mean objective prefers long detours for Comfort-only and Reliability-only
    assert differ_under_mean == {"C", "R"}
    assert len(seen) == 12
