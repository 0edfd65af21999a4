"""Numbers as answers write them: digits with units ("783 m", "1.2 km", "14 min 34 s", "¥86",
"4.5 stars"), and numbers in words, English ("seven hundred eighty-three") and Chinese (七百八十三,
一点七). Used by the robust answer protocol (`scoring/reading.py`); the paper protocol reads
plain JSON numbers only.
"""

from __future__ import annotations

import math
import re
import unicodedata

from geoeval.api import EN_ONES, EN_TENS, ZH_DIGITS, ZH_SCALES

_EN_UNITS = {**EN_ONES, **EN_TENS}
_ZH_DIGITS = ZH_DIGITS
_EN_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_EN_WORD = "|".join([*_EN_UNITS, *_EN_SCALES, "and", "point", "a", "half"])
#: a run of English number words ("seven hundred and eighty-three", "one point two")
EN_NUMBER_RE = re.compile(rf"\b(?:{_EN_WORD})(?:[\s-]+(?:{_EN_WORD}))*\b", re.IGNORECASE)

_ZH_SCALES = ZH_SCALES
ZH_NUMBER_RE = re.compile(r"[零〇一二两三四五六七八九十百千万]+(?:点[零〇一二三四五六七八九]+)?")

_NUMBER = r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?|[-+]?\.\d+"
NUMBER_RE = re.compile(_NUMBER)

#: unit word -> (dimension, factor to metres or seconds or 1)
UNITS: dict[str, tuple[str, float]] = {
    "m": ("distance", 1.0),
    "meter": ("distance", 1.0),
    "meters": ("distance", 1.0),
    "metre": ("distance", 1.0),
    "metres": ("distance", 1.0),
    "米": ("distance", 1.0),
    "km": ("distance", 1000.0),
    "kms": ("distance", 1000.0),
    "kilometer": ("distance", 1000.0),
    "kilometers": ("distance", 1000.0),
    "kilometre": ("distance", 1000.0),
    "kilometres": ("distance", 1000.0),
    "公里": ("distance", 1000.0),
    "千米": ("distance", 1000.0),
    "s": ("time", 1.0),
    "sec": ("time", 1.0),
    "secs": ("time", 1.0),
    "second": ("time", 1.0),
    "seconds": ("time", 1.0),
    "秒": ("time", 1.0),
    "秒钟": ("time", 1.0),
    "min": ("time", 60.0),
    "mins": ("time", 60.0),
    "minute": ("time", 60.0),
    "minutes": ("time", 60.0),
    "分": ("time", 60.0),
    "分钟": ("time", 60.0),
    "h": ("time", 3600.0),
    "hr": ("time", 3600.0),
    "hrs": ("time", 3600.0),
    "hour": ("time", 3600.0),
    "hours": ("time", 3600.0),
    "小时": ("time", 3600.0),
    "cny": ("money", 1.0),
    "rmb": ("money", 1.0),
    "yuan": ("money", 1.0),
    "元": ("money", 1.0),
    "块": ("money", 1.0),
    "eur": ("money", 1.0),
    "usd": ("money", 1.0),
    "star": ("rating", 1.0),
    "stars": ("rating", 1.0),
    "/5": ("rating", 1.0),
    "out of 5": ("rating", 1.0),
    "星": ("rating", 1.0),
}
_CURRENCY_PREFIX = "¥￥$€£"
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
#: a number followed by an optional unit
QUANTITY_RE = re.compile(rf"(?P<num>{_NUMBER})\s*(?P<unit>{_UNIT_ALT})?(?![A-Za-z])", re.IGNORECASE)
_HEDGE_WORDS = re.compile(r"\b(?:or|between|to|maybe|either|perhaps)\b|或|还是|到|~|–|—", re.IGNORECASE)


def english_number(text: str) -> float | None:
    """ "seven hundred and eighty-three" -> 783, "one point two" -> 1.2, "two and a half" -> 2.5;
    None when the words are not one number."""
    words = [w for w in re.split(r"[\s-]+", text.strip().casefold()) if w]
    if not words or all(w in ("and", "a", "point", "half") for w in words):
        return None
    total = current = 0.0
    decimals: list[int] = []
    in_decimals = False
    half = False
    for w in words:
        if w == "point":
            if in_decimals:
                return None
            in_decimals = True
        elif w == "half":
            half = True
        elif w in ("and", "a"):
            continue
        elif in_decimals:
            if w not in _EN_UNITS or _EN_UNITS[w] > 9:
                return None
            decimals.append(_EN_UNITS[w])
        elif w in _EN_UNITS:
            current += _EN_UNITS[w]
        elif w in _EN_SCALES:
            scale = _EN_SCALES[w]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
        else:
            return None
    value = total + current
    if decimals:
        value += float("0." + "".join(str(d) for d in decimals))
    if half:
        value += 0.5
    return value


def chinese_number(text: str) -> float | None:
    """七百八十三 -> 783, 一点七 -> 1.7, 十五 -> 15, 两万 -> 20000; None if not a number."""
    text = text.strip()
    if not text or not ZH_NUMBER_RE.fullmatch(text):
        return None
    whole, _, frac = text.partition("点")
    total = section = 0
    digit: int | None = None
    for ch in whole:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        elif ch == "万":
            total = (total + section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            section += (1 if digit is None else digit) * _ZH_SCALES[ch]
            digit = None
    value = float(total + section + (digit or 0))
    if frac:
        value += float("0." + "".join(str(_ZH_DIGITS[c]) for c in frac))
    return value


def words_to_digits(text: str) -> str:
    """`text` with every run of number words (English or Chinese) replaced by its digits."""

    def en(m: re.Match[str]) -> str:
        v = english_number(m.group(0))
        return m.group(0) if v is None else f"{v:g}"

    def zh(m: re.Match[str]) -> str:
        v = chinese_number(m.group(0))
        return m.group(0) if v is None else f"{v:g} "

    return ZH_NUMBER_RE.sub(zh, EN_NUMBER_RE.sub(en, text))


def quantity(value: object, dimension: str | None = None) -> float | None:
    """One number stated by `value`, in metres (distance), seconds (time) or as written (money,
    rating, a bare number); compound times add up ("1 h 5 min" -> 3900). None when `value` states
    no number, several alternatives ("700 or 800 m", "5-10 min"), or a unit of another dimension
    than `dimension`."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFKC", value).strip()
    text = words_to_digits(text).replace("约", "").replace("大约", "")
    text = text.strip().lstrip(_CURRENCY_PREFIX).strip()
    found = list(QUANTITY_RE.finditer(text))
    if not found:
        return None
    rest = QUANTITY_RE.sub(" ", text)
    if _HEDGE_WORDS.search(rest) or re.search(r"\d\s*-\s*\d", text):
        return None  # a range or alternatives is not one number
    total = 0.0
    dims = set()
    for m in found:
        x = float(m.group("num").replace(",", ""))
        unit = (m.group("unit") or "").casefold()
        dim, factor = UNITS.get(unit, (None, 1.0))
        if dim is not None:
            dims.add(dim)
        total += x * factor
    if len(found) > 1 and dims != {"time"}:
        return None  # only times compound ("1 h 5 min"); two distances are two answers
    if dimension is not None and dims and dims != {dimension}:
        return None
    return total if math.isfinite(total) else None
