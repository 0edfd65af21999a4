"""The offline `rules` judge: explicit factors, implicit rubrics and factual rows decided from what
the final answer says, checked against the tool outputs (answer_facts.py reads both).

It cannot read the meaning of a Chinese rubric line, so it reads the parts a rule can check:

1. **Substance.** Nothing is met by an answer that is not *substantive*: one that states no fact
   grounded in a tool output (empty, a refusal, an answer that claims nothing, an answer made of
   invented entities). A question at the end of a substantive answer ("如需…请告诉我") does not
   change that; an answer that is only a question has no grounded fact and meets nothing.
2. **Explicit factor i** is met when the answer is substantive and every check the factor's text
   calls for passes (`TOPICS`): a route (路线, 导航, 规划 …) needs a grounded distance or duration;
   a distance (距离, 多远) a grounded distance; a price (价格, 费用 …) a grounded price; traffic
   (路况, 堵 …) a traffic word the outputs use; a booking (订, 预约) a named entity and a time a
   booking tool's response offers; an order (顺序) two named entities in the order an output gives them; a
   recommendation (推荐, 找 …) a named entity from the outputs. Then the factor's *key terms*
   (the text it shares with the query and the history, stop words removed: "万象城", "充电站")
   must occur in the answer or in an entity it names.
3. **Implicit rubric i**: c_i = 1 when the answer is substantive and every constraint its text
   states holds: a price cap (不超过 N 元) for every named entity whose price the outputs give
   (without one, the answer must address price); a time the place must be open at (HH:MM …营业)
   for every named entity whose hours the outputs give (without one, the answer must address
   the opening hours); a travel mode (驾车, 地铁, 打车, 步行, 骑行; one of them when it names several)
   the answer must use; a topic
   (孩子/亲子, 停车, 近/距离, 营业) the answer must address; and the topic checks of rule 2 (a route
   needs grounded route numbers). A rubric with none of these is read by its distinctive terms
   (shared with the evidence or the tool outputs, not with the query: "特来电"); one the rules
   cannot read at all is met by any substantive answer and is counted in `raw["unreadable"]`.
4. **Factual rows**: every row covers every claim (the rules cannot attribute a claim to a row);
   a row is faithful when the answer is substantive and every claim is grounded (an invented
   name, number or time makes it unfaithful). An answer with no grounded fact is unfaithful:
   it delivers no information to be faithful about (a departure from "facts not claimed are
   ignored", which holds within an answer that does claim something; README).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from geoeval.suites.mapsatisfy.judging.answer_facts import (
    DISTANCE_UNITS,
    DURATION_UNITS,
    PRICE_UNITS,
    ROUTING_TOOLS,
    AnswerFacts,
    Evidence,
    evidence_of,
    norm,
    read_answer,
)
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory, Verdicts
from geoeval.suites.mapsatisfy.metrics import FactCheck

TOPICS: dict[str, tuple[str, ...]] = {
    "route": ("路线", "导航", "规划", "怎么走", "路程", "route", "navigation"),
    "distance": ("距离", "多远"),
    "price": ("价格", "价钱", "费用", "多少钱", "花费", "票价", "预估价"),
    "traffic": ("路况", "拥堵", "堵", "畅通"),
    "booking": ("订", "预约"),
    "order": ("顺序",),
    "recommend": ("推荐", "查找", "找", "搜索", "候选"),
}
BOOKING_TOOLS = (
    "restaurant_reservation",
    "scenic_ticket_transaction",
    "search_train_or_flights_tickets",
    "transaction_service",
    "fuel_payment",
)
TRAFFIC_WORDS = ("严重拥堵", "拥堵", "缓行", "畅通", "堵车", "通畅")
MODES: dict[str, tuple[str, ...]] = {
    "drive": ("驾车", "开车", "自驾"),
    "transit": ("地铁", "公交", "公共交通"),
    "taxi": ("打车", "出租车", "网约车", "叫车"),
    "walk": ("步行", "走路"),
    "bike": ("骑行", "骑车", "单车"),
}
MENTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # topic: (words in the rubric that raise it, words in the answer that address it)
    "kids": (("孩子", "亲子", "儿童", "带娃", "小朋友"), ("孩子", "亲子", "儿童", "带娃", "小朋友", "宝宝")),
    "parking": (("停车",), ("停车",)),
    "near": (("离当前位置近", "近的", "就近", "附近优先"), ("近", "距离", "米", "公里")),
    "open": (("营业", "开门"), ("营业", "开门", "开着", "打烊")),
    "price": (("人均", "消费", "预算", "价位"), ("人均", "价格", "消费", "预算", "实惠", "元")),
}
_STOP = (
    "附近",
    "周边",
    "当前",
    "位置",
    "需要",
    "目标",
    "对象",
    "用户",
    "提供",
    "方案",
    "查找",
    "推荐",
    "规划",
    "路线",
    "地方",
    "地点",
    "这些",
    "他们",
    "我们",
    "结果",
    "应该",
    "应当",
    "优先",
    "考虑",
    "可以",
    "符合",
    "满足",
    "相关",
    "信息",
    "给出",
    "告知",
    "安排",
    "一家",
    "一个",
    "是否",
    "以及",
    "或者",
    "并且",
    "范围",
    "目的地",
)
_CAP = re.compile(r"(?:不超过|不高于|低于|少于|控制在)\s*(\d+)\s*元|(\d+)\s*元\s*(?:以内|以下|之内)")
_OPEN_AT = re.compile(r"(\d{1,2})[:：](\d{2})[^。；;]{0,8}(?:营业|开门|开着)")
_HOURS = re.compile(r"(\d{1,2}):(\d{2})\s*[-~至到]\s*(\d{1,2}):(\d{2})")


def _common_substrings(a: str, b: str, min_len: int = 2) -> list[str]:
    """Maximal common substrings of a and b of at least `min_len` characters, in the order `a`
    holds them (a set's order would vary with the hash seed: the oracle's answers did)."""
    found: dict[str, None] = {}
    for i in range(len(a)):
        k = 0
        while i + k < len(a) and a[i : i + k + 1] in b:  # the longest prefix of a[i:] that b contains
            k += 1
        if k >= min_len:
            found.setdefault(a[i : i + k])
    return [s for s in found if not any(s != t and s in t for t in found)]


def _strip_stop(terms: Sequence[str]) -> list[str]:
    out = []
    for term in terms:
        for stop in _STOP:
            term = term.replace(stop, "|")
        out += [p for p in re.split(r"[|的和与或及、,.;:()\"'「」]", term) if len(p) >= 2]
    return list(dict.fromkeys(out))


def key_terms(factor: str, query_texts: Sequence[str]) -> list[str]:
    """The terms an explicit factor shares with the query and history (rule 2)."""
    f = norm(factor)
    return _strip_stop([t for q in query_texts for t in _common_substrings(f, norm(q))])


def distinctive_terms(rubric: str, evidence_texts: Sequence[str], query: str) -> list[str]:
    """Terms a rubric shares with its evidence or the outputs but not with the query (rule 3)."""
    r, q = norm(rubric), norm(query)
    terms = _strip_stop([t for e in evidence_texts for t in _common_substrings(r, e)])
    return [t for t in terms if t not in q and not any(t in w for ws in MODES.values() for w in ws)]


def _mentioned(term: str, facts: AnswerFacts) -> bool:
    if facts.asserted is not None:
        # robust: said by the answer itself, or borne by a record it names positively; when it
        # offers several candidates, borne by every one of them (the one-answer rule: what the
        # answer says cannot be told to be about the better one)
        candidates = facts.candidates or []
        if len(candidates) > 1:
            return all(term in r.text for r in candidates)
        return term in facts.asserted or any(term in r.text for r in facts.records)
    return term in facts.text or any(term in r.text for r in facts.records)


# ---------------------------------------------------------------------------------------------
# topic checks (rule 2)


def _order_ok(facts: AnswerFacts, ev: Evidence) -> bool:
    """Two named entities, proposed in the order an output gives them. The proposal is read from
    the answer without its restatement of the request (the query names the places in the user's
    order, which says nothing about the proposed one)."""
    text = facts.text.replace(ev.given[0], " ") if ev.given and ev.given[0] else facts.text
    proposed = sorted((text.find(norm(r.name)), norm(r.name)) for r in facts.records if norm(r.name) in text)
    names = [n for _, n in proposed]
    if len(names) < 2:
        return False
    for _tool, text in ev.outputs:
        positions = [text.find(n) for n in names]
        if all(p >= 0 for p in positions):
            return positions == sorted(positions)  # the answer keeps the order the output gives
    return True


def topic_ok(topic: str, facts: AnswerFacts, ev: Evidence) -> bool:
    if topic == "route":
        return bool(facts.grounded_numbers(DISTANCE_UNITS + DURATION_UNITS))
    if topic == "distance":
        return bool(facts.grounded_numbers(DISTANCE_UNITS))
    if topic == "price":
        return bool(facts.grounded_numbers(PRICE_UNITS))
    if topic == "traffic":
        return any(w in facts.text and any(w in t for t in ev.output_texts) for w in TRAFFIC_WORDS)
    if topic == "booking":  # a named place and a time a booking tool offered
        booked = [t for tool, t in ev.outputs if tool in BOOKING_TOOLS]
        return bool(facts.records) and any(c.kind == "clock" and any(c.text in t for t in booked) for c in facts.claims)
    if topic == "order":
        return _order_ok(facts, ev)
    if topic == "recommend":
        return bool(facts.records if facts.candidates is None else facts.candidates)
    raise KeyError(topic)


def topics_of(text: str) -> list[str]:
    t = norm(text)
    return [topic for topic, words in TOPICS.items() if any(w in t for w in words)]


def explicit_met(factor: str, facts: AnswerFacts, ev: Evidence, query_texts: Sequence[str]) -> float:
    if not facts.substantive:
        return 0.0
    if not all(topic_ok(t, facts, ev) for t in topics_of(factor)):
        return 0.0
    return 1.0 if all(_mentioned(t, facts) for t in key_terms(factor, query_texts)) else 0.0


# ---------------------------------------------------------------------------------------------
# implicit constraints (rule 3)


def price_of(record: Any) -> float | None:
    for key, value in record.fields.items():
        k = key.lower()
        if ("price" in k or "cost" in k or "人均" in k) and re.fullmatch(r"\d+(?:\.\d+)?", value.strip()):
            return float(value)
    return None


def hours_of(record: Any) -> tuple[int, int] | None:
    for key, value in record.fields.items():
        k = key.lower()
        if "open" in k or "hour" in k or "营业" in k or "opentime" in k:
            m = _HOURS.search(value)
            if m:
                return int(m.group(1)) * 60 + int(m.group(2)), int(m.group(3)) * 60 + int(m.group(4))
    return None


def _cap_ok(cap: float, facts: AnswerFacts) -> bool:
    prices = [p for p in (price_of(r) for r in facts.records) if p is not None and p > 0]
    if not prices:
        return facts.mentions(MENTIONS["price"][1])
    return all(p <= cap for p in prices)


def _open_ok(minute: int, facts: AnswerFacts) -> bool:
    spans = [h for h in (hours_of(r) for r in facts.records) if h is not None]
    if not spans:
        return facts.mentions(MENTIONS["open"][1])
    return all(start <= minute < end for start, end in spans)


def constraint_checks(rubric: str) -> list[tuple[str, Any]]:
    """The constraints a rubric states, as (kind, parameter)."""
    text = norm(rubric)
    checks: list[tuple[str, Any]] = []
    cap = _CAP.search(text)
    if cap:
        checks.append(("cap", float(cap.group(1) or cap.group(2))))
    open_at = _OPEN_AT.search(text)
    if open_at:
        checks.append(("open_at", int(open_at.group(1)) * 60 + int(open_at.group(2))))
    modes = tuple(mode for mode, words in MODES.items() if any(w in text for w in words))
    if modes:  # "地铁或公交或骑行": any of the modes the rubric names
        checks.append(("mode", modes))
    for topic, (raised_by, _answered_by) in MENTIONS.items():
        already = (topic == "price" and cap) or (topic == "open" and open_at)
        if not already and any(w in text for w in raised_by):
            checks.append(("mention", topic))
    checks += [("topic", t) for t in topics_of(rubric) if t in ("route", "distance", "price", "traffic")]
    return checks


def _check(kind: str, param: Any, facts: AnswerFacts, ev: Evidence) -> bool:
    if kind == "cap":
        return _cap_ok(param, facts)
    if kind == "open_at":
        return _open_ok(param, facts)
    if kind == "mode":
        return any(facts.mentions(MODES[m]) for m in param)
    if kind == "mention":
        return facts.mentions(MENTIONS[param][1])
    return topic_ok(param, facts, ev)


def implicit_met(
    factor: Any, facts: AnswerFacts, ev: Evidence, query: str, routing_expected: bool = True
) -> tuple[float, bool]:
    """(c_i, readable): readable is False when the rules found nothing to check in the rubric. A
    rubric's route words ask for route numbers only in a case whose ground truth expects a routing
    tool ("推荐适合亲子的地点或路线" in a nearby search asks for no route)."""
    if not facts.substantive:
        return 0.0, True
    checks = constraint_checks(factor.rubric_instruction)
    if not routing_expected:
        checks = [c for c in checks if c[0] != "topic" or c[1] not in ("route", "distance")]
    if not checks:
        terms = distinctive_terms(factor.rubric_instruction, [norm(factor.evidence), *ev.output_texts], query)
        if not terms:
            return 1.0, False
        return (1.0 if any(_mentioned(t, facts) for t in terms) else 0.0), True
    return (1.0 if all(_check(k, p, facts, ev) for k, p in checks) else 0.0), True


# ---------------------------------------------------------------------------------------------
# one dialogue


def user_words(instance: Any, trajectory: Trajectory) -> list[str]:
    """What the user said (the query, the history, their replies), normalised: the texts an answer
    echoes without asserting anything (the robust protocol). The context and profile JSON the
    agent was given are evidence, not the user's words."""
    said = [g for g in trajectory.given if not g.lstrip().startswith("{")]
    return [norm(t) for t in [instance.query, *instance.context.history, *said] if t]


def robust_facts(instance: Any, trajectory: Trajectory, ev: Evidence) -> tuple[AnswerFacts, dict[str, Any]]:
    """The answer read under the robust protocol (judging/reading.py): its claims and substance
    from what it asserts positively, its records those named positively, its recommendation the
    one-answer rule's candidates, its words those not echoed from the user; every claim it makes
    anywhere still counts for faithfulness."""
    from geoeval.suites.mapsatisfy.judging.reading import read_robust

    reading = read_robust(trajectory.answer, ev, user_words(instance, trajectory), trajectory.recommended)
    positive = read_answer(reading.positive, ev)
    every_claim = read_answer(reading.text, ev)
    facts = AnswerFacts(
        text=reading.positive,
        claims=positive.claims,
        records=reading.named,
        substantive=positive.substantive,
        invented=every_claim.invented,
        candidates=reading.candidates,
        asserted=reading.residual,
    )
    raw = {
        "fired": reading.fired,
        "candidates": [r.name for r in reading.candidates],
        "negated": reading.negated,
        "retracted": reading.retracted,
    }
    return facts, raw


def rules_verdicts(instance: Any, trajectory: Trajectory, protocol: str = "robust") -> Verdicts:
    """The `rules` judge's verdicts of one dialogue (module docstring) under the answer protocol
    `protocol`: "paper" reads the answer's words as written (the judge of SCORING_VERSION 3),
    "robust" reads what it asserts (judging/reading.py)."""
    gt = instance.ground_truth
    ev = evidence_of(trajectory.tool_calls, trajectory.given, instance.context.city)
    reading: dict[str, Any] = {}
    if protocol == "robust":
        facts, reading = robust_facts(instance, trajectory, ev)
    else:
        facts = read_answer(trajectory.answer, ev)
    query_texts = [instance.query, *instance.context.history]
    explicit: list[float | None] = [explicit_met(f, facts, ev, query_texts) for f in gt.explicit_intent]
    implicit: list[float | None] = []
    unreadable = []
    routing = any(t in ROUTING_TOOLS for t in instance.expected_tools)
    for i, factor in enumerate(gt.implicit_intent):
        c, readable = implicit_met(factor, facts, ev, instance.query, routing)
        implicit.append(c)
        if not readable:
            unreadable.append(i)
    faithful = facts.substantive and not facts.invented
    rows: list[list[FactCheck] | None] = [[FactCheck(True, faithful)] for _ in instance.factual_answer_rubric]
    raw = {
        "rules": {
            "substantive": facts.substantive,
            "invented": facts.invented,
            "named": [r.name for r in facts.records],
            "unreadable": unreadable,
            **reading,
        }
    }
    return Verdicts(explicit, implicit, rows, raw)
