"""The robust reading of a QA answer (`scoring.protocol=robust`; README "Answer protocol").

MapTab's QA answer type is a value: a verdict (1 / 0) or a number. The answer is what the
`<answer_begin>...<answer_end>` spans say (the prompt asks for them; an answer without them has
none, as under the paper protocol). In each span (the core's parse, `core.reading.document`):

* a yes/no question reads the verdict words of the languages answers are read in: 1 / yes / true /
  correct / sí / oui / ja / sim / はい / 是 / 对 / 有 say yes; 0 / no / false / incorrect / non /
  nein / não / いいえ / 否 / 不是 / 没有 / 错 say no;
* a count or a number reads the numbers the span states, in digits or in words
  (`core.reading.normalise.number_spans`: English, Chinese, Spanish, French, German), with any
  unit or comment around them ("3 stations", "**3**", "three", "2.5 km"); a JSON value in a span
  (`{"answer": 3}`, `true`) is read as its value.

Each value is a candidate, and the core's one-answer rule decides (`core.reading.rule`): a value
the span denies ("not 3", "不是3") is rejected, a correction ("On reflection: <answer_begin>3...")
replaces the values before it, and two or more live values (two tagged answers, "3 or 4",
"yes/no") are scored at the worst. A value stated twice ("3 (three)") is one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from geoeval.api import Decision, Found, Segment, assign_roles, decide, number_spans, parse
from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END

_NO = re.compile(
    r"(?<![\w.])(?:0|no|false|incorrect|nope|wrong|non|nein|não|nao|falso|faux|falsch|нет|아니요|아니오)(?![\w]|\.\d)"
    r"|不是|不对|不正确|没有|否|错|无|いいえ",
    re.IGNORECASE,
)
_YES = re.compile(
    r"(?<![\w.])(?:1|yes|true|correct|yep|yeah|sí|si|oui|ja|sim|vero|wahr|vrai|verdadero|cierto|да|네|예)(?![\w]|\.\d)"
    r"|是|对|有|正确|正確|はい",
    re.IGNORECASE,
)
# a span that is only this letter says yes or no ("y" inside a sentence is Spanish "and")
_LETTER = {"y": "1", "n": "0"}


@dataclass
class QAReading:
    """The tagged spans, the live values and the core's decision."""

    spans: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    decision: Decision[str] = field(default_factory=Decision)

    @property
    def denied(self) -> list[str]:
        return [c.value for c in self.decision.aside("rejected")]

    def as_dict(self) -> dict[str, object]:
        rules = ["read from tags"] if self.spans else ["no tags"]
        return {"spans": self.spans, **self.decision.as_dict(), "rules": rules + self.decision.rules()}


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _verdicts(text: str) -> Iterator[tuple[int, int, str]]:
    if text.strip().lower() in _LETTER:
        start = text.lower().find(text.strip().lower())
        yield start, start + 1, _LETTER[text.strip().lower()]
        return
    noes = [(m.start(), m.end()) for m in _NO.finditer(text)]
    for s, e in noes:
        yield s, e, "0"
    for m in _YES.finditer(text):
        if not any(s <= m.start() < e for s, e in noes):
            yield m.start(), m.end(), "1"


def _json_value(value: Any, kind: str) -> str | None:
    if isinstance(value, dict):
        for key in ("answer", "value", "result", "count"):
            if key in value:
                return _json_value(value[key], kind)
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return _number_text(float(value))
    return None


def _values(seg: Segment, kind: str) -> Iterator[Found[str]]:
    if seg.kind == "json":
        found = _json_value(seg.value, kind)
        if found is not None:
            yield Found(seg.index, 0, 0, found, found)
        return
    spans = _verdicts(seg.text) if kind == "binary" else ((s, e, _number_text(v)) for s, e, v in number_spans(seg.text))
    for start, end, value in spans:
        yield Found(seg.index, start, end, value, value)


def read_qa(raw: str, kind: str) -> QAReading:
    """The robust reading of a QA answer of `kind` ("binary", "integer" or "number")."""
    doc = parse(raw or "", markers=[(ANSWER_BEGIN, ANSWER_END)])
    marked = [seg for seg in doc.segments if seg.marked]
    found = [f for seg in marked for f in _values(seg, kind)]
    candidates, retractions = assign_roles(doc, found)
    decision = decide(candidates, retractions)
    reading = QAReading([seg.text for seg in marked if seg.kind != "json"], list(dict.fromkeys(decision.values)))
    reading.decision = decision
    return reading
