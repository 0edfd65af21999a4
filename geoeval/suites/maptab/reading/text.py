"""Text normalisation of MapTab's robust answer protocol (README "Answer protocol"): what an
answer says is read, how it is typeset is not.

* `plain`: Unicode NFKC (full-width letters, digits, brackets and colons become ASCII) and
  markdown emphasis / code marks removed.
* `name_key`: the identity of a station name: `plain`, case-folded, apostrophes and full stops
  dropped, spacing collapsed. Two names are the same station only when their keys are equal.
* `numbers_in`: the numbers a text states, in digits (with thousands separators, decimals and a
  sign; not ordinals such as "55th") or, where it has no digits, in words, English ("three",
  "twenty-one", "one hundred and five") or Chinese (三, 十二, 两, 一百零五, 一点五).
"""

from __future__ import annotations

import re
import unicodedata

from geoeval.core.number_words import EN_ONES, EN_TENS, ZH_DIGITS, ZH_SCALES

_MARKDOWN = re.compile(r"[*_`~]+")
_DROPPED = re.compile(r"[.'\u2018\u2019\u00b4`]")
_SPACES = re.compile(r"\s+")


def plain(text: str) -> str:
    """NFKC-normalised text without markdown emphasis or code marks (`**B**` is `B`)."""
    return _MARKDOWN.sub("", unicodedata.normalize("NFKC", text or ""))


def name_key(name: str) -> str:
    """The key two names of one station share: case, spacing, emphasis, apostrophes, full stops
    and surrounding punctuation do not count ("**St. James's**" and "st james s" differ only in
    the "s"; "Kensett  Square" and "kensett square" are one key)."""
    text = _DROPPED.sub("", plain(name)).casefold()
    return _SPACES.sub(" ", text).strip(' \t,;:!?"()[]{}<>')


# ----------------------------------------------------------------------------------- numbers

# digits, not an ordinal ("East 55th", "2nd Avenue" are names, not counts)
_DIGITS = re.compile(
    r"(?:(?<![A-Za-z0-9.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<![A-Za-z0-9.])-?\.\d+)"
    r"(?!\d|\.\d|(?:st|nd|rd|th)\b)",
    re.IGNORECASE,
)
_EN_UNITS, _EN_TENS, _ZH_DIGITS = EN_ONES, EN_TENS, ZH_DIGITS
_EN_SCALES = {"hundred": 100, "thousand": 1000}
_EN_WORD = re.compile(r"[a-z]+")
_ZH_SCALES = ZH_SCALES
_ZH_NUMBER = re.compile(f"[{''.join(_ZH_DIGITS)}{''.join(_ZH_SCALES)}]+(?:点[{''.join(_ZH_DIGITS)}]+)?")


def _english_numbers(text: str) -> list[float]:
    """The numbers written in English words, each run of number words one number."""
    found: list[float] = []
    total = current = 0
    in_number = False
    for word in _EN_WORD.findall(text.lower()):
        if word in _EN_UNITS or word in _EN_TENS:
            current += _EN_UNITS.get(word, 0) + _EN_TENS.get(word, 0)
            in_number = True
        elif word in _EN_SCALES and in_number:
            scale = _EN_SCALES[word]
            if scale == 100:
                current *= 100
            else:
                total += current * scale
                current = 0
        elif word == "and" and in_number:
            continue
        elif in_number:
            found.append(float(total + current))
            total = current = 0
            in_number = False
    if in_number:
        found.append(float(total + current))
    return found


def _chinese_number(text: str) -> float | None:
    whole, _, decimals = text.partition("点")
    total = section = digit = 0
    seen = False
    for ch in whole:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
            seen = True
        elif ch == "万":
            total += (section + digit) * 10000
            section = digit = 0
        else:  # 十 百 千: a bare 十 is ten
            section += (digit or 1) * _ZH_SCALES[ch]
            digit = 0
            seen = True
    if not seen and not decimals:
        return None
    value = float(total + section + digit)
    if decimals:
        value += float("0." + "".join(str(_ZH_DIGITS[ch]) for ch in decimals))
    return value


def numbers_in(text: str) -> list[float]:
    """Every number `text` states: its digits (ordinals left out) when it has any, else its
    numbers in English words and Chinese numerals. Words are read only without digits, so "3, the
    one on the Red Line" and "3 (three)" state 3 alone."""
    norm = unicodedata.normalize("NFKC", text or "")
    found = [float(m.group().replace(",", "")) for m in _DIGITS.finditer(norm)]
    if found:
        return found
    found += _english_numbers(norm)
    for m in _ZH_NUMBER.finditer(norm):
        value = _chinese_number(m.group())
        if value is not None:
            found.append(value)
    return found
