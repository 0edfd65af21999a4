"""The synthetic Metromap and Travelmap generators and the B.5 / B.6 quality checks."""

import colorsys
import dataclasses
import difflib
import itertools

import networkx as nx
import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.generator.checks import layout_violations, range_violations, run_quality_checks
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.travel import TRAVEL_HUB_PRICES, generate_travel_map, travel_range_violations
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station

SEEDS = range(25)


def _fingerprint(m: MetroMap):
    return (
        [dataclasses.astuple(s) for s in m.stations.values()],
        [dataclasses.astuple(e) for e in m.edges],
        [dataclasses.astuple(ln) for ln in m.lines.values()],
    )


def test_same_seed_same_map_and_different_seed_different_map():
    assert _fingerprint(generate_metro_map(11)) == _fingerprint(generate_metro_map(11))
    assert _fingerprint(generate_metro_map(11)) != _fingerprint(generate_metro_map(12))


@pytest.mark.parametrize("n_lines,loop", [(3, 0.2), (4, 1.0), (5, 0.5), (2, 0.0)])
def test_generated_maps_pass_every_check(n_lines, loop):
    for seed in SEEDS:
        m = generate_metro_map(seed, n_lines=n_lines, loop_probability=loop)
        assert run_quality_checks(m) == [], seed
        assert layout_violations(m) == [], seed
        assert range_violations(m) == [], seed
        assert len(m.lines) == n_lines
        g = nx.Graph([(e.a, e.b) for e in m.edges])
        assert nx.is_connected(g) and set(g) == set(m.stations)


def test_lines_cross_at_shared_transfer_stations():
    for seed in SEEDS:
        m = generate_metro_map(seed, n_lines=3)
        transfers = [s for s in m.stations.values() if len(s.lines) > 1]
        assert len(transfers) >= 2  # three lines, connected
        for s in m.stations.values():
            if len(s.lines) > 1:
                assert 5 <= s.transfer_time <= 15 and s.transfer_time == int(s.transfer_time)
            else:
                assert s.transfer_time == 0
        for e in m.edges:
            assert len(e.lines) == 1  # lines share stations, never track


def test_loop_line_when_asked():
    m = generate_metro_map(3, n_lines=3, loop_probability=1.0)
    loops = [ln for ln in m.lines.values() if ln.loop]
    assert len(loops) == 1
    seq = loops[0].stations
    assert len(set(seq)) == len(seq)  # each station listed once
    assert m.edge_between(seq[-1], seq[0]) is not None
    assert not any(ln.loop for ln in generate_metro_map(3, loop_probability=0.0).lines.values())


def test_station_counts_follow_stations_per_line():
    m = generate_metro_map(5, n_lines=3, stations_per_line=(6, 8), loop_probability=0.0)
    for ln in m.lines.values():
        assert 6 <= len(ln.stations) <= 8


def test_names_are_dissimilar_short_and_unique():
    for seed in range(10):
        m = generate_metro_map(seed, n_lines=5)
        names = list(m.stations)
        assert len(set(n.lower() for n in names)) == len(names)
        for a, b in itertools.combinations(names, 2):
            assert difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio() < 0.5, (a, b)
            assert difflib.SequenceMatcher(None, b.lower(), a.lower()).ratio() < 0.5, (a, b)
        assert all(4 <= len(n) <= 20 and "-" not in n and "," not in n for n in names)


def test_line_colours_are_distinct_and_saturated():
    m = generate_metro_map(2, n_lines=8)
    colours = [ln.color for ln in m.lines.values()]
    assert len(set(colours)) == len(colours)
    for c in colours:
        r, g, b = (int(c[i : i + 2], 16) / 255 for i in (1, 3, 5))
        _h, lightness, saturation = colorsys.rgb_to_hls(r, g, b)
        assert saturation > 0.5 and 0.2 < lightness < 0.8, c


def test_bad_parameters_are_user_errors():
    with pytest.raises(GeoevalError):
        generate_metro_map(1, n_lines=0)
    with pytest.raises(GeoevalError):
        generate_metro_map(1, stations_per_line=(8, 6))
    with pytest.raises(GeoevalError):
        generate_metro_map(1, stations_per_line=(6, 30))


# ---------------------------------------------------------------- the checks catch faults


def _st(name, lines, x=0.0, y=0.0, tt=0.0):
    return Station(name, tuple(lines), x, y, 1.0, 0.0, 0.5, 0.8, tt)


def _tiny():
    stations = {
        "A": _st("A", ["Red"], 200, 200),
        "B": _st("B", ["Red", "Blue"], 400, 200, tt=6),
        "C": _st("C", ["Red"], 600, 200),
        "D": _st("D", ["Blue"], 400, 400),
    }
    edges = [
        Edge("A", "B", ("Red",), 2.5, 1.0, 0.5, 0.0),
        Edge("B", "C", ("Red",), 2.5, 1.0, 0.5, 0.0),
        Edge("B", "D", ("Blue",), 2.5, 1.0, 0.5, 0.0),
    ]
    lines = {"Red": Line("Red", "#ff0000", ("A", "B", "C")), "Blue": Line("Blue", "#0000ff", ("B", "D"))}
    return MetroMap("tiny", "metromap", stations, edges, lines, width=800, height=600)


def test_tiny_map_is_clean():
    m = _tiny()
    assert run_quality_checks(m) == []
    assert layout_violations(m) == []


def _has(problems, word):
    return any(word in p for p in problems)


def test_quality_checks_catch_faults():
    m = _tiny()
    m.edges.append(Edge("C", "B", ("Red",), 2.5, 1.0, 0.5, 0.0))
    assert _has(run_quality_checks(m), "duplicate edge")

    m = _tiny()
    m.edges.append(Edge("C", "Z", ("Red",), 2.5, 1.0, 0.5, 0.0))
    assert _has(run_quality_checks(m), "not a station")

    m = _tiny()
    m.stations["B"] = _st("B", ["Red", "Blue"], 400, 200, tt=0)
    assert _has(run_quality_checks(m), "Transfer Time")

    m = _tiny()
    m.stations["E"] = _st("E", ["Red"], 700, 400)
    problems = run_quality_checks(m)
    assert _has(problems, "on no edge") and _has(problems, "not connected")

    m = _tiny()
    m.edges[2] = Edge("B", "D", ("Green",), 2.5, 1.0, 0.5, 0.0)
    problems = run_quality_checks(m)
    assert _has(problems, "runs on")

    m = _tiny()  # a station listed on a line it has no edge on breaks the occurrence identity
    m.stations["C"] = _st("C", ["Red", "Blue"], 600, 200, tt=5)
    problems = run_quality_checks(m)
    assert _has(problems, "station occurrences")


def test_occurrence_identity_counts_loops():
    m = _tiny()
    m.stations["D"] = _st("D", ["Blue"], 400, 400)
    m.stations["E"] = _st("E", ["Blue"], 600, 400)
    m.edges += [Edge("D", "E", ("Blue",), 2, 1, 0.5, 0), Edge("E", "B", ("Blue",), 2, 1, 0.5, 0)]
    m.lines["Blue"] = Line("Blue", "#0000ff", ("B", "D", "E"), loop=True)
    m.__dict__.pop("_edge_index_cache", None)
    m.__dict__.pop("_adjacency_cache", None)
    # Blue is a loop B-D-E-B: 3 + 2 edges + 2 lines - 1 loop = 6 = 3 (Red) + 3 (Blue) occurrences
    assert run_quality_checks(m) == []


def test_layout_checks_catch_faults():
    m = _tiny()
    m.stations["C"] = dataclasses.replace(m.stations["C"], x=480, y=200)
    problems = layout_violations(m)
    assert _has(problems, "px apart")

    m = _tiny()  # D moved beyond C on the same straight line: segment B-D runs through C
    m.stations["D"] = dataclasses.replace(m.stations["D"], x=720, y=200)
    problems = layout_violations(m)
    assert _has(problems, "passes within") and _has(problems, "overlap collinearly")

    m = _tiny()  # a new segment X-Y crossing A-B between the stations
    m.stations["X"] = _st("X", ["Blue"], 300, 100)
    m.stations["Y"] = _st("Y", ["Blue"], 300, 330)
    m.edges.append(Edge("X", "Y", ("Blue",), 2, 1, 0.5, 0))
    assert _has(layout_violations(m), "cross away")

    m = _tiny()
    m.stations["A"] = dataclasses.replace(m.stations["A"], x=60)
    assert _has(layout_violations(m), "margin")


def test_range_violations_catch_out_of_range_values():
    m = generate_metro_map(1)
    e = m.edges[0]
    m.edges[0] = dataclasses.replace(e, time=3.5)
    m.edges[1] = dataclasses.replace(m.edges[1], price=0.123)
    problems = range_violations(m)
    assert _has(problems, "outside") and _has(problems, "2 decimals")


# ---------------------------------------------------------------- Travelmap


TRAVEL = [generate_travel_map(seed) for seed in range(30)]


def test_travel_maps_are_deterministic_and_seed_dependent():
    assert _fingerprint(generate_travel_map(5)) == _fingerprint(TRAVEL[5])
    assert _fingerprint(TRAVEL[5]) != _fingerprint(TRAVEL[6])


def test_travel_maps_pass_every_check():
    for seed, m in enumerate(TRAVEL):
        assert m.scenario == "travelmap" and m.lines == {} and (m.width, m.height) == (1200, 1400)
        assert run_quality_checks(m) == [], seed
        assert layout_violations(m) == [], seed
        assert travel_range_violations(m) == [], seed
        assert 12 <= len(m.stations) <= 24
        g = nx.Graph([(e.a, e.b) for e in m.edges])
        # one connected graph over every spot, with at least one loop (B.6; "loop connections")
        assert nx.is_connected(g) and set(g) == set(m.stations)
        assert len(m.edges) >= len(m.stations)
        assert all(not st.lines and st.transfer_time == 0 for st in m.stations.values())
        low = [n.lower() for n in m.stations]
        assert all(difflib.SequenceMatcher(None, a, b).ratio() < 0.5 for a in low for b in low if a != b)


def test_travel_hubs_are_named_timeless_and_priced_as_e1_says():
    hubs = [st for m in TRAVEL for st in m.stations.values() if st.time == 0]
    per_map = [sum(st.time == 0 for st in m.stations.values()) for m in TRAVEL]
    assert set(per_map) == {0, 1, 2}
    assert all(st.price in TRAVEL_HUB_PRICES for st in hubs)
    assert all(st.name.endswith((" Airport", " Station")) for st in hubs)
    spots = [st for m in TRAVEL for st in m.stations.values() if st.time != 0]
    assert not any(st.name.endswith((" Airport", " Station")) for st in spots)


def test_travel_attribute_distributions_follow_e1():
    edges = [e for m in TRAVEL for e in m.edges]
    spots = [st for m in TRAVEL for st in m.stations.values() if st.time != 0]
    assert {e.time for e in edges} <= set(range(10, 61)) and len({e.time for e in edges}) > 30
    prices = sorted(e.price for e in edges)
    assert prices[0] >= 10 and prices[-1] <= 80
    assert prices[len(prices) // 2] < 40  # "smaller values occurring more frequently"
    assert all(st.price % 5 == 0 and 10 <= st.price <= 200 for st in spots)
    assert all(30 <= st.time <= 180 for st in spots)
    for values in ([e.comfort for e in edges], [st.comfort for st in spots]):
        assert all(round(v * 10) == v * 10 for v in values)
        assert 0.6 < sum(v >= 3.0 for v in values) / len(values) < 0.8  # ">= 3.0 the majority"
    for values, low in (([e.reliability for e in edges], 1), ([st.reliability for st in spots], 60)):
        days = [round(v * 365) for v in values]
        assert all(abs(d / 365 - v) < 1e-6 for d, v in zip(days, values))
        assert min(days) >= low and max(days) <= 365
        assert 0.6 < sum(d > 180 for d in days) / len(days) < 0.85  # "values greater than 180 more frequent"


def test_travel_generator_parameters_and_errors():
    m = generate_travel_map(1, n_spots=(6, 6), n_hubs=(2, 2), width=800, height=800)
    assert len(m.stations) == 6 and sum(st.time == 0 for st in m.stations.values()) == 2
    assert layout_violations(m) == [] and run_quality_checks(m) == []
    for kwargs in (
        {"n_spots": (2, 5)},
        {"n_spots": (8, 6)},
        {"n_hubs": (0, 6), "n_spots": (6, 8)},
        {"extra_edges": 1.5},
        {"n_spots": (40, 60), "width": 700, "height": 700},
    ):
        with pytest.raises(GeoevalError):
            generate_travel_map(0, **kwargs)


def test_travel_range_violations_catch_bad_values():
    m = TRAVEL[0]
    spot = next(st for st in m.stations.values() if st.time != 0)
    bad = dataclasses.replace(
        m,
        stations={**m.stations, spot.name: dataclasses.replace(spot, time=0.0, price=150.0)},
        edges=[dataclasses.replace(m.edges[0], comfort=5.5)] + m.edges[1:],
    )
    problems = travel_range_violations(bad)
    assert any("hub" in p and "150" in p for p in problems)
    assert any("Comfort Level = 5.5" in p for p in problems)
