"""MapTab route-planning metrics (appendix C.1), written to score exactly as the authors'
evaluator does (`maptab_infer/evaluate.py` in the public MapTab repository).

* A response is split on "-" as it is; each piece is compared after stripping and lower-casing.
* Two stations match when difflib's `SequenceMatcher` ratio is >= 0.5.
* EMA: 1 when the response has the same number of stations as some reference and every position
  matches; for Metromap, a position where either side contains "(transfer)" must be equal character
  for character (unstripped, as the authors compare). Any reference counts. The authors' evaluator
  applies this transfer rule in every scenario (it never looks at the scenario); geoeval's in-run
  metrics follow the paper ("a Metromap transfer must carry the annotation") and skip it for
  Travelmap, whose references never carry "(transfer)". `transfer_rule=True` gives the authors'
  behaviour; `geoeval score maptab` (cli.py) uses it.
* PMA: the number of leading positions that match (similarity only: the authors' prefix count does
  not apply the transfer rule) divided by the reference length, best over the references, rounded
  to 4 decimals.
* DS: Map_Difficulty + Query_Difficulty scores (Easy=1, Medium=2, Hard=3) when EMA is 1, else 0;
  the DS of a set is the SUM over its items. Like the authors, an unknown level scores 0.
  `difficulty_weight` is the authors' per-item weight (their `Difficulty_score` field), read exactly
  as they read it: lower-cased, not stripped.

`extract_route` is geoeval's own help for chatty answers (the authors only read
`<route_begin>...<route_end>` tags or a whole code fence); scorers apply it before `ema`/`pma`.
Of the lines with a hyphen it keeps the last one that reads as a route (`looks_like_route`), so
prose with a dash ("That has 2 transfers - none") is never taken for one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

TRANSFER_MARK = "(transfer)"
MATCH_THRESHOLD = 0.5
DIFFICULTY_SCORES = {"easy": 1, "medium": 2, "hard": 3}

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
ROUTE_BEGIN, ROUTE_END = "<route_begin>", "<route_end>"
_LABEL = re.compile(
    r"^(?:so,?\s+)?(?:the\s+|my\s+)?(?:(?:final|optimal|best|shortest|fastest|cheapest|recommended)\s+)*"
    r"(?:route|answer|path)(?:\s+is)?\s*[:：]?\s+|^(?:final\s+|optimal\s+|best\s+)?(?:route|answer|path)\s*[:：]\s*",
    re.IGNORECASE,
)
# Words of English prose that a station name does not contain (whole words, any case; articles,
# prepositions, "No" (as in "No. 2 Middle School") and "I" (a numeral) are not listed, names
# contain them): a hyphenated line with one of them is a sentence ("That has 2 transfers - none",
# "I'm sorry - I cannot tell"), not a route.
PROSE_WORDS = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "that",
        "this",
        "these",
        "those",
        "there",
        "it",
        "its",
        "i'm",
        "we",
        "you",
        "then",
        "which",
        "will",
        "would",
        "should",
        "could",
        "can",
        "cannot",
        "can't",
        "not",
        "none",
        "because",
        "so",
        "take",
        "takes",
        "taking",
        "change",
        "changes",
        "transfers",
        "using",
        "exists",
        "exist",
        "fewest",
        "shortest",
    }
)
_WORD = re.compile(r"[^\W\d_][\w']*", re.UNICODE)
MAX_NAME_WORDS = 6


def tagged_texts(text: str, begin: str, end: str) -> list[str]:
    """The texts between each `begin` tag and the first `end` tag after it (tags matched without
    case), left to right, as a lazy regex `begin(.*?)end` finds them, but in linear time: a model
    may send a megabyte of unclosed begin tags or blanks, on which that regex backtracks for hours."""
    find_begin = re.compile(re.escape(begin), re.IGNORECASE).search
    find_end = re.compile(re.escape(end), re.IGNORECASE).search
    found: list[str] = []
    pos = 0
    while (opened := find_begin(text, pos)) is not None:
        closed = find_end(text, opened.end())
        if closed is None:
            break  # no end after this begin, so none after a later one either
        found.append(text[opened.end() : closed.start()])
        pos = closed.end()
    return found


def split_route(response: str) -> list[str]:
    """The stations of a route string: split on "-" with nothing stripped (as the authors do)."""
    return ("" if response is None else str(response)).split("-")


def extract_route(response: str) -> str:
    """The route line of a free-form answer, or "" when it has none.

    Order: a `<route_begin>...<route_end>` tag (the authors' QA-guided format); else the text inside
    code fences (or the whole text); of that, the last line that contains "-", with surrounding
    markdown emphasis / quotes and a leading "Route:" / "Answer:" label removed.
    """
    text = "" if response is None else str(response)
    tagged = tagged_texts(text, ROUTE_BEGIN, ROUTE_END)
    if tagged:
        return tagged[0].strip()
    fenced = _FENCE.findall(text)
    if fenced:
        text = "\n".join(fenced)
    candidates = [_clean_line(line) for line in text.splitlines() if "-" in line]
    routes = [line for line in candidates if looks_like_route(line)]
    return routes[-1] if routes else ""


def _clean_line(line: str) -> str:
    """A line without surrounding markdown emphasis / quotes, a leading "Route:" / "The optimal
    route is" label (or any lead-in ending in a colon) and a final full stop."""
    line = line.strip().strip("*`'\"").strip()
    if ":" in line and "-" in line.rsplit(":", 1)[1]:
        line = line.rsplit(":", 1)[1]
    line = _LABEL.sub("", line.strip()).strip().strip("*`'\"").strip()
    return line.rstrip(".。").strip()


def looks_like_route(line: str) -> bool:
    """Whether a line reads as a route "A-B(transfer)-C" rather than prose with a hyphen: two or
    more non-empty pieces, none longer than MAX_NAME_WORDS words, none with a sentence mark
    (; ! ?) and no word of `PROSE_WORDS`."""
    pieces = [p.replace(TRANSFER_MARK, " ").strip() for p in line.split("-")]
    if len(pieces) < 2 or any(not p for p in pieces):
        return False
    for p in pieces:
        words = _WORD.findall(p)
        if (
            len(p.split()) > MAX_NAME_WORDS
            or any(ch in p for ch in ";!?")
            or any(w.lower() in PROSE_WORDS for w in words)
        ):
            return False
    return True


def similarity(a: str, b: str) -> float:
    """difflib ratio of the stripped, lower-cased names."""
    return difflib.SequenceMatcher(None, a.strip().lower(), b.strip().lower()).ratio()


def station_match(pred: str, ref: str, scenario: str = "metromap", *, transfer_rule: bool | None = None) -> bool:
    """Whether a predicted station counts as the reference station at the same position (EMA rule).

    With the transfer rule (default: Metromap only; `transfer_rule=True`: always, as the authors'
    evaluator), a position where either side carries "(transfer)" must be identical; elsewhere the
    similarity must be >= 0.5.
    """
    if transfer_rule is None:
        transfer_rule = scenario == "metromap"
    if transfer_rule and (TRANSFER_MARK in pred or TRANSFER_MARK in ref):
        return pred == ref
    return similarity(pred, ref) >= MATCH_THRESHOLD


def _as_route_list(routes: str | Iterable[str]) -> list[str]:
    return [routes] if isinstance(routes, str) else list(routes)


def ema(
    response: str, routes: str | Iterable[str], scenario: str = "metromap", *, transfer_rule: bool | None = None
) -> float:
    """Exact Match Accuracy of one response: 1.0 if it equals some reference route, else 0.0.
    `transfer_rule`: see `station_match`."""
    predicted = split_route(response)
    for route in _as_route_list(routes):
        gold = split_route(route)
        if len(gold) == len(predicted) and all(
            station_match(p, g, scenario, transfer_rule=transfer_rule) for p, g in zip(predicted, gold)
        ):
            return 1.0
    return 0.0


def pma(response: str, routes: str | Iterable[str], scenario: str = "metromap") -> float:
    """Partial Match Accuracy: longest matching prefix / reference length, best over references,
    rounded to 4 decimals. Matching is by similarity only (the authors' prefix rule), so a missing
    "(transfer)" does not cut the prefix. `scenario` is accepted for a uniform signature."""
    predicted = split_route(response)
    best = 0.0
    for route in _as_route_list(routes):
        gold = split_route(route)
        if not gold:
            continue
        matched = 0
        for g, p in zip(gold, predicted):
            if similarity(p, g) < MATCH_THRESHOLD:
                break
            matched += 1
        best = max(best, matched / len(gold))
    return round(best, 4)


def difficulty_score(level: str) -> int:
    """Easy=1, Medium=2, Hard=3 (case-insensitive). Raises ValueError for anything else."""
    key = str(level).strip().lower()
    if key not in DIFFICULTY_SCORES:
        raise ValueError(f"unknown difficulty level {level!r}; expected Easy, Medium or Hard")
    return DIFFICULTY_SCORES[key]


def ds(ema_value: float, map_difficulty: str, query_difficulty: str) -> float:
    """Difficulty-aware Score of one item: map + query difficulty score when EMA is 1, else 0.
    An unknown level gives 0, as in the authors' evaluator. Sum it over a set."""
    if ema_value != 1:
        return 0.0
    a = DIFFICULTY_SCORES.get(str(map_difficulty).strip().lower())
    b = DIFFICULTY_SCORES.get(str(query_difficulty).strip().lower())
    if a is None or b is None:
        return 0.0
    return float(a + b)


def difficulty_weight(map_difficulty: object, query_difficulty: object) -> int:
    """The authors' per-item `Difficulty_score`: map + query level score (2..6), 0 when either level
    is not Easy/Medium/Hard. Read as they read it (`str(x).lower()`, no stripping), so that a
    scored file's DS equals theirs even for oddly written levels."""
    a = DIFFICULTY_SCORES.get(str(map_difficulty).lower())
    b = DIFFICULTY_SCORES.get(str(query_difficulty).lower())
    return 0 if a is None or b is None else a + b
