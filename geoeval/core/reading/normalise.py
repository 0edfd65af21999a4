"""Text normalised once for every suite's reading: Unicode, case, spacing, markdown emphasis and
numbers in words.

* `nfkc`: Unicode NFKC (full-width letters, digits, brackets and colons become ASCII; ligatures
  split) with zero-width characters removed.
* `strip_emphasis`: markdown emphasis and code marks taken away (`**B**`, `` `B` ``, `~~B~~`,
  `_B_`); an underscore inside a word (`place_id`, `node_12`) stays.
* `fold`: `nfkc`, emphasis stripped, case-folded, accents kept, spacing collapsed: the form cue
  words are matched in.
* `unaccent`: accents dropped ("dieciséis" is "dieciseis", "fünf" is "funf"), ß as "ss".
* `numbers_in`: the numbers a text states, in digits (thousands separators, decimals, a sign; not
  ordinals such as "55th") or, where it has no digits, in words: English ("twenty-one", "one
  hundred and five"), Chinese and Japanese numerals (十二, 两, 一百零五, 一点五), Spanish
  ("veintitrés", "treinta y dos"), French ("vingt-trois", "soixante-dix") and German
  ("dreiundzwanzig").
"""

from __future__ import annotations

import re
import unicodedata

from geoeval.core.reading.number_words import (
    DE_WORDS,
    EN_ONES,
    EN_TENS,
    ES_WORDS,
    FR_WORDS,
    ZH_DIGITS,
    ZH_SCALES,
)

_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
# emphasis and code marks; an underscore counts only at a word's edge
_EMPHASIS = re.compile(r"\*+|`+|~~|(?<![^\W_])_+|_+(?![^\W_])")
_SPACES = re.compile(r"\s+")


def nfkc(text: str) -> str:
    """NFKC-normalised text without zero-width characters."""
    return _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", text or ""))


def strip_emphasis(text: str) -> str:
    """`text` without markdown emphasis and code marks (module docstring)."""
    return _EMPHASIS.sub("", text)


def plain(text: str) -> str:
    """NFKC-normalised text without markdown emphasis or code marks (`**B**` is `B`)."""
    return strip_emphasis(nfkc(text))


def fold(text: str) -> str:
    """The form cue words are matched in: `plain`, case-folded, spacing collapsed to one space."""
    return _SPACES.sub(" ", plain(text).casefold()).strip()


def unaccent(text: str) -> str:
    """`text` without combining accents, and ß as ss."""
    decomposed = unicodedata.normalize("NFKD", text.replace("ß", "ss"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# ----------------------------------------------------------------------------------- numbers

# digits, not an ordinal ("East 55th", "2nd Avenue" are names, not counts)
_DIGITS = re.compile(
    r"(?:(?<![A-Za-z0-9.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|(?<![A-Za-z0-9.])-?\.\d+)"
    r"(?!\d|\.\d|(?:st|nd|rd|th)\b)",
    re.IGNORECASE,
)
_EN_SCALES = {"hundred": 100, "thousand": 1000}
_ZH_NUMBER = re.compile(f"[{''.join(ZH_DIGITS)}{''.join(ZH_SCALES)}]+(?:点[{''.join(ZH_DIGITS)}]+)?")
# words that join the parts of one number ("one hundred and five", "treinta y dos", "vingt et un")
_JOINERS = frozenset(["and", "y", "et", "und"])
# French: soixante-dix, quatre-vingt(s)-dix
_FR_COMPOUND = {"soixantedix": 70, "quatrevingt": 80, "quatrevingts": 80, "quatrevingtdix": 90}
# German compounds "dreiundzwanzig" (3 + 20)
_DE_COMPOUND = re.compile(
    r"^(ein|zwei|drei|vier|funf|sechs|sieben|acht|neun)und(zwanzig|dreissig|vierzig|funfzig|sechzig|siebzig|achtzig|neunzig)$"
)


def _word_value(word: str) -> int | None:
    """The value of one number word of any of the languages (accents dropped), or None."""
    if word in EN_ONES:
        return EN_ONES[word]
    if word in EN_TENS:
        return EN_TENS[word]
    for table in (ES_WORDS, FR_WORDS, DE_WORDS):
        if word in table:
            return table[word]
    if word in _FR_COMPOUND:
        return _FR_COMPOUND[word]
    found = _DE_COMPOUND.match(word)
    if found:
        return DE_WORDS[found.group(1)] + DE_WORDS[found.group(2)]
    return None


# words that are number words in one language and everyday words in another: read as numbers only
# next to another number word ("one" / "un" / "une" / "ein" alone are articles, "six" is English too)
_AMBIGUOUS = frozenset(["un", "une", "ein", "eine", "una", "once", "null", "elf", "dix"])


_WORD_SPAN = re.compile(r"[^\W\d_]+")


def _word_numbers(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of the numbers written in words, each run of number words (and
    joiners) one number."""
    found: list[tuple[int, int, float]] = []
    total = current = 0
    words_in_run = 0
    lone_ambiguous = False
    run_start = run_end = 0

    def close() -> None:
        nonlocal total, current, words_in_run, lone_ambiguous
        if words_in_run and not (words_in_run == 1 and lone_ambiguous):
            found.append((run_start, run_end, float(total + current)))
        total = current = words_in_run = 0
        lone_ambiguous = False

    for m in _WORD_SPAN.finditer(text):
        word = unaccent(m.group().lower())
        if words_in_run and text[run_end : m.start()].strip(" -") not in ("",):
            close()  # anything but spaces or a hyphen between two words ends the number
        if word in _EN_SCALES and words_in_run:
            if _EN_SCALES[word] == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * 1000
                current = 0
            words_in_run += 1
            run_end = m.end()
            continue
        if word in _JOINERS and words_in_run:
            run_end_before = run_end
            run_end = m.end()
            # a joiner belongs to the number only when a number word follows it
            nxt = _WORD_SPAN.search(text, m.end())
            if nxt is None or _word_value(unaccent(nxt.group().lower())) is None:
                run_end = run_end_before
                close()
            continue
        value = _word_value(word)
        if value is None:
            close()
            continue
        if not words_in_run:
            run_start = m.start()
            lone_ambiguous = word in _AMBIGUOUS
        if value == 100 and words_in_run:  # "deux cent", "zwei hundert": a multiple of a hundred
            current = (current or 1) * 100
        elif word == "vingt" and current == 4 and words_in_run:  # "quatre vingt": 80
            current = 80
        else:
            current += value
        words_in_run += 1
        run_end = m.end()
    close()
    return found


def _chinese_number(text: str) -> float | None:
    whole, _, decimals = text.partition("点")
    total = section = digit = 0
    seen = False
    for ch in whole:
        if ch in ZH_DIGITS:
            digit = ZH_DIGITS[ch]
            seen = True
        elif ch == "万":
            total += (section + digit) * 10000
            section = digit = 0
        else:  # 十 百 千: a bare 十 is ten
            section += (digit or 1) * ZH_SCALES[ch]
            digit = 0
            seen = True
    if not seen and not decimals:
        return None
    value = float(total + section + digit)
    if decimals:
        value += float("0." + "".join(str(ZH_DIGITS[ch]) for ch in decimals))
    return value


def number_spans(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of every number `text` (already `nfkc`) states: its digits (ordinals
    left out) when it has any, else its numbers in words and Chinese numerals, in order. Words
    are read only without digits, so "3, the one on the Red Line" and "3 (three)" state 3 alone."""
    found = [(m.start(), m.end(), float(m.group().replace(",", ""))) for m in _DIGITS.finditer(text)]
    if found:
        return found
    found = _word_numbers(text)
    for m in _ZH_NUMBER.finditer(text):
        value = _chinese_number(m.group())
        if value is not None:
            found.append((m.start(), m.end(), value))
    return sorted(found)


def digits_in(text: str) -> list[float]:
    """The numbers `text` writes in digits (ordinals left out)."""
    return [float(m.group().replace(",", "")) for m in _DIGITS.finditer(nfkc(text))]


def numbers_in(text: str) -> list[float]:
    """Every number `text` states (`number_spans`)."""
    return [value for _start, _end, value in number_spans(nfkc(text))]
