"""Wrong answers of MapTab's samples, built from the map (the meta-evaluation's defect and
worthless tiers, `meta_eval.py`, and its answer families, `answer_families.py`).

A defect must be a defect under the paper's own name identity (C.1: names within difflib
similarity 0.5 are the same station), else it is not built for that sample: the replacement or
the next station of a dropped one, and the longer route where it leaves the reference, must be
dissimilar (< 0.5) to every reference's station at that position; the invented names are
dissimilar to every station of the map. Choices among the candidates are seeded by the caller.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.generator.difficulty import to_graph
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.metrics import MATCH_THRESHOLD, similarity, split_route
from geoeval.suites.maptab.routing import transfers as routing_transfers

_SYLLABLES = (
    "zor",
    "vath",
    "quen",
    "til",
    "lion",
    "bla",
    "ven",
    "dorp",
    "mir",
    "kesh",
    "ulm",
    "yth",
    "prax",
    "ond",
    "wyr",
    "gha",
    "zel",
    "trup",
)
_SUFFIXES = ("Plaza", "Heights", "Junction", "Market", "Gardens", "Crossing")
MAX_LONGER_PATHS = 200  # simple paths looked at (in length order) for a longer valid route


def name_of(piece: str) -> str:
    return piece.replace(routing_transfers.TRANSFER_MARK, "").strip()


def _dissimilar(name: str, refs: Iterable[str], position: int) -> bool:
    """Whether `name` differs (similarity < 0.5, the paper's identity) from every reference's
    station at `position` (references shorter than that cannot match it there)."""
    for r in refs:
        pieces = split_route(r)
        if position < len(pieces) and similarity(name, pieces[position]) >= MATCH_THRESHOLD:
            return False
    return True


def wrong_station(ref: str, refs: list[str], m: MetroMap, rng: random.Random) -> str | None:
    """The reference with one intermediate station replaced by a station on no optimal route."""
    pieces = split_route(ref)
    on_routes = {name_of(p) for r in refs for p in split_route(r)}
    others = sorted(set(m.stations) - on_routes)
    options = [(k, o) for k in range(1, len(pieces) - 1) for o in others if _dissimilar(o, refs, k)]
    if not options:
        return None
    k, other = rng.choice(options)
    return "-".join(pieces[:k] + [other] + pieces[k + 1 :])


def missing_station(ref: str, refs: list[str], rng: random.Random) -> str | None:
    """The reference without one intermediate station (the next one must not pass for it)."""
    pieces = split_route(ref)
    options = [k for k in range(1, len(pieces) - 1) if _dissimilar(pieces[k + 1], refs, k)]
    if not options:
        return None
    k = rng.choice(options)
    return "-".join(pieces[:k] + pieces[k + 1 :])


def wrong_transfer(ref: str, refs: list[str], rng: random.Random) -> str | None:
    """The reference with one intermediate station's transfer mark toggled, at a position where
    every reference with the same stations agrees on the mark (so no reference has the toggle)."""
    pieces = split_route(ref)
    path = [name_of(p) for p in pieces]
    same = [split_route(r) for r in refs if [name_of(p) for p in split_route(r)] == path]
    options = [
        k for k in range(1, len(pieces) - 1) if len({routing_transfers.TRANSFER_MARK in r[k] for r in same}) == 1
    ]
    if not options:
        return None
    k = rng.choice(options)
    toggled = path[k] if routing_transfers.TRANSFER_MARK in pieces[k] else f"{path[k]}{routing_transfers.TRANSFER_MARK}"
    return "-".join(pieces[:k] + [toggled] + pieces[k + 1 :])


def longer_route(ref: str, refs: list[str], m: MetroMap, time_weight: float = 0.0) -> str | None:
    """The first (in length, then name order) simple path of the map with more stations than the
    reference, none of whose annotations is a reference, that leaves every reference path at a
    station dissimilar to the reference's there; annotated as `routing.transfers.annotate` marks it."""
    path = [name_of(p) for p in split_route(ref)]
    ref_paths = [[name_of(p) for p in split_route(r)] for r in refs]
    g = to_graph(m)
    try:
        candidates = nx.shortest_simple_paths(g, path[0], path[-1])
        for i, cand in enumerate(candidates):
            if i >= MAX_LONGER_PATHS:
                break
            if len(cand) <= len(path) or cand in ref_paths or not _leaves_refs(cand, refs, ref_paths):
                continue
            annotated = routing_transfers.annotate(m, cand, time_weight)
            if annotated and not set(annotated) & set(refs):
                return annotated[0]
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None
    return None


def _leaves_refs(cand: list[str], refs: list[str], ref_paths: list[list[str]]) -> bool:
    for r, rp in zip(refs, ref_paths):
        k = next((i for i, (a, b) in enumerate(zip(cand, rp)) if a != b), min(len(cand), len(rp)))
        if k < len(cand) and not _dissimilar(cand[k], [r], k):
            return False
    return True


def invented_name(rng: random.Random) -> str:
    word = "".join(rng.choice(_SYLLABLES) for _ in range(3))
    return f"{word.capitalize()} {rng.choice(_SUFFIXES)}"


def invented_stations(n: int, m: MetroMap, rng: random.Random) -> list[str]:
    """`n` fluent station names, each dissimilar (< 0.5) to every station of the map."""
    names: list[str] = []
    for _ in range(100 * n):
        if len(names) == n:
            break
        name = invented_name(rng)
        if name not in names and all(similarity(name, s) < MATCH_THRESHOLD for s in m.stations):
            names.append(name)
    if len(names) < n:
        raise GeoevalError(f"meta-eval: could not invent {n} station names unlike those of map {m.name}")
    return names


def invented_answer(n: int, m: MetroMap, rng: random.Random) -> str:
    names = invented_stations(max(n, 2), m, rng)
    return (
        "I studied the map and the tables carefully. The best route is:\n"
        + "-".join(names)
        + "\nIt keeps to one line all the way, so no transfer is needed."
    )


def wrong_value(reference: str, kind: str) -> str:
    """A wrong answer of the reference's kind: binary flipped, integer + 1, number + 1 (far beyond
    the 0.005 tolerance)."""
    if kind == "binary":
        return "0" if reference.strip() == "1" else "1"
    value = float(reference)
    if kind == "integer":
        return str(int(value) + 1)
    wrong = value + 1.0
    if math.isclose(wrong, value):
        raise GeoevalError(f"meta-eval: no wrong value found for {reference!r}")
    return f"{wrong:.2f}"
