"""RP analyses and report (Table 2 / Table 4 layouts, G.2 matrix): FR/PR/NR, T/P/C/R understanding."""

import pytest

from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.rp.analysis import (
    RPAnalysis,
    difficulty_matrix,
    repeat_class,
    repetition_table,
    understanding,
)


def small_map() -> MetroMap:
    """L1: A-B-C-E, L2: A-D-C (A and C are interchanges); distinct values, so that different
    paths have different totals."""
    lines = {"L1": ("A", "B", "C", "E"), "L2": ("A", "D", "C")}
    on = {s: tuple(ln for ln, seq in lines.items() if s in seq) for s in "ABCDE"}
    stations = {
        s: Station(
            s,
            on[s],
            0,
            0,
            time=1.0 + i / 10,
            price=0.0,
            comfort=0.2 + i / 10,
            reliability=0.5 + i / 20,
            transfer_time=5.0 if len(on[s]) > 1 else 0.0,
        )
        for i, s in enumerate("ABCDE")
    }
    edges = []
    for k, (ln, seq) in enumerate(lines.items()):
        for j, (a, b) in enumerate(zip(seq, seq[1:])):
            edges.append(
                Edge(a, b, (ln,), time=2.0 + k + j / 10, price=0.5 + j / 10, comfort=0.3 + k / 10, reliability=0.0)
            )
    return MetroMap("small", "metromap", stations, edges, {ln: Line(ln, "#E32017", seq) for ln, seq in lines.items()})


def test_repeat_classes_follow_table_4():
    m = small_map()
    assert repeat_class(m, "B", "E", ["B-C-E"]) == "FR"  # the one fewest-station path is optimal
    assert repeat_class(m, "A", "C", ["A-D-C"]) == "PR"  # one of two fewest-station paths
    assert repeat_class(m, "B", "E", ["B-A(transfer)-D-C(transfer)-E"]) == "NR"
    # several optimal routes: one of them being a shortest path is enough
    assert repeat_class(m, "B", "E", ["B-A(transfer)-D-C(transfer)-E", "B-C-E"]) == "FR"


def test_understanding_recomputes_the_answered_route_on_the_map():
    m = small_map()
    ref = routing_cost.route_totals(m, ["B", "C", "E"])
    assert understanding(m, "B-C-E", "B", "E", ref, ["B-C-E"]) == dict.fromkeys("TPCR", True)
    detour = understanding(m, "Route: B-A(transfer)-D-C(transfer)-E", "B", "E", ref, ["B-C-E"])
    assert detour["T"] is False and detour["P"] is False
    for bad in ("B-D-E", "B-X-E", "A-B-C", "no route here", "B-C-E-C"):
        assert understanding(m, bad, "B", "E", ref, ["B-C-E"]) == dict.fromkeys("TPCR", False), bad
    # a name within the scorer's fuzzy match still counts as the station
    assert understanding(m, "b-Cc-E", "B", "E", ref, ["B-C-E"]) == dict.fromkeys("TPCR", True)


def test_understanding_accepts_any_tied_routes_totals():
    """Tied optima share J, not each total: the recorded totals are the first reference's, and
    answering another tied reference is not a misunderstanding (README, "Tied routes")."""
    m = small_map()
    first = routing_cost.route_totals(m, ["B", "C", "E"])
    tied = "B-A(transfer)-D-C(transfer)-E"
    assert understanding(m, tied, "B", "E", first, ["B-C-E"])["T"] is False  # not a reference
    assert understanding(m, tied, "B", "E", first, ["B-C-E", tied]) == dict.fromkeys("TPCR", True)
    # a non-reference route still has to match the recorded totals
    assert understanding(m, "B-A(transfer)-D-C", "B", "E", first, ["B-C-E", tied]) == dict.fromkeys("TPCR", False)


def _a(cat, repeat, ema, ml="Easy", ql="Easy", understood=None):
    return RPAnalysis("x", "metromap", cat, ml, ql, ema, ema, 2.0 * ema, repeat, understood or {})


def test_tables_split_by_repetition_and_difficulty():
    rows = [
        _a("T", "FR", 1.0, understood=dict.fromkeys("TPCR", True)),
        _a("T", "NR", 0.0, ml="Hard", ql="Medium", understood={"T": False, "P": True, "C": False, "R": False}),
        _a("map_only", None, 1.0, ml="Hard", ql="Medium"),
    ]
    table = repetition_table(rows, "metromap")
    t, avg = table
    assert t["criteria"] == "Time-Only" and t["FR EMA"] == 100.0 and t["NR EMA"] == 0.0 and t["PR EMA"] is None
    assert (t["T"], t["P"], t["All EMA"], t["n FR/PR/NR"]) == (50.0, 100.0, 50.0, "1/0/1")
    matrix = {r["map \\ query"]: r for r in difficulty_matrix(rows, "metromap")}
    assert matrix["Hard"]["Medium"] == 50.0 and matrix["Hard"]["n Medium"] == 2
    assert matrix["Easy"]["Easy"] == 100.0 and matrix["Medium"]["Easy"] is None


@pytest.fixture(scope="module")
def baseline_run(tmp_path_factory):
    from geoeval.core.run.job import run_job
    from tests.maptab.test_authors_env import spec_for

    tmp = tmp_path_factory.mktemp("rp_report")
    spec = spec_for(
        tmp, "model=table_baseline", "env.n_maps=3", "suite.categories=[map_only,T,C,mix]", "suite.n_per_category=6"
    )
    return run_job(spec, out_dir=tmp / "run", progress=False)


def test_after_run_writes_the_rp_report(baseline_run):
    files = baseline_run.artifacts
    assert [f.name for f in files] == ["maptab_rp_report.md", "maptab_rp_report.png"]
    assert files[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = files[0].read_text()
    lines = text.splitlines()

    def row(prefix: str, after: str) -> list[str]:
        start = lines.index(after)
        line = next(x for x in lines[start:] if x.startswith(f"| {prefix} "))
        return [c.strip() for c in line.strip("|").split("|")]

    # the table baseline solves table settings exactly and cannot answer map-only or Mix_tab
    table2 = "### EMA / PMA / DS per category (Table 2 layout)"
    assert row("Map-only", table2)[1:3] == ["0.00", "0.00"]
    assert row("Time-Only", table2)[1:3] == ["100.00", "100.00"]
    assert row("All", table2)[4] == "72"
    table4 = "### Route repetition and criteria understanding (Table 4 layout)"
    c = row("Comfort_Level-Only", table4)
    assert c[7:13] == ["100.00"] * 6  # All EMA/PMA and T/P/C/R: it answers the optimum itself
    mix = row("Map+Mix_tab (all four)", table4)
    assert mix[7:13] == ["0.00"] * 6
    assert sum(int(n) for n in mix[13].split("/")) == 18
    assert "### Difficulty matrix (G.2)" in text and "### Per category x query difficulty" in text
    # its 36 declined answers (map-only and Mix_tab) carry no route: Output Format, nothing else
    errors = "### Error types of wrong answers (Table 5 layout)"
    assert row("Output Format", errors)[1:4] == ["36", "100.00", "50.00"]
    assert row("Table Lookup", errors)[1] == "0"


@pytest.mark.conformance
def test_authors_queries_are_rebuilt_with_the_sample_ids(tmp_path):
    from geoeval.core.registry import get_suite
    from tests.maptab.test_authors_env import build, peers_or_skip, spec_for

    spec = spec_for(
        tmp_path, "env=maptab_authors", f"env.root={peers_or_skip()}", "suite.setting=map_edge_tab_vertex_tab"
    )
    env, samples = build(spec)
    queries = get_suite("maptab").rp_queries(spec, env)
    assert sorted(queries) == sorted(s.id for s in samples) and len(samples) == 16
    for s in samples:
        m, q = queries[s.id]
        assert q.routes == s.target and q.totals == s.metadata["totals"] and m.name == s.metadata["map"]


def test_understanding_keeps_the_reference_transfer_placement():
    """L1 A-B-C and L2 B-C-D share the track B-C: on A-B-C-D the change can be at B (5 min) or
    C (9 min). A reference annotated at C has its Total_Time with C's transfer; the same route
    answered must be judged with that placement, not the cheaper one."""
    on = {"A": ("L1",), "B": ("L1", "L2"), "C": ("L1", "L2"), "D": ("L2",)}
    tt = {"A": 0.0, "B": 5.0, "C": 9.0, "D": 0.0}
    stations = {s: Station(s, on[s], 0, 0, 1.0, 0.0, 0.5, 0.8, tt[s]) for s in "ABCD"}
    edges = [
        Edge("A", "B", ("L1",), 2.0, 0.5, 0.5, 0.0),
        Edge("B", "C", ("L1", "L2"), 2.0, 0.5, 0.5, 0.0),
        Edge("C", "D", ("L2",), 2.0, 0.5, 0.5, 0.0),
    ]
    m = MetroMap(
        "shared",
        "metromap",
        stations,
        edges,
        {"L1": Line("L1", "#E32017", ("A", "B", "C")), "L2": Line("L2", "#0072CE", ("B", "C", "D"))},
    )
    ref = routing_cost.route_totals(m, ["A", "B", "C", "D"], {"C"})
    assert ref["Total_Time"] != routing_cost.route_totals(m, ["A", "B", "C", "D"], {"B"})["Total_Time"]
    assert understanding(m, "A-B-C(transfer)-D", "A", "D", ref, ["A-B-C(transfer)-D"])["T"] is True


def test_error_types_are_read_from_the_graph():
    from geoeval.suites.maptab.rp.analysis import error_types

    m = small_map()  # L1: A-B-C-E, L2: A-D-C

    def types(answer, routes=("B-C-E",), criteria=True, s="B", t="E"):
        return error_types(m, answer, s, t, list(routes), criteria)

    assert types("I cannot tell.") == ("Output Format",)
    assert types("B--C-E") == ("Output Format",)
    assert types("B-Zzzz-E") == ("Perception",)  # no station is like Zzzz
    assert types("C-E") == ("Perception",)  # wrong origin
    assert types("B-E") == ("Path Search",)  # skips C on line L1
    assert types("B-D-C-E") == ("Topology Extraction",)  # B and D share no line
    assert types("B-C(transfer)-E") == ("Transfer Indeterminate",)
    assert types("B-A(transfer)-D-C(transfer)-E") == ("Table Lookup",)
    assert types("B-A(transfer)-D-C(transfer)-E", criteria=False) == ("Path Search",)
    # labels combine: wrong origin, D-B is no connection, B-E skips C
    assert types("A-D-B-E") == ("Perception", "Path Search", "Topology Extraction")
