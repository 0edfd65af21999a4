"""RP query building, question wording, prompts, and prompt -> tables -> routes."""

import itertools
import re

import networkx as nx
import pytest

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.agents import solve_from_tables
from geoeval.suites.maptab.baselines.prompt_reading import (
    parse_free_question,
    parse_prompt,
)
from geoeval.suites.maptab.baselines.table_reader import graph_from_tables
from geoeval.suites.maptab.env.tables import edge_table, mix_map, parse_table
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.travel import generate_travel_map
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.routing import reference as routing
from geoeval.suites.maptab.routing import search as routing_search
from geoeval.suites.maptab.routing import transfers as routing_transfers
from geoeval.suites.maptab.rp.prompts import (
    SUM_OBJECTIVE_NOTE,
    system_prompt,
    user_prompt,
)
from geoeval.suites.maptab.rp.queries import (
    CATEGORIES,
    CRITERIA,
    SETTINGS,
    build_rp_queries,
    parse_question,
    prompt_tables,
    question_text,
    row_seed,
    table_columns,
)


@pytest.fixture(scope="module")
def metro():
    return generate_metro_map(21, n_lines=4, loop_probability=1.0)


@pytest.fixture(scope="module")
def queries(metro):
    return build_rp_queries(metro, list(CATEGORIES), 12, seed=3, map_difficulty="Medium")


def test_deterministic_and_seed_dependent(metro, queries):
    assert build_rp_queries(metro, list(CATEGORIES), 12, seed=3, map_difficulty="Medium") == queries
    other = build_rp_queries(metro, list(CATEGORIES), 12, seed=4)
    assert [(q.source, q.target) for q in other] != [(q.source, q.target) for q in queries]


def test_every_category_is_asked_on_the_same_pairs(queries):
    by_cat = {c: [(q.source, q.target) for q in queries if q.category == c] for c in CATEGORIES}
    pairs = by_cat["map_only"]
    assert len(pairs) == 12 and len(set(pairs)) == 12
    assert all(v == pairs for v in by_cat.values())
    assert len({q.id for q in queries}) == len(queries)


def test_pairs_are_non_trivial_and_labelled(metro, queries):
    g = nx.Graph([(e.a, e.b) for e in metro.edges])
    for q in queries:
        assert q.spli == nx.shortest_path_length(g, q.source, q.target) >= 2
        assert q.setting == SETTINGS[q.category]
        assert q.map_difficulty == "Medium"
        assert all(len(r.split("-")) >= 3 for r in q.routes)
        assert q.transfer_vertex_numbers == [r.count("(transfer)") for r in q.routes]
        if q.weights is None:
            assert q.totals is None
        else:
            path, tr = routing_transfers.parse_route(q.routes[0])
            plan_on = mix_map(metro) if q.category == "mix" else metro
            assert q.totals == routing_cost.route_totals(plan_on, path, tr)


def test_query_difficulty_is_a_spli_tercile(queries):
    qs = [q for q in queries if q.category == "T"]
    levels = [q.query_difficulty for q in qs]
    assert levels.count("Easy") == levels.count("Medium") == levels.count("Hard") == 4
    easy = max(q.spli for q in qs if q.query_difficulty == "Easy")
    hard = min(q.spli for q in qs if q.query_difficulty == "Hard")
    assert easy <= hard


def test_weights(queries):
    for q in queries:
        crit = CRITERIA[q.category]
        if not crit:
            assert q.weights is None
            continue
        names = ("Time", "Price", "Comfort Level", "Reliability")
        assert [n for n, w in zip(names, q.weights) if w] == list(crit)
        assert sum(q.weights) == pytest.approx(1.0, abs=1e-9)
        assert all(round(w, 6) == w for w in q.weights)
        if len(crit) == 1:
            assert max(q.weights) == 1.0
        else:
            # integer weights from {1..5}: every ratio of two weights is a ratio of such integers
            nz = [w for w in q.weights if w]
            ratios = {a / b for a, b in itertools.product(range(1, 6), repeat=2)}
            assert any(abs(nz[0] / nz[1] - r) < 1e-4 for r in ratios)


def test_references_are_optimal_against_all_simple_paths(metro, queries):
    g = nx.Graph([(e.a, e.b) for e in metro.edges])
    for q in [q for q in queries if q.category in ("T", "C", "TPCR", "mix")][:24]:
        plan_on = mix_map(metro) if q.category == "mix" else metro
        best = min(
            routing_cost.route_cost(plan_on, p, tr, q.weights)
            for p in nx.all_simple_paths(g, q.source, q.target)
            for tr in routing_transfers.transfer_sets(plan_on, p, q.weights[0])
        )
        for r in q.routes:
            assert routing_cost.route_cost(plan_on, *routing_transfers.parse_route(r), q.weights) == pytest.approx(
                best, abs=1e-9
            )


def test_styles_cycle_and_d1_wording(queries):
    qs = [q for q in queries if q.category == "map_only"]
    assert [q.style for q in qs] == [i % 5 for i in range(12)]
    q = qs[0]
    s, t = q.source, q.target
    assert q.question == f"According to the Subway Map, what is the path with the fewest stations from {s} to {t}?"
    assert [question_text("map_only", "metromap", k, "X", "Y") for k in range(5)] == [
        "According to the Subway Map, what is the path with the fewest stations from X to Y?",
        "According to the Subway Map, what is the shortest path from X to Y?",
        "According to the Subway Map, how can I reach Y from X via the shortest path?",
        "According to the Subway Map, how can I travel from X to Y with the fewest number of stations?",
        "According to the Subway Map, what is the shortest route in terms of station count from X to Y?",
    ]
    assert question_text("T", "metromap", 0, "X", "Y") == (
        "According to the Subway Map, Edge Table and Vertex Table, what is the fastest route from X to Y?"
    )
    assert question_text("C", "metromap", 0, "X", "Y") == (
        "According to the Subway Map, Edge Table and Vertex Table, what is the smoothest ride between X and Y?"
    )
    assert question_text("mix", "metromap", 0, "X", "Y") == (
        "According to the Subway Map and the Vertex Table, what is the optimal route considering time, price, "
        "comfort, and reliability from X to Y?"
    )
    assert question_text("map_only", "travelmap", 1, "X", "Y") == (
        "According to the Scenic Area Planning Map, what is the shortest path from X to Y?"
    )


def test_every_question_parses_back():
    for category, style in itertools.product(CATEGORIES, range(5)):
        for scenario in ("metromap", "travelmap"):
            q = question_text(category, scenario, style, "Marlow Park", "Kensett Square")
            assert parse_question(q) == (category, style, "Marlow Park", "Kensett Square")
    tricky = question_text("T", "metromap", 0, "Gate to Bay", "Bay")
    assert parse_question(tricky, {"Gate to Bay", "Bay"})[2:] == ("Gate to Bay", "Bay")
    with pytest.raises(GeoevalError):
        parse_question("What is the weather like?")


def test_table_columns_follow_the_authors_masking():
    assert table_columns("map_only") == {}
    assert table_columns("edge_only") == {"Edge Table": ["Edge", "Line"]}
    assert table_columns("T") == {
        "Edge Table": ["Edge", "Line", "Time"],
        "Vertex Table": ["Vertex", "Line", "Time", "Transfer Time"],
    }
    assert table_columns("P") == {"Edge Table": ["Edge", "Line", "Price"], "Vertex Table": ["Vertex", "Line", "Price"]}
    assert table_columns("PCR")["Vertex Table"] == ["Vertex", "Line", "Price", "Comfort Level", "Reliability"]
    assert table_columns("mix") == {
        "Vertex Table": ["Vertex", "Time", "Price", "Comfort Level", "Reliability", "Transfer Time"]
    }
    assert table_columns("T", "travelmap") == {"Edge Table": ["Edge", "Time"], "Vertex Table": ["Vertex", "Time"]}
    # Travelmap keeps Time beside Price: Time 0 marks a hub, priced only as the destination
    assert table_columns("P", "travelmap") == {
        "Edge Table": ["Edge", "Time", "Price"],
        "Vertex Table": ["Vertex", "Time", "Price"],
    }
    assert table_columns("PCR", "travelmap")["Vertex Table"] == [
        "Vertex",
        "Time",
        "Price",
        "Comfort Level",
        "Reliability",
    ]
    assert table_columns("C", "travelmap")["Vertex Table"] == ["Vertex", "Comfort Level"]


def test_system_prompts_render():
    for category in CATEGORIES:
        weights = None if not CRITERIA[category] else (0.4, 0.3, 0.2, 0.1)
        for scenario in ("metromap", "travelmap"):
            text = system_prompt(category, scenario, weights)
            assert "{" not in text and "}" not in text
            assert "# Output Format Constraints" in text and "hyphens" in text
            assert ("(transfer)" in text) == (scenario == "metromap")
    tpr = system_prompt("TPR", "metromap", (0.3, 0.5, 0, 0.2))
    assert "Time 0.3, Price 0.5, Reliability 0.2" in tpr
    assert "0.3 * (Total Time / 3) + 0.5 * (Total Price / 1.5) + 0.2 * (1 - Average Reliability)" in tpr
    assert "Comfort" not in tpr
    assert "/ 180" in system_prompt("T", "travelmap", (1, 0, 0, 0))
    with pytest.raises(GeoevalError):
        system_prompt("T", "metromap", None)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_prompt_to_tables_to_routes_reproduces_references(fmt):
    solvable = [c for c in CATEGORIES if c not in ("map_only", "mix")]
    for seed in (21, 34):
        m = generate_metro_map(seed, n_lines=4, loop_probability=0.5)
        for q in build_rp_queries(m, list(CATEGORIES), 8, seed=seed):
            # rows shuffled per sample, as the suite shows them: the reading must not need map order
            tables = prompt_tables(m, q.category, fmt, row_seed=row_seed(seed, q.id))
            text = system_prompt(q.category, q.scenario, q.weights) + "\n" + user_prompt(q, tables, fmt)
            parsed = parse_prompt(text)
            assert (parsed.source, parsed.target, parsed.category) == (q.source, q.target, q.category)
            assert parsed.weights == q.weights
            assert parsed.criteria == CRITERIA[q.category]
            assert set(parsed.tables) == set(table_columns(q.category))
            if q.category in solvable:
                g = graph_from_tables(parsed.tables["Edge Table"], parsed.tables.get("Vertex Table"), None, "metromap")
                assert routing.reference_routes(g, parsed.source, parsed.target, parsed.weights) == q.routes
            elif q.category == "mix":
                # the topology comes from the map image; here we hand the agent the true edges
                g = graph_from_tables(edge_table(m, ["Edge", "Line"]), None, parsed.tables["Vertex Table"])
                assert routing_search.optimal_routes(g, parsed.source, parsed.target, parsed.weights) == q.routes
                assert "Line" not in parsed.tables["Vertex Table"][0]


def test_user_prompt_layout(metro, queries):
    q = next(q for q in queries if q.category == "T")
    text = user_prompt(q, prompt_tables(metro, "T", "csv"), "csv")
    assert text.startswith("# Question\n" + q.question)
    assert re.search(r"Edge Table \(csv\):\n```csv\nEdge,Line,Time\n", text)
    assert re.search(r"Vertex Table \(csv\):\n```csv\nVertex,Line,Time,Transfer Time\n", text)
    assert "Weights (Time, Price, Comfort Level, Reliability): 1, 0, 0, 0" in text
    body = text.split("Edge Table (csv):\n```csv\n")[1].split("\n```")[0]
    assert parse_table(body, "csv")[0]["Edge"] == metro.edges[0].label
    free = next(q for q in queries if q.category == "map_only")
    assert "Weights" not in user_prompt(free, {}, "csv") and "```" not in user_prompt(free, {}, "csv")


def test_bad_inputs():
    m = generate_metro_map(2)
    with pytest.raises(GeoevalError):
        build_rp_queries(m, ["fastest"], 3, seed=1)
    with pytest.raises(GeoevalError):
        parse_prompt("no question here")
    with pytest.raises(GeoevalError):
        graph_from_tables(None, [{"Vertex": "A"}])


@pytest.mark.parametrize("objective", ["mean", "sum"])
def test_travel_queries_round_trip_through_prompts_and_the_table_baseline(objective):
    """Generated Travelmap queries: references are the solver's, prompts say the scenario and the
    objective, and the table baseline recovers the references from the prompt text alone."""
    solvable = [c for c in CATEGORIES if c not in ("map_only", "mix")]
    for seed in (3, 8):
        m = generate_travel_map(seed, n_hubs=(2, 2))
        for q in build_rp_queries(m, list(CATEGORIES), 5, seed=seed, objective=objective):
            assert q.scenario == "travelmap" and "(transfer)" not in "".join(q.routes)
            assert q.transfer_vertex_numbers == [0] * len(q.routes)
            system = system_prompt(q.category, q.scenario, q.weights, objective)
            if q.weights and q.weights[1]:
                assert "adds its Price only when it is the destination" in system
            text = system + "\n" + user_prompt(q, prompt_tables(m, q.category, "csv"), "csv")
            parsed = parse_prompt(text)
            assert parsed.scenario == "travelmap"
            if any(q.weights or ()) and (q.weights[2] or q.weights[3]):
                assert parsed.objective == objective
            if q.category in solvable:
                assert solve_from_tables(parsed) in q.routes, (q.id, objective)


def test_sum_objective_prompt_states_the_additive_costs():
    text = system_prompt("TPCR", "travelmap", (0.25, 0.25, 0.25, 0.25), "sum")
    assert SUM_OBJECTIVE_NOTE in text
    assert "Comfort Cost = sum of (1 - Comfort Level / 5) over the non-zero Comfort Level values" in text
    assert "0.25 * Comfort Cost + 0.25 * Reliability Cost" in text
    assert "Average Comfort Level" not in text
    single = system_prompt("C", "travelmap", (0, 0, 1, 0), "sum")
    assert "the one with the lowest Comfort Cost" in single
    # the mean objective is the default and keeps its wording
    assert system_prompt("TPCR", "metromap", (0.25,) * 4) == system_prompt("TPCR", "metromap", (0.25,) * 4, "mean")
    assert SUM_OBJECTIVE_NOTE not in system_prompt("TPCR", "metromap", (0.25,) * 4)
    with pytest.raises(GeoevalError):
        system_prompt("T", "metromap", (1, 0, 0, 0), "median")


def test_free_wording_questions_give_their_endpoints():
    assert parse_free_question(
        "According to the subway map, Edge Table and Vertex Table, which route offers the highest comfort "
        "from Triskett to West 25th_Ohio City?"
    ) == ("Triskett", "West 25th_Ohio City")
    assert parse_free_question(
        "According to the Scenic Area Planning Map and Vertex Table, provide the globally optimal path "
        "balancing speed, cost, comfort, and reliability between 巴方寺 and 比粒寺."
    ) == ("巴方寺", "比粒寺")
    # a name containing " to ": the known names decide; without them, the first separator wins
    q = "How do I get from Stratford to Upon Avon to Leeds?"
    assert parse_free_question(q, {"Stratford to Upon Avon", "Leeds"}) == ("Stratford to Upon Avon", "Leeds")
    assert parse_free_question(q) == ("Stratford", "Upon Avon to Leeds")
    with pytest.raises(GeoevalError):
        parse_free_question("Which line is the longest?")
    # parse_prompt falls back to it for questions outside geoeval's templates
    parsed = parse_prompt("# Question\nPlease find a way from Alpha to Beta.\n")
    assert (parsed.source, parsed.target, parsed.category) == ("Alpha", "Beta", None)


# ---------------------------------------------------------------- per-sample row shuffling


def test_rows_are_shuffled_per_sample_and_seeded(metro):
    """The paper (section 3): "The rows are independently shuffled for each sample"; geoeval
    seeds the shuffle by run seed and sample id, and `fixed` keeps map order."""
    fixed = prompt_tables(metro, "TPCR", "csv")
    a = prompt_tables(metro, "TPCR", "csv", row_seed=row_seed(0, "x-TPCR-000"))
    b = prompt_tables(metro, "TPCR", "csv", row_seed=row_seed(0, "x-TPCR-001"))
    assert a == prompt_tables(metro, "TPCR", "csv", row_seed=row_seed(0, "x-TPCR-000"))  # seeded
    assert a != b and a != fixed
    assert row_seed(0, "x-TPCR-000", "fixed") is None
    for title in fixed:
        rows = parse_table(a[title], "csv")
        assert sorted(map(str, rows)) == sorted(map(str, parse_table(fixed[title], "csv")))  # a permutation
    assert parse_table(a["Edge Table"], "csv") != parse_table(a["Vertex Table"], "csv")
    with pytest.raises(GeoevalError):
        row_seed(0, "x", "sorted")


def test_suite_samples_shuffle_rows_unless_fixed(tmp_path):
    from geoeval.core.registry import get_suite
    from tests.conftest import compose_spec

    def edge_orders(*overrides):
        spec = compose_spec(
            tmp_path,
            "suite=maptab",
            "env.n_maps=1",
            "suite.n_per_category=3",
            "suite.categories=[edge_only]",
            *overrides,
        )
        suite = get_suite("maptab")
        env = suite.build_env(spec)
        texts = [s.input[1].content[0].text for s in suite.build_samples(spec, env)]
        return [[r["Edge"] for r in parse_table(t.split("```csv\n")[1].split("\n```")[0], "csv")] for t in texts]

    shuffled, fixed = edge_orders(), edge_orders("suite.row_order=fixed")
    assert len({tuple(o) for o in shuffled}) == 3  # every sample its own order
    assert len({tuple(o) for o in fixed}) == 1  # one order per map (line order)
    assert all(sorted(o) == sorted(fixed[0]) for o in shuffled)
    assert edge_orders() == shuffled  # deterministic


# ---------------------------------------------------------------- one objective per scenario


def test_one_travelmap_objective_for_synthetic_and_authors_data():
    """Travelmap references are optimal under the additive objective everywhere (the authors'
    prompts and labels; routing.SCENARIO_OBJECTIVE), Metromap under the paper's mean."""
    from geoeval.suites.maptab.authors.env import AUTHORS_OBJECTIVE

    assert routing_cost.SCENARIO_OBJECTIVE == AUTHORS_OBJECTIVE == {"metromap": "mean", "travelmap": "sum"}
    m = generate_travel_map(8)
    default = build_rp_queries(m, ["C", "R", "TPCR"], 6, seed=8)
    assert default == build_rp_queries(m, ["C", "R", "TPCR"], 6, seed=8, objective="sum")
    for q in default:
        assert q.routes == routing_search.optimal_routes(m, q.source, q.target, q.weights, objective="sum")
    metro = generate_metro_map(8)
    assert build_rp_queries(metro, ["C"], 4, seed=8) == build_rp_queries(metro, ["C"], 4, seed=8, objective="mean")
    with pytest.raises(GeoevalError):
        routing_cost.objective_for("moon")


def test_mix_prompt_says_which_columns_are_merged():
    metro = system_prompt("mix", "metromap", (0.25,) * 4)
    assert (
        "Price is the mean Price of the edges adjacent to the station; Time, Comfort Level, Reliability "
        "and Transfer Time are the station's own values"
    ) in metro
    travel = system_prompt("mix", "travelmap", (0.25,) * 4)
    assert "Time, Price, Comfort Level and Reliability are the scenic spot's own values" in travel
    assert "merge the adjacent edges" not in metro + travel
