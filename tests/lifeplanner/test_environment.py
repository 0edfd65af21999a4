"""The synthetic city: schema, determinism, content the paper describes, opening hours, access
separation."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timezone

import duckdb
import networkx as nx
import pytest

from geoeval.suites.lifeplanner.city import layout as city_layout
from geoeval.suites.lifeplanner.city.environment import build_synthetic_city, read_city_info
from geoeval.suites.lifeplanner.city.opening_hours import (
    OpeningHoursError,
    closing_minute,
    is_open,
    parse_opening_hours,
)
from geoeval.suites.lifeplanner.city.schema import MEMORY_FIELDS, agent_visible_columns, data_engine_visible_columns

from .conftest import N_NOTES, N_PLACES, SEED
from .helpers import rows

TABLES = ("places", "nodes", "ways", "notes", "comments", "note_mentions", "note_facts", "meta")


def _dump(path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for t in TABLES:
            out[t] = con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


# ------------------------------------------------------------------ schema and determinism


def test_tables_have_the_paper_fields(db):
    cols = {t: [r[0] for r in db.execute(f"DESCRIBE {t}").fetchall()] for t in TABLES}
    for field in (
        "id",
        "name",
        "place_type",
        "address",
        "opentime_week",
        "rating",
        "cost",
        "tag",
        "alias",
        "long_mem",
        "short_mem",
        "lon",
        "lat",
    ):
        assert field in cols["places"]
    for field in (
        "note_id",
        "title",
        "desc",
        "time",
        "liked_count",
        "collected_count",
        "comment_count",
        "share_count",
        "tag_list",
    ):
        assert field in cols["notes"]
    for field in ("comment_id", "note_id", "time", "content", "like_count"):
        assert field in cols["comments"]
    for field in (
        "gid",
        "name",
        "source",
        "target",
        "node_ids",
        "length_m",
        "speed_walking",
        "speed_cycling",
        "speed_driving",
    ):
        assert field in cols["ways"]


def test_counts_match_the_request_and_city_info(city_path, db):
    info = read_city_info(city_path)
    assert (info.seed, info.n_places, info.n_notes) == (SEED, N_PLACES, N_NOTES)
    assert db.execute("SELECT count(*) FROM places").fetchone()[0] == N_PLACES
    assert db.execute("SELECT count(*) FROM notes").fetchone()[0] == N_NOTES
    assert db.execute("SELECT count(*) FROM comments").fetchone()[0] == info.n_comments
    assert db.execute("SELECT count(*) FROM ways").fetchone()[0] == info.n_ways
    # about 4 comments per note by default, never more than 10 on one note
    assert 3.0 < info.n_comments / N_NOTES < 5.0
    assert db.execute("SELECT max(c) FROM (SELECT count(*) c FROM comments GROUP BY note_id)").fetchone()[0] <= 10


def test_same_seed_same_city_other_seed_other_city(tmp_path):
    a, b, c = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "c.duckdb"
    build_synthetic_city(a, seed=5, n_places=60, n_notes=200)
    build_synthetic_city(b, seed=5, n_places=60, n_notes=200)
    build_synthetic_city(c, seed=6, n_places=60, n_notes=200)
    da, db_, dc = _dump(a), _dump(b), _dump(c)
    assert da == db_
    assert da["places"] != dc["places"] and da["notes"] != dc["notes"]


def test_bad_parameters_are_refused(tmp_path):
    with pytest.raises(ValueError):
        build_synthetic_city(tmp_path / "x.duckdb", seed=1, n_places=1, n_notes=10)
    with pytest.raises(ValueError):
        build_synthetic_city(tmp_path / "x.duckdb", seed=1, n_places=10, n_notes=10, area_km2=0)
    assert not (tmp_path / "x.duckdb").exists()


# ------------------------------------------------------------------ places


def test_places_look_like_the_paper(db):
    places = rows(db, "SELECT * FROM places")
    ids = [p["id"] for p in places]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"B0[0-9A-Z]{8}", i) for i in ids)
    assert len({p["name"] for p in places}) == len(places)  # names unique; ambiguity lives in the notes
    assert all(re.fullmatch(r"[^|]+\|[^|]+", p["place_type"]) for p in places)
    assert {"Food & Beverages|Coffee House", "Scenery Spot|Park"} <= {p["place_type"] for p in places}
    ratings = [p["rating"] for p in places if p["rating"] is not None]
    assert ratings and all(1.0 <= r <= 5.0 for r in ratings)
    assert all(p["cost"] is None or p["cost"] >= 0 for p in places)
    assert any(p["cost"] is None for p in places) and any(p["rating"] is None for p in places)
    # structured tags "Key: v1, v2; Key2: v3"
    assert all(re.fullmatch(r"[^:;]+: [^;]+(; [^:;]+: [^;]+)*", p["tag"]) for p in places)
    assert any(p["alias"] for p in places) and any(not p["alias"] for p in places)
    assert sum(bool(p["long_mem"]) for p in places) > len(places) / 2
    assert any(p["short_mem"] for p in places)
    # every opentime_week parses; irregular forms are present
    hours = [p["opentime_week"] for p in places]
    for h in hours:
        parse_opening_hours(h)
    assert "" in hours
    assert any(";" in h for h in hours) and any("," in h for h in hours)
    assert any(
        parse_opening_hours(h).known and not is_open(h, "Monday", "12:00") and is_open(h, "Tuesday", "12:00")
        for h in hours
        if h.startswith("Tuesday")
    )


def test_places_lie_in_the_area_and_lonlat_agree_with_metres(city_path, db):
    info = read_city_info(city_path)
    side = (info.area_km2**0.5) * 1000
    for p in rows(db, "SELECT x_m, y_m, lon, lat FROM places"):
        assert -0.01 <= p["x_m"] <= side + 0.01 and -0.01 <= p["y_m"] <= side + 0.01  # stored to the cm
    a, b = rows(db, "SELECT x_m, y_m, lon, lat FROM places ORDER BY id LIMIT 2")
    dx = (a["lon"] - b["lon"]) * city_layout._m_per_deg_lon(info.center_lat)
    dy = (a["lat"] - b["lat"]) * city_layout._M_PER_DEG_LAT
    assert abs((dx**2 + dy**2) ** 0.5 - ((a["x_m"] - b["x_m"]) ** 2 + (a["y_m"] - b["y_m"]) ** 2) ** 0.5) < 0.5


# ------------------------------------------------------------------ roads


def test_road_network_is_connected_for_every_vehicle_and_footways_bar_cars(db):
    ways = rows(db, "SELECT * FROM ways")
    assert {w["highway"] for w in ways} == {"primary", "secondary", "residential", "footway"}
    assert all(w["speed_driving"] is None for w in ways if w["highway"] == "footway")
    assert all(w["speed_walking"] and w["speed_cycling"] for w in ways)
    assert all(w["node_ids"] == [w["source"], w["target"]] and w["length_m"] > 0 for w in ways)
    n_nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
    for vehicle in ("walking", "cycling", "driving"):
        g = nx.Graph()
        g.add_nodes_from(range(n_nodes))
        g.add_edges_from((w["source"], w["target"]) for w in ways if w[f"speed_{vehicle}"])
        assert nx.is_connected(g), vehicle
    # the driving speeds differ by road class, so fastest and shortest routes can differ
    assert len({w["speed_driving"] for w in ways if w["speed_driving"]}) == 3


def test_every_place_is_attached_to_its_nearest_node(db):
    nodes = rows(db, "SELECT node_id, x_m, y_m FROM nodes")
    for p in rows(db, "SELECT x_m, y_m, node_id, access_m FROM places ORDER BY id LIMIT 25"):
        d = {n["node_id"]: ((n["x_m"] - p["x_m"]) ** 2 + (n["y_m"] - p["y_m"]) ** 2) ** 0.5 for n in nodes}
        assert d[p["node_id"]] == pytest.approx(min(d.values()), abs=0.05)
        assert p["access_m"] == pytest.approx(d[p["node_id"]], abs=0.1)


# ------------------------------------------------------------------ notes and comments


def test_notes_per_place_are_capped_at_twenty(db):
    """Section 3.1 collects up to 20 notes per place; crawl notes add secondary mentions."""
    subject = dict(
        db.execute("SELECT place_id, count(*) FROM note_mentions WHERE role = 'subject' GROUP BY 1").fetchall()
    )
    assert subject and max(subject.values()) <= 20
    roles = dict(db.execute("SELECT role, count(*) FROM note_mentions GROUP BY 1").fetchall())
    assert set(roles) == {"subject", "also"}
    # one subject per note that is about a place
    per_note = db.execute(
        "SELECT max(c) FROM (SELECT count(*) c FROM note_mentions WHERE role = 'subject' GROUP BY note_id)"
    ).fetchone()[0]
    assert per_note == 1


def test_note_ids_and_times_follow_rednote(db):
    notes = rows(db, "SELECT note_id, time, liked_count, collected_count, comment_count, share_count FROM notes")
    assert all(re.fullmatch(r"[0-9a-f]{24}", n["note_id"]) for n in notes)
    # the id starts with the publish time in hex
    assert all(int(n["note_id"][:8], 16) == int(n["time"].replace(tzinfo=timezone.utc).timestamp()) for n in notes)
    stored = dict(db.execute("SELECT note_id, count(*) FROM comments GROUP BY 1").fetchall())
    assert all(n["comment_count"] >= stored.get(n["note_id"], 0) for n in notes)
    assert all(min(n["liked_count"], n["collected_count"], n["share_count"]) >= 0 for n in notes)
    late = db.execute("SELECT count(*) FROM comments c JOIN notes n USING (note_id) WHERE c.time < n.time").fetchone()
    assert late[0] == 0


def test_mentions_are_noisy_and_ambiguous(db):
    kinds = Counter(k for (k,) in db.execute("SELECT mention_kind FROM note_mentions").fetchall())
    assert {"exact", "alias", "brand", "partial", "typo", "landmark"} <= set(kinds)
    assert kinds["exact"] < sum(kinds.values()) * 0.7  # most, but far from all, mentions are exact
    # a brand-only mention fits several branches: ambiguous by construction
    brand_mentions = [
        m for (m,) in db.execute("SELECT DISTINCT mention FROM note_mentions WHERE mention_kind = 'brand'").fetchall()
    ]
    assert any(
        db.execute("SELECT count(*) FROM places WHERE starts_with(name, ?)", [m]).fetchone()[0] >= 2
        for m in brand_mentions
    )
    # a typo mention is not the name, and every mention appears in the note text
    for note_id, mention, _kind in db.execute(
        "SELECT note_id, m.mention, mention_kind FROM note_mentions m LIMIT 300"
    ).fetchall():
        text = db.execute("SELECT title || ' ' || \"desc\" FROM notes WHERE note_id = ?", [note_id]).fetchone()[0]
        assert mention in text
    typos = db.execute(
        "SELECT m.mention, p.name FROM note_mentions m JOIN places p ON p.id = m.place_id WHERE mention_kind = 'typo'"
    ).fetchall()
    assert typos and sum(a != b for a, b in typos) >= 0.9 * len(typos)
    # 5% of notes name no place at all
    none = db.execute("SELECT count(*) FROM notes WHERE note_id NOT IN (SELECT note_id FROM note_mentions)").fetchone()[
        0
    ]
    assert 0.02 * N_NOTES <= none <= 0.08 * N_NOTES


def test_notes_carry_the_facts_the_memory_was_distilled_from(db):
    """long_mem/short_mem are summaries of posts: each recorded fact of a note is a value of the
    place's memory or tags, and its wording is in the note (or one of its comments)."""
    checked = 0
    for note_id, place_id, fact, source in db.execute("SELECT * FROM note_facts LIMIT 400").fetchall():
        kind, key, value = fact.split(":", 2)
        place = rows(db, "SELECT tag, long_mem, short_mem FROM places WHERE id = ?", [place_id])[0]
        field = {"long": "long_mem", "short": "short_mem", "tag": "tag"}[kind]
        assert f"{key}: " in place[field] and value in place[field]
        if source == "desc":
            text = db.execute('SELECT "desc" FROM notes WHERE note_id = ?', [note_id]).fetchone()[0]
        else:
            text = " ".join(
                c for (c,) in db.execute("SELECT content FROM comments WHERE note_id = ?", [note_id]).fetchall()
            )
        assert value in text
        checked += 1
    assert checked > 100


def test_search_text_is_the_lowercased_visible_text(db):
    for title, desc, tags, st in db.execute(
        'SELECT title, "desc", tag_list, search_text FROM notes LIMIT 50'
    ).fetchall():
        assert st == f"{title} {desc} {tags}".lower()


# ------------------------------------------------------------------ scale


@pytest.mark.slow
def test_paper_scale_builds_in_minutes(tmp_path):
    """Section 3.1: ~3,600 places and ~200,000 notes plus comments over 10 km² (how long it takes is
    measured by bench/lifeplanner_tools.py, not asserted here)."""
    info = build_synthetic_city(tmp_path / "paper.duckdb", seed=0, n_places=3600, n_notes=40000)
    assert 190_000 <= info.n_notes + info.n_comments <= 210_000
    assert info.area_km2 == 10.0 and info.n_places == 3600


# ------------------------------------------------------------------ opening hours


@pytest.mark.parametrize(
    "hours, day, hhmm, expected",
    [
        ("Monday-Sunday 10:00-22:00", "Monday", "09:59", False),
        ("Monday-Sunday 10:00-22:00", "Monday", "10:00", True),
        ("Monday-Sunday 10:00-22:00", "Sunday", "21:59", True),
        ("Monday-Sunday 10:00-22:00", "Sunday", "22:00", False),
        # past midnight, closed Mondays (the Sanqi Homebar form of Figure 10)
        ("Tuesday-Sunday 19:00-02:00", "Monday", "01:00", True),  # Sunday night spills into Monday
        ("Tuesday-Sunday 19:00-02:00", "Monday", "19:30", False),
        ("Tuesday-Sunday 19:00-02:00", "Tuesday", "01:00", False),  # Monday night: closed
        ("Tuesday-Sunday 19:00-02:00", "Wednesday", "01:59", True),
        ("Tuesday-Sunday 19:00-02:00", "Wednesday", "02:00", False),
        # split shift
        ("Monday-Sunday 11:00-14:00,17:00-21:30", "Friday", "15:00", False),
        ("Monday-Sunday 11:00-14:00,17:00-21:30", "Friday", "21:29", True),
        ("Monday-Sunday 11:00-14:00, 17:00-21:30", "Friday", "13:59", True),
        # weekdays and weekends differ
        ("Monday-Friday 09:00-18:00; Saturday-Sunday 10:00-20:00", "Saturday", "09:30", False),
        ("Monday-Friday 09:00-18:00; Saturday-Sunday 10:00-20:00", "Saturday", "19:00", True),
        ("Monday-Friday 09:00-18:00; Saturday-Sunday 10:00-20:00", "Friday", "19:00", False),
        # a later segment overrides an earlier one
        ("Monday-Sunday 09:00-21:00; Tuesday closed", "Tuesday", "12:00", False),
        ("Monday-Sunday 09:00-21:00; Tuesday closed", "Wednesday", "12:00", True),
        ("Monday,Wednesday,Friday 08:00-12:00", "Wednesday", "08:00", True),
        ("Monday,Wednesday,Friday 08:00-12:00", "Thursday", "09:00", False),
        ("Friday-Monday 10:00-18:00", "Sunday", "12:00", True),  # wrapping day range
        ("Friday-Monday 10:00-18:00", "Tuesday", "12:00", False),
        ("Monday-Sunday 00:00-24:00", "Thursday", "23:59", True),
        ("Open 24 hours", "Sunday", "03:00", True),
        ("Daily 07:00-23:00", "Sunday", "06:59", False),
        ("10:00-22:00", "Sunday", "12:00", True),  # no days: every day
        ("Mo-Fr 08:00-20:00", "Saturday", "12:00", False),  # OSM abbreviations
        ("Mo-Fr 08:00-20:00", "Tuesday", "12:00", True),
        ("Monday-Friday 09:00-18:00 (closed on public holidays)", "Monday", "10:00", True),
        ("Tuesday-Sunday 09:00-17:00 (last entry 16:30)", "Monday", "10:00", False),
        ("Monday–Sunday 10:00～22:00", "Monday", "12:00", True),  # other dashes
        ("", "Monday", "12:00", False),  # not available
        (None, "Monday", "12:00", False),
    ],
)
def test_is_open(hours, day, hhmm, expected):
    assert is_open(hours, day, hhmm) is expected


def test_is_open_accepts_day_numbers_and_minutes():
    assert is_open("Tuesday-Sunday 19:00-02:00", 0, 60) is True
    assert is_open("Tuesday-Sunday 19:00-02:00", 1, "01:00") is False


@pytest.mark.parametrize(
    "bad", ["sometimes open", "Monday-Sunday 10-22", "Funday 10:00-12:00", "Monday-Sunday 25:00-26:00", "Monday-Sunday"]
)
def test_unreadable_hours_raise(bad):
    with pytest.raises(OpeningHoursError):
        is_open(bad, "Monday", "12:00")


@pytest.mark.parametrize("day, hhmm", [(7, "12:00"), ("Someday", "12:00"), ("Monday", "24:00"), ("Monday", "9")])
def test_bad_query_time_raises(day, hhmm):
    with pytest.raises(ValueError):
        is_open("Monday-Sunday 10:00-22:00", day, hhmm)


def test_closing_minute():
    assert closing_minute("Monday-Sunday 10:00-22:00", "Monday", "20:40") == 22 * 60
    assert closing_minute("Tuesday-Sunday 19:00-02:00", "Friday", "23:00") == 26 * 60
    assert closing_minute("Tuesday-Sunday 19:00-02:00", "Monday", "01:00") == 2 * 60  # Sunday's night
    assert closing_minute("Monday-Sunday 10:00-22:00", "Monday", "09:00") is None
    assert not parse_opening_hours("").known


# ------------------------------------------------------------------ access separation


def test_memory_fields_are_visible_to_the_data_engine_only():
    assert MEMORY_FIELDS == ("long_mem", "short_mem")
    for table in ("places", "notes", "comments", "ways", "nodes", "note_mentions", "note_facts"):
        assert not set(MEMORY_FIELDS) & set(agent_visible_columns(table))
        assert set(agent_visible_columns(table)) <= set(data_engine_visible_columns(table))
    assert set(MEMORY_FIELDS) <= set(data_engine_visible_columns("places"))
    # Table 9: coordinates and graph internals are not retrievable; ground truth tables are invisible
    assert not {"lon", "lat", "x_m", "y_m", "node_id", "access_m", "popularity"} & set(agent_visible_columns("places"))
    assert agent_visible_columns("note_mentions") == () and agent_visible_columns("note_facts") == ()
    assert "search_text" not in agent_visible_columns("notes")
    assert set(agent_visible_columns("places")) == {
        "id",
        "name",
        "place_type",
        "address",
        "opentime_week",
        "rating",
        "cost",
        "tag",
        "alias",
    }
