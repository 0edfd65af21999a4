"""MapTab diagnostic QA (appendices B.3, D.2; Table 1): answers against hand-computed values,
question wording, answer extraction and Acc, the table reader, and whole runs with the offline
agents."""

import json

import pytest
from hydra import compose, initialize_config_module

from geoeval.core.config.validate import validate_config
from geoeval.core.errors import GeoevalError
from geoeval.core.registry import get_suite
from geoeval.core.run.job import run_job
from geoeval.suites.maptab.baselines.table_reader import answer_from_tables
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.travel import generate_travel_map
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Station
from geoeval.suites.maptab.qa import answers as qa_answers
from geoeval.suites.maptab.qa import questions as qa
from geoeval.suites.maptab.qa import wording as qa_wording
from tests.conftest import compose_spec as spec_for

# ---------------------------------------------------------------- hand-built maps


def st(name, lines=(), time=1.0, price=0.0, comfort=0.5, reliability=0.8, transfer_time=0.0):
    return Station(name, tuple(lines), 0.0, 0.0, time, price, comfort, reliability, transfer_time)


@pytest.fixture
def metro():
    """Red A-B-C-D, Blue E-C-F, Green D-G; interchanges C (Red/Blue, 7 min) and D (Red/Green, 9 min)."""
    stations = [
        st("Alder", ["Red Line"], time=1.0, reliability=0.9),
        st("Birch", ["Red Line"], time=1.5, reliability=0.6),
        st("Cedar", ["Red Line", "Blue Line"], time=2.0, reliability=0.7, transfer_time=7),
        st("Dogwood", ["Red Line", "Green Line"], time=0.5, reliability=1.0, transfer_time=9),
        st("Elm", ["Blue Line"], time=1.25),
        st("Fir", ["Blue Line"], time=1.75),
        st("Gum", ["Green Line"], time=2.0),
    ]
    edges = [
        Edge("Alder", "Birch", ("Red Line",), 2.1, 0.5, 0.3, 0.0),
        Edge("Birch", "Cedar", ("Red Line",), 2.2, 0.75, 0.4, 0.0),
        Edge("Cedar", "Dogwood", ("Red Line",), 2.3, 1.0, 0.5, 0.0),
        Edge("Elm", "Cedar", ("Blue Line",), 2.4, 0.25, 0.6, 0.0),
        Edge("Cedar", "Fir", ("Blue Line",), 2.5, 1.25, 0.7, 0.0),
        Edge("Dogwood", "Gum", ("Green Line",), 2.6, 1.5, 0.8, 0.0),
    ]
    lines = {
        "Red Line": Line("Red Line", "#ff0000", ("Alder", "Birch", "Cedar", "Dogwood")),
        "Blue Line": Line("Blue Line", "#0000ff", ("Elm", "Cedar", "Fir")),
        "Green Line": Line("Green Line", "#00ff00", ("Dogwood", "Gum")),
    }
    return MetroMap("hand", "metromap", {s.name: s for s in stations}, edges, lines)


@pytest.fixture
def travel():
    """A triangle P-Q-R, then a path R-S-T-U-V."""
    spec = {"P": (40, 30), "Q": (90, 20), "R": (120, 55), "S": (0, 100), "T": (150, 75), "U": (60, 45), "V": (30, 200)}
    stations = [st(n, time=t, price=p) for n, (t, p) in spec.items()]
    pairs = [("P", "Q"), ("Q", "R"), ("R", "P"), ("R", "S"), ("S", "T"), ("T", "U"), ("U", "V")]
    edges = [Edge(a, b, (), 10.0 + i, 20.0 + i, 3.0, 0.5) for i, (a, b) in enumerate(pairs)]
    return MetroMap("trip", "travelmap", {s.name: s for s in stations}, edges, {})


def answer(m, qa_type, hidden=(), **params):
    return qa_answers.compute_answer(m.scenario, qa_type, params, m, qa.qa_table_rows(m, qa_type, hidden)).text


def test_metromap_answers_by_hand(metro):
    assert answer(metro, "M-GP") == "3"
    assert answer(metro, "M-LP", a="Alder", b="Dogwood") == "2"  # Birch, Cedar
    assert answer(metro, "M-LP", a="Fir", b="Elm") == "1"
    assert (answer(metro, "M-SR", a="Fir", line="Red Line"), answer(metro, "M-SR", a="Cedar", line="Blue Line")) == (
        "0",
        "1",
    )
    assert answer(metro, "E-GP") == "4"
    assert answer(metro, "E-LP", edge="Birch-Cedar", attr="Price") == "0.75"
    assert answer(metro, "E-LP", edge="Cedar-Fir", attr="Comfort Level") == "0.70"
    # E-SR is a graph distance (Table 1: graph topology), not a row count: Birch-Cedar lies between
    assert answer(metro, "E-SR", edge="Alder-Birch", edge2="Elm-Cedar") == "1"
    assert answer(metro, "E-SR", edge="Alder-Birch", edge2="Dogwood-Gum") == "2"  # Birch-Cedar, Cedar-Dogwood
    assert answer(metro, "E-SR", edge="Elm-Cedar", edge2="Cedar-Fir") == "0"  # they share Cedar
    assert answer(metro, "V-GP") == "2"
    assert (answer(metro, "V-LP", line="Red Line"), answer(metro, "V-LP", line="Blue Line")) == ("2", "1")
    assert (answer(metro, "V-SR", a="Alder", b="Fir"), answer(metro, "V-SR", a="Alder", b="Dogwood")) == ("0", "1")
    # Red 1 + 1.5 + 2 + 0.5 = 5, Blue 1.25 + 2 + 1.75 = 5, Green 0.5 + 2 = 2.5
    assert answer(metro, "MM-GP") == "5.00"
    assert answer(metro, "MM-LP", a="Birch", b="Dogwood") == "0.77"  # (0.6 + 0.7 + 1.0) / 3
    assert answer(metro, "MM-SR", line="Red Line", line2="Blue Line") == "7"
    assert answer(metro, "MM-SR", line="Blue Line", line2="Green Line") == "0"


def test_metromap_mm_sr_is_1_on_a_one_line_map():
    m = generate_metro_map(3, n_lines=1)
    line = next(iter(m.lines))
    assert answer(m, "MM-SR", line=line, line2=line) == "1"


def test_travelmap_answers_by_hand(travel):
    assert answer(travel, "M-GP") == "7"
    assert (answer(travel, "M-LP", a="P"), answer(travel, "M-LP", a="S")) == ("1", "0")
    assert answer(travel, "M-SR", a="R") == "3"
    assert answer(travel, "E-GP") == "3"  # R in three rows
    assert answer(travel, "E-LP", edge="S-T", attr="Time") == "14.00"
    assert (answer(travel, "E-SR", a="P", b="U"), answer(travel, "E-SR", a="P", b="V")) == ("1", "0")  # 4 and 5 hops
    assert answer(travel, "V-GP", n=60) == "3"  # P 40, S 0, V 30 (U's 60 is not below 60)
    assert answer(travel, "V-LP", a="P", b="Q", c="S", d="V") == "20.00"
    assert (answer(travel, "V-SR", a="P", b="Q"), answer(travel, "V-SR", a="Q", b="P")) == ("1", "0")
    assert answer(travel, "MM-GP") == "1"
    assert answer(travel, "MM-GP", hidden=("T",)) == "0"
    # the one shortest path P-R-S: Times 40, 120, 0
    assert (answer(travel, "MM-LP", a="P", b="S", n=30), answer(travel, "MM-LP", a="P", b="T", n=30)) == ("1", "1")
    assert answer(travel, "MM-LP", a="P", b="Q", n=30) == "0"
    assert answer(travel, "MM-SR", a="R") == "20.00"  # neighbours P 30, Q 20, S 100


def test_hidden_rows_leave_the_mix_table(travel):
    rows = qa.qa_table_rows(travel, "MM-GP", ("T", "U"))["Vertex Table"]
    assert [r["Vertex"] for r in rows] == ["P", "Q", "R", "S", "V"]
    metro_mix = qa.qa_table_rows(generate_metro_map(1), "MM-LP")["Vertex Table"]
    assert "Line" not in metro_mix[0]  # B.3: the strict cross-modal setting


# ---------------------------------------------------------------- Table 1


def test_capability_mapping_is_table_1():
    assert qa.capabilities_of("metromap", "M-LP") == (
        "visual_perception",
        "graph_topology_reasoning",
        "numerical_reasoning",
    )
    assert qa.capabilities_of("travelmap", "M-LP") == ("visual_perception", "spatial_localization")
    assert qa.capabilities_of("metromap", "MM-SR") == (
        "cross_modal_alignment",
        "graph_topology_reasoning",
        "path_planning",
        "global_reasoning",
    )
    assert qa.capabilities_of("travelmap", "E-SR") == (
        "table_understanding",
        "graph_topology_reasoning",
        "path_planning",
    )
    assert qa.capabilities_of("travelmap", "MM-LP") == ("cross_modal_alignment", "path_planning", "global_reasoning")
    # Table 1 row lengths (problem types per capability), Metromap then Travelmap
    sizes = {s: [len(t[c]) for c in qa.CAPABILITIES] for s, t in qa.CAPABILITY_TABLE.items()}
    assert sizes == {"metromap": [3, 6, 3, 3, 3, 8, 2, 2], "travelmap": [3, 6, 3, 2, 2, 5, 3, 2]}
    for scenario in ("metromap", "travelmap"):
        assert all(qa.capabilities_of(scenario, t) for t in qa.QA_TYPES)


# ---------------------------------------------------------------- questions


@pytest.mark.parametrize("gen", [generate_metro_map, generate_travel_map])
def test_generated_questions_parse_back_and_styles_cycle(gen):
    seen_styles = set()
    for seed in range(4):
        m = gen(seed)
        for q in qa.build_qa_queries(m, qa.QA_TYPES, 2, seed, style_offset=seed):
            p = qa_wording.parse_question(q.question, m.scenario, set(m.stations))
            assert (p.qa_type, p.style, p.params) == (q.qa_type, q.style, q.params), q.question
            seen_styles.add((q.qa_type, q.style))
    assert seen_styles == {(t, s) for t in qa.QA_TYPES for s in range(5)}


def test_d2_wording_is_style_0():
    assert qa.question_text("metromap", "M-GP", 0, {}) == "How many metro lines are there in total on the Subway Map?"
    assert qa.question_text("metromap", "M-GP", 4, {}) == "What is the total count of metro lines in the map?"
    assert (
        qa.question_text("travelmap", "MM-SR", 0, {"a": "X"})
        == "What is the cost of the lowest-priced location adjacent to X?"
    )


def test_queries_are_deterministic_and_binary_answers_are_mixed():
    m = generate_travel_map(7)
    a = qa.build_qa_queries(m, qa.QA_TYPES, 6, 11)
    b = qa.build_qa_queries(m, qa.QA_TYPES, 6, 11)
    assert [(q.id, q.question, q.answer) for q in a] == [(q.id, q.question, q.answer) for q in b]
    binary = [q.answer for q in a if q.kind == "binary"]
    assert {"0", "1"} <= set(binary)
    fixed = qa.build_qa_queries(m, ["V-SR"], 4, 11, style=3)
    assert {q.style for q in fixed} == {3}


# ---------------------------------------------------------------- extraction and Acc


def test_extraction_takes_the_last_tagged_answer():
    assert qa.extract_answer("I think <answer_begin>3<answer_end>, no: <answer_begin> 4 <answer_end>") == ("4", "")
    assert qa.extract_answer("`<answer_begin>0.55<answer_end>`") == ("0.55", "")
    answer, problem = qa.extract_answer("The answer is 4.")
    assert answer == "" and "<answer_begin>" in problem


def test_acc_rules():
    assert (
        qa.is_correct("1", "1", "binary")
        and qa.is_correct("Yes", "1", "binary")
        and not qa.is_correct("0", "1", "binary")
    )
    assert (
        qa.is_correct("7", "7", "integer")
        and qa.is_correct("7.0", "7", "integer")
        and not qa.is_correct("8", "7", "integer")
    )
    # 2.345 exactly: both roundings are right, 2.36 is not
    assert qa.is_correct("2.34", "2.35", "number", 2.345) and qa.is_correct("2.35", "2.35", "number", 2.345)
    assert not qa.is_correct("2.36", "2.35", "number", 2.345)
    assert not qa.is_correct("", "1", "binary")
    with pytest.raises(ValueError, match="not a number"):
        qa.is_correct("seven", "7", "integer")
    with pytest.raises(ValueError, match="not 1 or 0"):
        qa.is_correct("maybe", "1", "binary")


# ---------------------------------------------------------------- the table reader


@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("gen", [generate_metro_map, generate_travel_map])
def test_table_reader_reproduces_table_answers_and_declines_map_ones(gen, fmt):
    for seed in range(3):
        m = gen(seed)
        # odd seeds: rows shuffled per question (the suite's default); row-order answers (V-SR)
        # must follow the order shown
        for q in qa.build_qa_queries(m, qa.QA_TYPES, 2, seed, shuffle_seed=seed if seed % 2 else None):
            user = qa.user_prompt(q, qa.qa_tables(m, q, fmt), fmt)
            got = answer_from_tables(qa.system_prompt(m.scenario, q.qa_type), user)
            if q.setting in ("edge_tab", "vertex_tab"):
                assert got == q.answer, q.question
            else:
                assert got is None


# ---------------------------------------------------------------- runs


@pytest.fixture(scope="module")
def qa_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qa")
    out = {}
    for model in ("oracle", "table_baseline"):
        spec = spec_for(tmp, "+experiment=maptab_qa", f"model={model}", "env.n_maps=2")
        out[model] = run_job(spec, out_dir=tmp / model, progress=False)
    return out


def test_oracle_scores_1_on_every_type_of_both_scenarios(qa_runs):
    outcome = qa_runs["oracle"]
    assert len(outcome.results) == 2 * 2 * 12
    assert {(r.dims.extra["scenario"], r.dims.task) for r in outcome.results} == {
        (s, t) for s in ("metromap", "travelmap") for t in qa.QA_TYPES
    }
    assert all(r.scores == {"acc": 1.0} for r in outcome.results)
    assert {k for k in outcome.metrics if k.startswith("acc/capability/")} == {
        f"acc/capability/{c}" for c in qa.CAPABILITIES
    }


def test_table_baseline_answers_table_types_and_fails_map_types(qa_runs):
    for r in qa_runs["table_baseline"].results:
        if r.dims.setting in ("edge_tab", "vertex_tab"):
            assert r.scores["acc"] == 1.0, (r.sample_id, r.answer)
        else:
            assert r.scores["acc"] == 0.0 and "no <answer_begin>" in r.explanation
    metrics = qa_runs["table_baseline"].metrics
    assert metrics["acc/capability/table_understanding"] == 1.0
    assert metrics["acc/capability/visual_perception"] == 0.0
    assert metrics["acc/setting/vertex_tab"] == 1.0 and metrics["acc/setting/map_mix_tab"] == 0.0


def test_report_has_table_8_and_table_3_layouts(qa_runs):
    files = qa_runs["table_baseline"].artifacts
    assert [f.name for f in files] == ["maptab_qa_report.md", "maptab_qa_report.png"]
    text = files[0].read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Metromap") and "100.00" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    # M-GP M-LP M-SR fail, E-* and V-* pass, MM-* fail
    assert cells[1:13] == ["0.00"] * 3 + ["100.00"] * 6 + ["0.00"] * 3
    assert "| Both" in text and "TU" in text
    assert files[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert get_suite("maptab").after_run(qa_runs["table_baseline"].spec, None, [], files[0].parent / "none") == []


def test_qa_samples_carry_their_answer_and_token_counts(tmp_path):
    spec = spec_for(
        tmp_path,
        "+experiment=maptab_qa",
        "env.n_maps=1",
        "suite.scenario=travelmap",
        "suite.qa_types=[V-SR,MM-GP]",
        "suite.style=2",
    )
    suite = get_suite("maptab")
    samples = suite.build_samples(spec, suite.build_env(spec))
    assert [s.metadata["qa_type"] for s in samples] == ["V-SR", "MM-GP"]
    for s in samples:
        assert s.target == [s.metadata["answer"]] and s.metadata["dims"]["extra"]["style"] == "2"
        assert s.metadata["prompt_tokens"] > s.metadata["table_tokens"] > 0
        assert "<answer_begin>" in s.input[0].content
    assert [p.type for p in samples[1].input[1].content] == ["text", "image"]  # Map+Mix_tab shows the map
    json.dumps([s.metadata for s in samples])  # metadata is plain data


# ---------------------------------------------------------------- config


def test_the_run_identity_keeps_what_changes_results_and_only_that(tmp_path, monkeypatch):
    """The hash moves with what a sample's result depends on (the code's scoring version, QA
    options, style), not with how or how much is run (limit, runner, timeouts), nor with the
    image resolution where no image is shown."""

    def h(*overrides):
        with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
            return validate_config(compose(config_name="config", overrides=list(overrides))).config_hash()

    assert h() == h("limit=5") == h("runner=ray")
    assert h("model=openai_api") == h(
        "model=openai_api",
        "model.config.max_connections=4",
        "model.config.timeout=30",
        "model.base_url=http://127.0.0.1:1234/v1",
        "+model.args.api_key=sk-rotated-key",
    )
    assert h("model=oracle") != h()
    assert h("suite.task_family=qa", "metrics=maptab_qa") != h("metrics=maptab_qa")
    assert h("suite.style=1") != h()
    # resolution matters where a map is shown, not for table-only settings
    assert h("suite.resolution=0.5") != h()
    assert h("suite.setting=edge_tab", "suite.resolution=0.5") == h("suite.setting=edge_tab")
    # a new scoring version of the suite is a new run: no stored score is reused across it
    from geoeval.core.registry import get_suite

    before = h()
    monkeypatch.setattr(get_suite("maptab"), "scoring_version", "test-bump")
    assert h() != before
    # suite=maptab_qa spells the RP defaults out: as RP it is the default config
    assert h("suite=maptab_qa", "suite.task_family=rp", "suite.scenario=metromap", "suite.n_per_category=4") == h()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["suite.task_family=qa"], "use metrics=maptab_qa"),
        (["metrics=maptab_qa"], "use metrics=maptab_rp"),
        (["+experiment=maptab_qa", "env=maptab_authors"], "env=maptab_synthetic"),
    ],
)
def test_mismatched_family_stops_before_work(tmp_path, overrides, message):
    spec = spec_for(tmp_path, *overrides)
    with pytest.raises(GeoevalError, match=message):
        get_suite("maptab").build_env(spec)


def test_setting_filters_qa_types(tmp_path):
    spec = spec_for(tmp_path, "+experiment=maptab_qa", "suite.setting=vertex_tab")
    assert spec.suite.selected_qa_types() == ["V-GP", "V-LP", "V-SR"]
    with pytest.raises(GeoevalError, match="suite.setting='vertex_tab' keeps none of suite.categories"):
        spec_for(tmp_path, "suite.setting=vertex_tab").suite.selected_categories()
    with pytest.raises(GeoevalError, match="suite.style"):
        spec_for(tmp_path, "suite.style=5")


@pytest.mark.slow
@pytest.mark.parametrize("resolution", [1.0, 0.125])
def test_perception_baseline_reads_map_answers_off_the_image(tmp_path, resolution):
    """Its Map and Map+Mix_tab answers come from OCR and colour analysis of the rendered image: all
    right on a clean full-size map, none once the labels are a few pixels tall."""
    spec = spec_for(
        tmp_path, "+experiment=maptab_qa", "model=perception_baseline", "env.n_maps=1", f"suite.resolution={resolution}"
    )
    outcome = run_job(spec, out_dir=tmp_path / "run", progress=False)
    for r in outcome.results:
        from_image = r.dims.setting.startswith("map")
        expected = 1.0 if not from_image or resolution == 1.0 else 0.0
        assert r.scores["acc"] == expected, (r.sample_id, r.answer, r.explanation)


def test_row_order_answers_follow_the_shuffled_table():
    m = generate_travel_map(4)
    fixed = qa.build_qa_queries(m, ["V-SR"], 12, 4)
    shuffled = qa.build_qa_queries(m, ["V-SR"], 12, 4, shuffle_seed=9)
    assert [q.params for q in fixed] == [q.params for q in shuffled]  # same questions
    assert all(q.row_seed is None for q in fixed) and all(q.row_seed for q in shuffled)
    for q in shuffled:
        names = [r["Vertex"] for r in qa.qa_table_rows(m, q.qa_type, q.hidden_rows, q.row_seed)["Vertex Table"]]
        assert q.answer == str(int(names.index(q.params["a"]) < names.index(q.params["b"])))
    assert [q.answer for q in fixed] != [q.answer for q in shuffled]
