"""Edge_tab / Vertex_tab / Mix_tab construction and CSV / JSON serialisation."""

import json
from pathlib import Path

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.env.tables import (
    edge_table,
    format_table,
    map_from_rows,
    mix_map,
    mix_table,
    parse_table,
    round_half_up,
    split_edge_label,
    vertex_table,
)
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.graph import Edge, MetroMap, Station

PEERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "maptab"


def peers_or_skip() -> Path:
    if not PEERS.is_dir():
        pytest.skip("../shared/peers/maptab (the authors' sample) is not present")
    return PEERS


def _two_line_map() -> MetroMap:
    st = {
        "Ash": Station("Ash", ("Red Line",), 0, 0, 1.0, 0.0, 0.5, 0.9),
        "Birch": Station("Birch", ("Red Line", "Blue Line"), 0, 0, 1.5, 0.0, 0.7, 0.6, 8.0),
        "Cedar": Station("Cedar", ("Red Line",), 0, 0, 0.5, 0.0, 0.0, 0.8),
        "Dale": Station("Dale", ("Blue Line",), 0, 0, 2.0, 0.0, 0.3, 0.55),
    }
    edges = [
        Edge("Ash", "Birch", ("Red Line",), 2.5, 0.3, 0.4, 0.0),
        Edge("Birch", "Cedar", ("Red Line",), 2.0, 0.6, 0.9, 0.0),
        Edge("Birch", "Dale", ("Blue Line",), 3.0, 1.15, 0.2, 0.0),
    ]
    return MetroMap("two", "metromap", st, edges)


def test_edge_and_vertex_rows():
    m = _two_line_map()
    assert edge_table(m)[0] == {
        "Edge": "Ash-Birch",
        "Line": ["Red Line"],
        "Time": 2.5,
        "Price": 0.3,
        "Comfort Level": 0.4,
        "Reliability": 0.0,
    }
    assert vertex_table(m, ["Vertex", "Line", "Transfer Time"])[1] == {
        "Vertex": "Birch",
        "Line": ["Red Line", "Blue Line"],
        "Transfer Time": 8,
    }
    with pytest.raises(GeoevalError):
        edge_table(m, ["Edge", "Transfer Time"])


def test_csv_like_the_authors():
    m = _two_line_map()
    text = format_table(vertex_table(m), "csv")
    assert text.splitlines()[0] == "Vertex,Line,Time,Price,Comfort Level,Reliability,Transfer Time"
    # whole-number columns as integers (Price, Transfer Time); multi-line stations joined by ", "
    assert text.splitlines()[2] == 'Birch,"Red Line, Blue Line",1.5,0,0.7,0.6,8'
    assert text.endswith("\n") and not text.startswith("\ufeff")


def test_json_like_the_authors():
    m = _two_line_map()
    data = json.loads(format_table(edge_table(m), "json"))
    assert data[2] == {
        "Edge": "Birch-Dale",
        "Line": ["Blue Line"],
        "Time": 3.0,
        "Price": 1.15,
        "Comfort Level": 0.2,
        "Reliability": 0.0,
    }
    vdata = json.loads(format_table(vertex_table(m), "json"))
    assert isinstance(vdata[1]["Transfer Time"], int) and vdata[1]["Line"] == ["Red Line", "Blue Line"]


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_round_trip(fmt):
    m = generate_metro_map(8, n_lines=4)
    for rows in (edge_table(m), vertex_table(m), mix_table(m), mix_table(m, drop_line=True)):
        assert parse_table(format_table(rows, fmt), fmt) == rows
    assert parse_table("\ufeff" + format_table(edge_table(m), fmt), fmt) == edge_table(m)


def test_round_half_up():
    assert round_half_up(0.745) == 0.75
    assert round_half_up((0.68 + 0.81) / 2) == 0.75
    assert round_half_up(0.125) == 0.13
    assert round_half_up(0.4449) == 0.44


def test_mix_table_merges_only_price_by_mean_of_adjacent_edges():
    m = _two_line_map()
    mix = {r["Vertex"]: r for r in mix_table(m)}
    # Birch: (0.3 + 0.6 + 1.15) / 3 = 0.6833 -> 0.68 ; Ash: 0.3 ; Dale: 1.15
    assert mix["Birch"]["Price"] == 0.68
    assert mix["Ash"]["Price"] == 0.3 and mix["Dale"]["Price"] == 1.15
    # the other columns keep the Vertex_tab values
    assert mix["Birch"]["Time"] == 1.5 and mix["Birch"]["Comfort Level"] == 0.7
    assert mix["Birch"]["Reliability"] == 0.6 and mix["Birch"]["Transfer Time"] == 8
    assert "Line" not in mix_table(m, drop_line=True)[0]
    mm = mix_map(m)
    assert mm.stations["Birch"].price == 0.68
    assert all(e.time == e.price == e.comfort == e.reliability == 0 for e in mm.edges)


def test_split_edge_label():
    assert split_edge_label("A b-C d") == ("A b", "C d")
    assert split_edge_label("Ab-Cd-Ef", {"Ab-Cd", "Ef"}) == ("Ab-Cd", "Ef")
    with pytest.raises(GeoevalError):
        split_edge_label("Ab-Cd-Ef")
    with pytest.raises(GeoevalError):
        split_edge_label("Abcd")


def test_map_from_rows_round_trip_and_merged_line_rows():
    m = generate_metro_map(9, n_lines=3, loop_probability=1.0)
    back = map_from_rows(edge_table(m), vertex_table(m), None, "metromap")
    assert [(e.a, e.b, e.lines, e.time, e.price, e.comfort) for e in back.edges] == [
        (e.a, e.b, e.lines, e.time, e.price, e.comfort) for e in m.edges
    ]
    for name, st in m.stations.items():
        b = back.stations[name]
        assert (b.lines, b.time, b.comfort, b.reliability, b.transfer_time) == (
            st.lines,
            st.time,
            st.comfort,
            st.reliability,
            st.transfer_time,
        )
    assert {k: (v.loop, len(v.stations)) for k, v in back.lines.items()} == {
        k: (v.loop, len(v.stations)) for k, v in m.lines.items()
    }
    # one row per line for a shared edge becomes one edge on both lines
    rows = [{"Edge": "A-B", "Line": ["Red"], "Time": 2.0}, {"Edge": "B-A", "Line": ["Blue"], "Time": 2.0}]
    g = map_from_rows(rows)
    assert len(g.edges) == 1 and g.edges[0].lines == ("Red", "Blue")
    assert g.stations["A"].lines == ("Red", "Blue") and g.stations["A"].time == 0.0


# ---------------------------------------------------------------- the authors' files


@pytest.mark.conformance
def test_authors_tables_reserialise_byte_for_byte():
    root = peers_or_skip()
    files = sorted(root.glob("*/tabulars/*/*_*.*"))
    assert len(files) >= 8
    for f in files:
        raw = f.read_bytes()
        text = raw.decode("utf-8-sig")
        fmt = f.suffix[1:]
        assert format_table(parse_table(text, fmt), fmt) == text, f.name


@pytest.mark.conformance
def test_cleveland_mix_prices_match_the_vertex2_label():
    root = peers_or_skip()
    tab = root / "metromap" / "tabulars" / "america"
    m = map_from_rows(
        parse_table((tab / "cleveland_edge.json").read_text("utf-8-sig"), "json"),
        parse_table((tab / "cleveland_vertex.csv").read_text("utf-8-sig"), "csv"),
    )
    mix = {r["Vertex"]: r["Price"] for r in mix_table(m)}
    stations = ["Triskett", "West 117th_Madison", "West Boulevard_Cudell", "West 65th_Lorain"]
    assert [mix[s] for s in stations] == [0.42, 0.45, 0.47, 0.75]  # SPEC: sum 2.09
    assert round(sum(mix[s] for s in stations), 2) == 2.09
