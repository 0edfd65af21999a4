"""The places a text names, by id or by full name, and which of them it offers: read on the core's
reading layer (`geoeval.core.reading`), so that "rather than B", "not B", "instead of B" reject B,
a correction replaces what came before, and a place named in an echo of the request is not offered.

A name is matched as LifePlanner compares names (`name_key`: NFKC, case-folded, punctuation and
spacing ignored), whole words only; a name inside a longer name counts once, as the longer name.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from geoeval.api import Found, assign_roles, decide, parse
from geoeval.suites.lifeplanner.tools import city as city_handle

_NAME_INDEX: dict[str, tuple[dict[str, list[str]], dict[str, str]]] = {}


def name_key(s: Any) -> str:
    """A name as compared: NFKC, case-folded, punctuation and spacing ignored."""
    s = unicodedata.normalize("NFKC", str(s)).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", s).split())


def _names(city: city_handle.City) -> tuple[dict[str, list[str]], dict[str, str]]:
    """({name key: place ids}, {place id: name}) of the city, once per opened city."""
    key = f"{city.db_path}@{id(city)}"
    got = _NAME_INDEX.get(key)
    if got is None:
        by_key: dict[str, list[str]] = {}
        by_id: dict[str, str] = {}
        for pid, name in city.cursor().execute("SELECT id, name FROM places ORDER BY id").fetchall():
            by_key.setdefault(name_key(name), []).append(pid)
            by_id[pid] = name
        got = (by_key, by_id)
        _NAME_INDEX.clear()
        _NAME_INDEX[key] = got
    return got


def place_name(city: city_handle.City, pid: str) -> str:
    return _names(city)[1][pid]


def _keyed(text: str) -> tuple[str, list[int]]:
    """`text` as `name_key` writes it, with a space at each end, and the index in `text` of each
    of its characters (so that a name found in the key is found in the text)."""
    out, where = [" "], [0]
    for i, ch in enumerate(text):
        folded = ch.casefold() if (ch.isalnum() or ch == "_") else " "
        if folded == " " and out[-1] == " ":
            continue
        for c in folded:
            out.append(c)
            where.append(i)
    if out[-1] != " ":
        out.append(" ")
        where.append(len(text))
    return "".join(out), where


def mentions(city: city_handle.City, text: str) -> list[tuple[int, int, str]]:
    """(start, end, place id) of every place `text` names, by id or by a name only one place
    has, in order; a name inside a longer name counts once, as the longer name."""
    norm, where = _keyed(text)
    spans: list[tuple[int, int, str]] = []
    for tok in re.finditer(r"[A-Za-z0-9]+", text):
        if tok.group() in city.place_index:
            spans.append((tok.start(), tok.end(), tok.group()))
    for key, pids in _names(city)[0].items():
        if len(pids) != 1 or not key:
            continue
        start = norm.find(" " + key + " ")
        while start >= 0:
            s, e = where[start + 1], where[start + len(key)] + 1
            spans.append((s, e, pids[0]))
            start = norm.find(" " + key + " ", start + 1)
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    out: list[tuple[int, int, str]] = []
    end = -1
    for s, e, pid in spans:
        if s < end and e <= end:
            continue  # inside a longer mention
        end = max(end, e)
        out.append((s, e, pid))
    return out


def place_mentions(city: city_handle.City, text: str, question: str = "") -> tuple[list[str], list[str]]:
    """(places offered, places named and not offered) in `text`, in order: each mention is a
    candidate of the core's reading (roles, then the one-answer rule), and a place is offered when
    a mention of it is live. `question`: the request (a place named in an echo of it is not offered)."""
    doc = parse(text)
    found = [Found(seg.index, s, e, pid, pid) for seg in doc.segments for s, e, pid in mentions(city, seg.text)]
    candidates, retractions = assign_roles(doc, found, question)
    decision = decide(candidates, retractions)
    offered = list(dict.fromkeys(decision.values))
    named = [c.value for c, _why in decision.set_aside if c.value not in offered]
    return offered, list(dict.fromkeys(named))
