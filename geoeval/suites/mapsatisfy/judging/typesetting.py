"""What the robust answer protocol reads through (`normalise`): Unicode NFKC (full-width
letters, digits and punctuation), markdown (bold, italics, headings, bullets, numbered items, code
fences and backticks), numbers written as words before a unit, Chinese (约五分钟, 一点七公里,
二十五元, 半小时, 一个半小时, 两公里) and English ("five minutes", "twenty-five km"), English unit
words read as the Chinese units the claims use, and English words for the rules' enumerations
(driving, subway, taxi, walking, parking, kids) as the Chinese ones. Names of records in the tool
outputs are protected (三元里 is a place, not 3 元). What the reading makes of the normalised text
is `reading.py`'s.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from geoeval.api import EN_ONES, EN_TENS, ZH_DIGITS, ZH_SCALES

_FENCE = re.compile(r"```[a-zA-Z]*")
_BULLET = re.compile(r"(?m)^\s*(?:[-*+•·]|\d+[.)、]|#{1,6})\s+")
_EMPHASIS = re.compile(r"\*\*|__|(?<![\w*])\*(?!\s)|(?<!\s)\*(?![\w*])|`")

_CN_DIGITS, _EN_ONES, _EN_TENS = ZH_DIGITS, EN_ONES, EN_TENS
_CN_UNITS = {k: v for k, v in ZH_SCALES.items() if k != "万"}  # up to thousands: durations, distances, prices
_CN_NUMERAL = "零〇一二两三四五六七八九十百千"
# a unit a number in words may stand before (Chinese units and the English ones normalised to them)
_UNIT_AFTER = r"(?=\s*(?:个半小时|个小时|公里|千米|米|分钟|小时|元|块|人|位))"
_CN_NUMBER = re.compile(rf"([{_CN_NUMERAL}]+(?:点[{_CN_NUMERAL}]+)?)" + _UNIT_AFTER)
_EN_WORD = "|".join(sorted([*_EN_ONES, *_EN_TENS, "hundred", "half", "a"], key=len, reverse=True))
_EN_NUMBER = re.compile(
    rf"\b((?:{_EN_WORD})(?:[\s-]+(?:{_EN_WORD}|and))*)\s+(?=(?:minutes?|mins?|hours?|hrs?|kilomet(?:er|re)s?|km|met(?:er|re)s?|yuan|people|persons?)\b)",
    re.IGNORECASE,
)
_EN_UNITS = (
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:minutes?|mins?)\b", re.IGNORECASE), r"\1分钟"),
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:hours?|hrs?)\b", re.IGNORECASE), r"\1小时"),
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:kilomet(?:er|re)s?|km)\b", re.IGNORECASE), r"\1公里"),
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:met(?:er|re)s?|m)\b", re.IGNORECASE), r"\1米"),
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:yuan|rmb|cny)\b", re.IGNORECASE), r"\1元"),
    (re.compile(r"[¥￥]\s*(\d+(?:\.\d+)?)"), r"\1元"),
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:people|persons?)\b", re.IGNORECASE), r"\1人"),
)


# English words for the rules' enumerations (travel modes, topics), read as the Chinese words
_EN_SYNONYMS = tuple(
    (re.compile(rf"\b(?:{words})\b", re.IGNORECASE), zh)
    for words, zh in (
        ("by car|driving|drive", "驾车"),
        ("subway|metro", "地铁"),
        ("bus", "公交"),
        ("taxi|cab", "打车"),
        ("on foot|walking|walk", "步行"),
        ("cycling|by bike|bike", "骑行"),
        ("parking|car park", "停车"),
        ("kids|children|child", "孩子"),
        ("open now|still open|open until", "营业"),
    )
)


def _cn_integer(text: str) -> int | None:
    if not text:
        return 0
    if all(c in _CN_DIGITS for c in text) and len(text) > 1:  # 一九: digit by digit
        return int("".join(str(_CN_DIGITS[c]) for c in text))
    total, digit = 0, None
    for c in text:
        if c in _CN_DIGITS:
            digit = _CN_DIGITS[c]
        elif c in _CN_UNITS:
            total += (1 if digit is None else digit) * _CN_UNITS[c]
            digit = None
        else:
            return None
    return total + (digit or 0)


def cn_number(text: str) -> str | None:
    """A Chinese numeral (一点七, 二十五, 一百九十) as digits ("1.7", "25", "190"); None when not one."""
    whole, _, frac = text.partition("点")
    value = _cn_integer(whole)
    if value is None or (frac and not all(c in _CN_DIGITS for c in frac)):
        return None
    return str(value) + ("." + "".join(str(_CN_DIGITS[c]) for c in frac) if frac else "")


def _en_number(words: str) -> str | None:
    total, current = 0, 0
    parts = [w for w in re.split(r"[\s-]+", words.lower()) if w and w != "and"]
    if parts == ["half", "an"] or parts == ["half"]:
        return "0.5"
    for w in parts:
        if w in _EN_ONES:
            current += _EN_ONES[w]
        elif w in _EN_TENS:
            current += _EN_TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w == "a":
            current += 1
        elif w == "half":
            return f"{total + current}.5"
        else:
            return None
    return str(total + current)


def _protected_sub(pattern: re.Pattern[str], repl, text: str, protected: Sequence[str]) -> str:
    """`pattern.sub(repl, text)` outside the spans of the protected names."""
    spans = [(m.start(), m.end()) for name in protected if name for m in re.finditer(re.escape(name), text)]

    def guarded(m: re.Match[str]) -> str:
        if any(s < m.end() and m.start() < e for s, e in spans):
            return m.group(0)
        out = repl(m)
        return m.group(0) if out is None else out

    return pattern.sub(guarded, text)


def normalise(answer: str, protected: Sequence[str] = ()) -> str:
    """The answer with its typesetting read through (module docstring); names in `protected`
    (the tool outputs' record names, NFKC-normalised) are left as written."""
    text = unicodedata.normalize("NFKC", answer or "")
    text = _FENCE.sub(" ", text)
    text = _BULLET.sub("\n", text)
    text = _EMPHASIS.sub("", text)

    def cn(m: re.Match[str]) -> str | None:
        value = cn_number(m.group(1))
        return None if value is None else value

    text = _protected_sub(_CN_NUMBER, cn, text, protected)
    text = re.sub(r"(\d+)个半小时", lambda m: f"{int(m.group(1)) + 0.5}小时", text)
    text = re.sub(r"(\d+)个小时", r"\1小时", text)
    text = text.replace("半个小时", "30分钟").replace("半小时", "30分钟").replace("一刻钟", "15分钟")

    def en(m: re.Match[str]) -> str | None:
        value = _en_number(m.group(1))
        return None if value is None else value + " "

    text = _protected_sub(_EN_NUMBER, en, text, protected)
    for pattern, repl in _EN_UNITS:
        text = _protected_sub(pattern, lambda m, r=repl: m.expand(r), text, protected)
    for pattern, zh in _EN_SYNONYMS:
        text = _protected_sub(pattern, lambda _m, z=zh: z, text, protected)
    return text


# --------------------------------------------------------------------------------------------- assertions
