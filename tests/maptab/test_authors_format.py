"""Reading the authors' release layout and writing geoeval's maps in it."""

from pathlib import Path

import pytest
from PIL import Image

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.authors.format import (
    CATEGORY_SUFFIX,
    category_of_test_set,
    load_authors_map,
    load_test_set,
    query_item,
    rp_test_set_path,
    write_authors_layout,
)
from geoeval.suites.maptab.env.tables import mix_map, mix_table, parse_table
from geoeval.suites.maptab.generator.checks import run_quality_checks
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.routing import reference as routing
from geoeval.suites.maptab.rp.queries import CATEGORIES, build_rp_queries

PEERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "maptab"


def peers_or_skip() -> Path:
    if not PEERS.is_dir():
        pytest.skip("../shared/peers/maptab (the authors' sample) is not present")
    return PEERS


def test_category_suffixes():
    assert CATEGORY_SUFFIX["TPR"] == "map_and_tab_with_constraint_1_2_4"
    assert CATEGORY_SUFFIX["mix"] == "map_and_tab_with_constraint_1_2_3_4_only_vertex2"
    assert category_of_test_set(Path("metromap_shortest_path_query_only_tab_test_set.json")) == "edge_only"
    assert (
        category_of_test_set(Path("travelmap_shortest_path_query_map_and_tab_with_constraint_2_3_4_test_set.json"))
        == "PCR"
    )
    with pytest.raises(GeoevalError):
        category_of_test_set(Path("notes.json"))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    m = generate_metro_map(13, n_lines=3, loop_probability=1.0, name="synthopolis")
    qs = build_rp_queries(m, list(CATEGORIES), 6, seed=2, map_difficulty="Hard")
    paths = write_authors_layout(m, qs, root, Image.new("RGB", (40, 30), "white"))
    return root, m, qs, paths


def test_layout_files(written):
    root, m, _qs, paths = written
    base = root / "metromap"
    assert (base / "images" / "synthetic" / "synthopolis.png").is_file()
    for kind in ("edge", "vertex", "vertex2"):
        assert (base / "tabulars" / "synthetic" / f"synthopolis_{kind}.csv").read_bytes().startswith(b"\xef\xbb\xbf")
        assert (base / "tabulars" / "synthetic" / f"synthopolis_{kind}.json").is_file()
    for category in CATEGORIES:
        assert rp_test_set_path(root, "metromap", category) in paths
    vertex2 = parse_table((base / "tabulars" / "synthetic" / "synthopolis_vertex2.json").read_text("utf-8"), "json")
    assert vertex2 == mix_table(m)


def test_round_trip_map(written):
    root, m, _qs, _paths = written
    back = load_authors_map(root, "metromap", "synthetic", "synthopolis")
    assert (back.width, back.height) == (40, 30)
    assert run_quality_checks(back) == []
    assert [(e.a, e.b, e.lines, e.time, e.price, e.comfort, e.reliability) for e in back.edges] == [
        (e.a, e.b, e.lines, e.time, e.price, e.comfort, e.reliability) for e in m.edges
    ]
    for name, st in m.stations.items():
        b = back.stations[name]
        assert (b.lines, b.time, b.price, b.comfort, b.reliability, b.transfer_time) == (
            st.lines,
            st.time,
            st.price,
            st.comfort,
            st.reliability,
            st.transfer_time,
        )


def test_round_trip_test_sets(written):
    root, m, qs, _paths = written
    back = load_authors_map(root, "metromap", "synthetic", "synthopolis")
    for category in CATEGORIES:
        items = load_test_set(rp_test_set_path(root, "metromap", category))
        mine = [q for q in qs if q.category == category]
        assert items == [query_item(q, m) for q in mine]
        for item, q in zip(items, mine):
            assert item["figure"] == "metromap/images/synthetic/synthopolis.png"
            assert item["route_vertex_numbers"] == [len(r.split("-")) for r in q.routes]
            assert ("edge_tab" in item) == (category != "mix")
            assert item["vertex_tab"].endswith("_vertex2.json" if category == "mix" else "_vertex.json")
            # the labels can be recomputed from the files alone
            plan_on = mix_map(back) if category == "mix" else back
            assert (
                routing.reference_routes(plan_on, item["station_1"], item["station_2"], item.get("weights"))
                == item["routes"]
            )


def test_rewriting_replaces_the_maps_items_and_keeps_others(written, tmp_path):
    root, m, qs, _ = written
    write_authors_layout(m, qs, tmp_path, render=False)
    write_authors_layout(m, qs, tmp_path, render=False)
    other = generate_metro_map(14, name="othertown")
    write_authors_layout(other, build_rp_queries(other, ["T"], 3, seed=1), tmp_path, render=False)
    items = load_test_set(rp_test_set_path(tmp_path, "metromap", "T"))
    assert [it["city"] for it in items] == ["synthopolis"] * 6 + ["othertown"] * 3


@pytest.mark.conformance
def test_written_items_have_the_authors_keys(written):
    peers = peers_or_skip()
    root, _m, _qs, _ = written
    optional = {"shortest_route_vertex_numbers_rank"}  # a global rank geoeval does not compute
    for category in CATEGORIES:
        theirs = load_test_set(rp_test_set_path(peers, "metromap", category))[0]
        ours = load_test_set(rp_test_set_path(root, "metromap", category))[0]
        assert set(ours) == set(theirs) - optional, category
        assert list(ours)[:4] == list(theirs)[:4]


@pytest.mark.conformance
def test_load_the_authors_maps():
    root = peers_or_skip()
    m = load_authors_map(root, "metromap", "america", "cleveland")
    assert (len(m.stations), len(m.edges), list(m.lines)) == (18, 17, ["Red Line"])
    red = m.lines["Red Line"]
    assert not red.loop and {red.stations[0], red.stations[-1]} == {"Hopkins Airport", "Louis Stokes_Windermere"}
    assert run_quality_checks(m) == []
    assert m.stations["Triskett"].time == 0.7 and m.edge_between("Triskett", "West Park").price == 0.2
    t = load_authors_map(root, "travelmap", "cambodia", "angkorWar")
    assert (len(t.stations), len(t.edges), t.lines) == (26, 29, {})
    assert run_quality_checks(t) == []
    items = load_test_set(rp_test_set_path(root, "metromap", "TPCR"))
    assert items[0]["weights"] == [0.212746, 0.354479, 0.30175, 0.131025]
    with pytest.raises(GeoevalError):
        load_authors_map(root, "metromap", "america", "atlantis")
