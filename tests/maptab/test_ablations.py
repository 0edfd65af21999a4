"""Ablation axes of MapTab (appendices G.3, G.4, B.3): prompt token counts per table format,
Chinese labels, instruction style; and Travelmap route planning on synthetic maps."""

import pytest
from PIL import Image

from geoeval.core.errors import GeoevalError
from geoeval.core.registry import get_suite
from geoeval.core.run.job import run_job
from geoeval.suites.maptab.generator import language
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.travel import generate_travel_map
from geoeval.suites.maptab.render import image as render
from geoeval.suites.maptab.rp.queries import prompt_tables
from geoeval.suites.maptab.tokens import estimate_tokens
from tests.conftest import compose_spec as spec_for


def samples_of(spec):
    suite = get_suite("maptab")
    return suite.build_samples(spec, suite.build_env(spec))


# ---------------------------------------------------------------- token counts (G.3)


def test_token_estimate_rules():
    assert estimate_tokens("") == 0
    assert estimate_tokens("Edge") == 1 and estimate_tokens("Reliability") == 3  # ceil(11 / 4)
    assert estimate_tokens("2.76") == 3  # "2", ".", "76"
    assert estimate_tokens("1234567") == 3  # digit groups of three
    assert estimate_tokens("a b") == 2  # a space before a word is free
    assert estimate_tokens('{\n  "x"') == 5  # {, newline+indent, ", x, "
    assert estimate_tokens("红线站") == 3  # one per CJK character


def test_json_tables_cost_far_more_tokens_than_csv():
    m = generate_metro_map(4)
    for category in ("T", "TPCR", "mix"):
        csv = sum(estimate_tokens(t) for t in prompt_tables(m, category, "csv").values())
        json = sum(estimate_tokens(t) for t in prompt_tables(m, category, "json").values())
        assert json > 2 * csv, (category, csv, json)  # G.3: CSV uses more than 50 % fewer tokens


def test_format_ablation_records_tokens_per_sample(tmp_path):
    results = {}
    for fmt in ("csv", "json"):
        spec = spec_for(
            tmp_path,
            "+experiment=maptab_format_ablation",
            f"suite.table_format={fmt}",
            "env.n_maps=1",
            "suite.n_per_category=2",
        )
        outcome = run_job(spec, out_dir=tmp_path / fmt, progress=False)
        results[fmt] = outcome.metrics
        for r in outcome.results:
            assert r.scores["prompt_tokens"] > r.scores["table_tokens"] > 0
    assert results["json"]["table_tokens"] > 2 * results["csv"]["table_tokens"]
    # the table baseline solves the Edge-table categories in either format (mix has no Edge Table)
    assert results["csv"]["ema/task/TPCR"] == results["json"]["ema/task/TPCR"] == 1.0


# ---------------------------------------------------------------- label language (G.4)


def test_transliteration_is_a_fixed_table():
    assert language.transliterate("Kensett Square") == "凯恩塞特广场"  # k+e, n (coda) + s+e, t, Square
    assert language.transliterate("Marlow") == "马尔洛"  # m+a, r (coda), -low
    assert language.transliterate("Dunthorpe Airport") == "杜恩索普机场"
    assert language.line_name("Red Line") == "红线" and language.line_name("Line 7") == "Line 7"


@pytest.mark.parametrize("gen", [generate_metro_map, generate_travel_map])
def test_chinese_names_stay_pairwise_dissimilar(gen):
    for seed in range(30):
        m = gen(seed)
        zh = language.localize_map(m, "zh")
        names = list(zh.stations)
        assert len(names) == len(m.stations)
        assert not any(language._too_similar(a, b) for i, a in enumerate(names) for b in names[i + 1 :])
        # same topology and attributes, renamed
        assert [(e.time, e.price) for e in zh.edges] == [(e.time, e.price) for e in m.edges]
        assert sorted(len(ln.stations) for ln in zh.lines.values()) == sorted(
            len(ln.stations) for ln in m.lines.values()
        )


def needs_cjk_font():
    if language.cjk_font() is None:
        pytest.skip("no CJK font (pip install noto-cjk-sans-otc, or apt-get install fonts-noto-cjk)")


@pytest.mark.slow
def test_zh_samples_use_chinese_names_and_agents_still_solve_them(tmp_path):
    needs_cjk_font()  # the T samples show the map
    spec = spec_for(
        tmp_path,
        "suite.language=zh",
        "env.n_maps=1",
        "suite.n_per_category=2",
        "suite.categories=[edge_only,T]",
        "model=table_baseline",
    )
    samples = samples_of(spec)
    en = samples_of(spec_for(tmp_path, "env.n_maps=1", "suite.n_per_category=2", "suite.categories=[edge_only,T]"))
    assert [s.id for s in samples] == [s.id for s in en]
    for s in samples:
        assert all("\u4e00" <= ch <= "\u9fff" for ch in s.metadata["source"].replace(" ", "")[:1])
        assert s.metadata["source"] in s.input[1].content[0].text
    outcome = run_job(spec, out_dir=tmp_path / "run", progress=False)
    assert outcome.metrics["ema"] == 1.0


def test_chinese_labels_are_drawn_with_a_cjk_font():
    needs_cjk_font()
    m = language.localize_map(generate_metro_map(2), "zh")
    layout = render.compute_layout(m, language="zh")
    img = render.render_map(m, language="zh").convert("L")
    for name, (left, top, right, bottom) in layout.labels.items():
        assert right - left > 15 * len(name)  # full-width glyphs, not empty boxes
        box = img.crop((int(left), int(top), int(right) + 1, int(bottom) + 1))
        assert min(box.getdata()) < 100, name  # dark ink in every label box
    # the tofu check: a Latin-only font draws every CJK character as the same box
    glyphs = {bytes(_glyph(ch)) for ch in "红蓝绿站"}
    assert len(glyphs) == 4


def _glyph(ch):
    from PIL import ImageDraw, ImageFont

    path, index = language.cjk_font()
    img = Image.new("L", (40, 40), 255)
    ImageDraw.Draw(img).text((4, 4), ch, font=ImageFont.truetype(path, 28, index=index), fill=0)
    return img.tobytes()


def test_zh_without_a_cjk_font_says_how_to_get_one(monkeypatch):
    monkeypatch.setattr(language, "cjk_font", lambda: None)
    with pytest.raises(GeoevalError, match="noto-cjk-sans-otc"):
        render.render_map(language.localize_map(generate_metro_map(2), "zh"), language="zh")


# ---------------------------------------------------------------- instruction style (B.3 / D.1)


def test_fixed_style_applies_to_every_query(tmp_path):
    spec = spec_for(
        tmp_path, "+experiment=maptab_style_ablation", "suite.style=3", "env.n_maps=1", "suite.n_per_category=5"
    )
    samples = samples_of(spec)
    assert {s.metadata["dims"]["extra"]["style"] for s in samples} == {"3"}
    cycled = samples_of(spec_for(tmp_path, "env.n_maps=1", "suite.n_per_category=5"))
    assert {s.metadata["dims"]["extra"]["style"] for s in cycled} == {"0", "1", "2", "3", "4"}
    fixed_q = {s.id: s.input[1].content[0].text for s in samples}
    assert any(fixed_q[s.id] != s.input[1].content[0].text for s in cycled)


@pytest.mark.parametrize(
    "experiment, overrides",
    [
        ("maptab_format_ablation", ["suite.table_format=json"]),
        ("maptab_language_ablation", ["suite.language=zh", "suite.resolution=0.25"]),
        ("maptab_style_ablation", ["suite.style=0"]),
        ("maptab_style_ablation", ["suite=maptab_qa", "metrics=maptab_qa", "suite.style=4"]),
    ],
)
def test_ablation_experiments_compose(tmp_path, experiment, overrides):
    spec = spec_for(tmp_path, f"+experiment={experiment}", *overrides)
    assert spec.experiment_name == experiment


# ---------------------------------------------------------------- Travelmap route planning


def test_travelmap_route_planning_on_synthetic_maps(tmp_path):
    spec = spec_for(
        tmp_path,
        "suite.scenario=travelmap",
        "env.n_maps=2",
        "suite.n_per_category=2",
        "suite.categories=[map_only,edge_only,TPCR]",
        "model=table_baseline",
    )
    outcome = run_job(spec, out_dir=tmp_path / "run", progress=False)
    assert {r.dims.extra["scenario"] for r in outcome.results} == {"travelmap"}
    assert {r.dims.level for r in outcome.results} <= {"easy", "medium", "hard"}
    by_task = {r.dims.task: r.scores["ema"] for r in outcome.results}
    assert by_task["edge_only"] == by_task["TPCR"] == 1.0 and by_task["map_only"] == 0.0
