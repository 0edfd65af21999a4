"""Route strings and their transfer marks (MapTab route planning; see `reference`).

Routes and transfers
--------------------
A route is a simple path of stations s = v0, ..., vk = t. A *line assignment* picks for each edge
one of the lines running on it; a transfer happens at an intermediate station where consecutive
edges get different lines (never at s or t). The route string marks transfer stations:
"A-B(transfer)-C". Travelmap has no lines and therefore no transfers.

For a station path the annotation comes from the best assignments: first those minimising the cost
the query puts on transfers (the transfer times, when the Time weight is non-zero), then among them
those with the fewest transfers. When several such assignments put transfers at different
stations, every distinct annotated string is a valid reference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import MetroMap

TRANSFER_MARK = "(transfer)"
TIE_TOLERANCE = 1e-9


# --------------------------------------------------------------------------------------------
# Route strings


def format_route(names: Sequence[str]) -> str:
    """ "A-B(transfer)-C" from already annotated station names."""
    return "-".join(names)


def parse_route(route: str) -> tuple[list[str], frozenset[str]]:
    """(station path, transfer stations) from "A-B(transfer)-C"."""
    path, transfers = [], set()
    for part in route.split("-"):
        name = part.strip()
        if name.endswith(TRANSFER_MARK):
            name = name[: -len(TRANSFER_MARK)].strip()
            transfers.add(name)
        path.append(name)
    return path, frozenset(transfers)


def annotated_names(path: Sequence[str], transfers: Iterable[str]) -> list[str]:
    tr = set(transfers)
    return [f"{v}{TRANSFER_MARK}" if v in tr and 0 < i < len(path) - 1 else v for i, v in enumerate(path)]


# --------------------------------------------------------------------------------------------
# Transfers


def _edge_lines(m: MetroMap, a: str, b: str) -> tuple[str, ...]:
    e = m.edge_between(a, b)
    if e is None:
        raise GeoevalError(f"{a!r} and {b!r} are not adjacent")
    return e.lines or ("",)


def transfer_sets(m: MetroMap, path: Sequence[str], time_weight: float = 0.0) -> list[frozenset[str]]:
    """The transfer-station sets of the best line assignments of a station path: least total
    transfer time first when `time_weight` > 0, then fewest transfers. Sorted, distinct."""
    if len(path) < 3 or m.scenario != "metromap":
        return [frozenset()]
    # state per line of the current edge: best (cost, count) and the transfer sets achieving it
    first = _edge_lines(m, path[0], path[1])
    states: dict[str, tuple[tuple[float, int], set[frozenset[str]]]] = {ln: ((0.0, 0), {frozenset()}) for ln in first}
    for i in range(1, len(path) - 1):
        v = path[i]
        tt = m.stations[v].transfer_time if time_weight > 0 else 0.0
        nxt: dict[str, tuple[tuple[float, int], set[frozenset[str]]]] = {}
        for ln in _edge_lines(m, v, path[i + 1]):
            best_key, best_sets = None, set()
            for prev_ln, (key, sets) in states.items():
                if prev_ln == ln:
                    cand_key, cand_sets = key, sets
                else:
                    cand_key = (key[0] + tt, key[1] + 1)
                    cand_sets = {s | {v} for s in sets}
                if best_key is None or _less(cand_key, best_key):
                    best_key, best_sets = cand_key, set(cand_sets)
                elif _same(cand_key, best_key):
                    best_sets |= cand_sets
            # set: `states` is never empty (every edge has a line, `_edge_lines`)
            nxt[ln] = (cast("tuple[float, int]", best_key), best_sets)
        states = nxt
    best_key = min((k for k, _ in states.values()), key=lambda k: (round(k[0], 9), k[1]))
    result: set[frozenset[str]] = set()
    for key, sets in states.values():
        if _same(key, best_key):
            result |= sets
    return sorted(result, key=lambda s: (len(s), sorted(s)))


def _less(a: tuple[float, int], b: tuple[float, int]) -> bool:
    if abs(a[0] - b[0]) > TIE_TOLERANCE:
        return a[0] < b[0]
    return a[1] < b[1]


def _same(a: tuple[float, int], b: tuple[float, int]) -> bool:
    return abs(a[0] - b[0]) <= TIE_TOLERANCE and a[1] == b[1]


def annotate(m: MetroMap, path: Sequence[str], time_weight: float = 0.0) -> list[str]:
    """Every annotated route string of a station path (fewest transfers; with `time_weight` > 0,
    least transfer time first). Source and destination are never annotated."""
    return sorted({format_route(annotated_names(path, tr)) for tr in transfer_sets(m, path, time_weight)})
