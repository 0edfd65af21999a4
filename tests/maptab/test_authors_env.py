"""`env=maptab_authors`: the authors' released files as samples, evaluated as they are; and the
round trip of a generated environment through the authors' layout."""

import base64
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from geoeval.core.errors import GeoevalError
from geoeval.core.registry import get_suite
from geoeval.core.run.job import run_job
from geoeval.suites.maptab.authors.env import quality_report
from geoeval.suites.maptab.authors.format import load_test_set, rp_test_set_path
from geoeval.suites.maptab.env.tables import parse_table
from geoeval.suites.maptab.rp.prompts import SUM_OBJECTIVE_NOTE
from geoeval.suites.maptab.rp.queries import CATEGORIES
from tests.conftest import compose_spec as spec_for

PEERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "maptab"
TABLE_CATEGORIES = {"edge_only", "map_edge", "T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR"}


def peers_or_skip() -> Path:
    if not PEERS.is_dir():
        pytest.skip("../shared/peers/maptab (the authors' sample) is not present")
    return PEERS


def build(spec):
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    return env, suite.build_samples(spec, env)


def view(sample):
    """What a model sees and what is scored, comparable with ==."""
    system, user = sample.input
    parts = [(p.type, p.text if p.type == "text" else p.image) for p in user.content]
    return sample.id, system.content, parts, sample.target, sample.metadata


def decoded(data_uri: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data_uri.split(",", 1)[1])))


def table_block(text: str, title: str) -> list[dict]:
    head = f"{title} (csv):\n```csv\n"
    start = text.index(head) + len(head)
    return parse_table(text[start : text.index("```", start)], "csv")


# ---------------------------------------------------------------- round trip


@pytest.mark.parametrize("resolution", [1.0, 0.25])
def test_generated_env_round_trips_through_the_authors_layout(tmp_path, resolution):
    cats = list(CATEGORIES)
    common = [f"suite.categories=[{','.join(cats)}]", "suite.n_per_category=3", f"suite.resolution={resolution}"]
    synth = spec_for(
        tmp_path,
        "env.n_maps=2",
        "env.n_lines=3",
        "env.stations_per_line=[4,6]",
        "env.width=1400",
        "env.height=1100",
        *common,
    )
    suite = get_suite("maptab")
    env, samples = build(synth)
    root = tmp_path / "release"
    written = suite.write_authors_layout(synth, env, root)
    assert sum(p.suffix == ".png" for p in written) == 2

    authors = spec_for(
        tmp_path,
        "env=maptab_authors",
        f"env.root={root}",
        "env.scenario=metromap",
        f"env.categories=[{','.join(cats)}]",
        *common,
    )
    _, back = build(authors)
    assert len(back) == len(samples) == 2 * 12 * 3
    for a, b in zip(samples, back):
        assert view(a) == view(b), a.id
    assert {s.metadata["dims"]["extra"]["style"] for s in back} == {"0", "1", "2"}


def test_write_authors_layout_needs_a_synthetic_env(tmp_path):
    spec = spec_for(tmp_path, "env=maptab_authors", f"env.root={peers_or_skip()}")
    env = get_suite("maptab").build_env(spec)
    with pytest.raises(GeoevalError, match="maptab_synthetic"):
        get_suite("maptab").write_authors_layout(spec, env, tmp_path / "out")


# ---------------------------------------------------------------- the authors' sample


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    peers_or_skip()
    tmp = tmp_path_factory.mktemp("authors")
    spec = spec_for(tmp, "env=maptab_authors", f"env.root={PEERS}", "suite.resolution=0.5")
    return spec, *build(spec)


@pytest.mark.conformance
def test_every_item_of_both_scenarios_becomes_a_sample(sample_run):
    _spec, env, samples = sample_run
    assert env.source == "authors" and env.map_names == ("angkorWar", "cleveland")
    assert env.map_difficulty == {"angkorWar": "Hard", "cleveland": "Easy"}
    assert len(samples) == 24
    by = {(s.metadata["scenario"], s.metadata["category"]): s for s in samples}
    assert set(by) == {(sc, c) for sc in ("metromap", "travelmap") for c in CATEGORIES}
    for (scenario, category), s in by.items():
        item = load_test_set(rp_test_set_path(PEERS, scenario, category))[0]
        spot = "station" if scenario == "metromap" else "spot"
        assert s.id == f"{item['city' if scenario == 'metromap' else 'scenic_spot']}-{category}-000"
        assert s.target == item["routes"]
        assert s.metadata["source"] == item[f"{spot}_1"] and s.metadata["destination"] == item[f"{spot}_2"]
        assert s.metadata["weights"] == item.get("weights")
        assert s.metadata["totals"] == (
            {k: item[k] for k in ("Total_Time", "Total_Price", "Average_Comfort Level", "Average_Reliability")}
            if "weights" in item
            else None
        )
        assert (s.metadata["map_difficulty"], s.metadata["query_difficulty"]) == (
            item["Map_Difficulty"],
            item["Query_Difficulty"],
        )
        assert item["question"] in s.input[1].content[0].text
        # the authors' wording is not geoeval's, except the Travelmap Map-only question, which is
        # word for word geoeval's style 1 (Graph-theoretic: "what is the shortest path from")
        style = "1" if (scenario, category) == ("travelmap", "map_only") else "unknown"
        assert s.metadata["dims"]["extra"]["style"] == style, (scenario, category)


@pytest.mark.conformance
def test_images_are_the_authors_pngs_downscaled(sample_run):
    _spec, _env, samples = sample_run
    sizes = {"cleveland": (995, 600), "angkorWar": (790, 827)}
    for s in samples:
        images = [p for p in s.input[1].content if p.type == "image"]
        if not s.metadata["setting"].startswith("map"):
            assert images == []
            continue
        img = decoded(images[0].image)
        w, h = sizes[s.metadata["map"]]
        assert img.size == (round(w * 0.5), round(h * 0.5)) and img.mode == "RGB"
    # Angkor Wat is RGBA: its transparent margin is flattened onto white, not black
    angkor = next(s for s in samples if s.metadata["map"] == "angkorWar" and s.metadata["category"] == "map_only")
    with Image.open(PEERS / "travelmap/images/cambodia/angkorWar.png") as im:
        alpha = im.getchannel("A")
        corner = next(
            ((x, y) for x in range(0, im.width, 7) for y in range(0, im.height, 7) if alpha.getpixel((x, y)) == 0), None
        )
    if corner is not None:
        small = decoded(angkor.input[1].content[1].image)
        assert min(small.getpixel((corner[0] // 2, corner[1] // 2))) > 200


@pytest.mark.conformance
def test_tables_carry_only_the_columns_the_category_needs(sample_run):
    _spec, _env, samples = sample_run
    by = {(s.metadata["scenario"], s.metadata["category"]): s.input[1].content[0].text for s in samples}
    t_metro = by[("metromap", "T")]
    assert list(table_block(t_metro, "Edge Table")[0]) == ["Edge", "Line", "Time"]
    assert list(table_block(t_metro, "Vertex Table")[0]) == ["Vertex", "Line", "Time", "Transfer Time"]
    assert list(table_block(by[("travelmap", "C")], "Edge Table")[0]) == ["Edge", "Comfort Level"]
    assert list(table_block(by[("travelmap", "edge_only")], "Edge Table")[0]) == ["Edge"]
    assert "Table (" not in by[("metromap", "map_only")]
    # Map+Mix_tab: the sample has no cleveland_vertex2.json, so Mix_tab is derived: Triskett's
    # price is the mean of its two edges' prices (0.20 + 0.64) / 2, and no Line column
    mix = {r["Vertex"]: r for r in table_block(by[("metromap", "mix")], "Vertex Table")}
    assert "Edge Table" not in by[("metromap", "mix")]
    assert list(mix["Triskett"]) == ["Vertex", "Time", "Price", "Comfort Level", "Reliability", "Transfer Time"]
    assert mix["Triskett"]["Price"] == 0.42
    # Travelmap's mix item names angkorWar_vertex.json, which exists: its rows are shown as they
    # are, in the sample's own shuffled order (the paper's per-sample row shuffling)
    travel_mix = table_block(by[("travelmap", "mix")], "Vertex Table")
    vertex = parse_table((PEERS / "travelmap/tabulars/cambodia/angkorWar_vertex.csv").read_text("utf-8-sig"), "csv")
    assert travel_mix != vertex
    assert sorted(travel_mix, key=lambda r: r["Vertex"]) == sorted(vertex, key=lambda r: r["Vertex"])


@pytest.mark.conformance
def test_system_prompts_state_the_objective_the_labels_follow(sample_run):
    _spec, _env, samples = sample_run
    for s in samples:
        system = s.input[0].content
        travel = s.metadata["scenario"] == "travelmap"
        assert ("Scenic Area" in system) == travel
        has_mean_criterion = s.metadata["category"] in ("C", "R", "TPR", "TCR", "PCR", "TPCR", "mix")
        assert (SUM_OBJECTIVE_NOTE in system) == (travel and has_mean_criterion), s.id


@pytest.mark.conformance
def test_quality_checks_of_the_sample_maps_pass(sample_run):
    _spec, env, _samples = sample_run
    assert quality_report(env) == {"maps": {"angkorWar": [], "cleveland": []}, "items": []}


@pytest.mark.slow
@pytest.mark.conformance
@pytest.mark.parametrize("model", ["oracle", "table_baseline"])
def test_offline_agents_on_the_sample(tmp_path, model):
    peers_or_skip()
    spec = spec_for(tmp_path, "+experiment=maptab_authors_sample", f"model={model}", f"env.root={PEERS}")
    assert spec.env.name == "maptab_authors" and spec.env.scenario == "both"
    outcome = run_job(spec, out_dir=tmp_path / "run", progress=False)
    assert len(outcome.results) == 24
    for r in outcome.results:
        expected = 1.0 if model == "oracle" or r.dims.task in TABLE_CATEGORIES else 0.0
        assert (r.scores["ema"], r.scores["pma"]) == (expected, expected), (r.sample_id, r.answer)
    # DS is a total: 12 Cleveland samples x (Easy 1 + Easy 1) + 12 Angkor Wat x (Hard 3 + Hard 3)
    assert outcome.metrics["ds"] == (96.0 if model == "oracle" else 10 * 2 + 10 * 6)


@pytest.mark.conformance
def test_scenario_categories_and_setting_select_the_samples(tmp_path):
    root = peers_or_skip()
    _, travel = build(
        spec_for(tmp_path, "env=maptab_authors", f"env.root={root}", "env.scenario=travelmap", "env.categories=[T,mix]")
    )
    assert [s.id for s in travel] == ["angkorWar-T-000", "angkorWar-mix-000"]
    _, maps_only = build(spec_for(tmp_path, "env=maptab_authors", f"env.root={root}", "suite.setting=map"))
    assert [s.id for s in maps_only] == ["angkorWar-map_only-000", "cleveland-map_only-000"]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "override, key",
    [
        ("env.scenario=mars", "env.scenario"),
        ("+env.bogus=1", "env.bogus"),
        ("env.categories=[X]", "env.categories"),
        ("env.name=atlas", "env.name"),
    ],
)
def test_bad_env_config_names_the_key(tmp_path, override, key):
    with pytest.raises(GeoevalError) as err:
        spec_for(tmp_path, "env=maptab_authors", override)
    assert key in str(err.value)


def test_missing_root_is_a_clear_error(tmp_path):
    spec = spec_for(tmp_path, "env=maptab_authors", f"env.root={tmp_path / 'nowhere'}")
    with pytest.raises(GeoevalError, match="env.root: .*nowhere is not a directory"):
        get_suite("maptab").build_env(spec)


def test_missing_category_file_is_a_clear_error(tmp_path):
    root = tmp_path / "release"
    (root / "metromap" / "data" / "test_set").mkdir(parents=True)
    spec = spec_for(tmp_path, "env=maptab_authors", f"env.root={root}", "env.scenario=metromap", "env.categories=[T]")
    with pytest.raises(GeoevalError, match="no test-set file .*constraint_1_test_set.json"):
        get_suite("maptab").build_env(spec)


@pytest.fixture
def copied_sample(tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(peers_or_skip() / "metromap", root / "metromap")
    return root


def edit_items(root: Path, category: str, change) -> None:
    path = rp_test_set_path(root, "metromap", category)
    items = json.loads(path.read_text("utf-8"))
    change(items[0])
    path.write_text(json.dumps(items, ensure_ascii=False), "utf-8")


@pytest.mark.conformance
@pytest.mark.parametrize(
    "category, change, message",
    [
        ("T", lambda it: it.pop("routes"), "constraint_1_test_set.json item 0: 'routes'"),
        ("T", lambda it: it.update(weights=[1, 0, 0]), "item 0: 'weights' must be 4"),
        ("P", lambda it: it.pop("Total_Price"), "item 0: missing or non-numeric 'Total_Price'"),
        ("map_edge", lambda it: it.update(Map_Difficulty="Tricky"), "Map_Difficulty must be Easy, Medium or Hard"),
        ("map_only", lambda it: it.pop("station_2"), "missing or empty 'station_2'"),
    ],
)
def test_malformed_item_stops_the_build_naming_file_item_and_key(tmp_path, copied_sample, category, change, message):
    edit_items(copied_sample, category, change)
    spec = spec_for(tmp_path, "env=maptab_authors", f"env.root={copied_sample}", "env.scenario=metromap")
    with pytest.raises(GeoevalError) as err:
        get_suite("maptab").build_env(spec)
    assert message in str(err.value)


@pytest.mark.conformance
def test_quality_violations_are_reported_stored_and_excluded(tmp_path, copied_sample, capsys):
    # a route through a non-existent edge, and a map with a duplicated edge row and a stray station
    edit_items(copied_sample, "T", lambda it: it.update(routes=["Triskett-West 65th_Lorain-West 25th_Ohio City"]))
    edge_csv = copied_sample / "metromap/tabulars/america/cleveland_edge.csv"
    for name in ("cleveland_edge.json",):  # make the CSV the table that is read
        (copied_sample / "metromap/tabulars/america" / name).unlink()
    edge_csv.write_text(edge_csv.read_text("utf-8-sig") + "Triskett-West Park,Red Line,2.45,0.2,0.79,0\n", "utf-8-sig")
    spec = spec_for(tmp_path, "env=maptab_authors", f"env.root={copied_sample}", "env.scenario=metromap")
    # the failing map is never used (env.on_quality_failure=exclude); here it is the only one
    with pytest.raises(GeoevalError) as failure:
        build(spec)
    stored = Path(str(failure.value).rsplit("see ", 1)[1])
    report = json.loads(stored.read_text("utf-8"))
    assert report["excluded"] == {"maps": ["cleveland"], "items": 12}
    assert any("duplicate edge" in p for p in report["maps"]["cleveland"])
    assert report["items"] == [
        {
            "file": "metromap/data/test_set/metromap_shortest_path_query_map_and_tab_with_constraint_1_test_set.json",
            "index": 0,
            "problem": "route 'Triskett-West 65th_Lorain-West 25th_Ohio City' uses edges the map does not have: "
            "Triskett-West 65th_Lorain",
        }
    ]
    err = capsys.readouterr().err
    assert "duplicate edge" in err and "Triskett-West 65th_Lorain" in err and "quality.json" in err


@pytest.mark.conformance
def test_edited_files_are_not_served_from_a_stale_cache(tmp_path, copied_sample):
    spec = spec_for(
        tmp_path, "env=maptab_authors", f"env.root={copied_sample}", "env.scenario=metromap", "env.categories=[T]"
    )
    env1, s1 = build(spec)
    edit_items(copied_sample, "T", lambda it: it.update(question="From Triskett to West 25th_Ohio City, fastest?"))
    env2, s2 = build(spec)
    assert env1.db_path != env2.db_path
    assert "fastest?" in s2[0].input[1].content[0].text and "fastest?" not in s1[0].input[1].content[0].text


@pytest.mark.conformance
def test_run_identity_follows_the_files_contents_not_their_place_or_times(tmp_path, copied_sample):
    def fingerprint(root: Path) -> str:
        spec = spec_for(
            tmp_path, "env=maptab_authors", f"env.root={root}", "env.scenario=metromap", "env.categories=[T]"
        )
        return get_suite("maptab").build_env(spec).fingerprint

    first = fingerprint(copied_sample)
    # the same files elsewhere, every one with a new modification time (a re-extracted download)
    moved = tmp_path / "elsewhere"
    shutil.copytree(copied_sample, moved)
    for p in moved.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**12))
    assert fingerprint(moved) == first
    # one changed pixel of the map image is a new input
    png = moved / "metromap/images/america/cleveland.png"
    img = Image.open(png).convert("RGB")
    img.putpixel((0, 0), tuple(255 - c for c in img.getpixel((0, 0))))
    img.save(png)
    assert fingerprint(moved) != first
