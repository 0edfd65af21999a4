"""MapTab's answer protocols (issue 22; README "Answer protocol"): the robust reader on answers
written by hand (not by the meta-evaluation's generator), the one-answer rule on both sides, the
paper protocol equal to the authors' reading, and the public scoring entry point."""

from __future__ import annotations

import time

import pytest

from geoeval.core.reading.normalise import numbers_in
from geoeval.core.scoring import MetricInput, compute_metrics, score_both_protocols
from geoeval.suites.maptab import metrics as m
from geoeval.suites.maptab import scorers
from geoeval.suites.maptab.reading import stations
from geoeval.suites.maptab.reading.qa import read_qa
from geoeval.suites.maptab.reading.route import read_route
from geoeval.suites.maptab.reading.text import name_key

# a small Metromap: Harbour Gate -> Elm Court -> (change) Kings Cross Road -> Millbrook; the other
# route goes through Northfield. "East 55th" / "East 59th" / "East 79th" are the Cleveland-like
# similar names (difflib >= 0.5 between each pair).
STATIONS = [
    "Harbour Gate",
    "Elm Court",
    "Kings Cross Road",
    "Millbrook",
    "Northfield",
    "Quarry Lane",
    "East 55th",
    "East 59th",
    "East 79th",
]
REF = "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook"
OTHER = "Harbour Gate-Northfield-Quarry Lane-Millbrook"
META = {"scenario": "metromap", "stations": STATIONS, "map_difficulty": "Easy", "query_difficulty": "Hard"}
RP = ["ema", "pma", "ds"]


def robust(text: str, refs=(REF,), meta=META) -> dict[str, float]:
    _answer, _problem, values, failures, _ = score_both_protocols(
        RP, scorers.extract_answer, text, list(refs), dict(meta), {}, "robust"
    )
    assert not failures
    return values


def paper(text: str, refs=(REF,), meta=META) -> dict[str, float]:
    _answer, _problem, values, failures, _ = score_both_protocols(
        RP, scorers.extract_answer, text, list(refs), dict(meta), {}, "paper"
    )
    assert not failures
    return values


FULL = {"ema": 1.0, "pma": 1.0, "ds": 4.0}
OTHER_SCORES = {"ema": 0.0, "pma": 0.25, "ds": 0.0}


# ------------------------------------------------------------------ surface forms: read as the route


@pytest.mark.parametrize(
    "text",
    [
        REF,
        "harbour gate - elm court - kings cross road (Transfer) - millbrook",
        "Harbour Gate → Elm Court → Kings Cross Road（transfer）→ Millbrook",
        "Harbour Gate -> Elm Court -> Kings Cross Road [transfer] -> Millbrook",
        "**Harbour Gate** – **Elm Court** – **Kings Cross Road** (transfer) – **Millbrook**",
        "ＨａｒｂｏｕｒＧａｔｅ".replace("ＨａｒｂｏｕｒＧａｔｅ", "Ｈａｒｂｏｕｒ　Ｇａｔｅ")
        + "－Elm Court－Kings Cross Road（ＴＲＡＮＳＦＥＲ）－Millbrook",
        "Sure! After checking both tables:\n\n> **Answer:** `Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook`\n\n"
        "This needs a single change at Kings Cross Road.",
        "```text\nHarbour Gate - Elm Court - Kings Cross Road (transfer) - Millbrook\n```",
        "* Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook.",
        "Harbour Gate-Elm Court-Kings Cross Road (change to the Blue Line)-Millbrook",
        # a route explained leg by leg is one route, not its last leg
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook\n\nLegs:\n"
        "1. Harbour Gate - Elm Court (Red Line, 2 stops)\n"
        "2. Elm Court - Kings Cross Road: Red Line\n"
        "3. Kings Cross Road - Millbrook on the Blue Line",
        # naming an alternative in order to reject it
        "Take Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook. "
        "Do not take Harbour Gate-Northfield-Quarry Lane-Millbrook: it is slower.",
        "Route: Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook\n"
        "(Harbour Gate-Northfield-Quarry Lane-Millbrook is not optimal.)",
        "I first thought of Harbour Gate-Northfield-Quarry Lane-Millbrook.\n"
        "Correction: Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook",
        "<route_begin>Harbour Gate - Elm Court - Kings Cross Road (transfer) - Millbrook<route_end>",
        # legs by line skip the stations in between; summaries of quantities and line names are not routes
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook\n\n"
        "- Harbour Gate → Kings Cross Road (Red Line, 2 stops)\n- Kings Cross Road → Millbrook (Blue Line)\n"
        "Total: 3 stations - 1 transfer\nTime: 12 min - Price: 4 yuan\nLines used: Red Line -> Blue Line",
        # a route written as a list under a header
        "**Route:**\n1. Harbour Gate\n2. Elm Court\n3. Kings Cross Road (transfer)\n4. Millbrook\n\nTotal: 3 stops",
        "Final: Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook (Time: 12)",
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook (1 transfer, 25 min)",
        "Harbour Gate ➡️ Elm Court ➡️ Kings Cross Road (transfer to the Blue Line) ➡️ Millbrook",
        "路线：Harbour Gate—Elm Court—Kings Cross Road（换乘）—Millbrook",
        "**Answer:** Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook\n\n"
        "| Step | From | To | Line |\n|---|---|---|---|\n| 1 | Harbour Gate | Elm Court | Red |",
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook\n\n"
        "Alternative (slower): Harbour Gate-Northfield-Quarry Lane-Millbrook",
        # a typo the map's station list resolves to one station only, and a trailing "Station"
        "Harbour Gate-Elm Cuort-Kings Cross Road(transfer)-Millbrook Station",
        # structured forms (issue 39): JSON, a JSON list, a table, a list under a heading, commas
        '{"route": ["Harbour Gate", "Elm Court", "Kings Cross Road (transfer)", "Millbrook"]}',
        '{"path": ["Harbour Gate", "Elm Court", "Kings Cross Road", "Millbrook"], "transfer_stations": '
        '["Kings Cross Road"]}',
        '```json\n[{"station": "Harbour Gate"}, {"station": "Elm Court"}, {"station": "Kings Cross Road", '
        '"transfer": true}, {"station": "Millbrook"}]\n```',
        "| # | Station | Transfer |\n|---|---|---|\n| 1 | Harbour Gate | |\n| 2 | Elm Court | |\n"
        "| 3 | Kings Cross Road | yes |\n| 4 | Millbrook | |",
        "## Route\n- Harbour Gate\n- Elm Court\n- Kings Cross Road (transfer)\n- Millbrook",
        "| Route |\n|---|\n| Harbour Gate - Elm Court - Kings Cross Road (transfer) - Millbrook |",
        "Route: Harbour Gate, Elm Court, Kings Cross Road (transfer), Millbrook.",
        # legs alone, the transfer where the line changes
        "1. Harbour Gate → Elm Court (Red Line)\n2. Elm Court → Kings Cross Road (Red Line)\n"
        "3. Kings Cross Road → Millbrook (Blue Line)",
        # long reasoning, a self-correction, an echoed question with hyphens, other languages
        "Let me think. Harbour Gate-Northfield-Quarry Lane-Millbrook has 4 stops but a slow leg; "
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook is faster.\n\nFinal answer: "
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook",
        "Harbour Gate-Northfield-Quarry Lane-Millbrook. Wait, actually Harbour Gate-Elm Court-Kings Cross "
        "Road(transfer)-Millbrook.",
        "You asked for the fastest route from Harbour-Gate to Mill-brook?\n\n"
        "Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook",
        "La respuesta correcta es Harbour Gate-Elm Court-Kings Cross Road(transfer)-Millbrook",
        "最终答案：Harbour Gate—Elm Court—Kings Cross Road（换乘）—Millbrook",
        # the transfer said in words, apart from a route written without marks
        "**Optimal route:** Harbour Gate → Elm Court → Kings Cross Road → Millbrook\n\n"
        "**Transfer:** at Kings Cross Road (Red → Blue)",
        "Route: Harbour Gate - Elm Court - Kings Cross Road - Millbrook (transfer at Kings Cross Road)",
        "路线：Harbour Gate—Elm Court—Kings Cross Road—Millbrook，在Kings Cross Road换乘。",
    ],
)
def test_a_correct_route_however_written_scores_as_the_reference(text):
    assert robust(text) == FULL


def test_the_papers_format_scores_the_same_under_both_protocols():
    for text in (REF, f"<route_begin>{REF}<route_end>", f"The optimal route is: {REF}"):
        assert robust(text) == paper(text) == FULL
    _a, _p, _v, _f, disagreement = score_both_protocols(
        RP, scorers.extract_answer, REF, [REF], dict(META), {}, "robust"
    )
    assert disagreement == {}


# ------------------------------------------------------------------ the one-answer rule (gaming)


@pytest.mark.parametrize(
    "text",
    [
        f"Wrong route (do not take): {REF}",
        f"Avoid {REF}.",
        f"{REF} is incorrect.",
    ],
)
def test_a_negated_route_is_not_an_answer(text):
    assert robust(text) == {"ema": 0.0, "pma": 0.0, "ds": 0.0}
    assert paper(f"Wrong route (do not take): {REF}") == FULL  # what the paper protocol misreads


@pytest.mark.parametrize(
    "text",
    [
        f"Probably: {OTHER}\nbut maybe: {REF}",
        f"Probably: {OTHER} / but maybe: {REF}",
        f"{REF} or {OTHER}",
        f"Candidates:\n- {OTHER}\n- {REF}",
        f"<route_begin>{OTHER}<route_end> or <route_begin>{REF}<route_end>",
        f"{REF}\nActually, take {OTHER} instead.",
        f"{REF}. Wait, {OTHER} is better.",
        # hedges of issue 39: either / numbered options / an alternative after the final answer
        f"Either {REF} or {OTHER}.",
        f"1. {REF}\n2. {OTHER}",
        f"Final answer: {REF}\n\nAlternatively, {OTHER} would also work.",
        f'{{"routes": ["{REF}", "{OTHER}"]}}',
        f"Vielleicht {REF} oder {OTHER}.",
    ],
)
def test_several_candidates_or_a_correction_away_earn_no_more_than_the_worst(text):
    assert robust(text) == OTHER_SCORES


def test_the_correction_is_the_answer():
    assert robust(f"{OTHER}\nActually, take {REF} instead.") == FULL
    assert robust(f"{OTHER}\nOn second thought: {REF}") == FULL


def test_a_transfer_denied_in_words_marks_nothing():
    text = "Harbour Gate → Elm Court → Kings Cross Road → Millbrook. No transfer at Elm Court is needed."
    assert robust(text) == {"ema": 0.0, "pma": 1.0, "ds": 0.0}  # the reference's mark is missing


def test_a_restated_route_is_one_answer():
    assert robust(f"{REF}\n\nSo, once more: {REF}.") == FULL


# ------------------------------------------------------------------ name identity


def test_similar_named_real_stations_are_told_apart():
    refs = ["Harbour Gate-East 55th-Millbrook"]
    # the paper's 0.5 rule takes East 79th for East 55th
    assert m.similarity("East 79th", "East 55th") >= m.MATCH_THRESHOLD
    assert paper("Harbour Gate-East 79th-Millbrook", refs)["ema"] == 1.0
    assert robust("Harbour Gate-East 79th-Millbrook", refs) == {"ema": 0.0, "pma": 0.3333, "ds": 0.0}
    assert robust("harbour gate - EAST 55TH - millbrook", refs)["ema"] == 1.0


def test_a_typo_is_read_only_when_one_station_is_that_close():
    known = stations.Stations(STATIONS)
    assert known.resolve("Northfeild") == name_key("Northfield")  # a transposition: one edit
    assert known.resolve("East 5th") is None  # one edit from East 55th and from East 59th
    assert known.resolve("East 59th") == name_key("East 59th")  # a real name is always itself
    assert known.resolve("Elm") is None  # not a typo: a different (unknown) name
    assert known.resolve("Milbrok") is None  # two edits on a 9-letter name: too far


def test_travelmap_ignores_transfer_marks_and_metromap_requires_them():
    travel = {**META, "scenario": "travelmap"}
    refs = ["Harbour Gate-Elm Court-Millbrook"]
    assert robust("Harbour Gate-Elm Court(transfer)-Millbrook", refs, travel)["ema"] == 1.0
    assert robust("Harbour Gate-Elm Court(transfer)-Millbrook", refs)["ema"] == 0.0
    assert robust("Harbour Gate-Elm Court-Kings Cross Road-Millbrook")["ema"] == 0.0  # mark missing
    assert robust("Harbour Gate-Elm Court-Kings Cross Road-Millbrook")["pma"] == 1.0  # PMA reads names


# ------------------------------------------------------------------ partially right


@pytest.mark.parametrize(
    "text, pma",
    [
        ("Harbour Gate-Elm Court", 0.5),
        ("Harbour Gate-Elm Court-Kings Cross Road(transfer)-Northfield", 0.75),
        ("Harbour Gate-Elm Court-East 59th-Millbrook", 0.5),
    ],
)
def test_a_partly_right_route_scores_between_right_and_worthless(text, pma):
    assert robust(text) == {"ema": 0.0, "pma": pma, "ds": 0.0}


def test_lists_that_are_not_routes_are_not_read():
    assert read_route("Notes:\n- Fastest option\n- Cheapest").candidates == []
    assert read_route("Why this route:\n- It is faster\n- It is cheaper").candidates == []


def test_prose_with_a_dash_is_not_a_route():
    text = "I'm sorry - I cannot tell which route is best from this map."
    assert read_route(text).candidates == []
    assert robust(f"{REF}\nThat has one transfer - nothing more.") == FULL


def test_a_megabyte_line_is_read_in_linear_time():
    start = time.monotonic()
    read_route("Harbour Gate " + " " * 1_000_000 + "- Millbrook")
    read_route("((((" * 250_000)
    assert time.monotonic() - start < 5


# ------------------------------------------------------------------ QA


@pytest.mark.parametrize(
    "raw, kind, values",
    [
        ("<answer_begin>**3**<answer_end>", "integer", ["3"]),
        ("<answer_begin>3 stations<answer_end>", "integer", ["3"]),
        ("<answer_begin>three<answer_end>", "integer", ["3"]),
        ("The count is <answer_begin> Twenty-one <answer_end>.", "integer", ["21"]),
        ("<answer_begin>十二<answer_end>", "integer", ["12"]),
        ("<answer_begin>2.5 km<answer_end>", "number", ["2.5"]),
        ("<answer_begin>`0.42`<answer_end>", "number", ["0.42"]),
        ("<answer_begin>Yes.<answer_end>", "binary", ["1"]),
        ("<answer_begin>**no**<answer_end>", "binary", ["0"]),
        ("<answer_begin>不是<answer_end>", "binary", ["0"]),
        ("<answer_begin>是的<answer_end>", "binary", ["1"]),
        ("<answer_begin>2<answer_end> or maybe <answer_begin>3<answer_end>", "integer", ["2", "3"]),
        ("<answer_begin>yes or no<answer_end>", "binary", ["1", "0"]),
        ("<answer_begin>3 (three)<answer_end>", "integer", ["3"]),
        ("<answer_begin>2 stations: East 55th and East 79th<answer_end>", "integer", ["2"]),
        ("<answer_begin>3, the one on the Red Line<answer_end>", "integer", ["3"]),
        ("<answer_begin>约0.45<answer_end>", "number", ["0.45"]),
        ("<answer_begin>Yes (1), they share a line.<answer_end>", "binary", ["1"]),
        ("<answer_begin>Incorrect<answer_end>", "binary", ["0"]),
        ("<answer_begin>not 3<answer_end>", "integer", []),
        ("3", "integer", []),  # no tags: no answer, as under the paper protocol
    ],
)
def test_qa_values_read(raw, kind, values):
    assert read_qa(raw, kind).values == values


def _acc(raw: str, reference: str, kind: str, protocol: str) -> float:
    values, failures = compute_metrics(
        ["acc"],
        MetricInput(
            answer=scorers.extract_qa_answer(raw, protocol=protocol)[0],
            raw=raw,
            target=[reference],
            metadata={"answer_kind": kind, "task_family": "qa"},
            protocol=protocol,
        ),
    )
    assert not failures
    return values["acc"]


def test_qa_one_answer_rule_and_surface_forms():
    assert _acc("<answer_begin>**3**<answer_end>", "3", "integer", "robust") == 1.0
    assert _acc("<answer_begin>**3**<answer_end>", "3", "integer", "paper") == 0.0
    corrected = "<answer_begin>4<answer_end>\nOn reflection: <answer_begin>3<answer_end>"
    assert _acc(corrected, "3", "integer", "paper") == 1.0  # the last span wins under paper
    assert _acc(corrected, "3", "integer", "robust") == 1.0  # the correction is the answer
    corrected_away = "<answer_begin>3<answer_end>\nWait, actually: <answer_begin>4<answer_end>"
    assert _acc(corrected_away, "3", "integer", "robust") == 0.0
    hedged = "<answer_begin>4<answer_end>\nor maybe <answer_begin>3<answer_end>"
    assert _acc(hedged, "3", "integer", "paper") == 1.0
    assert _acc(hedged, "3", "integer", "robust") == 0.0  # two live values: the worst
    assert _acc("<answer_begin>3<answer_end> ... <answer_begin>three<answer_end>", "3", "integer", "robust") == 1.0
    assert _acc("<answer_begin>Yes.<answer_end>", "1", "binary", "robust") == 1.0
    assert _acc("<answer_begin>Zorvath Plaza<answer_end>", "1", "binary", "robust") == 0.0


def test_numbers_in_words_and_digits():
    assert numbers_in("one hundred and five") == [105.0]
    assert numbers_in("1,234.5 m") == [1234.5]
    assert numbers_in("一点五") == [1.5]
    assert numbers_in("between 3-4") == [3.0, 4.0]
    assert numbers_in("12.") == [12.0] and numbers_in("the 2nd stop") == []


# ------------------------------------------------------------------ the paper protocol is today's reading


PAPER_CORPUS = [
    REF,
    OTHER,
    "",
    "I'm sorry - I cannot tell.",
    f"Wrong route (do not take): {REF}",
    f"Probably: {OTHER}\nbut maybe: {REF}",
    "harbour gate - elm court - kings cross road (transfer) - millbrook",
    "Harbour Gate-Elm Court-Kings Cross Road (transfer)-Millbrook",
    "Harbor Gate-Elm Ct-Kings Cross Rd(transfer)-Millbrook",
    "```\nHarbour Gate-Elm Court\n```",
    f"<route_begin>{OTHER}<route_end><route_begin>{REF}<route_end>",
    "Harbour Gate-East 79th-Millbrook",
]


@pytest.mark.parametrize("scenario", ["metromap", "travelmap"])
@pytest.mark.parametrize("text", PAPER_CORPUS)
def test_paper_protocol_is_the_authors_reading(text, scenario):
    """`scoring.protocol=paper` scores exactly as geoeval did before issue 22: the route line
    (`extract_route`), then the authors' `ema` / `pma` (difflib 0.5, the transfer rule) and `ds`."""
    meta = {**META, "scenario": scenario}
    route = m.extract_route(text)
    e = m.ema(route, [REF, OTHER], scenario)
    expected = {"ema": e, "pma": m.pma(route, [REF, OTHER], scenario), "ds": m.ds(e, "Easy", "Hard")}
    assert paper(text, [REF, OTHER], meta) == expected


# ------------------------------------------------------------------ the public scoring entry point


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    from geoeval.core.registry import get_suite
    from tests.conftest import compose_spec

    spec = compose_spec(
        tmp_path_factory.mktemp("entry"),
        "suite=maptab",
        "env.n_maps=1",
        "suite.n_per_category=1",
        "suite.categories=[edge_only,T]",
    )
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    return spec, suite.build_samples(spec, env)


def test_score_answers_reads_scores_and_reports_disagreement(small_run):
    from geoeval.core.records import AnswerToScore
    from geoeval.core.scoring import score_answers

    spec, samples = small_run
    s = next(x for x in samples if x.metadata["scenario"] == "metromap")
    ref = s.target[0]
    assert s.metadata["stations"] and all(
        st in s.metadata["stations"] for st in m.split_route(ref.replace(m.TRANSFER_MARK, ""))
    )
    stations = m.split_route(ref)
    answers = [
        AnswerToScore(s.id, ref),
        AnswerToScore(s.id, f"Wrong route (do not take): {ref}"),
        AnswerToScore(s.id, "", messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": ref}]),
        AnswerToScore(s.id, " - ".join(stations)),
    ]
    ref_score, negated, trajectory, spaced = score_answers(spec, answers)
    assert ref_score.scores["ema"] == 1.0 and ref_score.protocol_disagreement == {}
    assert ref_score.reading["protocol"] == "robust" and ref_score.reading["candidates"] == [ref]
    assert negated.scores["ema"] == 0.0 and negated.reading["rejected"] == [ref]
    assert negated.protocol_disagreement["ema"] == {"robust": 0.0, "paper": 1.0}
    assert trajectory.scores == ref_score.scores
    assert spaced.scores["ema"] == 1.0
    paper_spec = spec.model_copy(update={"scoring": spec.scoring.model_copy(update={"protocol": "paper"})})
    (negated_paper,) = score_answers(paper_spec, answers[1:2])
    assert negated_paper.scores["ema"] == 1.0 and negated_paper.reading["protocol"] == "paper"


def test_bad_messages_are_a_config_error_naming_them():
    from geoeval.core.errors import GeoevalError

    with pytest.raises(GeoevalError, match="messages"):
        scorers.final_answer("", [{"role": "robot", "content": 3}])
    submit = {"id": "s", "function": "submit", "arguments": {"answer": REF}, "type": "function"}
    assert scorers.final_answer("", [{"role": "assistant", "content": "", "tool_calls": [submit]}]) == REF


def test_reports_count_the_protocol_disagreements():
    from geoeval.core.records import Dimensions, SampleResult
    from geoeval.suites.maptab.reports import protocol_section

    def result(i, details):
        return SampleResult(
            run_hash="h",
            sample_id=f"s{i}",
            answer=REF,
            scores={"ema": 1.0},
            dims=Dimensions(suite="maptab"),
            details=details,
        )

    results = [result(0, {}), result(1, {"protocol_disagreement": {"ema": {"robust": 0.0, "paper": 1.0}}})]
    text = "\n".join(protocol_section(results))
    assert "1 of 2 scored samples" in text and "s1" in text and "ema 0 / 1" in text


def test_the_authors_cleveland_stations_are_told_apart():
    """The authors' Cleveland map has 18 station pairs the paper's 0.5 rule takes for one another;
    the robust identity keeps all 18 apart, and no two of its names are within typo distance."""
    import itertools

    from geoeval.suites.maptab.authors.format import load_authors_map
    from tests.maptab.test_authors_env import peers_or_skip

    cleveland = load_authors_map(peers_or_skip(), "metromap", "america", "cleveland")
    names = sorted(cleveland.stations)
    pairs = [(a, b) for a, b in itertools.combinations(names, 2) if m.similarity(a, b) >= m.MATCH_THRESHOLD]
    assert len(pairs) == 18
    meta = {**META, "stations": names}
    # difflib's ratio is not symmetric: the paper credits b for a where ratio(b, a) >= 0.5
    confusable = [(a, b) for a, b in itertools.permutations(names, 2) if m.similarity(b, a) >= m.MATCH_THRESHOLD]
    assert len(confusable) >= len(pairs)
    for a, b in confusable:
        route = f"{names[0] if a != names[0] else names[1]}-{a}-Terminus"
        wrong = route.replace(f"-{a}-", f"-{b}-")
        assert paper(wrong, [route], meta)["ema"] == 1.0
        assert robust(wrong, [route], meta)["ema"] == 0.0
        assert robust(route, [route], meta)["ema"] == 1.0
    keys = [name_key(n) for n in names]
    assert all(
        stations.edit_distance(x, y, 2) > max(stations.max_typo_edits(x), stations.max_typo_edits(y))
        for x, y in itertools.combinations(keys, 2)
    )


def test_station_names_that_start_or_end_with_cue_words_are_kept_whole():
    """A correct answer in the paper's format scores as under the paper protocol, even where a
    station's name begins like a lead-in ("So Uk", "Well Street") or ends like a comment."""
    names = ["So Uk", "Well Street", "Take Five Plaza", "Park Then", "Elm Court"]
    meta = {**META, "stations": names}
    ref = "Well Street-Elm Court"
    assert robust(ref, [ref], meta) == paper(ref, [ref], meta) == FULL
    # the paper's route reader takes "So", "Take" and "Then" for prose and finds no route (0);
    # robust knows the stations
    for ref in ("So Uk-Elm Court-Well Street", "Take Five Plaza-Elm Court-Park Then", "Well Street-So Uk"):
        assert paper(ref, [ref], meta)["ema"] == 0.0
        assert robust(ref, [ref], meta)["ema"] == 1.0
    # without the map's names a lead-in is still read as one
    assert robust("So, take So Uk-Elm Court-Well Street.", ["So Uk-Elm Court-Well Street"], meta)["ema"] == 1.0
