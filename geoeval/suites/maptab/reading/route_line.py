"""MapTab's answer type: a route, and how one is read from a piece of text (`read_line`).

A piece of text states a route when, after its typesetting is taken away, it splits into two or
more station names:

* separators: "-" with or without spaces, en and em dashes, arrows ("->", "→", "=>", "⟶", ">");
* taken away: NFKC (full-width forms), markdown emphasis and code marks, bullets and numbering,
  a lead-in label ending in a colon ("Route:", "The optimal route is:"), the words that lead to
  the route or follow it ("Actually, take ... instead"), a final full stop, and per station any
  comment after a colon or comma and any parenthetical that is not a transfer mark ("B (Red
  Line)" is "B");
* a transfer mark is any parenthetical that says transfer, change or 换乘, in any case or
  bracket ("B (Transfer)", "B（transfer）", "B [transfer]"); it is kept as "(transfer)";
* a piece that reads as a sentence (a verb, a pronoun, more than six words, ; ! ?) makes the text
  prose, not a route ("I'm sorry - I cannot tell"); a piece that is a quantity or a line's name
  makes it a summary ("Total: 3 stations - 1 transfer", "Lines: Red Line -> Blue Line").

Where a route is in an answer (lines, lists, tables, JSON) and which route is the answer is
`reading/route.py`, on the core's reading layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from geoeval.api import plain
from geoeval.suites.maptab.metrics import PROSE_WORDS, TRANSFER_MARK
from geoeval.suites.maptab.reading.stations import Stations

# arrows first ("->" holds a dash), then dashes of every width with any spacing
SEPARATOR = re.compile(r"\s*(?:-+>|=+>|[→⟶⇒➔➜⟹➡➝⇨⇢►▶]\ufe0f?|—+>|–+>|(?<=\S)\s*>\s*(?=\S)|[-–—―‒﹣])\s*")
# a transfer mark says only that: "(transfer)", "(Transfer here)", "(change to the Blue Line)",
# "[换乘]"; "(2 transfers, 25 min)" after the last station is a comment on the route
TRANSFER = re.compile(
    r"[\(\[\{]\s*(?:transfer|change|interchange|换乘|轉乘|换车)(?:\s+(?:here|station|point|to\b[^()\[\]{}\d]*))?"
    r"\s*[\)\]\}]",
    re.IGNORECASE,
)
# a comment after a station: the line taken there, or a count ("B on the Red Line", "C (3 stops)")
_COMMENT = re.compile(
    r"\s+(?:(?:on|via|by|using|along|taking|with)\s+(?:the\s+)?\S.*\bline\b.*|\d+\s*(?:min|minutes?|stops?|stations?)\b.*)$",
    re.IGNORECASE,
)
PARENTHETICAL = re.compile(r"\s*[\(\[\{][^()\[\]{}]*[\)\]\}]")
BULLET = re.compile(r"^\s*(?:[-*•+]\s+|\d+\s*[.)]\s+|step\s+\d+\s*[:.)]\s*|>\s*)", re.IGNORECASE)
_LABEL = re.compile(
    r"^(?:so,?\s+)?(?:the\s+|my\s+|your\s+)?(?:(?:final|optimal|best|shortest|fastest|cheapest|recommended|correct)\s+)*"
    r"(?:route|answer|path)(?:\s+is)?\s*[:：]?\s+",
    re.IGNORECASE,
)
# words at the start or end of a route that say what to do with it, not where to go: taken off
# the first and last station (what they say about the route is the core's to read)
_LEAD = re.compile(
    r"^(?:(?:actually|correction|wait|so|ok(?:ay)?|update|instead|hmm|well|then|or|and|but|maybe|perhaps|"
    r"probably|alternatively|possibly|please|i\s+would|i'd|you\s+should|you\s+can|just|avoid|not|never|"
    r"don't|do\s+not|wrong|incorrect)[\s,:;.!]+)*"
    r"(?:(?:take|use|try|ride|go|follow|choose|pick)\s+)?(?:(?:the\s+)?route\s+)?",
    re.IGNORECASE,
)
_TRAIL = re.compile(r"[\s,;]+(?:instead|then|either|too|as\s+well|is\s+better|works)\s*[.!]*\s*$", re.IGNORECASE)
# the paper reader's prose words, and those of an apology or a hedge ("sorry", "I think")
_PROSE_WORDS = PROSE_WORDS | frozenset(["i", "sorry", "think"])
_WORD = re.compile(r"[^\W\d_][\w']*", re.UNICODE)
# a piece that is a quantity ("3 stations", "12 min", "4.5") or a line's name ("Red Line", "2号线")
# makes a line a summary ("Total: 3 stations - 1 transfer", "Lines: Red Line -> Blue Line"), not a route
NOT_A_STATION = re.compile(
    r"^[\d.,]+(?:\s*(?:stations?|stops?|transfers?|changes?|min(?:ute)?s?|h(?:ours?)?|km|m|yuan|元|分钟|站)\b.*)?$|"
    r"\bline$|线$",
    re.IGNORECASE,
)
MAX_NAME_WORDS = 6
#: a longer piece of text is prose, never a route, and is not searched (a hostile answer may be a
#: megabyte of one line, on which the patterns here would take quadratic time)
MAX_LINE_CHARS = 2000


@dataclass(frozen=True)
class Stop:
    """One station of a route as the answer names it, and whether it carries a transfer mark."""

    name: str
    transfer: bool = False

    def text(self) -> str:
        return f"{self.name}{TRANSFER_MARK}" if self.transfer else self.name


def route_text(stops: list[Stop] | tuple[Stop, ...]) -> str:
    """A route in the paper's format, "A-B(transfer)-C"."""
    return "-".join(s.text() for s in stops)


def parse_answer_text(answer: str) -> list[list[Stop]]:
    """Routes written one a line in the paper's format (the inverse of joining `route_text`s)."""
    routes = []
    for line in (answer or "").splitlines():
        stops = [stop(piece) for piece in line.split("-")]
        if len(stops) >= 2 and all(s.name for s in stops):
            routes.append(stops)
    return routes


def stop(piece: str) -> Stop:
    """The station a piece names, its comments and parentheticals taken off, and its transfer mark."""
    transfer = bool(TRANSFER.search(piece))
    name = TRANSFER.sub(" ", piece)
    name = PARENTHETICAL.sub(" ", name)
    name = re.split(r"[:,;]|\.\s+(?=[A-Z]?[a-z]+\s+[a-z])", name, maxsplit=1)[0]
    name = _COMMENT.sub("", name)
    return Stop(" ".join(name.split()).strip(" .。!\"'"), transfer)


def split_pieces(text: str) -> list[str]:
    """`text` split at every separator outside brackets."""
    pieces: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in SEPARATOR.sub("\x1f", text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch == "\x1f" and depth == 0:
            pieces.append("".join(current))
            current = []
        else:
            current.append("-" if ch == "\x1f" else ch)
    pieces.append("".join(current))
    return pieces


def is_station_name(name: str, stations: Stations | None = None) -> bool:
    """Whether `name` may be a station's name: a known station's, or a short name that is no
    prose and no quantity."""
    if stations and stations.known(name):
        return True  # a station's own name is never prose ("Take Five Plaza")
    words = _WORD.findall(name)
    return not (
        not name
        or len(name.split()) > MAX_NAME_WORDS
        or any(ch in name for ch in ";!?")
        or any(w.lower() in _PROSE_WORDS for w in words)
        or NOT_A_STATION.search(name)
    )


#: the words at an end of a route searched for a station's name (a lead-in before the first
#: station or a comment after the last one, in any language)
MAX_EDGE_WORDS = 8


def _station_at_end(piece: str, stations: Stations, first: bool) -> str | None:
    """The part of a route's first (last) piece from (up to) where a station of the map is named:
    the longest run of its last (first) words that names a station exactly, else one a typo away;
    None when none does. "La respuesta correcta es Harbour Gate" ends in "Harbour Gate"."""
    words = piece.split()
    spans = (
        [words[k:] for k in range(max(0, len(words) - MAX_EDGE_WORDS), len(words))]
        if first
        else [words[:k] for k in range(min(len(words), MAX_EDGE_WORDS), 0, -1)]
    )
    for check in (stations.known, stations.resolve):
        for span in spans:
            text = " ".join(span)
            if check(stop(text).name):
                return text
    return None


def read_line(line: str, stations: Stations | None = None) -> list[Stop] | None:
    """The route a piece of text states, or None when it states none (module docstring). With
    the map's `stations`, a first or last piece keeps just the station it names, whatever words
    lead in or follow in whatever language ("So Uk", "Well Street" are stations, not "So, ...")."""
    if len(line) > MAX_LINE_CHARS:
        return None
    text = BULLET.sub("", plain(line).strip()).strip()
    # a lead-in ending in a colon ("Route:", "but maybe:"): the route follows the last colon
    # outside brackets that a separator follows
    blanked = PARENTHETICAL.sub(lambda found: " " * len(found.group()), text)
    colons = [i for i, ch in enumerate(blanked) if ch in ":："]
    after = [i for i in colons if SEPARATOR.search(blanked[i + 1 :])]
    if after:
        text = text[after[-1] + 1 :]
    pieces = split_pieces(text.strip())
    if len(pieces) < 2:
        return None
    first = _station_at_end(pieces[0], stations, first=True) if stations else None
    pieces[0] = first if first is not None else _LEAD.sub("", _LABEL.sub("", pieces[0].strip()).strip())
    last = _station_at_end(pieces[-1], stations, first=False) if stations else None
    pieces[-1] = last if last is not None else _TRAIL.sub("", pieces[-1])
    if ":" in PARENTHETICAL.sub(" ", pieces[0]):
        return None  # "Time: 12 min - Price: 4 yuan" is a summary of labelled values
    stops = [stop(p) for p in pieces]
    if not all(is_station_name(s.name, stations) for s in stops):
        return None
    return stops


def station_item(text: str, stations: Stations | None = None) -> Stop | None:
    """The station one list item or table cell names ("2. Elm Court (transfer)"), or None when it
    names none (a route, prose, a quantity)."""
    text = BULLET.sub("", plain(text).strip()).strip().rstrip(".")
    if not text or len(text) > MAX_LINE_CHARS or SEPARATOR.search(PARENTHETICAL.sub(" ", text)):
        return None
    found = stop(text)
    if ":" in PARENTHETICAL.sub(" ", text) and not (stations and stations.known(found.name)):
        return None
    return found if is_station_name(found.name, stations) else None
