"""Real topology (issue 3 item 2): the GTFS importer, the Tokyo line lists of tokyo-train-board,
the computed layout and `env=maptab_real`."""

import importlib.util
import json
from pathlib import Path

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.env.gtfs import RealLine, load_gtfs_lines
from geoeval.suites.maptab.env.real import similar_name_pairs
from geoeval.suites.maptab.env.real_topology import (
    build_real_map,
    fold_name,
    normalise_lines,
    reassign_attributes,
    tokyo_lines,
)
from geoeval.suites.maptab.generator.checks import layout_violations, range_violations, run_quality_checks

# A tiny feed: route R1 (Red) runs Alder-Birch-Central-Dogwood, once each way, plus one short-turn
# trip; route R2 (Blue) runs Elm-Central-Fir Street, Central being two platforms (C1 for R1, C2 for
# R2) of one parent station; route R3 is the loop Ginkgo-Hazel-Fir Street-Ginkgo, whose Fir Street
# stop (F2) differs from R2's (F1) only in case and spacing; R4 has no trips.
STOPS = """stop_id,stop_name,parent_station,location_type
A,Alder,,0
B,Birch,,0
CP,Central,,1
C1,Central Red platform,CP,0
C2,Central Blue platform,CP,0
D,Dogwood,,0
E,Elm,,0
F1,Fir  Street,,0
F2,fir street,,0
G,Ginkgo,,0
H,Hazel,,0
"""
ROUTES = """route_id,route_short_name,route_long_name,route_color
R1,R,Red Line,E32017
R2,B,Blue Line,0072ce
R3,G,Green Loop,
R4,X,Empty Route,
"""
TRIPS = """route_id,service_id,trip_id
R1,wk,t1
R1,wk,t2
R1,wk,t3
R2,wk,t4
R3,wk,t5
"""
STOP_TIMES = """trip_id,arrival_time,departure_time,stop_id,stop_sequence
t1,08:00:00,08:00:00,A,1
t1,08:02:00,08:02:00,B,2
t1,08:04:00,08:04:00,C1,3
t1,08:06:00,08:06:00,D,4
t2,09:06:00,09:06:00,D,10
t2,09:04:00,09:04:00,C1,20
t2,09:02:00,09:02:00,B,30
t2,09:00:00,09:00:00,A,40
t3,10:00:00,10:00:00,A,1
t3,10:02:00,10:02:00,B,2
t3,10:04:00,10:04:00,C1,3
t4,08:00:00,08:00:00,E,1
t4,08:03:00,08:03:00,C2,2
t4,08:06:00,08:06:00,F1,3
t5,08:00:00,08:00:00,G,1
t5,08:03:00,08:03:00,H,2
t5,08:05:00,08:05:00,F2,3
t5,08:07:00,08:07:00,G,4
"""


# the Tokyo line lists come from the PyPI package tokyo-train-board (import name jrboard)
needs_tokyo = pytest.mark.skipif(
    importlib.util.find_spec("jrboard") is None,
    reason="tokyo-train-board is not installed (pip install tokyo-train-board==0.4.0)",
)


def write_feed(folder: Path, **override: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"stops.txt": STOPS, "routes.txt": ROUTES, "trips.txt": TRIPS, "stop_times.txt": STOP_TIMES}
    files.update({k.replace("_txt", ".txt"): v for k, v in override.items()})
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_gtfs_lines_follow_the_most_common_pattern_and_merge_stations(tmp_path):
    lines = load_gtfs_lines(write_feed(tmp_path / "feed"))
    by_name = {ln.name: ln for ln in lines}
    assert list(by_name) == ["Red Line", "Blue Line", "Green Loop"]  # R4 has no trips
    # t1 and t2 are one pattern in both directions (2 trips) against the short turn t3 (1 trip);
    # t2's stop_sequence values (10..40) are ordered numerically, not by file order
    assert by_name["Red Line"].stations == ("Alder", "Birch", "Central", "Dogwood")
    assert by_name["Red Line"].color == "#E32017" and by_name["Blue Line"].color == "#0072CE"
    # platforms C1/C2 are their parent "Central"; F1/F2 are one station by name
    assert by_name["Blue Line"].stations == ("Elm", "Central", "Fir Street")
    assert by_name["Green Loop"].loop and by_name["Green Loop"].stations == ("Ginkgo", "Hazel", "Fir Street")
    assert by_name["Green Loop"].color == ""


@pytest.mark.slow
def test_gtfs_feed_builds_a_map_that_passes_the_quality_checks(tmp_path):
    m = build_real_map(load_gtfs_lines(write_feed(tmp_path / "feed")), seed=5, name="feed")
    assert run_quality_checks(m) == [] and range_violations(m) == [] and layout_violations(m) == []
    assert set(m.stations["Central"].lines) == {"Red Line", "Blue Line"}
    assert m.stations["Central"].transfer_time > 0 and m.stations["Fir Street"].transfer_time > 0
    assert m.stations["Alder"].transfer_time == 0
    assert m.lines["Green Loop"].loop and m.edge_between("Fir Street", "Ginkgo") is not None


def test_gtfs_route_filter_and_bad_feeds(tmp_path):
    feed = write_feed(tmp_path / "feed")
    assert [ln.name for ln in load_gtfs_lines(feed, ["R2", "Red Line"])] == ["Red Line", "Blue Line"]
    with pytest.raises(GeoevalError, match="no route"):
        load_gtfs_lines(feed, ["nope"])
    (tmp_path / "bad").mkdir()
    with pytest.raises(GeoevalError, match="stops.txt is missing"):
        load_gtfs_lines(tmp_path / "bad")
    bad = write_feed(tmp_path / "bad2", stop_times_txt="trip_id,stop_id\nt1,A\n")
    with pytest.raises(GeoevalError, match=r"stop_times.txt lacks column\(s\) \['stop_sequence'\]"):
        load_gtfs_lines(bad)
    unknown = write_feed(tmp_path / "bad3", stop_times_txt=STOP_TIMES + "t1,08:10:00,08:10:00,ZZ,5\n")
    with pytest.raises(GeoevalError, match="unknown stop_id 'ZZ'"):
        load_gtfs_lines(unknown)
    # two routes that share no station: not one map
    apart = [RealLine("One", "", ("P", "Q")), RealLine("Two", "", ("S", "T"))]
    with pytest.raises(GeoevalError, match="not connected"):
        build_real_map(apart, seed=1, name="apart")


def test_names_are_folded_for_route_strings_and_tables():
    assert fold_name("Omote-sandō") == "Omote Sando"
    assert fold_name("Meiji-jingumae 'Harajuku'") == "Meiji Jingumae"
    assert fold_name("Kokkai-gijidō-mae") == "Kokkai Gijido Mae"
    # a "6"-shaped line (the Oedo Line) becomes its loop plus the branch
    six = normalise_lines([RealLine("Six", "#000000", ("T1", "T2", "J", "L1", "L2", "L3", "J"))])
    assert [(ln.name, ln.stations, ln.loop) for ln in six] == [
        ("Six", ("J", "L1", "L2", "L3"), True),
        ("Six Branch", ("T1", "T2", "J"), False),
    ]


@needs_tokyo
def test_tokyo_lines_are_the_real_metro_and_toei_network():
    lines = {ln.name: ln for ln in tokyo_lines()}
    assert len(lines) == 13 and "Yamanote Line" not in lines  # 9 Tokyo Metro + 4 Toei, no JR
    assert lines["Ginza Line"].stations[0] == "Shibuya" and lines["Ginza Line"].stations[-1] == "Asakusa"
    assert lines["Ginza Line"].color == "#FF9500"
    assert [ln.name for ln in tokyo_lines(["yamanote"])] == ["Yamanote Line"]
    with pytest.raises(GeoevalError, match="no bundled line 'atlantis'"):
        tokyo_lines(["atlantis"])


@needs_tokyo
def test_tokyo_subset_map_has_real_interchanges_and_shared_track():
    m = build_real_map(tokyo_lines(["ginza", "marunouchi", "namboku", "mita"]), seed=3, name="tokyo")
    assert run_quality_checks(m) == [] and range_violations(m) == []
    assert [p for p in layout_violations(m) if "cross away" not in p] == []
    # Akasaka-mitsuke: Ginza and Marunouchi; Namboku and Mita share the Meguro - Shirokane-takanawa track
    assert set(m.stations["Akasaka Mitsuke"].lines) == {"Ginza Line", "Marunouchi Line"}
    for a, b in (("Meguro", "Shirokanedai"), ("Shirokanedai", "Shirokane Takanawa")):
        assert set(m.edge_between(a, b).lines) == {"Namboku Line", "Mita Line"}
    assert m.edge_between("Shirokane Takanawa", "Mita").lines == ("Mita Line",)
    other = reassign_attributes(m, 4, "tokyo_01")
    assert [(s.x, s.y, s.lines) for s in other.stations.values()] == [(s.x, s.y, s.lines) for s in m.stations.values()]
    assert [e.time for e in other.edges] != [e.time for e in m.edges] and run_quality_checks(other) == []
    assert ("Shinjuku", "Shinjuku Sanchome") in similar_name_pairs(["Shinjuku", "Shinjuku Sanchome", "Ginza"])


# ---------------------------------------------------------------- env=maptab_real


def spec_for(tmp_path, *overrides):
    from tests.maptab.test_authors_env import spec_for as compose_spec

    return compose_spec(tmp_path, "env=maptab_real", *overrides)


ALL_CATEGORIES = "[map_only,edge_only,map_edge,T,P,C,R,TPR,TCR,PCR,TPCR,mix]"


@pytest.mark.slow
@needs_tokyo
def test_real_env_oracle_scores_one_on_every_category(tmp_path):
    from geoeval.core.run.job import run_job

    spec = spec_for(
        tmp_path,
        "model=oracle",
        "env.lines=[ginza,marunouchi,hibiya]",
        "env.n_maps=2",
        f"suite.categories={ALL_CATEGORIES}",
        "suite.n_per_category=2",
    )
    outcome = run_job(spec, out_dir=tmp_path / "run", progress=False)
    assert len(outcome.results) == 2 * 12 * 2
    assert all(r.scores["ema"] == 1.0 and r.scores["pma"] == 1.0 for r in outcome.results)
    assert {r.sample_id.split("-")[0] for r in outcome.results} == {"tokyo_00", "tokyo_01"}
    quality = json.loads((Path(spec.work_dir) / "envs").glob("maptab-real-*/quality.json").__next__().read_text())
    assert quality["maps"] == {"tokyo_00": [], "tokyo_01": []}
    assert ["Shinjuku", "Shinjuku Sanchome"] in quality["similar_station_names"]


def test_real_env_from_a_gtfs_feed_and_its_config_errors(tmp_path):
    from geoeval.core.registry import get_suite

    feed = write_feed(tmp_path / "feed")
    spec = spec_for(
        tmp_path,
        "env.source=gtfs",
        f"env.gtfs_path={feed}",
        "env.lines=null",
        "suite.categories=[map_only,TPCR]",
        "suite.n_per_category=3",
    )
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)
    assert env.source == "real" and env.map_names == ("feed_00",) and len(samples) == 6
    # an edited feed is a new input: new fingerprint, new environment folder
    write_feed(feed, stops_txt=STOPS.replace("Alder", "Aspen"))
    env2 = suite.build_env(spec)
    assert env2.fingerprint != env.fingerprint and env2.db_path != env.db_path
    with pytest.raises(GeoevalError, match="needs env.gtfs_path"):
        suite.build_env(spec_for(tmp_path, "env.source=gtfs"))
    with pytest.raises(GeoevalError, match="Metromaps only"):
        suite.build_env(spec_for(tmp_path, "suite.scenario=both"))
