"""The heuristic baseline's tool helpers: places the question names, confirmed by `place_search`
(`named_places`), a place type probed as a `place_types` filter (`probe_type`), details and
opening hours, and candidates ranked by the question's words in tags and notes
(`rank_by_keywords`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from geoeval.suites.lifeplanner.baseline.reading import (
    _cap_starts,
    _content_words,
    _or_expr,
    _run_words,
    _stem,
    _words,
)
from geoeval.suites.lifeplanner.baseline.session import Session
from geoeval.suites.lifeplanner.city.opening_hours import is_open

DEFAULT_RADIUS_M = 500.0  # "near" without a number
MAX_TYPE_PROBES = 8  # content words tried as place_types filters


@dataclass
class Found:
    place_id: str
    name: str
    record: dict[str, Any] = field(default_factory=dict)
    at: int = 0  # where the question names it


def name_at(s: Session, q: str, pos: int) -> Found | None:
    """The place whose name the question spells at `pos`, confirmed by place_search."""
    words = _run_words(q[pos:])
    text = q[pos:].lower()
    for _ in range(3):
        if not words:
            return None
        out = s.call("place_search", query_name=" ".join(words)[:120]) or {}
        results = out.get("results") or []
        spelled = [r for r in results if text.startswith(str(r.get("name", "")).lower())]
        if spelled:
            best = max(spelled, key=lambda r: len(r["name"]))
            return Found(best["place_id"], best["name"], best, pos)
        if results:
            return None  # places match the words but none is spelled here: not a name
        words = words[:-1]
    return None


def named_places(s: Session, q: str, limit: int = 8) -> list[Found]:
    """Every place the question names, in order of appearance."""
    found: list[Found] = []
    covered = -1
    for pos in _cap_starts(q):
        if pos < covered or len(found) >= limit or s.left() < 4:
            continue
        again = next((f for f in found if q[pos:].lower().startswith(f.name.lower())), None)
        if again is not None:  # a place named a second time
            covered = pos + len(again.name)
            continue
        p = name_at(s, q, pos)
        if p is not None and p.place_id not in {f.place_id for f in found}:
            found.append(p)
            covered = pos + len(p.name)
    return found


def detail(s: Session, pid: str) -> dict[str, Any]:
    return s.call("place_detail", place_id=pid) or {}


def open_at(hours: str | None, day: str, hhmm: str | int) -> bool:
    try:
        return is_open(hours, day, hhmm)
    except ValueError:
        return False


def probe_type(s: Session, q: str, names: list[str], search: dict[str, Any]) -> tuple[str | None, str | None]:
    """(stem, word): the first content word of `q` (names removed) that works as a place_types
    filter of `search`: it returns places whose sub-type (after "|") contains the word's stem."""
    text = q
    for n in names:
        text = re.sub(re.escape(n), " ", text, flags=re.IGNORECASE)
    capitalised = {w.lower() for w in re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+", text)}  # names, not kinds
    words = [w for w in _content_words(text, limit=3 * MAX_TYPE_PROBES) if w not in capitalised]
    # a kind of place is usually a noun phrase: words after an article first ("a bakery", "any bars")
    after_article = [
        w
        for w in _words(" ".join(re.findall(r"\b(?:a|an|any|the|some|every)\s+([\w-]+(?:\s+[\w-]+)?)", text.lower())))
        if w in words
    ]
    words = list(dict.fromkeys([*after_article, *words]))
    for word in words[:MAX_TYPE_PROBES]:
        stem = _stem(word).replace("-", " ")
        if len(stem) < 3 or s.left() < 4:
            continue
        out = s.call("nearby_search", **search, place_types=[stem]) or {}
        subs = [str(r.get("place_type", "")).split("|")[-1].lower() for r in out.get("results") or []]
        if subs and all(stem in sub for sub in subs):
            return stem, word
    return None, None


def rank_by_keywords(
    s: Session, cands: list[Found], words: list[str], avoid: list[str]
) -> tuple[Found | None, dict[str, list[str]], dict[str, list[str]]]:
    """The candidate whose tags and notes mention the most of `words` (and fewest of `avoid`);
    returns it with the note ids and tag keys that matched."""
    best, best_score = None, None
    notes: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    for c in cands:
        if s.left() < 3:
            break
        det = detail(s, c.place_id)
        tag = (det.get("tag") or "").lower()
        tag_hits = [w for w in words if w in tag]
        score = 2 * len(tag_hits)
        keys[c.place_id] = [f"tag:{w}" for w in tag_hits]
        if words:
            out = s.call("search_notes", keyword=f'"{c.name}" AND {_or_expr(words)}') or {}
            found = [r["note_id"] for r in out.get("results") or []]
            notes[c.place_id] = found[:3]
            score += min(len(found), 3)
        if avoid and s.left() > 3:
            out = s.call("search_notes", keyword=f'"{c.name}" AND {_or_expr(avoid)}') or {}
            score -= 2 * min(len(out.get("results") or []), 2)
        if best_score is None or score > best_score:
            best, best_score = c, score
    return best, notes, keys


def _tag_values(tag: str) -> list[str]:
    """`Key: v1, v2; Key2: v3` -> [v1, v2, v3]."""
    out = []
    for group in (tag or "").split(";"):
        _, _, values = group.rpartition(":")
        out += [v.strip() for v in values.split(",") if v.strip()]
    return out


def _ref(keys: list[str] | str, notes: list[str] | None = None) -> dict[str, str]:
    return {"attribute_key": keys if isinstance(keys, str) else ",".join(keys), "note_id": ",".join(notes or [])}
