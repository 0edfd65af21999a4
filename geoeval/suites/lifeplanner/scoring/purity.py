"""What the reasons of an answer state about a place, checked against the place's record: the
claims Reasoning Purity reads under the robust protocol (`judging.robust_purity_checks`).

RP "assesses whether the information and reasoning in τ are faithful to the database, without
hallucination or distortion" (section 3.2). The paper protocol's rules judge checks the answer's
structured claims only (places, names, notes, totals); the robust one also reads the reasons:

- a rating ("rated 4.5", "4.5 stars", "4.5/5"), a cost ("¥86", "86 CNY", "cost (86)"), opening hours
  (every "HH:MM-HH:MM" range, "open 24 hours") and a distance to a named place ("28 m from X")
  must match the record;
- a fact phrase ("free parking", "Wi-Fi", "quiet", any tag or memory value some place of the city
  has) must be in the place's record (tags, alias, memory) or in a note the answer cites;
- words the user's request already says are not claims about the place (the need restated), and
  "within 850 m" is a bound, not a distance.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

#: fact phrases real answers invent whatever the city's vocabulary (checked like tag values)
COMMON_CLAIMS = (
    "free parking",
    "parking",
    "wifi",
    "wi-fi",
    "free wifi",
    "outdoor seating",
    "pet friendly",
    "pet-friendly",
    "live music",
    "private rooms",
    "air conditioning",
    "wheelchair accessible",
    "no queue",
    "free entry",
    "free admission",
)
_RATING = re.compile(
    r"\b(?:rated|rating(?:\s+of|\s+is)?:?)\s*(\d(?:\.\d+)?)\b|\b(\d(?:\.\d+)?)\s*(?:stars?\b|/\s*5\b|-star\b)",
    re.IGNORECASE,
)
_COST = re.compile(
    r"[¥￥]\s*(\d+(?:\.\d+)?)|\b(\d+(?:\.\d+)?)\s*(?:cny|rmb|yuan)\b|(\d+(?:\.\d+)?)\s*元"
    r"|\bcosts?\W{0,3}(?:about\s+|around\s+)?(\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)
_HOURS_RANGE = re.compile(r"\b(\d{1,2}:\d{2})\s*[-–~to]+\s*(\d{1,2}:\d{2})\b")
_ALL_DAY = re.compile(r"\b(?:open\s+)?24\s*(?:hours|hrs|h|/\s*7)\b|\baround the clock\b|24小时", re.IGNORECASE)
_RECORD_TEXT = ("name", "place_type", "tag", "alias", "long_mem", "short_mem")
_DISTANCE_FROM = re.compile(r"\b(\d+(?:\.\d+)?)\s*(m|km|metres|meters)\s+(?:away\s+)?from\s+(.+?)(?:[.;,)]|$)")


@functools.lru_cache(maxsize=65536)
def key(s: str) -> str:
    """Text as compared: NFKC, case-folded, punctuation and spacing ignored (cached: the city's
    vocabulary is keyed once, not once per reason)."""
    s = unicodedata.normalize("NFKC", str(s)).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", s).split())


def _hhmm(s: str) -> str:
    h, m = s.split(":")
    return f"{int(h):02d}:{m}"


def reason_claims(
    reason: str,
    record: dict[str, Any],
    *,
    vocabulary: Iterable[str],
    question: str,
    evidence_text: str,
    distance_to: Callable[[str], float | None],
) -> list[tuple[str, bool]]:
    """(claim, holds) for every checkable statement `reason` makes about the place `record`
    (its full record: name, rating, cost, opentime_week, tag, alias, long_mem, short_mem).
    `evidence_text`: the notes the answer cites; `distance_to(name)`: straight metres from the
    place to the place named so, None if no place has that name."""
    checks: list[tuple[str, bool]] = []
    text = unicodedata.normalize("NFKC", reason)
    for m in _RATING.finditer(text):
        x = float(m.group(1) or m.group(2))
        rating = record.get("rating")
        checks.append((f"rating {x:g}", rating is not None and abs(float(rating) - x) <= 0.05))
    for m in _COST.finditer(text):
        x = float(next(g for g in m.groups() if g))
        cost = record.get("cost")
        checks.append((f"cost {x:g}", cost is not None and abs(float(cost) - x) <= 0.5))
    hours = str(record.get("opentime_week") or "")
    hours_ranges = {(_hhmm(a), _hhmm(b)) for a, b in _HOURS_RANGE.findall(hours)}
    for a, b in _HOURS_RANGE.findall(text):
        checks.append((f"hours {a}-{b}", (_hhmm(a), _hhmm(b)) in hours_ranges))
    if _ALL_DAY.search(text):
        checks.append(("open 24 hours", ("00:00", "24:00") in hours_ranges or bool(_ALL_DAY.search(hours))))
    for m in _DISTANCE_FROM.finditer(text):
        d = float(m.group(1)) * (1000.0 if m.group(2) == "km" else 1.0)
        real = distance_to(m.group(3).strip())
        if real is not None:
            checks.append((f"{d:g} m from {m.group(3).strip()}", abs(real - d) <= max(10.0, 0.05 * real)))
    own = " " + key(" ".join(str(record.get(k) or "") for k in _RECORD_TEXT)) + " "
    said, asked, cited = f" {key(text)} ", f" {key(question)} ", f" {key(evidence_text)} "
    seen: set[str] = set()
    for phrase in [*COMMON_CLAIMS, *vocabulary]:
        k = f" {key(phrase)} "
        if len(k) < 6 or k in seen or k not in said or k in asked:
            continue
        seen.add(k)
        checks.append((f"states '{phrase}'", k in own or k in cited))
    # a phrase inside a longer claimed phrase ("parking" in "free parking") is that claim's part
    return _drop_nested(checks)


def _drop_nested(checks: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    phrases = [c[len("states '") : -1] for c, _ in checks if c.startswith("states '")]
    out = []
    for claim, ok in checks:
        if claim.startswith("states '"):
            p = key(claim[len("states '") : -1])
            if any(p != key(q) and f" {p} " in f" {key(q)} " for q in phrases):
                continue
        out.append((claim, ok))
    return out
