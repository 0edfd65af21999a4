"""Candidate answers and their roles: what the words around each candidate say the answer does
with it (`lexicon.py`), decided once for every suite.

A suite finds its candidates in a parsed answer (`document.Document`): each a `Found` (where it
is, its value in the suite's answer type, and its `key`, the identity two equal answers share).
`assign_roles` then reads the sentence around each one, the line that leads to it (a heading,
a list's or table's lead, a label ending in a colon, a short cue line, the text between two
marked spans) and its section, and gives it

* a role: `ECHOED` (restates the question: a restatement cue before it in its clause, a question mark ending
  its sentence, or most of its clause copied from the question), `REJECTED` (a rejection right
  before it, a rejecting label, heading or lead, or a rejection right after it), `CORRECTION`
  (a correction cue before it in its sentence or its lead, or "instead" after it), else `STATED`;
* a strength, how firmly the answer commits to it: 2 for an explicit final answer ("Final
  answer:", a "## Answer" section) or its lead; 1 for
  a conclusion ("So", "The best route is", "I recommend") not hedged ("probably", "maybe"); else 0;
* its evidence: the cues that decided both, quoted.

A sentence with no candidate that withdraws what came before ("Scratch that.", "That is wrong.")
is a `Retraction`; one that opens by pointing at the candidate named last and rejects it ("It has
closed down.", "它已经不营业了。") is a `Retraction` of that candidate alone. `rule.decide` applies the one-answer rule to the result.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from geoeval.core.reading import lexicon as cue
from geoeval.core.reading.document import Document, Segment
from geoeval.core.reading.normalise import fold

T = TypeVar("T")

#: the context read around a candidate, each side (bounds the work on a hostile answer)
CONTEXT_CHARS = 300
#: a lead line is short: longer lines are text of their own
MAX_LEAD_WORDS = 15
#: a sentence this much copied from the question restates it
ECHO_SHARE = 0.6
_SENTENCE_END = re.compile(r"[.!?;][\"'”’)\]]*(?=\s|$)|[。！？；][」”’]*|\n")
# a quotation still open before a candidate, with words of its own before it (「X」 names X)
_OPEN_QUOTE = re.compile(r"[\"“«]([^\"”»]*\w[^\"”»]*)$")
_WORDS = re.compile(r"\w+")


class Role(str, Enum):
    STATED = "stated"
    CORRECTION = "correction"
    REJECTED = "rejected"
    ECHOED = "echoed"


@dataclass(frozen=True)
class Found(Generic[T]):
    """A candidate a suite found: in `segment`, characters `start:end` of its text (a whole JSON
    value, list or table: 0 and the length of its first segment's text)."""

    segment: int
    start: int
    end: int
    value: T
    key: Hashable


@dataclass
class Candidate(Generic[T]):
    """A candidate with its role, strength and evidence (module docstring)."""

    found: Found[T]
    text: str
    role: Role = Role.STATED
    strength: int = 0
    evidence: list[str] = field(default_factory=list)
    #: (segment, offset) where its sentence starts: candidates of one sentence are offered together
    sentence: tuple[int, int] = (0, 0)

    @property
    def value(self) -> T:
        return self.found.value

    @property
    def key(self) -> Hashable:
        return self.found.key

    @property
    def position(self) -> tuple[int, int]:
        return (self.found.segment, self.found.start)


@dataclass(frozen=True)
class Retraction:
    """A sentence without a candidate that withdraws what the answer said before it ("Scratch
    that."), or, `last`, rejects the candidate named last ("It has closed down.")."""

    segment: int
    start: int
    text: str
    last: bool = False

    @property
    def position(self) -> tuple[int, int]:
        return (self.segment, self.start)


def _sentence_before(text: str) -> str:
    """The part of the sentence before a position (its text before it, up to the last sentence end)."""
    text = text[-CONTEXT_CHARS:]
    ends = list(_SENTENCE_END.finditer(text))
    return text[ends[-1].end() :] if ends else text


def _sentence_after(text: str) -> tuple[str, str]:
    """The rest of the sentence after a position, and the mark that ends it ("" at the text's end)."""
    text = text[:CONTEXT_CHARS]
    found = _SENTENCE_END.search(text)
    return (text[: found.start()], found.group()) if found else (text, "")


def _has_words(text: str) -> bool:
    return bool(_WORDS.search(text))


def _grams(text: str, n: int = 5) -> set[str]:
    squeezed = re.sub(r"\W+", "", text)
    return {squeezed[i : i + n] for i in range(max(0, len(squeezed) - n + 1))}


def _echoes(sentence: str, question_grams: set[str]) -> bool:
    grams = _grams(sentence)
    return len(grams) >= 8 and len(grams & question_grams) >= ECHO_SHARE * len(grams)


@dataclass
class _Context:
    sentence_start: int  # where its sentence starts in its segment
    before: str  # the sentence before the candidate, in its segment (folded)
    after: str  # the sentence after it (folded)
    end_mark: str  # what ends its sentence
    lead: str  # the line leading to it (folded), when nothing before it in its sentence says anything
    section: str  # its heading (folded)
    segment: Segment


def _context(doc: Document, found: Found[Any], with_candidates: set[int], first_on_line: bool) -> _Context:
    seg = doc.segments[found.segment]
    if seg.kind == "json":
        before_text, after_text = seg.prefix, seg.suffix
    elif found.end > found.start and found.start < len(seg.text):
        before_text = f"{seg.prefix} {seg.text[: found.start]}" if seg.prefix else seg.text[: found.start]
        after_text = f"{seg.text[found.end :]} {seg.suffix}" if seg.suffix else seg.text[found.end :]
    else:  # a list or table read as one candidate: nothing before it on its line
        before_text, after_text = "", ""
    before = _sentence_before(before_text)
    shift = len(seg.prefix) + 1 if seg.prefix and seg.kind != "json" else 0  # back to its own text
    sentence_start = max(0, len(before_text) - len(before) - shift) if seg.kind != "json" else 0
    after, end_mark = _sentence_after(after_text)
    # the sentence before it on its line ("Correction: I misread the map. It should be X"), when
    # no candidate of the line comes before it
    earlier = before_text[: max(0, len(before_text) - len(before))].rstrip()
    lead = _sentence_before(earlier.rstrip(".!?;。！？；")) if earlier and first_on_line else ""
    if not lead and (
        not _has_words(re.sub(r"\b(?:route|path|answer|final|option|\d+)\b", "", fold(before)))
        or before.rstrip().endswith(":")
    ):
        lead = _lead(doc, seg, with_candidates)
    return _Context(sentence_start, fold(before), fold(after), end_mark, fold(lead), fold(seg.section), seg)


def _lead(doc: Document, seg: Segment, with_candidates: set[int]) -> str:
    """The line that leads to a segment: its list's or table's lead, else the segment before it
    when that one holds no candidate and is a heading, a label or a short line (a piece of the
    same line between marked spans, "Wait, actually:", "**Final answer:**")."""
    if seg.kind in ("item", "row") and seg.lead:
        return seg.lead
    prev = doc.previous(seg)
    if prev is None or prev.index in with_candidates or prev.kind == "json":
        return ""
    if prev.line == seg.line or prev.kind == "heading" or prev.text.rstrip().endswith((":", "：")):
        return _sentence_before(prev.text)
    if len(prev.text.split()) <= MAX_LEAD_WORDS and not prev.text.rstrip().endswith((".", "。")):
        return prev.text
    return ""


_REJECT_HEADING = re.compile(
    r"^\W*(?:rejected|discarded|wrong|incorrect|invalid|(?:routes?|options?|places?)\s+to\s+avoid|avoid|"
    r"not\s+recommended|(?:alternatives?|options?)\s+(?:considered\s+and\s+)?rejected|do\s+not\s+(?:take|use|go))"
    r"|^\W*(?:不推荐|错误|避开|不要)"
)


def _role(ctx: _Context, question_grams: set[str]) -> tuple[Role, str]:
    label = ctx.before.rstrip()
    # a restatement in its own clause ("you asked for X"); after a colon what follows answers it
    clause = re.split(r"[:：]", ctx.before)[-1]
    if found := cue.ECHO.search(clause):
        return Role.ECHOED, f"echoed: {found.group()!r} before it"
    # inside a quotation that a restatement introduces: 'You asked: "... from A-B to C?"'
    quoted = _OPEN_QUOTE.search(ctx.before)
    if quoted and (found := cue.ECHO.search(ctx.before[: quoted.start()])):
        return Role.ECHOED, f"echoed: quoted after {found.group()!r}"
    if ctx.end_mark[:1] in ("?", "？"):
        return Role.ECHOED, "echoed: its sentence is a question"
    own = re.split(r"[,，;；:：]", ctx.before)[-1] + " " + re.split(r"[,，;；:：]", ctx.after)[0]
    if question_grams and _echoes(own, question_grams):
        return Role.ECHOED, "echoed: its clause restates the question"
    if found := cue.REJECT_BEFORE.search(ctx.before):
        return Role.REJECTED, f"rejected: {found.group().strip()!r} before it"
    if label.endswith((":", "：")) and (found := cue.REJECT_LABEL.search(label)):
        return Role.REJECTED, f"rejected: the label {found.group().strip()!r}"
    for text, where in ((ctx.lead, "its lead"), (ctx.section, "its section")):
        if text and (found := _REJECT_HEADING.search(text) or cue.REJECT_LABEL.search(text.rstrip())):
            return Role.REJECTED, f"rejected: {where} {text!r}"
    if found := cue.REJECT_AFTER.search(ctx.after):
        return Role.REJECTED, f"rejected: {found.group().strip()!r} after it"
    for text, where in ((ctx.before, "before it"), (ctx.lead, "on the line leading to it")):
        if text and (found := cue.CORRECTION.search(text)):
            return Role.CORRECTION, f"correction: {found.group().strip()!r} {where}"
    if found := cue.CORRECTION_AFTER.search(ctx.after):
        return Role.CORRECTION, f"correction: {found.group().strip()!r} after it"
    return Role.STATED, ""


def _strength(ctx: _Context, sentence: str) -> tuple[int, str]:
    for text, where in ((ctx.before, "before it"), (ctx.lead, "on the line leading to it")):
        if text and (found := cue.FINAL_STRONG.search(text)):
            return 2, f"final: {found.group().strip()!r} {where}"
    for text, where in ((ctx.lead, "its lead"), (ctx.section, "its section")):
        if text and cue.FINAL_HEADING.search(text):
            return 2, f"final: {where} {text!r}"
    for text, where in ((ctx.before, "before it"), (ctx.lead, "on the line leading to it")):
        if text and (found := cue.FINAL_WEAK.search(text)):
            if hedge := cue.HEDGE.search(sentence):
                return 0, f"a conclusion hedged by {hedge.group()!r}"
            return 1, f"concluded: {found.group().strip()!r} {where}"
    return 0, ""


def assign_roles(
    doc: Document, found: Iterable[Found[T]], question: str = ""
) -> tuple[list[Candidate[T]], list[Retraction]]:
    """The candidates with their roles (module docstring), in reading order, and the retractions."""
    items = sorted(found, key=lambda f: (f.segment, f.start))
    with_candidates = {f.segment for f in items}
    first_of_line: dict[int, Found[T]] = {}  # the first candidate of each line of the answer
    for f in items:
        first_of_line.setdefault(doc.segments[f.segment].line, f)
    question_grams = _grams(fold(question)) if question else set()
    out: list[Candidate[T]] = []
    for k, f in enumerate(items):
        ctx = _context(doc, f, with_candidates, first_of_line[doc.segments[f.segment].line] is f)
        seg = doc.segments[f.segment]
        text = seg.text[f.start : f.end] if f.end > f.start else seg.text
        sentence = f"{ctx.before} {ctx.after}"
        role, why = _role(ctx, question_grams)
        # a conclusion commits to the candidate it leads to, not to every one after it in its
        # sentence: in "I recommend X, at Y" (为您推荐「X」，地址：Y区…) the cue is X's alone
        prev = items[k - 1] if k else None
        if prev is not None and prev.segment == f.segment and ctx.sentence_start <= prev.start < f.start:
            ctx = dataclasses.replace(ctx, before=fold(seg.text[prev.end : f.start]), lead="")
        strength, how = _strength(ctx, sentence)
        if role is Role.CORRECTION:
            strength = max(strength, 1)
        evidence = [e for e in (why, how) if e]
        out.append(Candidate(f, text, role, strength, evidence, (f.segment, ctx.sentence_start)))
    return out, _retractions(doc, items)


def _retractions(doc: Document, items: Sequence[Found[Any]]) -> list[Retraction]:
    """Every sentence holding no candidate that withdraws what came before it."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for f in items:
        spans.setdefault(f.segment, []).append((f.start, f.end if f.end > f.start else 1 << 30))
    out = []
    for seg in doc.segments:
        if seg.kind == "json" or not seg.text:
            continue
        taken = spans.get(seg.index, [])
        start = 0
        for end_found in [*_SENTENCE_END.finditer(seg.text), None]:
            end = end_found.end() if end_found else len(seg.text)
            sentence = seg.text[start:end]
            free = not any(s < end and start < e for s, e in taken)
            folded = fold(sentence[:CONTEXT_CHARS]) if free else ""
            if folded and cue.RETRACTION.search(folded):
                out.append(Retraction(seg.index, start, sentence.strip()[:120]))
            elif folded and (anaphor := cue.ANAPHOR.match(folded)) and cue.REJECT_AFTER.search(folded[anaphor.end() :]):
                out.append(Retraction(seg.index, start, sentence.strip()[:120], last=True))
            start = end
            if start >= len(seg.text):
                break
    return out
