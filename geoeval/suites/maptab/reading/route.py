"""The robust reading of a route answer (`scoring.protocol=robust`; README "Answer protocol"): the
candidate routes of an answer, found in every form a model writes them, and the core's one-answer
rule over them (`geoeval.core.reading`).

Where routes are found, in the answer's parsed segments (`core.reading.document`):

* lines, code lines and headings: each piece of a line (split at sentence ends, commas, " / ",
  " | ", " or ", " and ") that `route_line.read_line` reads as a route; a line that lists
  stations of the map separated by commas ("Route: A, B (transfer), C") is one route;
* lists: the items of a list that each name one station, when its lead or section names a route
  ("**Route:**", "## Path", "路线") or every item is a station of the map, are one route;
* tables: a column of stations (header "Station", "Stop", "Name", "站") is one route, its
  transfer column ("Transfer": yes / true / ✓) or each cell's mark giving the marks; a "Route"
  column, and any other cell, is read as a line; a From / To table of legs that chain is one
  route, read only when nothing else states one (its legs may skip the stations of one line);
* JSON: a list of station names or of objects naming a station (with a `transfer` flag), a string
  read as a line, an object keyed `route` / `path` / `stations` / `answer` ... read inside (with
  `transfer_at` / `transfers` / `changes` listing its transfer stations), and `routes` /
  `options` / `alternatives` as several candidates;
* transfers said in words: one route written without marks takes them from "Transfer at B",
  "change lines at B", "Transfer stations: B, C", "(transfer at B)", "在B换乘" (stations of the
  route, not its ends);
* legs alone: an answer that states only two-station legs that chain ("1. A → B (Red Line)",
  "2. B → C (Blue Line)") rides the route they make, a transfer where one leg's line gives way to
  another's.

When the answer marks itself (`<route_begin>` ... `<route_end>`, the authors' format), only the
marked spans are candidates; the words around them still say what each is ("<route_begin>A<route_end>
or <route_begin>B<route_end>" offers two).

A route's identity (`key`) is its stations by `reading.text.name_key` and their marks, and a route
subsumes another whose stations are a contiguous stretch of it or two of its stations in its order
(a leg of a leg-by-leg explanation, which may ride past the stations of one line). Everything else,
which candidate is rejected, corrected, echoed, hedged or final, is the core's (`core/reading/`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from geoeval.api import Decision, Document, Found, Segment, assign_roles, decide, parse, plain
from geoeval.suites.maptab.metrics import ROUTE_BEGIN, ROUTE_END
from geoeval.suites.maptab.reading.route_line import (
    MAX_LINE_CHARS,
    Stop,
    read_line,
    route_text,
    station_item,
    stop,
)
from geoeval.suites.maptab.reading.stations import Stations
from geoeval.suites.maptab.reading.text import name_key

Route = tuple[Stop, ...]

# a line may offer several routes: "A-B-C / but maybe: A-D-C", "A-B-C or A-D-C", "A-B-C; not
# A-D-C", "Take A-B-C. Actually, take A-D-C instead.", "A-B-C, not A-D-C", "可能是A-B，也可能是A-C"
# (a comma ends a piece: a comment after a station is its own piece, and no route holds one)
_PIECE_BREAK = re.compile(
    r"(?<=[.!?])\s+|[。！？；]\s*|;\s*|\s+and\s+|\s+und\s+|\s+et\s+|\s+y\s+|\s+/\s+|\s+\|\s+|\s+or\s+|\s+oder\s+|\s+ou\s+|\s+o\s+|或者|或|"
    r",\s+|,(?=[^\x00-\x7f])",
    re.IGNORECASE,
)
_ROUTE_LABEL = re.compile(r"\b(?:route|path|answer|itinerary|stations?|stops?)\b|路线|路径|答案|站点", re.IGNORECASE)
_STATION_HEADER = re.compile(
    r"^(?:station(?:\s+name)?|stop|name|车站|站点|站名|站|駅|estaci[oó]n|gare|haltestelle)$", re.I
)
_TRANSFER_HEADER = re.compile(r"^(?:transfer|change|interchange|换乘|乗換)", re.IGNORECASE)
_ROUTE_HEADER = re.compile(r"^(?:route|path|answer|option|路线)", re.IGNORECASE)
_FROM_HEADER = re.compile(r"^(?:from|start|origin|起点|出发)$", re.IGNORECASE)
_TO_HEADER = re.compile(r"^(?:to|end|destination|终点|到达)$", re.IGNORECASE)
_YES = re.compile(r"^(?:yes|y|true|x|✓|✔|transfer|换乘|是)$", re.IGNORECASE)
_JSON_ROUTE_KEYS = ("route", "path", "stations", "stops", "answer", "final_route", "optimal_route", "final_answer")
_JSON_OPTION_KEYS = ("routes", "options", "alternatives", "candidates")
_JSON_NAME_KEYS = ("station", "name", "stop", "station_name")
_JSON_TRANSFER_KEYS = ("transfer_at", "transfers", "transfer_stations", "changes", "change_at", "interchanges")


def route_key(route: Route) -> tuple[tuple[str, bool], ...]:
    return tuple((name_key(s.name), s.transfer) for s in route)


def _keys(route: Route) -> list[str]:
    return [name_key(s.name) for s in route]


def is_leg(short: Route, long: Route) -> bool:
    """Whether `short` is a leg of the route `long`: a contiguous stretch of it, or, with two
    stations, a ride between two of its stations in its order ("Elm Court → Millbrook (Blue
    Line)" skips the stations in between)."""
    s, lg = _keys(short), _keys(long)
    n = len(s)
    if n >= len(lg):
        return False
    if n == 2 and s[0] in lg and s[1] in lg[lg.index(s[0]) + 1 :]:
        return True
    return any(lg[i : i + n] == s for i in range(len(lg) - n + 1))


@dataclass
class RouteReading:
    """What `read_route` found: the live candidate routes and the core's decision."""

    candidates: list[list[Stop]] = field(default_factory=list)
    decision: Decision[Route] = field(default_factory=Decision)

    def rules(self) -> list[str]:
        return self.decision.rules()

    def as_dict(self) -> dict[str, object]:
        out = self.decision.as_dict(lambda r: route_text(list(r)))
        # the set-aside routes by why, as the reading has always listed them
        for why, name in (("rejected", "rejected"), ("retracted", "retracted"), ("subsumed", "legs")):
            out[name] = [route_text(list(c.value)) for c in self.decision.aside(why)]
        return out


def answer_text(reading: RouteReading) -> str:
    """The candidates of a reading as the robust metrics take them: one route a line."""
    return "\n".join(route_text(c) for c in reading.candidates)


# --------------------------------------------------------------------------------- finding routes


def _found(seg: Segment, start: int, end: int, route: list[Stop]) -> Found[Route]:
    value = tuple(route)
    return Found(seg.index, start, end, value, route_key(value))


def _pieces(text: str, fragile: list[str]) -> Iterator[tuple[int, int, str]]:
    """(start, end, text) of the pieces of a line that may each state a route; a break inside a
    station's name ("St. James", "Rise or Fall") is no break."""
    low = text.lower()
    protected = [(m.start(), m.end()) for name in fragile for m in re.finditer(re.escape(name.lower()), low)]
    start = 0
    breaks = [b for b in _PIECE_BREAK.finditer(text) if not any(s <= b.start() < e for s, e in protected)]
    for brk in [*breaks, None]:
        end = brk.start() if brk else len(text)
        if text[start:end].strip():
            yield start, end, text[start:end]
        if brk:
            start = brk.end()


def _span(piece: str, route: list[Stop]) -> tuple[int, int]:
    """Where in a piece its route starts and ends (its first and last station named)."""
    low = piece.lower()
    first = low.find(route[0].name.lower())
    last = low.rfind(route[-1].name.lower())
    start = first if first >= 0 else 0
    end = last + len(route[-1].name) if last >= start else len(piece)
    return start, end


#: with the map's stations known, a route names at least this many of them (a hyphenated phrase
#: of prose, "weighted-cost path", names none)
MIN_KNOWN_STOPS = 2


def _names_the_map(route: list[Stop], stations: Stations | None) -> bool:
    return stations is None or sum(stations.resolve(s.name) is not None for s in route) >= MIN_KNOWN_STOPS


_COMMA_LIST = re.compile(r"^(?P<lead>[^:：]*[:：])?\s*(?P<items>[^,，、]+(?:\s*[,，、]\s*[^,，、]+)+?)\s*[.。]?$")


def _comma_list(seg: Segment, stations: Stations) -> Found[Route] | None:
    """A line that lists stations of the map separated by commas ("Route: A, B (transfer), C"):
    a route, when every item is a station of the map."""
    found = _COMMA_LIST.match(seg.text) if len(seg.text) <= MAX_LINE_CHARS else None
    if found is None:
        return None
    items = [i for i in re.split(r"\s*[,，、]\s*", found.group("items")) if i.strip()]
    stops = [station_item(i, stations) for i in items]
    if len(stops) < 2 or any(s is None or stations.resolve(s.name) is None for s in stops):
        return None
    start = found.start("items")
    return _found(seg, start, len(seg.text), [s for s in stops if s])


def _from_line(seg: Segment, stations: Stations | None, fragile: list[str]) -> Iterator[Found[Route]]:
    if len(seg.text) > MAX_LINE_CHARS * 50:
        return
    listed = _comma_list(seg, stations) if stations else None
    if listed is not None:
        yield listed
        return
    for start, _end, piece in _pieces(seg.text, fragile):
        route = read_line(piece, stations)
        if route is not None:
            s, e = _span(piece, route)
            yield _found(seg, start + s, start + e, route)


def _names_a_route(text: str) -> bool:
    return bool(_ROUTE_LABEL.search(text))


def _from_list(items: list[Segment], stations: Stations | None) -> Iterator[Found[Route]]:
    """A list whose items each name one station, under a lead or section naming a route (or
    whose items are all stations of the map), as one route."""
    top = [it for it in items if it.depth == items[0].depth]
    stops = [station_item(it.text, stations) for it in top]
    if len(top) < 2 or any(s is None for s in stops):
        return
    every_known = stations is not None and all(stations.known(s.name) for s in stops if s)
    if every_known or _names_a_route(top[0].lead) or _names_a_route(top[0].section):
        yield Found(top[0].index, 0, 0, tuple(s for s in stops if s), route_key(tuple(s for s in stops if s)))


def _column(header: tuple[str, ...], pattern: re.Pattern[str]) -> int | None:
    return next((k for k, h in enumerate(header) if pattern.search(h.strip())), None)


def _from_table(rows: list[Segment], stations: Stations | None) -> tuple[list[Found[Route]], list[Found[Route]]]:
    """(routes a table states, a route its chained legs state): see the module docstring."""
    header, body = rows[0].header, [r for r in rows[1:] if r.cells != r.header]
    found: list[Found[Route]] = []
    legs: list[Found[Route]] = []
    station = _column(header, _STATION_HEADER)
    if station is not None and len(body) >= 2:
        transfer = _column(header, _TRANSFER_HEADER)
        route: list[Stop] = []
        for r in body:
            cell = r.cells[station] if station < len(r.cells) else ""
            s = station_item(cell, stations)
            if s is None:
                route = []
                break
            marked = transfer is not None and transfer < len(r.cells) and bool(_YES.match(r.cells[transfer].strip()))
            route.append(Stop(s.name, s.transfer or marked))
        if route:
            found.append(Found(body[0].index, 0, 0, tuple(route), route_key(tuple(route))))
            return found, legs
    # every other cell (a "Route" column, a one-cell table, a key-value table) is read as a line;
    # a single-column table keeps its cell whole (its pipes are the cell's text)
    for r in rows if not _column(header, _ROUTE_HEADER) else body:
        for cell in r.cells:
            line_route = read_line(cell, stations)
            if line_route is not None:
                found.append(_found(r, 0, 0, line_route))
    start, end = _column(header, _FROM_HEADER), _column(header, _TO_HEADER)
    if start is not None and end is not None and body:
        chain: list[Stop] = []
        for r in body:
            if max(start, end) >= len(r.cells):
                return found, []
            a, b = stop(r.cells[start]), stop(r.cells[end])
            if chain and name_key(chain[-1].name) != name_key(a.name):
                return found, []
            chain = [*chain, b] if chain else [a, b]
        legs.append(Found(body[0].index, 0, 0, tuple(chain), route_key(tuple(chain))))
    return found, legs


def _json_routes(value: Any, stations: Stations | None, depth: int = 0) -> list[list[Stop]]:
    """The routes a JSON value states (module docstring)."""
    if depth > 4:
        return []
    if isinstance(value, str):
        route = read_line(value, stations)
        return [route] if route else []
    if isinstance(value, list):
        if len(value) >= 2 and all(isinstance(v, str) for v in value):
            stops = [station_item(v, stations) for v in value]
            if all(stops):
                return [[s for s in stops if s]]
            return [r for v in value for r in _json_routes(v, stations, depth + 1)]
        if len(value) >= 2 and all(isinstance(v, dict) for v in value):
            named = [_json_stop(v, stations) for v in value]
            if all(named):
                return [[s for s in named if s]]
        return [r for v in value for r in _json_routes(v, stations, depth + 1)]
    if isinstance(value, dict):
        lowered = {str(k).strip().lower().replace(" ", "_"): v for k, v in value.items()}
        for key in _JSON_OPTION_KEYS:
            if isinstance(lowered.get(key), list):
                return [r for v in lowered[key] for r in _json_routes(v, stations, depth + 1)]
        for key in _JSON_ROUTE_KEYS:
            if key in lowered:
                routes = _json_routes(lowered[key], stations, depth + 1)
                changes = next((lowered[k] for k in _JSON_TRANSFER_KEYS if isinstance(lowered.get(k), list)), None)
                return [_marked_at(r, changes) for r in routes] if changes is not None else routes
    return []


def _marked_at(route: list[Stop], changes: list[Any]) -> list[Stop]:
    """A route with a transfer mark at each station a separate list names ("transfer_at": [...])."""
    keys = {name_key(str(c)) for c in changes}
    return [Stop(s.name, s.transfer or name_key(s.name) in keys) for s in route]


def _json_stop(item: dict[str, Any], stations: Stations | None) -> Stop | None:
    lowered = {str(k).strip().lower(): v for k, v in item.items()}
    name = next((lowered[k] for k in _JSON_NAME_KEYS if isinstance(lowered.get(k), str)), None)
    if name is None:
        return None
    s = station_item(name, stations)
    flag = lowered.get("transfer", lowered.get("change", False))
    marked = flag is True or (isinstance(flag, str) and bool(_YES.match(flag.strip())))
    return Stop(s.name, s.transfer or marked) if s else None


def find_routes(doc: Document, stations: Stations | None = None) -> list[Found[Route]]:
    """Every candidate route of a parsed answer (module docstring), read knowing the map's
    station names when `stations` is given."""
    fragile = [n for n in stations.names if _PIECE_BREAK.search(n)] if stations else []
    found: list[Found[Route]] = []
    legs: list[Found[Route]] = []
    free_items = {seg.index for items in doc.groups("item").values() for seg in items}
    for items in doc.groups("item").values():
        from_list = list(_from_list(items, stations))
        found += from_list
        if from_list:
            free_items -= {it.index for it in items}
    for rows in doc.groups("row").values():
        routes, chained = _from_table(rows, stations)
        found += routes
        legs += chained
    for seg in doc.segments:
        if doc.has_markers and not seg.marked:
            continue
        if seg.kind == "json":
            for k, route in enumerate(_json_routes(seg.value, stations)):
                found.append(Found(seg.index, k, k, tuple(route), route_key(tuple(route))))
        elif seg.kind in ("line", "code", "heading") or (seg.kind == "item" and seg.index in free_items):
            found += _from_line(seg, stations, fragile)
    if doc.has_markers:
        found = [f for f in found if doc.segments[f.segment].marked]
    found = [f for f in found if _names_the_map(list(f.value), stations)]
    if found and all(len(f.value) == 2 for f in found):  # only legs: the route they ride
        found += _chained(doc, found)
    return found or [f for f in legs if _names_the_map(list(f.value), stations)]


_LINE_NAME = re.compile(r"\b((?:[A-Z][\w-]*\s+){0,2}(?:line|Line|LINE))\b|([\w]+号线)")


def _line_of(text: str) -> str | None:
    found = _LINE_NAME.search(text)
    return found.group(0).lower() if found else None


def _chained(doc: Document, legs: list[Found[Route]]) -> list[Found[Route]]:
    """The route an answer that gives only legs rides ("1. A → B (Red Line)", "2. B → C (Blue
    Line)"): consecutive legs, each starting where the one before ends, joined; a station where
    one leg's line gives way to another's (or that a leg marks) is a transfer."""
    ordered = sorted(legs, key=lambda f: (f.segment, f.start))
    chain = [ordered[0]]
    for leg in ordered[1:]:
        if name_key(leg.value[0].name) != name_key(chain[-1].value[-1].name):
            return []  # not one ride: legs of several routes, or a hedge
        chain.append(leg)
    if len(chain) < 2:
        return []
    lines = [_line_of(doc.segments[f.segment].text) for f in chain]
    stops = [chain[0].value[0]]
    for k, leg in enumerate(chain):
        end = leg.value[-1]
        if k + 1 < len(chain):
            changes = lines[k] is not None and lines[k + 1] is not None and lines[k] != lines[k + 1]
            end = Stop(end.name, end.transfer or chain[k + 1].value[0].transfer or changes)
        stops.append(end)
    return [Found(chain[0].segment, chain[0].start, chain[0].end, tuple(stops), route_key(tuple(stops)))]


# "Transfer at Kings Cross Road", "change lines at B and C", "transfer station: B", "在B换乘"
_TRANSFER_AT = re.compile(
    r"\b(?:transfers?|changes?|interchanges?|switch(?:es)?)(?:\s+(?:lines?|trains?))?\s*[:：]?(?:\s+(?:at|in|to\s+\S+\s+at))\s+"
    r"(?P<en>[^.;\n]+)|\btransfer\s+stations?\s*[:：]\s*(?P<list>[^.;\n]+)|在(?P<zh>[^，。；\n]{1,30}?)换乘|"
    r"换乘站\s*[:：]\s*(?P<zhlist>[^。；\n]+)",
    re.IGNORECASE,
)


_NO_TRANSFER = re.compile(
    r"\b(?:no|without|not|never|don'?t|doesn'?t|needn'?t)\s+(?:\w+\s+)?$|不(?:用|需要)?$", re.IGNORECASE
)


def _transfers_stated(text: str, route: Route, stations: Stations) -> set[str]:
    """The stations of `route` (not its ends) the answer says are transfers in words, apart from
    the route ("A → B → C → D. Transfer at C.", "... (transfer at C)")."""
    inner = {name_key(s.name) for s in route[1:-1]}
    named: set[str] = set()
    said_text = plain(text)[: MAX_LINE_CHARS * 10]
    for found in _TRANSFER_AT.finditer(said_text):
        if _NO_TRANSFER.search(said_text[max(0, found.start() - 16) : found.start()]):
            continue  # "no transfer at B is needed"
        said = next(g for g in found.groups() if g)
        for name in stations.names:
            if name_key(name) in inner and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", said, re.IGNORECASE):
                named.add(name_key(name))
    return named


def read_route(text: str, stations: Stations | None = None, question: str = "") -> RouteReading:
    """The robust reading of an answer (module docstring); `stations`: the map's (names are then
    kept whole, `route_line.read_line`); `question`: what was asked (a route echoed from it is
    not offered)."""
    doc = parse(text or "", markers=[(ROUTE_BEGIN, ROUTE_END)])
    candidates, retractions = assign_roles(doc, find_routes(doc, stations), question)
    decision = decide(candidates, retractions, subsumes=lambda long, short: is_leg(short, long))
    routes = [list(c.value) for c in decision.live]
    if stations and len(routes) == 1 and not any(s.transfer for s in routes[0]):
        # one route written without marks, its transfers said in words
        marked = _transfers_stated(text or "", tuple(routes[0]), stations)
        routes = [[Stop(s.name, name_key(s.name) in marked) for s in routes[0]]]
    return RouteReading(routes, decision)
