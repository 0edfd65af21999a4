"""`geoeval/heuristic_baseline`: an offline agent that solves LifePlanner cases with the standard
tools and simple heuristics. It reads only what a model reads (the prompt, the question, the tool
results) and never the case's reference.

It knows nothing of how the case engine words its queries: it imports neither the engine's
vocabulary (`cases/lexicon.py`: type nouns, preferences) nor its templates, and parses questions with
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

The plan lives in small modules beside this one: the replay in `session.py`, reading the question
in `reading.py`, the tool helpers in `tools.py`, the route plan in `route.py`; the place and nearby
plans and the policy are here.
"""

from __future__ import annotations

import re
from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.tool import ToolInfo

from geoeval.agents.policies import PolicyReply, register_policy
from geoeval.suites.lifeplanner.baseline.reading import (
    _STOP,
    _day_time,
    _distance,
    _need_words,
    _stem,
)
from geoeval.suites.lifeplanner.baseline.route import plan_route
from geoeval.suites.lifeplanner.baseline.session import (
    BUDGET,
    Session,
    _NeedCall,
    _OutOfBudget,
)
from geoeval.suites.lifeplanner.baseline.tools import (
    DEFAULT_RADIUS_M,
    Found,
    _ref,
    _tag_values,
    detail,
    named_places,
    open_at,
    probe_type,
    rank_by_keywords,
)
from geoeval.suites.lifeplanner.scoring.trajectory import SUBMIT_TOOL

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
    return {
        "answer": best.name,
        "reason": "Its tags and posts match the request best.",
        "ref": _ref(keys.get(best.place_id, []), notes.get(best.place_id, [])),
        "implicit_logic": "True",
    }


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
    return {
        "answer": best.name,
        "reason": "Its tags and posts match the request best.",
        "ref": _ref(keys.get(best.place_id, []), notes.get(best.place_id, [])),
        "implicit_logic": "True",
    }


def _filters(q: str) -> dict[str, float]:
    out: dict[str, float] = {}
    rating = re.search(
        r"(?:at least|minimum of|min(?:imum)?|above|over)\s+(\d(?:\.\d+)?)", q, re.IGNORECASE
    ) or re.search(r"(\d(?:\.\d+)?)\s*(?:stars?\s*)?(?:or (?:more|higher|better|above)|\+)", q, re.IGNORECASE)
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
                filter_keys = (
                    ["opentime_week"] * bool(day)
                    + ["rating"] * ("min_rating" in filters)
                    + ["cost"] * ("max_cost" in filters)
                )
                return {"answer": [_item(p, "Meets the filters and is open then.", filter_keys)]}
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
        pool = [
            p for p in pool if s.left() > 1 and open_at(detail(s, p.place_id).get("opentime_week"), day, hhmm)
        ] or pool
    if len(pool) > 1:
        best, notes, keys = rank_by_keywords(s, pool[:5], want, avoid)
    else:
        best, notes, keys = (pool[0] if pool else None), {}, {}
    if best is None:
        return {"answer": []}
    out = _item(
        best, "Its tags and posts match the request best.", keys.get(best.place_id, []), notes.get(best.place_id, [])
    )
    out["implicit_logic"] = "True"
    return {"answer": [out]}


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
