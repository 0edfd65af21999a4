"""The core's answer-reading layer (`geoeval/core/reading/`), on hand-written answers: the parse
(markdown structure, JSON anywhere, markers), normalisation (numbers in words in six languages),
the roles of candidates and the one-answer rule, with a toy answer type (a word in capitals is
a candidate; its key is the word)."""

from __future__ import annotations

import re

import pytest

from geoeval.core.reading.candidates import Found, Role, assign_roles
from geoeval.core.reading.document import MAX_ANSWER_CHARS, parse
from geoeval.core.reading.normalise import fold, numbers_in, plain
from geoeval.core.reading.rule import REJECTED, RETRACTED, SUPERSEDED, decide

CAPS = re.compile(r"\b[A-Z]{3,}\b")


def read(text: str, question: str = "", markers=()):
    """The live candidates of a toy answer type: words written in capitals."""
    doc = parse(text, markers=markers)
    found = [
        Found(seg.index, m.start(), m.end(), m.group(), m.group())
        for seg in doc.segments
        if seg.kind != "json"
        for m in CAPS.finditer(seg.text)
    ]
    candidates, retractions = assign_roles(doc, found, question)
    return decide(candidates, retractions)


def live(text: str, **kw) -> list[str]:
    return read(text, **kw).values


# ------------------------------------------------------------------ the parse


def test_markdown_structure_is_parsed():
    doc = parse(
        "Intro **bold** line.\n\n## Route\n- ALPHA\n- BETA\n\n| Station | Transfer |\n|---|---|\n| A \\| B | yes |\n\n"
        '> quoted\n\n```json\n{"route": ["A", "B"]}\n```\nSo: {"x": 1} done.'
    )
    kinds = [(s.kind, s.text) for s in doc.segments]
    assert ("line", "Intro bold line.") in kinds and ("heading", "Route") in kinds
    items = [s for s in doc.segments if s.kind == "item"]
    assert [s.text for s in items] == ["ALPHA", "BETA"] and items[0].lead == "Route" and items[0].section == "Route"
    (header, row) = [s for s in doc.segments if s.kind == "row"]
    assert row.cells == ("A | B", "yes") and row.header == ("Station", "Transfer")  # an escaped pipe is the cell's
    assert [s for s in doc.segments if s.quoted][0].text == "quoted"
    jsons = [s for s in doc.segments if s.kind == "json"]
    assert [j.value for j in jsons] == [{"route": ["A", "B"]}, {"x": 1}]
    assert (jsons[1].prefix, jsons[1].suffix) == ("So:", "done.")


def test_markers_and_their_context_on_the_line():
    doc = parse("<B>ONE</B> or <b>TWO</b> and <B>open", markers=[("<B>", "</B>")])
    marked = [s.text for s in doc.segments if s.marked]
    assert marked == ["ONE", "TWO"]  # without case; an unclosed begin marks nothing
    two = next(s for s in doc.segments if s.text == "TWO")
    assert two.prefix == "ONE or" and "open" in two.suffix


def test_reading_is_bounded():
    doc = parse("x" * (MAX_ANSWER_CHARS + 10) + " END")
    assert doc.truncated and doc.segments[-1].text.endswith("END")  # the end is what is read
    assert [s for s in parse("[" * 5000 + "]" * 5000).segments if s.kind == "json"] == []


@pytest.mark.parametrize(
    "text, values",
    [
        ("one hundred and five", [105.0]),
        ("twenty-one", [21.0]),
        ("veintitrés", [23.0]),
        ("treinta y dos", [32.0]),
        ("quatre-vingt-dix", [90.0]),
        ("dreiundzwanzig", [23.0]),
        ("一百零五", [105.0]),
        ("一点五", [1.5]),
        ("3 (three)", [3.0]),  # words only where there are no digits
        ("the 2nd stop", []),
        ("un", []),  # an article alone is no number
    ],
)
def test_numbers_in_words(text, values):
    assert numbers_in(text) == values


def test_normalisation():
    assert plain("**Ｈａｒｂｏｕｒ**`Gate`") == "HarbourGate"
    assert plain("place_id and _it_") == "place_id and it"
    assert fold("  Final   ANSWER ") == "final answer"


# ------------------------------------------------------------------ roles and the one-answer rule


def test_one_candidate_is_the_answer_and_several_are_a_hedge():
    assert live("Take ALPHA.") == ["ALPHA"]
    assert live("Take ALPHA or BETA.") == ["ALPHA", "BETA"]
    assert live("1. ALPHA\n2. BETA") == ["ALPHA", "BETA"]  # numbered options: both live
    assert live("ALPHA. Later I mention ALPHA again.") == ["ALPHA"]  # one answer stated twice


@pytest.mark.parametrize(
    "text",
    [
        "Do not take BETA. Take ALPHA.",
        "ALPHA, rather than BETA.",
        "ALPHA. BETA is slower.",
        "ALPHA\n\nWrong route: BETA",
        "不推荐 BETA。建议：ALPHA",
        "Évitez BETA. Prenez ALPHA.",
        "ALPHA. Nicht BETA.",
    ],
)
def test_a_rejected_candidate_is_never_the_answer(text):
    assert live(text) == ["ALPHA"]


@pytest.mark.parametrize(
    "text",
    [
        "BETA. Wait, actually ALPHA.",
        "BETA\n\nCorrection: I misread the map. It should be ALPHA",
        "BETA\nOn second thought:\nALPHA",
        "BETA。更正：ALPHA",
        "BETA. En realidad, ALPHA.",
        "BETA. Scratch that. ALPHA",
        "Final answer: BETA\n\nOops. Corrected final answer: ALPHA",
    ],
)
def test_the_last_committed_candidate_is_the_answer(text):
    decision = read(text)
    assert decision.values == ["ALPHA"] and decision.aside(RETRACTED) + decision.aside(SUPERSEDED)


def test_a_final_answer_supersedes_the_reasoning_before_it():
    decision = read("First I looked at BETA and GAMMA; both are long. Then ALPHA.\n\n**Final answer:** ALPHA")
    assert decision.values == ["ALPHA"] and {c.value for c in decision.aside(SUPERSEDED)} >= {"BETA", "GAMMA"}
    # two final answers stand together, and so does an alternative offered after the answer
    assert live("Final answer: ALPHA\nFinal answer: BETA") == ["ALPHA", "BETA"]
    assert live("Final answer: ALPHA\n\nAlternatively, BETA would also work.") == ["ALPHA", "BETA"]


def test_a_conclusion_commits_to_the_candidate_it_leads_to():
    doc = parse("I recommend ALPHA, next to BETA. So GAMMA.")
    found = [Found(0, m.start(), m.end(), m.group(), m.group()) for m in CAPS.finditer(doc.segments[0].text)]
    candidates, _ = assign_roles(doc, found)
    assert [(c.value, c.strength) for c in candidates] == [("ALPHA", 1), ("BETA", 0), ("GAMMA", 1)]


def test_an_echo_of_the_question_is_not_offered():
    assert live('You asked: "is BETA open?"\n\nALPHA') == ["ALPHA"]
    assert live("Is BETA the fastest? ALPHA is.") == ["ALPHA"]
    assert live("Question: BETA to GAMMA\n\nAnswer: ALPHA") == ["ALPHA"]
    question = "Which is better for a quiet dinner near the lake, BETA or ALPHA"
    assert live("Which is better for a quiet dinner near the lake, BETA? I would say ALPHA.", question=question) == [
        "ALPHA"
    ]


def test_a_rejection_pointing_back_rejects_the_last_candidate_everywhere():
    decision = read("推荐 ALPHA。它已经不营业了。推荐 BETA。Later ALPHA again.")
    assert decision.values == ["BETA"] and [c.value for c in decision.aside(REJECTED)] == ["ALPHA"]


def test_roles_carry_their_evidence():
    doc = parse("Do not take BETA. Final answer: ALPHA")
    found = [Found(0, m.start(), m.end(), m.group(), m.group()) for m in CAPS.finditer(doc.segments[0].text)]
    (beta, alpha), _ = assign_roles(doc, found)
    assert beta.role is Role.REJECTED and any("not" in e for e in beta.evidence)
    assert alpha.role is Role.STATED and alpha.strength == 2 and any("final" in e for e in alpha.evidence)


def test_a_subsumed_candidate_adds_nothing():
    doc = parse("ALPHABET, then ALPHA.")
    found = [Found(0, m.start(), m.end(), m.group(), m.group()) for m in CAPS.finditer(doc.segments[0].text)]
    candidates, retractions = assign_roles(doc, found)
    decision = decide(candidates, retractions, subsumes=lambda a, b: a != b and a.startswith(b))
    assert decision.values == ["ALPHABET"]


def test_json_written_loosely_is_read_without_running_code():
    def values(text):
        return [s.value for s in parse(text).segments if s.kind == "json"]

    assert values("Answer: {'answer': True, 'reason': 'It is true'}") == [{"answer": True, "reason": "It is true"}]
    assert values('{"route": ["A", "B",], }') == [{"route": ["A", "B"]}]
    assert values("{'a': true, 'b': 'null and true'}") == [{"a": True, "b": "null and true"}]
    assert values("{'a': __import__('os').getcwd()}") == []  # literals only: nothing is evaluated
    assert values("[1, 2 and more") == []
