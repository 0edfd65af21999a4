"""The robust reading of a QA answer (`scoring.protocol=robust`; README "Answer protocol").

The answer is what the `<answer_begin>...<answer_end>` spans say (the prompt asks for them; an
answer without them has none, as under the paper protocol). In each span, after NFKC and markdown
are taken away:

* a yes/no question reads the verdict words: 1 / yes / true / y / correct / 是 / 对 / 有 say yes;
  0 / no / false / n / incorrect / 否 / 不是 / 没有 / 错 say no;
* a count or a number reads the numbers the span states, in digits or in words (English or
  Chinese, `text.numbers_in`), with any unit or comment around them ("3 stations", "**3**",
  "three", "2.5 km").

A span that denies its number ("not 3", "不是3") offers none. The one-answer rule: every distinct value the spans state is a candidate (two tagged answers, "3 or
4", "yes/no"); the answer scores as its worst candidate. A value stated twice ("3 (three)") is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from geoeval.suites.maptab.metrics import tagged_texts
from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END
from geoeval.suites.maptab.reading.text import numbers_in, plain

_YES = re.compile(r"(?<![\w.])(?:1|yes|true|y|correct|yep|yeah)(?!\w|\.\d)|是|对|有(?!没)", re.IGNORECASE)
_NO = re.compile(r"(?<![\w.])(?:0|no|false|n|incorrect|nope)(?!\w|\.\d)|不是|否|没有|错|不对", re.IGNORECASE)
_NEGATED_YES = re.compile(r"不是|没有|不对")
# a count or number the span denies ("not 3") is not offered
_DENIED = re.compile(r"\b(?:not|isn't|never|except)\b|不是|并非", re.IGNORECASE)


@dataclass
class QAReading:
    """The tagged spans and the distinct values they state."""

    spans: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        rules = ["read from tags"] if self.spans else ["no tags"]
        if len(self.spans) > 1:
            rules.append("several tagged answers")
        if self.denied:
            rules.append("denied value dropped")
        if len(self.values) > 1:
            rules.append("several candidates: scored by the worst")
        return {"spans": self.spans, "candidates": self.values, "rules": rules}


def _binary_values(text: str) -> list[str]:
    no = bool(_NO.search(text))
    yes = bool(_YES.search(_NEGATED_YES.sub(" ", text)))
    return (["1"] if yes else []) + (["0"] if no else [])


def _number_text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def read_qa(raw: str, kind: str) -> QAReading:
    """The robust reading of a QA answer of `kind` ("binary", "integer" or "number")."""
    reading = QAReading(spans=[s.strip() for s in tagged_texts(raw or "", ANSWER_BEGIN, ANSWER_END)])
    for span in reading.spans:
        text = plain(span)
        if kind == "binary":
            found = _binary_values(text)
        elif _DENIED.search(text):
            reading.denied.append(span)
            continue
        else:
            found = [_number_text(v) for v in numbers_in(text)]
        for value in found:
            if value not in reading.values:
                reading.values.append(value)
    return reading
