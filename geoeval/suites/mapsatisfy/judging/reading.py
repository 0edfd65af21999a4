"""The robust answer protocol (`scoring.protocol=robust`): what an answer *says*, read the same
however it is typeset, with the one-answer rule. The `rules` judge (rules_judge.py) applies its
checks to this reading; the `paper` protocol reads the raw answer as before (README, "Answer protocol").

Typesetting that is read through (`typesetting.normalise`):
- Unicode NFKC (full-width letters, digits and punctuation), markdown (bold, italics, headings,
  bullets, numbered items, code fences and backticks);
- numbers written as words before a unit, Chinese (约五分钟, 一点七公里, 二十五元, 半小时, 一个半小时,
  两公里) and English ("five minutes", "twenty-five km"), and English unit words (minutes, hours,
  km, meters, yuan, ¥) read as the Chinese units the claims use, and English words for the
  rules' enumerations (driving, subway, taxi, walking, parking, kids) as the Chinese ones. Names of records in the tool
  outputs are protected (三元里 is a place, not 3 元).

What an answer asserts (`read_robust`), sentence by sentence:
- **negation**: a record named with a negation (不推荐「X」, 别去X, 「X」已经不营业 / 已关闭, "not
  recommended", "X is closed", "avoid X", 而不是X, "instead of X") is not recommended, and the
  sentence that negates it asserts nothing about the recommendation;
- **correction**: after 更正 / 改为 / 请改去 / "actually" / "correction", the part before the last
  marker is retracted: the corrected recommendation is the answer;
- **echoes**: a clause that restates what the user said (the query, the history, their replies)
  asserts nothing: one led by a restatement (您说, 您要, 关于您的需求, "you asked"), a quoted
  request, or one mostly (60 %) made of runs of four or more characters copied from the user's
  words (record names aside); so a factor's words echoed from the request earn nothing, while the
  request's words used in the answer's own clause ("27路开往滁州城里面方向") are read;
- **keyword lists**: a clause that is a bare list of the rules' words (驾车 孩子 停车 营业 人均 …)
  asserts nothing;
- **candidates**: the recommended records are the first positively named one and every one offered
  as an alternative (或者, 也可以, 备选, 可能是…也可能是, "or", "maybe", …): the one-answer rule
  credits a record-specific check only when every candidate passes it (its worst candidate).
  Naming a place to reject it, or a route leg by leg ("先去A，再去B"), is not an alternative.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from geoeval.suites.mapsatisfy.judging.answer_facts import Evidence, Record, bare_base, norm
from geoeval.suites.mapsatisfy.judging.typesetting import normalise

_QUOTE = re.compile(r"「([^」]*)」")
_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;\n]*")
_CLAUSE = re.compile(r"[,，、:：]")
NEGATION_BEFORE = (
    "不推荐",
    "不建议",
    "不要去",
    "别去",
    "不要选",
    "不选",
    "避开",
    "排除",
    "而不是",
    "不是",
    "并非",
    "不去",
    "放弃",
    "don't",
    "do not",
    "avoid",
    "not recommend",
    "instead of",
    "rather than",
    "except",
    "skip",
)
NEGATION_AFTER = (
    "已经不营业",
    "不营业",
    "已停业",
    "停业",
    "已关闭",
    "关闭了",
    "已关门",
    "关门了",
    "倒闭",
    "暂停营业",
    "歇业",
    "已搬迁",
    "不推荐",
    "不建议",
    "不适合",
    "不要去",
    "别去",
    "不行",
    "is closed",
    "closed",
    "not recommended",
    "not open",
    "shut down",
    "is not",
)
CORRECTION = (
    "更正",
    "纠正",
    "订正",
    "改为",
    "改去",
    "请改",
    "应改",
    "说错了",
    "我说错",
    "correction",
    "actually,",
    "actually ",
    "i meant",
    "scratch that",
)
ALTERNATIVE = (
    "或者",
    "或是",
    "也可以",
    "也可",
    "还可以",
    "还可",
    "备选",
    "候选",
    "其次",
    "另外推荐",
    "另一个",
    "也推荐",
    "也不错",
    "也可能",
    "可能是",
    "或许",
    "maybe",
    "alternatively",
    "anotheroption",
    "probably",
)
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


def _names_in(text: str, ev: Evidence) -> list[tuple[int, Record]]:
    """(position, record) of the records named in `text` (normalised), a name inside a longer
    named one not counted twice, the base name before a branch accepted (answer_facts.named_records)."""
    found: list[tuple[int, int, Record]] = []
    seen: set[str] = set()
    for rec in sorted(ev.records, key=lambda r: -len(norm(r.name))):
        name = norm(rec.name)
        if name in seen:
            continue
        base = name.split("(")[0]
        pos, length = text.find(name), len(name)
        if pos < 0 and len(base) >= 4 and base != name:
            pos, length = bare_base(text, base), len(base)
        if pos < 0 or any(s <= pos and pos + length <= s + n for s, n, _ in found):
            continue
        seen.add(name)
        found.append((pos, length, rec))
    return sorted(((p, r) for p, _n, r in found), key=lambda pr: pr[0])


def _negated_in(clause: str, name: str) -> bool:
    """Whether `clause` (normalised) negates the record `name` it mentions."""
    pos = clause.find(name)
    if pos < 0:
        pos = clause.find(name.split("(")[0])
    before = clause[max(0, pos - 10) : pos]
    after = clause[pos + len(name) :]
    return any(norm(w) in before for w in NEGATION_BEFORE) or any(norm(w) in after for w in NEGATION_AFTER)


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


RESTATEMENT = (
    "您说",
    "你说",
    "您要",
    "你要",
    "您想",
    "你想",
    "您需要",
    "您的需求",
    "关于您",
    "youasked",
    "yousaid",
    "youwant",
)


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


def read_robust(answer: str, ev: Evidence, given: Sequence[str]) -> Reading:
    """The robust reading of `answer` against the evidence and the user's words (module docstring).
    `given`: what the user said (query, history, replies), normalised."""
    names = [unicodedata.normalize("NFKC", r.name) for r in ev.records]
    text = norm(normalise(answer, names)).replace("“", "「").replace("”", "」")
    fired: list[str] = []
    if text != norm(answer).replace("“", "「").replace("”", "」"):
        fired.append("normalised")
    # the user's request restated in quotes names what the user said, not a recommendation
    record_names = {norm(r.name) for r in ev.records}
    text = _QUOTE.sub(
        lambda q: " " if q.group(1) not in record_names and any(q.group(1) in g for g in given) else q.group(0), text
    )
    # correction: what follows the last marker is the answer
    cut = max((text.rfind(norm(m)) + len(norm(m)) for m in CORRECTION if norm(m) in text), default=-1)
    retracted: list[str] = []
    body = text
    if cut >= 0:
        before, body = text[:cut], text[cut:]
        after_names = {norm(r.name) for _, r in _names_in(body, ev)}
        retracted = [r.name for _, r in _names_in(before, ev) if norm(r.name) not in after_names]
        fired.append("correction")
    positive_parts: list[str] = []
    negated: list[str] = []
    named: list[Record] = []
    candidates: list[Record] = []
    for m in _SENTENCE.finditer(body):
        sentence = m.group(0)
        if _is_keyword_list(_strip_names(sentence, ev)):
            fired.append("keyword_list")
            continue
        in_sentence = [r for _p, r in _names_in(sentence, ev)]
        if not in_sentence:
            if _clause_negates(sentence) and named:
                # "推荐「X」。它已经不营业了。": the sentence negates the last recommendation
                last = named[-1]
                negated.append(last.name)
                named = [r for r in named if r is not last]
                candidates = [r for r in candidates if r is not last]
                fired.append("negation")
                continue
            positive_parts.append(sentence)
            continue
        kept: list[str] = []
        state = "positive"  # a clause naming no record speaks of the last record named before it
        for clause, recs in _clauses_with_names(sentence, in_sentence):
            if recs:
                bad = [r for r in recs if _negated_in(clause, norm(r.name))]
                negated += [r.name for r in bad]
                good = [r for r in recs if r not in bad]
                state = "negated" if bad and not good else "positive"
                for rec in good:
                    if rec.name in negated:
                        continue  # a record the answer rejected is not recommended by naming it again
                    if rec not in named:
                        named.append(rec)
                    alternative = any(norm(w) in sentence for w in ALTERNATIVE)
                    if not candidates or (alternative and rec not in candidates):
                        candidates.append(rec)
            elif state == "positive" and _clause_negates(clause) and kept:
                state = "negated"  # "「X」，它已经不营业了": the record of the clause before
                negated += [r.name for r in in_sentence if r in named]
                named = [r for r in named if r not in in_sentence]
                candidates = [r for r in candidates if r not in in_sentence]
                kept = []
            if state == "positive":
                kept.append(clause)
        if any(r.name in negated for r in in_sentence):
            fired.append("negation")
        positive_parts.append("".join(kept))
    positive = "".join(positive_parts)
    if len(candidates) > 1:
        fired.append("several_candidates")
    protected = [norm(r.name) for r in named]
    residual = _QUOTE.sub(lambda q: " " if any(q.group(1) in g for g in given) else q.group(0), positive)
    residual = _strip_echo(residual, given, protected)
    if residual.replace(" ", "") != positive:
        fired.append("echo")
    for name in sorted(protected, key=len, reverse=True):
        residual = residual.replace(name, " ")
    return Reading(text, positive, residual, named, candidates, negated, retracted, list(dict.fromkeys(fired)))


def _strip_names(sentence: str, ev: Evidence) -> str:
    for _pos, rec in sorted(_names_in(sentence, ev), key=lambda pr: -len(pr[1].name)):
        sentence = sentence.replace(norm(rec.name), " ")
    return sentence


def _clause_negates(clause: str) -> bool:
    return any(norm(w) in clause for w in (*NEGATION_AFTER, *NEGATION_BEFORE[:8]))


def _clauses_with_names(sentence: str, records: list[Record]) -> list[tuple[str, list[Record]]]:
    """The sentence split at commas and colons, each clause with the records it names."""

    def names(clause: str, rec: Record) -> bool:
        name = norm(rec.name)
        base = name.split("(")[0]
        return name in clause or (len(base) >= 4 and base != name and bare_base(clause, base) >= 0)

    out = []
    start = 0
    for m in [*_CLAUSE.finditer(sentence), None]:
        end = m.end() if m is not None else len(sentence)
        clause = sentence[start:end]
        if clause:
            out.append((clause, [r for r in records if names(clause, r)]))
        start = end
    return out
