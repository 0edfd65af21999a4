"""`geoeval score maptab`: scoring a results file in the authors' format as their evaluator does
(SPEC.md, "The authors' route scorer"). Expected values are worked out by hand in the comments."""

import json
from pathlib import Path

import pytest

from geoeval.cli.main import main as geoeval_main
from geoeval.suites.maptab.authors.format import load_test_set
from geoeval.suites.maptab.cli import score as main

PEERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "maptab"

ROUTE = "Alpha Park-Bravo Street(transfer)-Charlie Cross-Delta Hill-Echo Square"


def metro_item(response, routes=(ROUTE,), map_level="Medium", query_level="Hard", **extra):
    item = {
        "country": "synthetic",
        "city": "testville",
        "station_1": "Alpha Park",
        "station_2": "Echo Square",
        "Map_Difficulty": map_level,
        "Query_Difficulty": query_level,
        "routes": list(routes),
    }
    item.update(extra)
    if response is not None:
        item["response"] = response
    return item


def travel_item(response, routes=("North Gate-Lotus Pond-Old Temple",), level="Easy"):
    return {
        "country": "synthetic",
        "scenic_spot": "park",
        "spot_1": "North Gate",
        "spot_2": "Old Temple",
        "Map_Difficulty": level,
        "Query_Difficulty": level,
        "routes": list(routes),
        "response": response,
    }


def run(tmp_path, items_or_paths, capsys, *extra_args):
    if isinstance(items_or_paths, list) and items_or_paths and isinstance(items_or_paths[0], Path):
        inputs = [str(p) for p in items_or_paths]
    else:
        path = tmp_path / "results.json"
        path.write_text(json.dumps(items_or_paths, ensure_ascii=False), encoding="utf-8")
        inputs = [str(path)]
    out = tmp_path / "scored.json"
    rc = main([*inputs, "--output", str(out), *extra_args])
    captured = capsys.readouterr()
    scored = json.loads(out.read_text("utf-8")) if out.exists() else None
    return rc, scored, captured


def fields(item):
    return item["all_acc"], item["part_acc"], item["Difficulty_score"]


def test_hand_built_metromap_items(tmp_path, capsys):
    items = [
        metro_item(ROUTE),  # exact: EMA 1, PMA 1, weight Medium 2 + Hard 3 = 5
        # a misspelt station still matches: "Charli Cros" vs "Charlie Cross" ratio 2*11/24 >= 0.5
        metro_item("Alpha Park-Bravo Street(transfer)-Charli Cros-Delta Hill-Echo Square"),
        # third station wrong: EMA 0, PMA 2/5
        metro_item("Alpha Park-Bravo Street(transfer)-Zulu Quay-Delta Hill-Echo Square"),
        # transfer mark missing: EMA 0, but the prefix rule is similarity only, so PMA 5/5
        metro_item("Alpha Park-Bravo Street-Charlie Cross-Delta Hill-Echo Square"),
        # transfer mark in another case: the transfer position must be identical -> EMA 0
        metro_item("Alpha Park-bravo street(transfer)-Charlie Cross-Delta Hill-Echo Square"),
        # spaces around the hyphens are stripped for similarity, but not at the transfer position:
        # EMA 0, while the prefix (similarity only) keeps all 5
        metro_item("Alpha Park - Bravo Street(transfer)-Charlie Cross-Delta Hill-Echo Square"),
        # one station short: EMA 0, PMA 4/5
        metro_item("Alpha Park-Bravo Street(transfer)-Charlie Cross-Delta Hill"),
        # the best of two references counts; here the second: Easy 1 + Easy 1 = 2
        metro_item(
            "Alpha Park-Foxtrot Lane-Echo Square",
            routes=(ROUTE, "Alpha Park-Foxtrot Lane-Echo Square"),
            map_level="Easy",
            query_level="Easy",
        ),
    ]
    rc, scored, captured = run(tmp_path, items, capsys)
    assert rc == 0
    assert [fields(it) for it in scored] == [
        (1, 1.0, 5),
        (1, 1.0, 5),
        (0, 0.4, 5),
        (0, 1.0, 5),
        (0, 1.0, 5),
        (0, 1.0, 5),
        (0, 0.8, 5),
        (1, 1.0, 2),
    ]
    # everything else of each item is written back unchanged, in order
    for before, after in zip(items, scored):
        assert {
            k: v for k, v in after.items() if k not in ("all_acc", "part_acc", "Difficulty_score", "parsed_route")
        } == before
        assert after["parsed_route"] == before["response"]
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    # EMA 3/8; PMA (1+1+0.4+1+1+1+0.8+1)/8 = 7.2/8; DS = 5 + 5 + 2 (exact items only)
    assert summary["all_acc"] == 3 / 8
    assert summary["part_acc"] == pytest.approx(0.9)
    assert summary["difficulty_score_total"] == 12
    assert summary["count"] == 8 and summary["problems"] == []
    assert "0.3750" in captured.out and "0.9000" in captured.out and " 12" in captured.out


def test_pma_is_rounded_to_four_decimals(tmp_path, capsys):
    route = "-".join(f"Station {c}" for c in "ABCDEFG")  # 7 stations
    response = "-".join(f"Station {c}" for c in "AB") + "-Nowhere"
    _, scored, _ = run(tmp_path, [metro_item(response, routes=(route,))], capsys)
    assert scored[0]["part_acc"] == 0.2857  # 2/7 = 0.285714...


def test_travelmap_items_and_the_authors_transfer_rule(tmp_path, capsys):
    items = [
        travel_item("North Gate-Lotus Pond-Old Temple"),  # Easy+Easy: weight 2
        travel_item("North Gate-Lotus Pond"),  # PMA 2/3
        # The authors' evaluator applies the transfer rule in every scenario: a "(transfer)" the
        # reference does not have fails EMA even in Travelmap (PMA is similarity only: 3/3).
        travel_item("North Gate-Lotus Pond(transfer)-Old Temple"),
        travel_item("北门-莲花池-古寺", routes=("北门-莲花池-古寺",), level="Hard"),  # weight 6
    ]
    rc, scored, captured = run(tmp_path, items, capsys)
    assert rc == 0
    assert [fields(it) for it in scored] == [(1, 1.0, 2), (0, 0.6667, 2), (0, 1.0, 2), (1, 1.0, 6)]
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    assert summary["difficulty_score_total"] == 8
    assert set(summary["by_scenario"]) == {"travelmap"}
    assert "travelmap" in captured.out


def test_mixed_scenarios_are_split_in_the_report(tmp_path, capsys):
    items = [metro_item(ROUTE), travel_item("Wrong-Way"), travel_item("North Gate-Lotus Pond-Old Temple")]
    rc, _, captured = run(tmp_path, items, capsys)
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    assert rc == 0
    assert summary["by_scenario"]["metromap"] == {
        "all_acc": 1.0,
        "part_acc": 1.0,
        "difficulty_score_total": 5,
        "count": 1,
    }
    assert summary["by_scenario"]["travelmap"]["all_acc"] == 0.5
    assert summary["all_acc"] == pytest.approx(2 / 3) and summary["difficulty_score_total"] == 7
    lines = captured.out.splitlines()
    assert any(line.startswith("metromap ") for line in lines)
    assert any(line.startswith("travelmap ") for line in lines)
    assert any(line.startswith("all ") for line in lines)


def test_several_files_are_scored_together(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps([metro_item(ROUTE)]), "utf-8")
    b.write_text(json.dumps([metro_item("nothing"), metro_item(ROUTE)]), "utf-8")
    rc, scored, captured = run(tmp_path, [a, b], capsys)
    assert rc == 0 and [it["all_acc"] for it in scored] == [1, 0, 1]
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    assert summary["by_file"][str(a)]["all_acc"] == 1.0 and summary["by_file"][str(b)]["all_acc"] == 0.5
    assert "a.json" in captured.out and "b.json" in captured.out


def test_malformed_items_are_reported_not_fatal(tmp_path, capsys):
    items = [
        "just a string",  # not an item: left out
        metro_item(None),  # no response: scored 0
        metro_item(ROUTE, routes=()),  # no reference: scored 0
        {k: v for k, v in metro_item(ROUTE).items() if k != "routes"},
        metro_item(ROUTE, map_level="Impossible"),  # unknown level: weight 0, still an exact match
        metro_item(ROUTE, map_level=" Easy"),  # the authors do not strip levels: weight 0
        metro_item(ROUTE),
    ]
    rc, scored, captured = run(tmp_path, items, capsys)
    assert rc == 0
    assert [fields(it) for it in scored] == [
        (0, 0.0, 5),
        (0, 0.0, 5),
        (0, 0.0, 5),
        (1, 1.0, 0),
        (1, 1.0, 0),
        (1, 1.0, 5),
    ]
    warnings = [line for line in captured.err.splitlines() if "warning" in line]
    assert any("item 0" in w and "not a JSON object" in w for w in warnings)
    assert any("item 1" in w and "no 'response'" in w for w in warnings)
    assert any("item 2" in w and "routes" in w for w in warnings)
    assert any("item 3" in w and "routes" in w for w in warnings)
    assert any("item 4" in w and "Impossible" in w for w in warnings)
    assert len(warnings) == 6
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    assert summary["count"] == 6 and len(summary["problems"]) == 6
    assert summary["difficulty_score_total"] == 5


def test_raw_response_fallback_as_the_authors(tmp_path, capsys):
    items = [
        metro_item(None, raw_response=ROUTE),
        # QA-guided answers carry the route in tags
        metro_item(
            None,
            raw_response=f"I think...\n<route_begin>{ROUTE}<route_end>\n<answer_begin>3<answer_end>",
            benchmark_variant="qa_guided",
        ),
        # without the qa_guided flag the raw text is taken as it is: the first piece is then
        # "After checking ... is Alpha Park", similarity 2*10/71 < 0.5
        metro_item(
            None, raw_response=f"<route_begin>After checking every line on the map, my answer is {ROUTE}<route_end>"
        ),
    ]
    _, scored, _ = run(tmp_path, items, capsys)
    assert [it["all_acc"] for it in scored] == [1, 1, 0]


@pytest.mark.parametrize(
    "content, reason",
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ('{"routes": []}', "expected a JSON list"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)
def test_bad_input_file_is_one_error_line_and_exit_2(tmp_path, capsys, content, reason):
    path = tmp_path / "results.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, "utf-8")
    good = tmp_path / "good.json"
    good.write_text(json.dumps([metro_item(ROUTE)]), "utf-8")
    out = tmp_path / "scored.json"
    rc = main([str(good), str(path), "--output", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and reason in err[0] and str(path) in err[0]
    assert not out.exists()  # nothing is written when any input is bad


# Files that cannot be scored at all: written as raw bytes, so that what reaches the reader is
# exactly the hostile text (json.dumps would escape it).
ITEM_JSON = json.dumps(metro_item(ROUTE))
BAD_FILES = {
    "deeply nested": ("[" * 100_000 + "]" * 100_000).encode(),  # past Python's recursion limit
    "nested inside an item": f'[{ITEM_JSON[:-1]}, "notes": {"[" * 40}{"]" * 40}}}]'.encode(),
    "raw NUL byte": f"[{ITEM_JSON}]\x00".encode(),
    "raw NUL inside a string": b'[{"response": "Alpha\x00Park"}]',
    "raw surrogate bytes": b'[{"response": "Alpha \xed\xa0\x80 Park"}]',  # CESU-8 of U+D800: not UTF-8
    "integer of 5000 digits": f"[{'7' * 5000}]".encode(),
    "huge string, not a list": json.dumps("A-B" * 400_000).encode(),
    "number, not a list": b"42",
    "null, not a list": b"null",
    "empty file": b"",
    "truncated": f"[{ITEM_JSON}".encode(),
}
BAD_FILE_REASONS = {
    "deeply nested": "nested deeper than 32 levels",
    "nested inside an item": "nested deeper than 32 levels",
    "raw NUL byte": "not valid JSON (Extra data",
    "raw NUL inside a string": "Invalid control character",
    "raw surrogate bytes": "not UTF-8 text",
    "integer of 5000 digits": "Exceeds the limit (4300 digits)",
    "huge string, not a list": "got a JSON string",
    "number, not a list": "got a JSON number",
    "null, not a list": "got a JSON null",
    "empty file": "not valid JSON (Expecting value",
    "truncated": "not valid JSON",
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_hostile_file_is_one_error_line_and_exit_2(tmp_path, capsys, kind):
    path = tmp_path / "results.json"
    path.write_bytes(BAD_FILES[kind])
    out = tmp_path / "scored.json"
    rc = main([str(path), "--output", str(out)])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.out == ""
    err = captured.err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"geoeval: error: {path}: ") and BAD_FILE_REASONS[kind] in err[0]
    assert len(err[0]) < 300  # the file's content is never echoed whole
    assert not out.exists()


def test_a_directory_and_a_file_over_the_size_bound_are_errors(tmp_path, capsys, monkeypatch):
    from geoeval.suites.maptab import cli as score_cli

    out = tmp_path / "scored.json"
    assert main([str(tmp_path), "--output", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"geoeval: error: {tmp_path}: is a directory, not a results file"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps([metro_item(ROUTE)]), "utf-8")
    monkeypatch.setattr(score_cli, "MAX_FILE_BYTES", 100)
    assert main([str(path), "--output", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"geoeval: error: {path}: ") and "larger than" in err[0]


def test_hostile_text_inside_a_valid_item_is_cleaned_and_scored(tmp_path, capsys):
    """Lone surrogates and control characters inside an otherwise valid item are not an error: they
    become U+FFFD, the item is scored as cleaned and a warning names the field."""
    items = [
        # a lone surrogate at the end of the last station: "Echo Square\ufffd" vs "Echo Square",
        # ratio 2*11/23 >= 0.5, so still an exact match (Medium + Hard = 5)
        metro_item(ROUTE + "\ud800"),
        # NUL and ESC inside the first station: "Alpha\ufffdPark\ufffd" still matches "Alpha Park"
        metro_item("Alpha\x00Park\x1b" + ROUTE[len("Alpha Park") :]),
        # a response that is nothing but a surrogate pair written as two lone halves in reverse
        metro_item("\udc00\ud800"),
        # hostile text in another field is cleaned too; the response is right
        metro_item(ROUTE, question="Which route?\ud83d"),
        # emoji, CJK and right-to-left marks are ordinary text: kept as they are, no warning
        metro_item(ROUTE.replace("Alpha Park", "Alpha Park \U0001f687\u200f")),
    ]
    path = tmp_path / "results.json"
    # ensure_ascii (the default) writes the surrogates as valid JSON escapes such as "\ud800"
    path.write_text(json.dumps(items), "utf-8")
    out = tmp_path / "scored.json"
    rc = main([str(path), "--output", str(out)])
    captured = capsys.readouterr()
    assert rc == 0
    scored = json.loads(out.read_text("utf-8"))  # strict UTF-8: the output holds no surrogates
    assert [fields(it) for it in scored] == [(1, 1.0, 5), (1, 1.0, 5), (0, 0.0, 5), (1, 1.0, 5), (1, 1.0, 5)]
    assert scored[0]["response"] == ROUTE + "\ufffd"
    assert scored[1]["response"].startswith("Alpha\ufffdPark\ufffd-")
    assert scored[2]["response"] == "\ufffd\ufffd" and scored[2]["parsed_route"] == "\ufffd\ufffd"
    assert scored[3]["question"] == "Which route?\ufffd"
    assert scored[4]["response"] == items[4]["response"]
    warnings = captured.err.splitlines()
    assert warnings == [
        f"geoeval: warning: {path}: item {i}: lone surrogates or control characters in '{field}' replaced by "
        "U+FFFD; scored as cleaned"
        for i, field in ((0, "response"), (1, "response"), (2, "response"), (3, "question"))
    ]


def test_huge_and_ill_typed_responses_are_scored(tmp_path, capsys):
    items = [
        metro_item("x" * 1_000_000),  # 1 MB, no hyphen: one station that matches nothing
        metro_item("Alpha Park-" * 100_000),  # 100,000 stations: no reference has that length
        # a list: scored as its text "['Alpha Park', 'Echo Square']", one station whose ratio to
        # "alpha park" is 2*10/39 >= 0.5: PMA 1/5
        metro_item(["Alpha Park", "Echo Square"]),
        metro_item(12345),
        metro_item(ROUTE, Map_Difficulty={"level": "Hard"}, Query_Difficulty="Q" * 10_000),
    ]
    rc, scored, captured = run(tmp_path, items, capsys)
    assert rc == 0
    assert [fields(it) for it in scored] == [(0, 0.0, 5), (0, 0.2, 5), (0, 0.2, 5), (0, 0.0, 5), (1, 1.0, 0)]
    assert scored[2]["parsed_route"] == "['Alpha Park', 'Echo Square']" and scored[3]["parsed_route"] == "12345"
    warnings = captured.err.splitlines()
    assert len(warnings) == 3
    assert "item 2: 'response' is a JSON list, not a route string: scored as its text" in warnings[0]
    assert "item 3: 'response' is a JSON number" in warnings[1]
    assert "item 4: difficulty {'level': 'Hard'}/'QQQ" in warnings[2] and len(warnings[2]) < 300


def test_missing_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["results.json"])  # no --output
    assert exc.value.code == 2
    assert "--output" in capsys.readouterr().err


def test_geoeval_cli_dispatches_to_the_scorer(tmp_path, capsys):
    path = tmp_path / "results.json"
    path.write_text(json.dumps([metro_item(ROUTE)]), "utf-8")
    assert geoeval_main(["score", "maptab", str(path), "--output", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text("utf-8"))[0]["all_acc"] == 1


# ---------------------------------------------------------------- the authors' sample


def sample_items():
    if not PEERS.is_dir():
        pytest.skip("../shared/peers/maptab (the authors' sample) is not present")
    files = sorted(PEERS.glob("*/data/test_set/*_test_set.json"))
    assert len(files) == 24
    return [(f, item) for f in files for item in load_test_set(f)]


@pytest.mark.conformance
def test_sample_test_sets_with_correct_and_wrong_responses(tmp_path, capsys):
    items = []
    for _f, item in sample_items():
        right = dict(item, response=item["routes"][0])
        # wrong: the reference reversed (same stations, wrong order); first station differs
        stations = item["routes"][0].split("-")
        wrong = dict(item, response="-".join(reversed(stations)))
        items += [right, wrong]
    rc, scored, captured = run(tmp_path, items, capsys)
    assert rc == 0
    assert [it["all_acc"] for it in scored] == [1, 0] * 24
    assert all(it["part_acc"] == 0.0 for it in scored[1::2])
    summary = json.loads((tmp_path / "scored.summary.json").read_text("utf-8"))
    # Cleveland items are Easy/Easy (2 each), Angkor Wat items Hard/Hard (6 each): 12*2 + 12*6
    assert summary["by_scenario"]["metromap"]["difficulty_score_total"] == 24
    assert summary["by_scenario"]["travelmap"]["difficulty_score_total"] == 72
    assert summary["difficulty_score_total"] == 96 and summary["all_acc"] == 0.5
    assert captured.err == ""


@pytest.mark.conformance
def test_sample_files_scored_as_given_with_a_response_added(tmp_path, capsys):
    """The test-set files themselves, each with a `response`: one drops a station in the middle of
    the Cleveland route (5 stations: EMA 0, PMA 2/5), one misspells a spot (still EMA 1)."""
    written = []
    for f, _ in sample_items()[:1] + sample_items()[-1:]:
        data = load_test_set(f)
        for it in data:
            stations = it["routes"][0].split("-")
            if "station_1" in it:
                it["response"] = "-".join(stations[:2] + stations[3:])
            else:
                it["response"] = "-".join(stations[:-1] + [stations[-1] + "x"])
        p = tmp_path / f.name
        p.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        written.append(p)
    rc, scored, _ = run(tmp_path, written, capsys)
    assert rc == 0
    assert [fields(it) for it in scored] == [(0, 0.4, 2), (1, 1.0, 6)]


@pytest.mark.parametrize("raw", ["<route_begin>" * 20000, "<route_begin>" + " " * 200000, "```" + " " * 100000])
def test_a_tag_bomb_in_raw_response_is_scored_in_linear_time(raw):
    from geoeval.suites.maptab.cli import _tagged_route
    from tests.conftest import deadline

    with deadline(20):  # a hang guard: the lazy regex it replaces ran for minutes here (timed in bench/fail_fast.py)
        _tagged_route(raw)


def test_tagged_route_reads_the_authors_formats():
    from geoeval.suites.maptab.cli import _tagged_route

    assert _tagged_route(" <ROUTE_BEGIN> A-B <route_end> ") == "A-B"
    assert _tagged_route("<response_begin>C-D<response_end>") == "C-D"
    assert _tagged_route("```text\nA-B\n```") == "A-B" and _tagged_route("```A-B```") == "A-B"
    assert _tagged_route("  A-B ") == "A-B"


def test_answers_are_scored_through_the_public_entry_point_under_either_protocol(tmp_path, capsys):
    """`geoeval score maptab --answers` (the core's CLI over `MapTabSuite.score_answers`): scores,
    the reading and the paper/robust disagreement per answer; the authors' format above is untouched."""
    from geoeval.core.registry import get_suite
    from tests.conftest import compose_spec

    overrides = [
        "suite=maptab",
        "env.n_maps=1",
        "suite.n_per_category=1",
        "suite.categories=[edge_only]",
        f"work_dir={tmp_path / 'work'}",
    ]
    spec = compose_spec(tmp_path, *overrides)
    suite = get_suite("maptab")
    sample = suite.build_samples(spec, suite.build_env(spec))[0]
    ref = sample.target[0]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"sample_id": sample.id, "answer": f"Wrong route (do not take): {ref}"})
        + "\n"
        + json.dumps({"sample_id": sample.id, "answer": ref.replace("-", " → ")})
        + "\n",
        encoding="utf-8",
    )
    for protocol, expected in (("robust", [0.0, 1.0]), ("paper", [1.0, 0.0])):
        out = tmp_path / f"{protocol}.jsonl"
        run = [*overrides[1:], f"scoring.protocol={protocol}"]
        assert geoeval_main(["score", "maptab", *run, "--answers", str(answers), "--output", str(out)]) == 0
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [r["scores"]["ema"] for r in rows] == expected
        assert all(r["protocol_disagreement"]["ema"] for r in rows)
        assert rows[0]["reading"]["protocol"] == protocol
        assert "2 scored differently under the other protocol" in capsys.readouterr().err
