"""How the heuristic baseline reads a question, with general English cues only (weekdays, clock
times, distances with units, vehicles, clauses, negative cues, capitalised spans), never the case
engine's vocabulary or templates."""

from __future__ import annotations

import re

from geoeval.suites.lifeplanner.city.opening_hours import DAYS

# General English, not the engine's vocabulary.
_DAY_RE = re.compile(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")
_TIME_RE = re.compile(r"\b(\d{1,2}:\d{2})\b")
_FUNCTION_CAPS = {
    "i",
    "i'm",
    "i'll",
    "i'd",
    "i've",
    "what",
    "what's",
    "which",
    "where",
    "when",
    "how",
    "is",
    "are",
    "does",
    "do",
    "can",
    "could",
    "would",
    "will",
    "find",
    "list",
    "plan",
    "my",
    "the",
    "a",
    "an",
    "it's",
    "on",
    "in",
    "at",
    "between",
    "among",
    "driving",
    "walking",
    "cycling",
    "please",
    "we",
    "our",
    "any",
    "there",
    "if",
    "and",
    "or",
    "but",
    "so",
    "also",
    "then",
    "next",
    "after",
    "before",
    "from",
    "to",
    "near",
    "need",
    "want",
    "help",
    "tell",
    "show",
    "give",
    "fastest",
    "shortest",
    "quickest",
    "via",
    "heading",
    "leaving",
    "starting",
    "ok",
    "hi",
    "hello",
    "hey",
    "honestly",
    "just",
    "right",
    "now",
    "today",
    "tonight",
    "tomorrow",
    "this",
    "that",
    "these",
    "those",
    "who",
    "why",
    "should",
    "may",
    "might",
    "must",
    "let's",
    "let",
    "me",
    "you",
    "your",
    "yes",
    "no",
    "not",
    "one",
    "it",
    "they",
    "he",
    "she",
    "his",
    "her",
    "their",
    "am",
    "be",
    "been",
    "have",
    "has",
    "had",
    *(d.lower() for d in DAYS),
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "cny",
    "km",
    "m",
}
_STOP = {
    "i",
    "im",
    "i'm",
    "i'd",
    "id",
    "i'll",
    "a",
    "an",
    "the",
    "and",
    "or",
    "to",
    "of",
    "in",
    "on",
    "at",
    "for",
    "with",
    "my",
    "me",
    "we",
    "our",
    "us",
    "it",
    "its",
    "it's",
    "is",
    "be",
    "so",
    "some",
    "somewhere",
    "want",
    "need",
    "would",
    "like",
    "love",
    "really",
    "place",
    "spot",
    "that",
    "this",
    "there",
    "where",
    "which",
    "while",
    "right",
    "now",
    "just",
    "very",
    "about",
    "can",
    "get",
    "have",
    "has",
    "had",
    "do",
    "don't",
    "dont",
    "will",
    "all",
    "any",
    "more",
    "most",
    "much",
    "too",
    "no",
    "not",
    "without",
    "into",
    "over",
    "up",
    "down",
    "out",
    "from",
    "them",
    "they",
    "you",
    "your",
    "lot",
    "lots",
    "after",
    "also",
    "then",
    "what",
    "what's",
    "should",
    "could",
    "choose",
    "pick",
    "go",
    "going",
    "near",
    "nearby",
    "around",
    "here",
    "close",
    "way",
    "within",
    "metres",
    "meters",
    "route",
    "trip",
    "plan",
    "stop",
    "visit",
    "between",
    "among",
    "one",
    "find",
    "best",
    "good",
    "great",
    "able",
    "make",
    "sure",
    "please",
    "help",
    "tell",
    "today",
    "tonight",
    "minutes",
    "hours",
    "leaving",
    "setting",
    "off",
    "spend",
    "each",
    "every",
    "when",
    "there's",
    "whats",
    "where's",
    "someplace",
    "anywhere",
    "something",
    "thing",
    "things",
    "am",
    "are",
    "was",
    "were",
    "been",
    "being",
    "these",
    "those",
    "than",
    "how",
    "who",
    "why",
    "if",
    "but",
    "because",
    "since",
    "as",
    "by",
    "via",
    "driving",
    "walking",
    "cycling",
    "fastest",
    "quickest",
    "shortest",
    "drive",
    "walk",
    "cycle",
    "bike",
    "car",
    "let",
    "let's",
    "may",
    "might",
    "must",
    "shall",
    "pm",
    "ok",
    "okay",
}
_NEGATIVE_CUES = (
    "hate",
    "can't stand",
    "cannot stand",
    "don't want",
    "do not want",
    "dislike",
    "avoid",
    "drives me",
    "no patience",
    "not a fan",
    "rather not",
    "without any",
    "never",
)


def _day_time(q: str) -> tuple[str | None, str | None]:
    d, t = _DAY_RE.search(q), _TIME_RE.search(q)
    return (d.group(1) if d else None), (t.group(1) if t else None)


def _distance(text: str) -> float | None:
    m = re.search(r"(\d+(?:\.\d+)?)\s*(km|kilometres|kilometers|m|metres|meters)\b", text)
    if not m:
        return None
    return float(m.group(1)) * (1000.0 if m.group(2).startswith("k") else 1.0)


def _words(text: str) -> list[str]:
    return [w.strip("'-") for w in re.findall(r"[a-z][a-z\-']+", text.lower())]


def _content_words(text: str, limit: int = 6) -> list[str]:
    out: list[str] = []
    for w in _words(text):
        if len(w) >= 4 and w not in _STOP and w not in out:
            out.append(w)
    return out[:limit]


def _stem(word: str) -> str:
    """A crude singular: the substring a type name containing the word would contain."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3]
    if word.endswith("es") and word[-3:-2] in ("s", "x", "h"):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _or_expr(words: list[str]) -> str:
    return "(" + " OR ".join(f'"{w}"' for w in words) + ")"


def _vehicle(q: str) -> str:
    low = q.lower()
    for vehicle, cues in (
        ("walking", ("walk", "on foot")),
        ("cycling", ("cycl", "bike", "biking")),
        ("driving", ("driv", " car")),
    ):
        if any(c in low for c in cues):
            return vehicle
    return "driving"


def _mode(q: str) -> str:
    low = q.lower()
    return "distance" if ("shortest" in low or "least distance" in low or "fewest metres" in low) else "time"


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<=[.;!?])\s+|;\s*|,\s+(?:and|but)\s+", text) if c.strip()]


def _need_words(text: str, names: list[str]) -> tuple[list[str], list[str]]:
    """(words of what the user wants, words of what the user rules out), from the question with
    the place names removed; a clause with a negative cue ("I hate ...") is ruled out."""
    for n in names:
        text = re.sub(re.escape(n), " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\d+(?:[:.]\d+)?", " ", text)
    want: list[str] = []
    avoid: list[str] = []
    for clause in _clauses(text):
        low = clause.lower()
        target = avoid if any(c in low for c in _NEGATIVE_CUES) else want
        target += [w for w in _content_words(clause) if w not in want and w not in avoid]
    return want[:6], avoid[:4]


def _cap_starts(q: str) -> list[int]:
    """Positions of capitalised (or numeric) words that are not everyday function words."""
    out = []
    for m in re.finditer(r"(?<![\w'])[A-Z0-9][\w'&.+-]*", q):
        word = m.group(0).rstrip(".,?!:;").lower()
        if word not in _FUNCTION_CAPS and not re.fullmatch(r"[\d.,:]+", word):
            out.append(m.start())
    return out


def _run_words(text: str) -> list[str]:
    """The capitalised run that starts `text` (a name candidate), as search words."""
    words = []
    for tok in text.split():
        bare = tok.strip('()[],.?!:;"')
        if not bare:
            continue
        if not (bare[0].isupper() or bare[0].isdigit() or bare in ("&", "+")):
            break
        words.append(bare)
        if tok[-1] in ",.?!:;" and tok not in ("Co.,", "Co.", "Ltd.", "St."):
            break
        if len(words) >= 8:
            break
    return words
