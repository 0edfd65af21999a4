"""`geoeval/heuristic_baseline`: an offline agent that solves LifePlanner cases with the standard
tools and simple heuristics. It reads only what a model reads (the prompt, the question, the tool
results) and never the case's reference.

It knows nothing of how the case engine words its queries: it imports neither the engine's
vocabulary (`lexicon.py`: type nouns, preferences) nor its templates, and parses questions with
general English cues only (weekdays, clock times, distances with units, "from ... to ...",
"before", "rating"/"cheapest"/"hours"/"address", plural nouns). What it cannot read from the
question it learns from the tools:

- places are the capitalised spans of the question that `place_search` confirms (the longest
  result name the question spells out at that position);
- a place type is the first content word of the question that, tried as a `place_types`
  substring filter, returns places whose sub-type contains it ("bakeries" finds Bakery; "bars"
  finds nothing it can trust, so the search runs without a type);
- needs it cannot map to attributes (L2) are the question's own content words, searched in tags
  (geo_tag) and notes; the candidate with most hits wins. It has no notion of synonyms or
  implications ("short-legged dogs" is not "Corgi"), which is why it falls on implicit cases.

How it works: each turn the policy re-runs one deterministic plan from the start. The plan asks
for tool calls through `Session.call`; a call already made earlier in the conversation is
answered from its tool message, the first call not made yet becomes this turn's tool call. When
the plan finishes, its answer is submitted.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.suites.lifeplanner.environment import DAYS, is_open
from geoeval.suites.lifeplanner.trajectory import SUBMIT_TOOL
from geoeval.suites.lifeplanner.trip_timing import open_on_arrival, readable_hours

BUDGET = 30  # the scaffold's default; the plan keeps one turn for submit_answer
DEFAULT_RADIUS_M = 500.0  # "near" without a number
MAX_TYPE_PROBES = 8  # content words tried as place_types filters

# General English, not the engine's vocabulary.
_DAY_RE = re.compile(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b")
_TIME_RE = re.compile(r"\b(\d{1,2}:\d{2})\b")
_FUNCTION_CAPS = {"i", "i'm", "i'll", "i'd", "i've", "what", "what's", "which", "where", "when", "how", "is", "are",
                  "does", "do", "can", "could", "would", "will", "find", "list", "plan", "my", "the", "a", "an", "it's",
                  "on", "in", "at", "between", "among", "driving", "walking", "cycling", "please", "we", "our", "any",
                  "there", "if", "and", "or", "but", "so", "also", "then", "next", "after", "before", "from", "to",
                  "near", "need", "want", "help", "tell", "show", "give", "fastest", "shortest", "quickest", "via",
                  "heading", "leaving", "starting", "ok", "hi", "hello", "hey", "honestly", "just", "right", "now",
                  "today", "tonight", "tomorrow", "this", "that", "these", "those", "who", "why", "should", "may",
                  "might", "must", "let's", "let", "me", "you", "your", "yes", "no", "not", "one", "it", "they",
                  "he", "she", "his", "her", "their", "am", "be", "been", "have", "has", "had", *(d.lower() for d in DAYS),
                  "january", "february", "march", "april", "june", "july", "august", "september", "october",
                  "november", "december", "cny", "km", "m"}
_STOP = {"i", "im", "i'm", "i'd", "id", "i'll", "a", "an", "the", "and", "or", "to", "of", "in", "on", "at", "for",
         "with", "my", "me", "we", "our", "us", "it", "its", "it's", "is", "be", "so", "some", "somewhere", "want",
         "need", "would", "like", "love", "really", "place", "spot", "that", "this", "there", "where", "which",
         "while", "right", "now", "just", "very", "about", "can", "get", "have", "has", "had", "do", "don't", "dont",
         "will", "all", "any", "more", "most", "much", "too", "no", "not", "without", "into", "over", "up", "down",
         "out", "from", "them", "they", "you", "your", "lot", "lots", "after", "also", "then", "what", "what's",
         "should", "could", "choose", "pick", "go", "going", "near", "nearby", "around", "here", "close", "way",
         "within", "metres", "meters", "route", "trip", "plan", "stop", "visit", "between", "among", "one", "find",
         "best", "good", "great", "able", "make", "sure", "please", "help", "tell", "today", "tonight",
         "minutes", "hours", "leaving", "setting", "off", "spend", "each", "every", "when", "there's", "whats",
         "where's", "someplace", "anywhere", "something", "thing", "things", "am", "are", "was", "were", "been",
         "being", "these", "those", "than", "how", "who", "why", "if", "but", "because", "since", "as",
         "by", "via", "driving", "walking", "cycling", "fastest", "quickest", "shortest", "drive", "walk", "cycle",
         "bike", "car", "let", "let's", "may", "might", "must", "shall", "pm", "ok", "okay"}
_NEGATIVE_CUES = ("hate", "can't stand", "cannot stand", "don't want", "do not want", "dislike", "avoid", "drives me",
                  "no patience", "not a fan", "rather not", "without any", "never")


class _NeedCall(Exception):
    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        super().__init__(tool)
        self.tool, self.arguments = tool, arguments


class _OutOfBudget(Exception):
    pass


@dataclass
class _Past:
    tool: str
    arguments: dict[str, Any]
    payload: Any  # None when the call failed


class Session:
    """Replays the calls already made; the first new call interrupts the plan."""

    def __init__(self, messages: list[ChatMessage], budget: int = BUDGET) -> None:
        results: dict[str, Any] = {}
        for m in messages:
            if getattr(m, "role", "") == "tool":
                payload = None
                if getattr(m, "error", None) is None:
                    try:
                        payload = json.loads(m.text)
                    except (json.JSONDecodeError, TypeError):
                        payload = None
                results[m.tool_call_id] = payload
        self.past = [_Past(c.function, dict(c.arguments or {}), results.get(c.id))
                     for m in messages if getattr(m, "role", "") == "assistant" for c in (m.tool_calls or [])
                     if c.function != SUBMIT_TOOL]
        self.i = 0
        self.budget = budget - 1  # keep a turn for submit_answer
        self.memo: dict[str, Any] = {}  # a call repeated within the plan is answered, not made again

    def left(self) -> int:
        return self.budget - self.i

    def call(self, tool: str, **arguments: Any) -> Any:
        arguments = {k: v for k, v in arguments.items() if v is not None}
        key = json.dumps([tool, arguments], sort_keys=True, default=str)
        if key in self.memo:
            return self.memo[key]
        if self.i < len(self.past):
            got = self.past[self.i]
            self.i += 1
            self.memo[key] = got.payload
            return got.payload
        if self.i >= self.budget:
            raise _OutOfBudget()
        raise _NeedCall(tool, arguments)


# --------------------------------------------------------------------------------------------
# Reading the question (general English)
# --------------------------------------------------------------------------------------------


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
    for vehicle, cues in (("walking", ("walk", "on foot")), ("cycling", ("cycl", "bike", "biking")),
                          ("driving", ("driv", " car"))):
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


# --------------------------------------------------------------------------------------------
# Tool helpers
# --------------------------------------------------------------------------------------------


@dataclass
class Found:
    place_id: str
    name: str
    record: dict[str, Any] = field(default_factory=dict)
    at: int = 0  # where the question names it


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
        bare = tok.strip("()[],.?!:;\"")
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
    after_article = [w for w in _words(" ".join(re.findall(r"\b(?:a|an|any|the|some|every)\s+([\w-]+(?:\s+[\w-]+)?)",
                                                              text.lower()))) if w in words]
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


def legs_for(s: Session, ids: list[str], vehicle: str, mode: str, skip: tuple[str, str] | None = None) \
        -> dict[tuple[str, str], tuple[float, float]]:
    """Route every pair once (roads are undirected) and use it both ways."""
    legs: dict[tuple[str, str], tuple[float, float]] = {}
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if skip and {a, b} == set(skip) and len(ids) > 2:
                continue
            out = s.call("routing", start_place_id=a, end_place_id=b, mode=mode, vehicle=vehicle) or {}
            if out.get("total_distance_m") is not None:
                v = (float(out["total_distance_m"]), float(out["total_time_s"]))
                legs[(a, b)] = legs[(b, a)] = v
    return legs


def best_order(start: str, end: str, stops: list[str], legs: dict, mode: str, ok=lambda order: True) \
        -> tuple[list[str], float, float] | None:
    """Try every permutation of the stops between fixed start and end."""
    best = None
    for perm in itertools.permutations(stops):
        order = [start, *perm, end]
        if any((a, b) not in legs for a, b in itertools.pairwise(order)):
            continue
        d = sum(legs[(a, b)][0] for a, b in itertools.pairwise(order))
        t = sum(legs[(a, b)][1] for a, b in itertools.pairwise(order))
        key = (t, d) if mode == "time" else (d, t)
        if ok(order) and (best is None or key < best[0]):
            best = (key, order, d, t)
    return None if best is None else (best[1], best[2], best[3])


def route_answer(start: Found, end: Found, stops: list[Found], order: list[str], vehicle: str, mode: str,
                 d: float, t: float, reasons: dict[str, str] | None = None, notes: dict[str, list[str]] | None = None,
                 keys: dict[str, list[str]] | None = None) -> dict[str, Any]:
    names = {p.place_id: p.name for p in [start, end, *stops]}
    return {
        "start": {"name": start.name, "place_id": start.place_id, "reason": "User-specified origin."},
        "end": {"name": end.name, "place_id": end.place_id, "reason": "User-specified destination."},
        "waypoints": [{"name": p.name, "place_id": p.place_id, "reason": (reasons or {}).get(p.place_id, "Requested stop."),
                       "ref": {"note_id": ",".join((notes or {}).get(p.place_id, [])),
                               "attribute_key": ",".join((keys or {}).get(p.place_id, []))}}
                      for p in stops],
        "optimal_order": [{"name": names[pid], "place_id": pid, "visit_order": k + 1} for k, pid in enumerate(order)],
        "vehicle": vehicle, "mode": mode, "total_distance_m": round(d), "total_time_s": round(t),
    }


def rank_by_keywords(s: Session, cands: list[Found], words: list[str], avoid: list[str]) \
        -> tuple[Found | None, dict[str, list[str]], dict[str, list[str]]]:
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


# --------------------------------------------------------------------------------------------
# Plans per task family
# --------------------------------------------------------------------------------------------

_ASKED_ATTRIBUTE = (  # cue words -> the attribute a single-place question asks for
    ("opentime_week", ("hour", "open", "close", "closing", "when")),
    ("rating", ("rating", "rated", "stars", "score", "review")),
    ("cost", ("cost", "price", "spend", "how much", "expensive", "per person", "cny")),
    ("address", ("address", "where", "located", "location")),
)


def _asked_attribute(q: str, name: str) -> str:
    low = q.lower().replace(name.lower(), " ")
    for attr, cues in _ASKED_ATTRIBUTE:
        if any(c in low for c in cues):
            return attr
    return "tag"


def _one_place(s: Session, q: str, p: Found) -> dict[str, Any]:
    day, hhmm = _day_time(q)
    if day and hhmm:
        hours = detail(s, p.place_id).get("opentime_week")
        return {"answer": open_at(hours, day, hhmm), "reason": f"Hours: {hours}.", "ref": _ref("opentime_week")}
    attr = _asked_attribute(q, p.name)
    if attr in ("rating", "cost") and attr in p.record:
        return {"answer": p.record.get(attr), "ref": _ref(attr)}
    det = detail(s, p.place_id)
    if attr != "tag":
        return {"answer": det.get(attr), "ref": _ref(attr)}
    low = q.lower().replace(p.name.lower(), " ")
    hits = [v for v in _tag_values(det.get("tag") or "") if v.lower() in low]
    return {"answer": bool(hits), "ref": _ref(f"tag:{hits[0]}" if hits else "tag")}


def _choose_among(s: Session, q: str, cands: list[Found]) -> dict[str, Any]:
    day, hhmm = _day_time(q)
    low = q.lower()
    for c in cands:
        low = low.replace(c.name.lower(), " ")
    if any(w in low for w in ("rating", "rated", "stars", "review", "score")):
        vals = [(float(detail(s, c.place_id).get("rating") or 0), c) for c in cands]
        return {"answer": max(vals, key=lambda x: x[0])[1].name, "reason": "Highest rating.", "ref": _ref("rating")}
    if any(w in low for w in ("cheap", "least", "lowest", "cost", "spend less", "budget", "inexpensive", "price")):
        vals = [(float(detail(s, c.place_id).get("cost") or 1e9), c) for c in cands]
        return {"answer": min(vals, key=lambda x: x[0])[1].name, "reason": "Lowest cost.", "ref": _ref("cost")}
    if day and hhmm:
        for c in cands:
            if open_at(detail(s, c.place_id).get("opentime_week"), day, hhmm):
                return {"answer": c.name, "reason": f"Open on {day} at {hhmm}.", "ref": _ref("opentime_week")}
        return {"answer": cands[0].name, "reason": "None looked open.", "ref": _ref("")}
    want, avoid = _need_words(q, [c.name for c in cands])
    best, notes, keys = rank_by_keywords(s, cands, want, avoid)
    best = best or cands[0]
    return {"answer": best.name, "reason": "Its tags and posts match the request best.",
            "ref": _ref(keys.get(best.place_id, []), notes.get(best.place_id, [])), "implicit_logic": "True"}


def plan_place(s: Session, q: str) -> dict[str, Any]:
    found = named_places(s, q)
    if len(found) >= 2:
        return _choose_among(s, q, found)
    if len(found) == 1:
        anchored = re.search(r"\b(near|around|close to|next to)\s+$", q[: found[0].at], re.IGNORECASE)
        if not anchored:
            return _one_place(s, q, found[0])
        return _choose_nearby(s, q, found[0])
    return {"answer": ""}


def _choose_nearby(s: Session, q: str, anchor: Found) -> dict[str, Any]:
    """A place answer near an anchor: search around it (by type when a word of the question works
    as one) and rank the candidates by the question's words."""
    search = {"center": anchor.place_id, "radius_meters": _distance(q) or DEFAULT_RADIUS_M}
    sub, _ = probe_type(s, q, [anchor.name], search)
    if sub:
        search["place_types"] = [sub]
    listed = (s.call("nearby_search", **search) or {}).get("results") or []
    cands = [Found(r["place_id"], r["name"], r) for r in listed][:4]
    if not cands:
        return {"answer": ""}
    want, avoid = _need_words(q, [anchor.name])
    best, notes, keys = rank_by_keywords(s, cands, want, avoid)
    best = best or cands[0]
    return {"answer": best.name, "reason": "Its tags and posts match the request best.",
            "ref": _ref(keys.get(best.place_id, []), notes.get(best.place_id, [])), "implicit_logic": "True"}


def _filters(q: str) -> dict[str, float]:
    out: dict[str, float] = {}
    rating = (re.search(r"(?:at least|minimum of|min(?:imum)?|above|over)\s+(\d(?:\.\d+)?)", q, re.IGNORECASE)
              or re.search(r"(\d(?:\.\d+)?)\s*(?:stars?\s*)?(?:or (?:more|higher|better|above)|\+)", q, re.IGNORECASE))
    if rating and re.search(r"rat|star|score|review", q, re.IGNORECASE):
        out["min_rating"] = float(rating.group(1))
    cost = re.search(r"(\d+(?:\.\d+)?)\s*(?:CNY|yuan|RMB|¥)", q, re.IGNORECASE)
    if cost and re.search(r"no more than|at most|under|below|up to|max|or less|within a budget", q, re.IGNORECASE):
        out["max_cost"] = float(cost.group(1))
    return out


def _wants_a_set(q: str, type_word: str | None, stem: str | None) -> bool:
    """A listing ("which bakeries", "list every ...") rather than one recommendation."""
    low = q.lower()
    if re.search(r"\b(list|every|all the|all of the)\b", low):
        return True
    if not type_word:
        return False
    after = re.search(rf"\b{re.escape(type_word)}\s+([a-z]+)", low)  # "dessert shops": the head noun
    head = after.group(1) if after and after.group(1) not in _STOP else type_word
    return _stem(head) != head or _stem(type_word) != type_word  # asked for in the plural


def _item(p: Found, reason: str, keys: list[str], notes: list[str] | None = None) -> dict[str, Any]:
    return {"name": p.name, "place_id": p.place_id, "reason": reason, "ref": _ref(keys, notes)}


def plan_nearby(s: Session, q: str) -> dict[str, Any]:
    day, hhmm = _day_time(q)
    found = named_places(s, q, limit=2)
    if not found:
        return {"answer": []}
    anchor = found[0]
    radius = _distance(q) or DEFAULT_RADIUS_M
    search: dict[str, Any] = {"center": anchor.place_id, "radius_meters": radius}
    sub, type_word = probe_type(s, q, [anchor.name], search)
    if sub:
        search["place_types"] = [sub]
    filters = _filters(q)
    listed = (s.call("nearby_search", **search, **filters) or {}).get("results") or []
    cands = [Found(r["place_id"], r["name"], r) for r in listed]
    if filters or (day and hhmm and not _need_words(q, [anchor.name])[0]):
        for p in cands:
            if s.left() < 1:
                break
            if not (day and hhmm) or open_at(detail(s, p.place_id).get("opentime_week"), day, hhmm):
                keys = ["opentime_week"] * bool(day) + ["rating"] * ("min_rating" in filters) + ["cost"] * ("max_cost" in filters)
                return {"answer": [_item(p, "Meets the filters and is open then.", keys)]}
        return {"answer": [_item(cands[0], "Closest match.", [])] if cands else []}
    if _wants_a_set(q, type_word, sub):
        return {"answer": [_item(p, f"Within {radius:g} m of {anchor.name}.", ["place_type"]) for p in cands]}
    want, avoid = _need_words(q, [anchor.name])
    pool = cands
    if want and s.left() > 2:
        tagged = (s.call("nearby_search", **search, geo_tag=want) or {}).get("results") or []
        if tagged:
            pool = [Found(r["place_id"], r["name"], r) for r in tagged]
    if day and hhmm:
        pool = [p for p in pool if s.left() > 1 and open_at(detail(s, p.place_id).get("opentime_week"), day, hhmm)] or pool
    if len(pool) > 1:
        best, notes, keys = rank_by_keywords(s, pool[:5], want, avoid)
    else:
        best, notes, keys = (pool[0] if pool else None), {}, {}
    if best is None:
        return {"answer": []}
    out = _item(best, "Its tags and posts match the request best.", keys.get(best.place_id, []),
                notes.get(best.place_id, []))
    out["implicit_logic"] = "True"
    return {"answer": [out]}


def _ends(q: str, found: list[Found]) -> tuple[Found, Found, list[Found]]:
    """Start: the place after "from" (else the first named); end: the place after "to" that
    follows the start (else the last named); the others are stops."""
    def after(word: str, places: list[Found]) -> Found | None:
        return next((p for p in places if re.search(rf"\b{word}\s+(?:\w+\s+){{0,4}}$", q[: p.at], re.IGNORECASE)), None)
    start = after("from", found) or found[0]
    rest = [p for p in found if p is not start]
    end = after("to", [p for p in rest if p.at > start.at]) or after("at", [p for p in rest if p.at > start.at]) \
        or rest[-1]
    return start, end, [p for p in found if p is not start and p is not end]


def _stops_by_need(s: Session, q: str, route: dict[str, Any], a: Found, names: list[str], taken: set[str]) \
        -> list[tuple[Found, str, list[str], list[str]]]:
    """Stops the question asks for by kind or need rather than by name: one per clause that asks
    for the nearest X, or for something within a distance of the route or of a named place."""
    out = []
    for clause in _clauses(q):
        low = clause.lower()
        if s.left() < 6 or re.search(r"each stop|every stop|per stop|minutes", low):
            continue
        nearest = re.search(r"nearest|closest", low)
        dist = _distance(clause)
        wants_stop = re.search(r"on the way|along the way|stop somewhere|stop at an? |stop for|off (?:my|the) route", low)
        near_start = re.search(rf"\b(?:near|around|close to)\s+{re.escape(a.name.lower())}", low)
        if not (nearest or dist or near_start or (wants_stop and not any(n.lower() in low for n in names))):
            continue
        if nearest:
            for part in re.split(r"\b(?:nearest|closest)\b", clause)[1:]:
                pick = _nearest_stop(s, part, route, names, taken)
                if pick:
                    out.append((pick, "The nearest match to the route.", ["place_type"], []))
            continue
        around_start = bool(near_start) or (bool(dist) and a.name.lower() in low)
        center: Any = a.place_id if around_start else route
        search = {"center": center, "radius_meters": dist or (DEFAULT_RADIUS_M if near_start else 300.0)}
        sub, _ = probe_type(s, clause, names, search)
        if sub:
            search["place_types"] = [sub]
        want, avoid = _need_words(clause, names)
        listed = (s.call("nearby_search", **search) or {}).get("results") or []
        cands = [Found(r["place_id"], r["name"], r) for r in listed if r["place_id"] not in taken][:3]
        if not cands or not want:
            continue
        pick, notes, keys = rank_by_keywords(s, cands, want, avoid) if len(cands) > 1 else (cands[0], {}, {})
        if pick:
            out.append((pick, "Its tags and posts match the request best.", keys.get(pick.place_id, []),
                        notes.get(pick.place_id, [])))
            taken.add(pick.place_id)
    return out


def _nearest_stop(s: Session, text: str, route: dict[str, Any], names: list[str], taken: set[str]) -> Found | None:
    """The place of the kind `text` names that lies nearest to the route (results come nearest
    first); the kind is probed over a wide buffer so that a far nearest one is still typed."""
    sub, _ = probe_type(s, text, names, {"center": route, "radius_meters": 1500.0})
    if not sub:
        return None
    for radius in (300.0, 800.0, 1500.0):
        listed = (s.call("nearby_search", center=route, radius_meters=radius, place_types=[sub]) or {}).get("results") or []
        cands = [Found(r["place_id"], r["name"], r) for r in listed if r["place_id"] not in taken]
        if cands:
            taken.add(cands[0].place_id)
            return cands[0]
    return None


def _before_rule(q: str, stops: list[Found]) -> tuple[str, str] | None:
    """"A before B": the two stops named in the clause, in the order named."""
    for clause in _clauses(q):
        if " before " not in clause.lower():
            continue
        low = clause.lower()
        named = sorted((low.find(p.name.lower()), p.place_id) for p in stops if p.name.lower() in low)
        if len(named) >= 2:
            return named[0][1], named[1][1]
    return None


def plan_route(s: Session, q: str, system: str) -> dict[str, Any]:
    vehicle, mode = _vehicle(q), _mode(q)
    day, hhmm = _day_time(q)
    found = named_places(s, q)
    if len(found) < 2:
        return {}
    a, b, stops = _ends(q, found)
    route = {"start": a.place_id, "end": b.place_id, "vehicle": vehicle, "mode": mode}
    reasons: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    for p, why, k, n in _stops_by_need(s, q, route, a, [f.name for f in found], {f.place_id for f in found}):
        stops.append(p)
        reasons[p.place_id], keys[p.place_id], notes[p.place_id] = why, k, n
    stops = stops[:5]
    dwell = re.search(r"(\d+)\s*(?:minutes|mins|min)\b", q)
    hours = {p.place_id: detail(s, p.place_id).get("opentime_week") or "" for p in stops} if day and hhmm and dwell \
        else {}
    ids = [a.place_id, *[p.place_id for p in stops], b.place_id]
    legs = legs_for(s, ids, vehicle, mode, skip=(a.place_id, b.place_id))
    first_then = _before_rule(q, stops)

    def ok(order: list[str]) -> bool:
        if first_then and order.index(first_then[0]) > order.index(first_then[1]):
            return False
        if hours:
            departure = int(hhmm[:2]) * 60 + int(hhmm[3:])
            secs = [legs[(u, v)][1] for u, v in itertools.pairwise(order)]
            return open_on_arrival(order, secs, DAYS.index(day), departure, int(dwell.group(1)),
                                   lambda p: readable_hours(hours[p]))
        return True

    found_order = best_order(a.place_id, b.place_id, [p.place_id for p in stops], legs, mode, ok) \
        or best_order(a.place_id, b.place_id, [p.place_id for p in stops], legs, mode)
    if found_order is None:
        return route_answer(a, b, stops, ids, vehicle, mode, 0, 0, reasons, notes, keys)
    order, d, t = found_order
    return route_answer(a, b, stops, order, vehicle, mode, d, t, reasons, notes, keys)


def _family(system: str) -> str:
    if '"optimal_order"' in system:
        return "route"
    if '"answer": [' in system:
        return "nearby"
    return "place"


def _texts(messages: list[ChatMessage]) -> tuple[str, str]:
    system = "\n".join(m.text for m in messages if getattr(m, "role", "") == "system")
    user = next((m.text for m in messages if getattr(m, "role", "") == "user"), "")
    question = user.split("Now answer the following question:", 1)[-1].strip()
    return system, question


def heuristic_baseline(messages: list[ChatMessage], tools: list[ToolInfo], args: dict[str, Any]) -> PolicyReply:
    if any(getattr(m, "role", "") == "tool" and getattr(m, "function", "") == SUBMIT_TOOL for m in messages):
        return PolicyReply(content="Submitted.")
    system, question = _texts(messages)
    family = _family(system)
    s = Session(messages, int(args.get("tool_budget", BUDGET)))
    try:
        if family == "place":
            answer = plan_place(s, question)
        elif family == "nearby":
            answer = plan_nearby(s, question)
        else:
            answer = plan_route(s, question, system)
    except _NeedCall as need:
        return PolicyReply(tool=need.tool, arguments=need.arguments)
    except _OutOfBudget:
        answer = {"answer": ""} if family != "route" else {}
    except Exception as exc:  # a plan that breaks on an odd question fails this case, visibly
        answer = {"answer": "", "reason": f"baseline error: {type(exc).__name__}: {exc}"}
    return PolicyReply(tool=SUBMIT_TOOL, arguments={"result": answer})


register_policy("heuristic_baseline", "lifeplanner", heuristic_baseline)
