"""The robust reading of a route answer (`scoring.protocol=robust`; README "Answer protocol").

`read_route(text)` finds the routes an answer states and applies the one-answer rule; the metrics
(`reading/match.py`) then compare each kept route with the references, station by station.

Where the routes are: the `<route_begin>...<route_end>` spans when the answer has any (the
authors' format marks its answer), else the text inside code fences when it has any, else every
line. A line states a route when, after its typesetting is taken away, it splits into two or more
station names:

* separators: "-" with or without spaces, en and em dashes, arrows ("->", "→", "=>", "⟶", ">");
* taken away: NFKC (full-width forms), markdown emphasis and code marks, bullets and numbering,
  a lead-in label ending in a colon ("Route:", "The optimal route is:"), cue words at the ends
  ("Actually, take ... instead"), a final full stop, and per station any comment after a colon or
  comma and any parenthetical that is not a transfer mark ("B (Red Line)" is "B");
* a route written as a list, one station an item, under a header naming it ("Route:", "The
  optimal path is:") is read as one line;
* a transfer mark is any parenthetical that says transfer, change or 换乘, in any case or
  bracket ("B (Transfer)", "B（transfer）", "B [transfer]"); it is kept as "(transfer)";
* a piece that reads as a sentence (a verb, a pronoun, more than six words, ; ! ?) makes the line
  prose, not a route ("I'm sorry - I cannot tell"); a piece that is a quantity or a line's name
  makes it a summary ("Total: 3 stations - 1 transfer", "Lines: Red Line -> Blue Line").

The one-answer rule, over the routes in reading order:

* a route on a line that rejects it ("do not take", "wrong", "avoid", "not", "instead of",
  "rather than", "incorrect", "not optimal", or a worse comparison: "slower", "longer", "more
  expensive", "more transfers") is not offered: it is dropped (`rejected`);
* a route on a line that corrects ("actually", "correction", "on second thought", "wait",
  "I was wrong", "instead", "update", "更正", "改为") replaces every route before it (`retracted`):
  the correction is the answer;
* a route whose stations are a contiguous stretch of another kept route, or two of its stations
  in its order (a leg of a leg-by-leg explanation, which may skip the stations of one line, or a
  restatement) adds nothing (`legs`); a route stated twice is one route;
* what remains are the answer's candidates. One candidate is the answer; several (a hedge,
  alternatives, a list of every route) are scored by the worst of them (`reading/match.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from geoeval.suites.maptab.metrics import PROSE_WORDS, ROUTE_BEGIN, ROUTE_END, TRANSFER_MARK, tagged_texts
from geoeval.suites.maptab.reading.text import name_key, plain

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.DOTALL)
# arrows first ("->" holds a dash), then dashes of every width with any spacing
_SEPARATOR = re.compile(r"\s*(?:-+>|=+>|[→⟶⇒➔➜⟹➡➝⇨⇢►▶]\ufe0f?|—+>|–+>|(?<=\S)\s*>\s*(?=\S)|[-–—―‒﹣])\s*")
# a transfer mark says only that: "(transfer)", "(Transfer here)", "(change to the Blue Line)",
# "[换乘]"; "(2 transfers, 25 min)" after the last station is a comment on the route
_TRANSFER = re.compile(
    r"[\(\[\{]\s*(?:transfer|change|interchange|换乘|轉乘|换车)(?:\s+(?:here|station|point|to\b[^()\[\]{}\d]*))?"
    r"\s*[\)\]\}]",
    re.IGNORECASE,
)
# a comment after a station: the line taken there, or a count ("B on the Red Line", "C (3 stops)")
_COMMENT = re.compile(
    r"\s+(?:(?:on|via|by|using|along|taking|with)\s+(?:the\s+)?\S.*\bline\b.*|\d+\s*(?:min|minutes?|stops?|stations?)\b.*)$",
    re.IGNORECASE,
)
_PARENTHETICAL = re.compile(r"\s*[\(\[\{][^()\[\]{}]*[\)\]\}]")
_BULLET = re.compile(r"^\s*(?:[-*•+]\s+|\d+\s*[.)]\s+|step\s+\d+\s*[:.)]\s*|>\s*)", re.IGNORECASE)
_LABEL = re.compile(
    r"^(?:so,?\s+)?(?:the\s+|my\s+|your\s+)?(?:(?:final|optimal|best|shortest|fastest|cheapest|recommended|correct)\s+)*"
    r"(?:route|answer|path)(?:\s+is)?\s*[:：]?\s+",
    re.IGNORECASE,
)
_REJECT = re.compile(
    r"\b(?:do\s+not|don't|dont|never|avoid|wrong|incorrect|not|rather\s+than|instead\s+of|isn't|is\s+not|"
    r"not\s+optimal|suboptimal|rejected?|discard(?:ed)?|slower|longer|worse|costlier|more\s+expensive|"
    r"more\s+transfers|less\s+comfortable|less\s+reliable)\b|不要|不推荐|错误|更慢|更长|更贵",
    re.IGNORECASE,
)
_CORRECT = re.compile(
    r"\b(?:actually|correction|corrected|on\s+second\s+thought|wait|i\s+was\s+wrong|instead|update[d]?|"
    r"revised|let\s+me\s+correct|scratch\s+that)\b|更正|改为|改去",
    re.IGNORECASE,
)
# words at the start or end of a route line that say what to do with it, not where to go
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
_NOT_A_STATION = re.compile(
    r"^[\d.,]+(?:\s*(?:stations?|stops?|transfers?|changes?|min(?:ute)?s?|h(?:ours?)?|km|m|yuan|元|分钟|站)\b.*)?$|"
    r"\bline$|线$",
    re.IGNORECASE,
)
MAX_NAME_WORDS = 6
#: a longer line is prose, never a route, and is not searched (a hostile answer may be a megabyte
#: of one line, on which the patterns here would take quadratic time)
MAX_LINE_CHARS = 2000
# one line may offer several routes: "A-B-C / but maybe: A-D-C", "A-B-C or A-D-C", "A-B-C; not A-D-C",
# "Take A-B-C. Actually, take A-D-C instead."
_SEGMENT = re.compile(
    r"\s+/\s+|\s+\|\s+|;\s*|\s+or\s+|\.\s+(?=(?:actually|but|or|wait|correction|instead|however|alternatively|"
    r"maybe|perhaps|probably|not|do|don't|never|avoid|take|use|the|this|it|so|then|i|my)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Stop:
    """One station of a route as the answer names it, and whether it carries a transfer mark."""

    name: str
    transfer: bool = False

    def text(self) -> str:
        return f"{self.name}{TRANSFER_MARK}" if self.transfer else self.name


@dataclass
class RouteReading:
    """What `read_route` found: the candidate routes and what the one-answer rule set aside."""

    candidates: list[list[Stop]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    legs: list[str] = field(default_factory=list)
    source: str = "lines"  # where the routes were read: tags, fences or lines

    def rules(self) -> list[str]:
        fired = [f"read from {self.source}"]
        if self.rejected:
            fired.append("rejected route dropped")
        if self.retracted:
            fired.append("corrected: earlier route retracted")
        if self.legs:
            fired.append("legs / restatements of the route ignored")
        if len(self.candidates) > 1:
            fired.append("several candidates: scored by the worst")
        return fired

    def as_dict(self) -> dict[str, object]:
        return {
            "candidates": [route_text(c) for c in self.candidates],
            "rejected": self.rejected,
            "retracted": self.retracted,
            "legs": self.legs,
            "rules": self.rules(),
        }


def route_text(stops: list[Stop]) -> str:
    """A route in the paper's format, "A-B(transfer)-C"."""
    return "-".join(s.text() for s in stops)


def answer_text(reading: RouteReading) -> str:
    """The candidates of a reading as the robust metrics take them: one route a line."""
    return "\n".join(route_text(c) for c in reading.candidates)


def parse_answer_text(answer: str) -> list[list[Stop]]:
    """The inverse of `answer_text`."""
    routes = []
    for line in (answer or "").splitlines():
        stops = [_stop(piece) for piece in line.split("-")]
        if len(stops) >= 2 and all(s.name for s in stops):
            routes.append(stops)
    return routes


def _stop(piece: str) -> Stop:
    transfer = bool(_TRANSFER.search(piece))
    name = _TRANSFER.sub(" ", piece)
    name = _PARENTHETICAL.sub(" ", name)
    name = re.split(r"[:,;]|\.\s+(?=[A-Z]?[a-z]+\s+[a-z])", name, maxsplit=1)[0]
    name = _COMMENT.sub("", name)
    return Stop(" ".join(name.split()).strip(" .。!\"'"), transfer)


def _split(text: str) -> list[str]:
    """`text` split at every separator outside brackets."""
    pieces: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in _SEPARATOR.sub("\x1f", text):
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


def read_line(line: str, known: Callable[[str], bool] | None = None) -> list[Stop] | None:
    """The route a line states, or None when it states none (module docstring). `known(name)`:
    whether a name is a station of the map; a first or last piece that is one keeps the words a
    lead-in or a comment would otherwise lose ("So Uk", "Well Street" are stations, not "So, ...")."""
    text = plain(line).strip()
    text = _BULLET.sub("", text).strip()
    # a lead-in ending in a colon ("Route:", "but maybe:"): the route follows the last colon
    # outside brackets that a separator follows
    blanked = _PARENTHETICAL.sub(lambda found: " " * len(found.group()), text)
    colons = [i for i, ch in enumerate(blanked) if ch in ":："]
    after = [i for i in colons if _SEPARATOR.search(blanked[i + 1 :])]
    if after:
        text = text[after[-1] + 1 :]
    pieces = _split(text.strip())
    if len(pieces) < 2:
        return None
    if not (known and known(_stop(pieces[0]).name)):
        pieces[0] = _LEAD.sub("", _LABEL.sub("", pieces[0].strip()).strip())
    if not (known and known(_stop(pieces[-1]).name)):
        pieces[-1] = _TRAIL.sub("", pieces[-1])
    if ":" in _PARENTHETICAL.sub(" ", pieces[0]):
        return None  # "Time: 12 min - Price: 4 yuan" is a summary of labelled values
    stops = [_stop(p) for p in pieces]
    for stop in stops:
        if known and known(stop.name):
            continue  # a station's own name is never prose ("Take Five Plaza")
        words = _WORD.findall(stop.name)
        if (
            not stop.name
            or len(stop.name.split()) > MAX_NAME_WORDS
            or any(ch in stop.name for ch in ";!?")
            or any(w.lower() in _PROSE_WORDS for w in words)
            or _NOT_A_STATION.search(stop.name)
        ):
            return None
    return stops


_LIST_HEADER = re.compile(r"\b(?:route|path|answer)\b[^:：]*[:：]\s*$", re.IGNORECASE)


def _list_item(line: str) -> str | None:
    """The station a list item names ("2. Elm Court (transfer)"), or None when it is not one."""
    text = plain(line).strip()
    if not _BULLET.match(text):
        return None
    text = _BULLET.sub("", text).strip().rstrip(".")
    stop = _stop(text) if text and not _SEPARATOR.search(_PARENTHETICAL.sub(" ", text)) else None
    if stop is None or not stop.name or ":" in text:
        return None
    words = _WORD.findall(stop.name)
    if len(stop.name.split()) > MAX_NAME_WORDS or any(w.lower() in _PROSE_WORDS for w in words):
        return None
    if _NOT_A_STATION.search(stop.name):
        return None
    return text


def _join_lists(lines: list[str]) -> list[str]:
    """Lines with each route written as a list, one station an item, under a header that names it
    ("Route:", "The optimal path is:"), joined into one route line."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        if _LIST_HEADER.search(plain(lines[i])):
            items = []
            j = i + 1
            while j < len(lines) and (item := _list_item(lines[j])) is not None:
                items.append(item)
                j += 1
            if len(items) >= 2:
                out.append(" - ".join(items))
                i = j
                continue
        i += 1
    return out


def _keys(stops: list[Stop]) -> list[str]:
    return [name_key(s.name) for s in stops]


def _is_leg(short: list[str], long: list[str]) -> bool:
    """Whether `short` is a leg of the route `long`: a contiguous stretch of it, or, with two
    stations, a ride between two of its stations in its order ("Elm Court → Millbrook (Blue
    Line)" skips the stations in between)."""
    n = len(short)
    if n >= len(long):
        return False
    if n == 2 and short[0] in long and short[1] in long[long.index(short[0]) + 1 :]:
        return True
    return any(long[i : i + n] == short for i in range(len(long) - n + 1))


def _cue_text(line: str, stops: list[Stop]) -> str:
    """The line without its station names: the words around the route that say what it is."""
    text = plain(line)
    for stop in stops:
        text = re.sub(rf"(?<!\w){re.escape(stop.name)}(?!\w)", " ", text, flags=re.IGNORECASE)
    return text


def read_route(text: str, known: Callable[[str], bool] | None = None) -> RouteReading:
    """The robust reading of an answer (module docstring); `known`: see `read_line`."""
    raw = text or ""
    tagged = tagged_texts(raw, ROUTE_BEGIN, ROUTE_END)
    reading = RouteReading()
    if tagged:
        lines, reading.source = [line for span in tagged for line in span.splitlines()], "tags"
    elif fenced := _FENCE.findall(raw):
        lines, reading.source = [line for block in fenced for line in block.splitlines()], "fences"
    else:
        lines = raw.splitlines()
    kept: list[list[Stop]] = []
    short_lines = _join_lists([whole for whole in lines if len(whole) <= MAX_LINE_CHARS])
    for line in (segment for whole in short_lines for segment in _SEGMENT.split(whole)):
        stops = read_line(line, known)
        if stops is None:
            continue
        cues = _cue_text(line, stops)
        if _REJECT.search(cues):
            reading.rejected.append(route_text(stops))
            continue
        if _CORRECT.search(cues) and kept:
            reading.retracted += [route_text(c) for c in kept]
            kept = []
        kept.append(stops)
    # a restatement is one route; a stretch of a longer kept route is a leg of its explanation
    unique: list[list[Stop]] = []
    for stops in kept:
        if stops not in unique:
            unique.append(stops)
    for stops in unique:
        if any(_is_leg(_keys(stops), _keys(other)) for other in unique if other is not stops):
            reading.legs.append(route_text(stops))
        else:
            reading.candidates.append(stops)
    return reading
