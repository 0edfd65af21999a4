"""A deterministic, tokenizer-free estimate of how many tokens a prompt costs (appendix G.3
compares the token counts of CSV and JSON tables).

No tokenizer is downloaded (the machines reach no model hub), so the count imitates a byte-pair
tokenizer of the cl100k / o200k kind with a few rules over the text:

* a run of letters costs ceil(len / 4) tokens (common words are one token, long names several);
* a run of digits costs ceil(len / 3) (these tokenizers split numbers into groups of up to three);
* every CJK character (and other letters outside ASCII) costs one token;
* every other visible character (punctuation, brackets, quotes) costs one token;
* whitespace is free where it is a single space before a word (it merges into the word's token)
  and costs one token per run otherwise (line breaks, JSON's indentation).

This overestimates some tokenizers and underestimates others by a constant factor, but it is
stable, and it ranks formats the way real tokenizers do: JSON's repeated keys, quotes, braces and
indentation cost far more than CSV's commas.
"""

from __future__ import annotations

import math
import re

_PIECE = re.compile(r"[A-Za-z]+|[0-9]+|\s+|[\u3400-\u9fff\uf900-\ufaff]|\S")


def estimate_tokens(text: str) -> int:
    """The estimated token count of `text` (see the module docstring)."""
    total = 0
    for piece in _PIECE.findall(text):
        first = piece[0]
        if first.isascii() and first.isalpha():
            total += math.ceil(len(piece) / 4)
        elif first.isdigit() and first.isascii():
            total += math.ceil(len(piece) / 3)
        elif first.isspace():
            total += 0 if piece == " " else 1
        else:
            total += 1
    return total
