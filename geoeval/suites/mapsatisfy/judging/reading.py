"""The robust answer protocol (`scoring.protocol=robust`): what an answer *says*, read the same
however it is typeset, with the one-answer rule, on the core's reading layer
(`geoeval.core.reading`). The `rules` judge (rules_judge.py) applies its checks to this reading;
the `paper` protocol reads the raw answer as before (README, "Answer protocol").

MapSatisfy's answer type is a recommendation: the records of the tool outputs it recommends, and
what it asserts about them. Typesetting is read through twice over: the core parses the answer
(markdown structure, NFKC) and `typesetting.normalise` reads numbers in words and English units
and enumerations as the rules' Chinese ones, record names protected (三元里 is a place, not 3 元).

Every record the answer names is a candidate of the core (`core.reading.candidates`), which says
what the words around it do with it: rejected (不推荐「X」, 别去X, 「X」已经不营业, "avoid X", "X is
closed", 而不是X, "instead of X"; or a sentence after it that opens by pointing at it: 它已经不营业了),
corrected (更正：改去「Y」, "Actually, go to Y"), echoed from the user's words, or offered with a
commitment (推荐, "I recommend", 最终). The recommendation's candidates for the one-answer rule
(`core.reading.rule`) are the records named with a commitment, a correction, a hedge or an
alternative (或者, 也可以, "maybe", "or"), or as one of several numbered options; when none is, the
first record named. A record named in a plain description (a route's origin, a leg "先去A，再去B")
is named but not a candidate. Two or more live candidates are a hedge: a record-specific check
is then credited only when every candidate passes it (the worst candidate).

What the answer asserts (`Reading.positive`): its text without the sentences before a correction,
the clauses that speak of a rejected record, a sentence rejecting the record named last, a list
item or paragraph whose records are all set aside and none the answer, and
keyword lists (a sentence of three or more of the rules' words and little else: 驾车 孩子 停车 营业
人均); `Reading.residual` is that without the user's words it echoes (a quoted request, a clause
led by 您说 / "you asked", or a clause mostly (60 %) copied from the user's words, record names
aside) and without record names.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from geoeval.api import (
    ECHOED,
    REJECTED,
    REJECTED_ELSEWHERE,
    RETRACTED,
    SUPERSEDED,
    Candidate,
    Document,
    Found,
    Role,
    assign_roles,
    decide,
    fold,
    parse,
)
from geoeval.api import lexicon as cue
from geoeval.suites.mapsatisfy.judging.answer_facts import _FULL_TO_ASCII, Evidence, Record, norm
from geoeval.suites.mapsatisfy.judging.typesetting import normalise

_QUOTE = re.compile(r"「([^」]*)」")
_ASCII_QUOTE = re.compile(r'"([^"\n]*)"')
_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;\n]*")
_CLAUSE = re.compile(r"[,，、:：]")
# words that make several records a sequence (an itinerary, a route leg by leg), not options
_SEQUENCE = re.compile(r"先|再|然后|接着|之后|最后|第\s*\d+\s*[段站步]|→|->|\b(?:first|then|next|after|finally|from)\b")
# the rules' vocabulary (rules_judge.TOPICS / MODES / MENTIONS answer words): a clause made of
# these words and nothing else is a keyword list
RULE_WORDS = (
    "驾车",
    "开车",
    "自驾",
    "地铁",
    "公交",
    "打车",
    "出租车",
    "步行",
    "骑行",
    "孩子",
    "亲子",
    "儿童",
    "停车",
    "停车场",
    "营业",
    "开门",
    "人均",
    "价格",
    "消费",
    "预算",
    "实惠",
    "距离",
    "近",
    "路线",
    "导航",
    "规划",
    "路况",
    "拥堵",
    "畅通",
    "预约",
    "预订",
    "顺序",
    "推荐",
    "评分",
    "费用",
)
ECHO_MIN = 4  # characters copied from the user's words that count as an echo
ECHO_SHARE = 0.6  # a clause this much copied from the user's words restates them
# the core's restatement openers, and the English ones as the normalised text writes them
RESTATEMENT = (*cue.ECHO_LEADS_ZH, "youasked", "yousaid", "youwant")


@dataclass
class Reading:
    """What the robust protocol reads in an answer (module docstring)."""

    text: str  # normalised answer
    positive: str  # normalised answer without negated, retracted and keyword-list sentences
    residual: str  # `positive` without the user's words echoed and without record names
    named: list[Record]  # records named positively, in answer order
    candidates: list[Record]  # the recommended records (the one-answer rule's candidates)
    negated: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)  # which rules changed the reading


def _unique(records: Iterable[Record]) -> list[Record]:
    """Records in order, each once (by name)."""
    out: dict[str, Record] = {}
    for rec in records:
        out.setdefault(rec.name, rec)
    return list(out.values())


def _quotes(text: str) -> str:
    """Quotations of every kind written as 「…」 (the brackets the rules read quotes in)."""
    return _ASCII_QUOTE.sub(r"「\1」", text.replace("“", "「").replace("”", "」"))


def _normed_with_index(text: str) -> tuple[str, list[int]]:
    """`norm(text)` and, for each of its characters, where it is in `text`."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        for c in ch.translate(_FULL_TO_ASCII).lower():
            if not c.isspace():
                out.append(c)
                where.append(i)
    return "".join(out), where


def _names_in(text: str, ev: Evidence) -> list[tuple[int, int, Record]]:
    """(position, length, record) of every mention of a record in `text` (normalised), a name
    inside a longer named one not counted twice, the base name before a branch accepted
    (answer_facts.named_records)."""
    found: list[tuple[int, int, Record]] = []
    seen: set[str] = set()
    for rec in sorted(ev.records, key=lambda r: -len(norm(r.name))):
        name = norm(rec.name)
        if name in seen or not name:
            continue
        seen.add(name)
        base = name.split("(")[0]
        spans = [(m.start(), len(name)) for m in re.finditer(re.escape(name), text)]
        if not spans and len(base) >= 4 and base != name:
            spans = [
                (m.start(), len(base))
                for m in re.finditer(re.escape(base), text)
                if not text[m.end() :].startswith("(")
            ]
        for pos, length in spans:
            if not any(s <= pos and pos + length <= s + n for s, n, _ in found):
                found.append((pos, length, rec))
    return sorted(found, key=lambda f: f[0])


def _normalised_document(answer: str, names: Sequence[str]) -> Document:
    """The core's parse of the answer, each segment's text read through `typesetting.normalise`."""
    doc = parse(answer)
    segments = [dataclasses.replace(seg, text=normalise(seg.text, names).strip()) for seg in doc.segments]
    return dataclasses.replace(doc, segments=segments)


def _mentions(doc: Document, ev: Evidence) -> list[Found[Record]]:
    found: list[Found[Record]] = []
    for seg in doc.segments:
        if seg.kind == "json" or not seg.text:
            continue
        normed, where = _normed_with_index(seg.text)
        for pos, length, rec in _names_in(normed, ev):
            found.append(Found(seg.index, where[pos], where[pos + length - 1] + 1, rec, norm(rec.name)))
    return found


def _offers(c: Candidate[Record], doc: Document) -> bool:
    """Whether a mention offers its record as the recommendation (module docstring): a
    commitment in its own sentence ("为您推荐「X」"; a heading or a list's lead commits to the
    plan it heads, not to each record its items name), a correction, a hedge or an alternative."""
    seg = doc.segments[c.found.segment]
    sentence = fold(seg.text[max(0, c.found.start - 80) : c.found.end + 80])
    committed = c.strength > 0 and any(e.endswith("before it") for e in c.evidence)
    return (
        committed or c.role is Role.CORRECTION or bool(cue.ALTERNATIVE.search(sentence) or cue.HEDGE.search(sentence))
    )


def _next_stop(c: Candidate[Record], candidates: list[Candidate[Record]], doc: Document) -> bool:
    """Whether a mention continues a plan begun by a mention before it in its sentence ("先去「A」，
    再去「B」", "first A, then B"): one recommendation of several stops, not an alternative."""
    before = [o for o in candidates if o.sentence == c.sentence and o.found.start < c.found.start]
    if not before:
        return False
    between = doc.segments[c.found.segment].text[before[-1].found.end : c.found.start]
    return bool(_SEQUENCE.search(between.lower()))


def _options(candidates: list[Candidate[Record]], doc: Document) -> set[int]:
    """The first mention of each item of a list whose items each name another record, with no
    sequence words: numbered or bulleted options (their ids)."""
    out: set[int] = set()
    for items in doc.groups("item").values():
        firsts: dict[int, Candidate[Record]] = {}
        for c in candidates:
            if c.found.segment in {it.index for it in items} and c.found.segment not in firsts:
                firsts[c.found.segment] = c
        texts = " ".join(it.text for it in items)
        if len({c.key for c in firsts.values()}) >= 2 and not _SEQUENCE.search(texts.lower()):
            out |= {id(c) for c in firsts.values()}
    return out


def _is_keyword_list(sentence: str) -> bool:
    """A sentence made of three or more of the rules' words and little else (its spaces are gone
    after normalisation, so it is segmented greedily, longest word first)."""
    text = re.sub(r"[\s,，、/|;；。.!！:：()\[\]「」]+", "", sentence)
    words = sorted(RULE_WORDS, key=len, reverse=True)
    hits = unmatched = i = 0
    while i < len(text):
        word = next((w for w in words if text.startswith(w, i)), None)
        if word is None:
            unmatched += 1
            i += 1
        else:
            hits += 1
            i += len(word)
    return hits >= 3 and unmatched <= 0.2 * len(text)


def _echo_share(clause: str, given: Sequence[str], protected: Sequence[str]) -> float:
    """The share of `clause`'s characters (record names left out) inside runs of at least
    ECHO_MIN characters copied from the user's words."""
    kept = [(m.start(), m.end()) for name in protected if name for m in re.finditer(re.escape(name), clause)]
    covered = [False] * len(clause)
    for g in given:
        i = 0
        while i < len(clause):
            k = 0
            while i + k < len(clause) and clause[i : i + k + 1] in g:
                k += 1
            if k >= ECHO_MIN:
                for j in range(i, i + k):
                    covered[j] = True
                i += k
            else:
                i += 1
    own = [j for j, c in enumerate(clause) if c.strip("，,。.:：;；!！?？ ") and not any(s <= j < e for s, e in kept)]
    return sum(covered[j] for j in own) / len(own) if own else 0.0


def _strip_echo(text: str, given: Sequence[str], protected: Sequence[str]) -> str:
    """`text` without the clauses that restate what the user said: a clause led by a restatement
    (您说, 您要, 关于您的需求, "you asked") or mostly (ECHO_SHARE) copied from the user's words.
    Words of the request used in the answer's own clause ("27路开往滁州城里面方向") stay."""
    out = []
    for clause in re.split(r"(?<=[,，:：。；;!！?？\n])", text):
        lead = clause.lstrip(" ,，")
        if lead.startswith(RESTATEMENT) or _echo_share(clause, given, protected) >= ECHO_SHARE:
            out.append(" ")
        else:
            out.append(clause)
    return "".join(out)


def _positive(
    doc: Document,
    candidates: list[Candidate[Record]],
    set_aside: set[int],
    dropped: set[int],
    cut: tuple[int, int],
    ev: Evidence,
) -> tuple[str, list[str]]:
    """The text the answer asserts (module docstring), normalised, and the rules that fired.
    A list item or paragraph whose every record is set aside (rejected, superseded by the final
    answer, retracted) and none of them the answer speaks of what the answer does not recommend
    ("- First I considered X …, but it does not fit the request as well."): none of it is
    asserted, its later sentences included (they describe X, not the recommendation)."""
    fired: list[str] = []
    by_segment: dict[int, list[Candidate[Record]]] = {}
    for c in candidates:
        by_segment.setdefault(c.found.segment, []).append(c)
    parts: list[str] = []
    for seg in doc.segments:
        if seg.kind == "json" or not seg.text:
            continue
        if by_segment.get(seg.index) and all(id(c) in dropped for c in by_segment[seg.index]):
            fired.append("set_aside_passage")
            continue
        for m in _SENTENCE.finditer(seg.text):
            if (seg.index, m.end()) <= cut:
                continue  # before the last correction: retracted
            sentence = m.group(0)
            here = [c for c in by_segment.get(seg.index, []) if m.start() <= c.found.start < m.end()]
            if _is_keyword_list(_strip_names(norm(sentence), ev)):
                fired.append("keyword_list")
                continue
            if not here:
                folded = fold(sentence)
                anaphor = cue.ANAPHOR.match(folded)
                if anaphor and cue.REJECT_AFTER.search(folded[anaphor.end() :]):
                    fired.append("negation")
                    continue
                parts.append(sentence)
                continue
            kept: list[str] = []
            state_positive = True
            start = m.start()
            for clause_match in [*_CLAUSE.finditer(sentence), None]:
                end = m.start() + clause_match.end() if clause_match else m.end()
                in_clause = [c for c in here if start <= c.found.start < end]
                if in_clause:
                    state_positive = not all(id(c) in set_aside for c in in_clause)
                if state_positive:
                    kept.append(seg.text[start:end])
                start = end
            parts.append("".join(kept))
    # a line break ends a sentence (the normalised text has no spacing left to say so)
    ended = [p if not p.strip() or p.rstrip()[-1] in "。！？!?；;.:：" else p + "。" for p in parts]
    return norm("".join(ended)), fired


def _strip_names(sentence: str, ev: Evidence) -> str:
    for _pos, _n, rec in sorted(_names_in(sentence, ev), key=lambda f: -len(f[2].name)):
        sentence = sentence.replace(norm(rec.name), " ")
    return sentence


def read_robust(answer: str, ev: Evidence, given: Sequence[str], recommended: Sequence[str] | None = None) -> Reading:
    """The robust reading of `answer` against the evidence and the user's words (module docstring).
    `given`: what the user said (query, history, replies), normalised; `recommended`: the records
    the typed channel named (`submit.py`), which are then the recommendation exactly."""
    names = [unicodedata.normalize("NFKC", r.name) for r in ev.records]
    text = _quotes(norm(normalise(answer, names)))
    fired: list[str] = []
    if text != _quotes(norm(answer)):
        fired.append("normalised")
    # the user's request restated in quotes names what the user said, not a recommendation
    record_names = {norm(r.name) for r in ev.records}

    def unquoted(normed: str) -> str:
        return _QUOTE.sub(
            lambda q: " " if q.group(1) not in record_names and any(q.group(1) in g for g in given) else q.group(0),
            _quotes(normed),
        )

    text = unquoted(text)
    doc = _normalised_document(answer, names)
    candidates, retractions = assign_roles(doc, _mentions(doc, ev), question=" ".join(given))
    options = _options(candidates, doc)
    offered = [
        c
        for c in candidates
        if c.role in (Role.REJECTED, Role.ECHOED)
        or ((_offers(c, doc) or id(c) in options) and not _next_stop(c, candidates, doc))
    ]
    decision = decide(offered, retractions)
    rejected_keys = {c.key for c, why in decision.set_aside if why in (REJECTED, REJECTED_ELSEWHERE)}
    if not decision.live:  # nothing offered with a commitment: the first record named positively
        first = next((c for c in candidates if c.role is Role.STATED and c.key not in rejected_keys), None)
        if first is not None and all(first is not o for o in offered):
            decision = decide([*offered, first], retractions)
    aside_ids = {
        id(c) for c, why in decision.set_aside if why in (REJECTED, REJECTED_ELSEWHERE, ECHOED, RETRACTED, SUPERSEDED)
    }
    aside_ids |= {id(c) for c in candidates if c.key in rejected_keys}
    retraction_points = [c.sentence for c in decision.live if c.role is Role.CORRECTION]
    retraction_points += [(r.segment, r.start) for r in decision.retractions if not r.last]
    cut = max(retraction_points, default=(-1, -1))
    live_keys = {c.key for c in decision.live}
    dropped = {
        id(c)
        for c, why in decision.set_aside
        if why in (REJECTED, REJECTED_ELSEWHERE, RETRACTED, SUPERSEDED) and c.key not in live_keys
    }
    dropped |= {id(c) for c in candidates if c.key in rejected_keys}
    positive, positive_fired = _positive(doc, candidates, aside_ids, dropped, cut, ev)
    positive = unquoted(positive)
    fired += positive_fired
    live = _unique(c.value for c in decision.live)
    if recommended is not None:  # the typed channel says which records it recommends
        wanted = {norm(n) for n in recommended}
        live = [r for r in ev.records if norm(r.name) in wanted]
        fired.append("submitted")
    named = _unique(c.value for c in candidates if id(c) not in aside_ids)
    if recommended is not None:
        named = _unique([*named, *live])
    negated = list(
        dict.fromkeys(c.value.name for c, why in decision.set_aside if why in (REJECTED, REJECTED_ELSEWHERE))
    )
    retracted = [
        n for n in dict.fromkeys(c.value.name for c in decision.aside(RETRACTED)) if n not in {r.name for r in live}
    ]
    if negated:
        fired.append("negation")
    if retracted or cut != (-1, -1):
        fired.append("correction")
    if len(live) > 1:
        fired.append("several_candidates")
    if decision.aside(ECHOED):
        fired.append("echo")
    protected = [norm(r.name) for r in named]
    residual = _QUOTE.sub(lambda q: " " if any(q.group(1) in g for g in given) else q.group(0), positive)
    residual = _strip_echo(residual, given, protected)
    if residual.replace(" ", "") != positive:
        fired.append("echo")
    for name in sorted(protected, key=len, reverse=True):
        residual = residual.replace(name, " ")
    return Reading(text, positive, residual, named, live, negated, retracted, list(dict.fromkeys(fired)))
