"""What a final answer states, and what the tool outputs support: the reading both the offline
`rules` judge (rules_judge.py) and the reference answers (generate/reference.py) use.

- `Evidence`: the served tool outputs (exact, vector, simulated, live; never an error or a
  no_record reply) as texts, the entity records found in their JSON (a dict with a name field,
  its nested fields flattened), and the texts the agent was given (query, context, profile,
  user replies).
- `AnswerFacts`: the answer's claims, each with whether it is grounded and where:
  quoted texts (「」 “” ""), numbers with a unit (distance, duration, price, rating, people,
  percent) and clock times, and place names (a run of name characters ending in a place word
  such as 充电站, 店, 城, 广场, with an optional parenthesised branch). It also lists the
  records the answer names and whether it is *substantive*: it states at least one fact grounded
  in a tool output (a named record, or a grounded claim found in an output). Empty answers,
  refusals, answers that claim nothing and answers made of invented facts are not.

Grounding is textual, on normalised text (full-width brackets and colons to ASCII, whitespace
removed, lower case):
- a quoted text is grounded when it occurs in a source;
- a number is grounded when a source number equals it at the claim's precision, after a unit
  change (km <-> m, hours <-> minutes): "3.3公里" is grounded by `distance_m: 3250`;
- a clock time HH:MM when it occurs in a source;
- a place name when the name, or its last two run characters and the place word (and the
  branch, when given), occur in a source; a leading city or province name of the context may be
  left out ("宁波万象城" is grounded by a source reading "万象城" in a case in 宁波).
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

SERVED = ("exact", "vector", "simulated", "live")
NAME_KEYS = ("name", "poi_name", "title", "station_name", "end_name", "poiName", "sightName")
# keys of a list of names an output returns in an order (a visit order)
NAME_LIST_KEYS = ("order", "visit_order", "via_names", "names")
ROUTING_TOOLS = (
    "get_navigation",
    "get_taxi_route_plan",
    "optimize_visit_order",
    "get_sequential_navigation",
    "search_train_or_flights_tickets",
)

_FULL_TO_ASCII = str.maketrans({"（": "(", "）": ")", "：": ":", "，": ",", "；": ";", "　": ""})
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUOTED = re.compile(r"「([^」]+)」|“([^”]+)”|\"([^\"]+)\"")
_CLOCK = re.compile(r"(?<!\d)([01]?\d|2[0-4]):([0-5]\d)(?!\d)")
# number + unit; the unit decides the conversions a source number may need to match it
_UNIT_CLAIM = re.compile(r"(\d+(?:\.\d+)?)\s*(公里|千米|km|米|小时|分钟|min|元|块|分(?!钟)|人|位|%|％)", re.IGNORECASE)
_SCALES = {
    "公里": (1.0, 0.001),
    "千米": (1.0, 0.001),
    "km": (1.0, 0.001),
    "米": (1.0, 1000.0),
    "小时": (1.0, 1 / 60),
    "分钟": (1.0, 60.0),
    "min": (1.0, 60.0),
}
DISTANCE_UNITS = ("公里", "千米", "km", "米")
DURATION_UNITS = ("小时", "分钟", "min")
PRICE_UNITS = ("元", "块")

# Place words that end a name, longest first so that 充电站 wins over 站.
PLACE_WORDS = tuple(
    sorted(
        (
            "充电站",
            "加油站",
            "加气站",
            "服务区",
            "停车场",
            "地铁站",
            "公交站",
            "火车站",
            "高铁站",
            "汽车站",
            "客运站",
            "站",
            "店",
            "馆",
            "厅",
            "城",
            "园",
            "场",
            "中心",
            "广场",
            "大厦",
            "酒店",
            "宾馆",
            "医院",
            "学校",
            "大学",
            "公园",
            "商场",
            "影城",
            "影院",
            "寺",
            "庙",
            "村",
            "苑",
            "小区",
            "府",
            "楼",
            "院",
            "市场",
            "超市",
            "餐厅",
            "饭店",
            "酒吧",
            "剧院",
            "景区",
            "乐园",
            "坊",
            "湾",
            "港",
            "桥",
        ),
        key=len,
        reverse=True,
    )
)
# A name run stops at punctuation and at these function characters (推荐 … 去 … 的 …)
_CUT_CHARS = set(
    "的去到在是有和与或及个家座处这那该此您你我他她它为给从往向至了找选荐近边下些条即请可也都就还"
    "约共仅离距于而且但如若需要想让把被将等每各其某哪几多少达抵经过途位前后旁"
)
_GENERIC_NAMES = (
    "停车场",
    "充电桩",
    "地铁站",
    "公交站",
    "火车站",
    "高铁站",
    "服务区",
    "门口",
    "商场",
    "广场",
    "市场",
    "超市",
    "餐厅",
    "饭店",
    "酒店",
    "景区",
    "公园",
    "医院",
    "学校",
    "小区",
)
_NAME_CHAR = re.compile(r"[\u4e00-\u9fffA-Za-z0-9·\-]")


def norm(text: Any) -> str:
    """Normalised text for matching: full-width brackets/colons to ASCII, no whitespace, lower case."""
    return re.sub(r"\s+", "", str(text or "").translate(_FULL_TO_ASCII)).lower()


@dataclass(frozen=True)
class Record:
    """An entity of a tool output: its name, its flattened fields, the tool that returned it."""

    name: str
    fields: dict[str, str]
    tool: str

    @property
    def text(self) -> str:
        return norm(self.name + " " + " ".join(f"{k}:{v}" for k, v in self.fields.items()))


@dataclass
class Evidence:
    outputs: list[tuple[str, str]]  # (tool, normalised output text) of every served response
    records: list[Record]
    given: list[str]  # normalised texts the agent was given
    place_prefixes: tuple[str, ...] = ()  # city / province names of the context

    @property
    def output_texts(self) -> list[str]:
        return [t for _, t in self.outputs]

    @property
    def sources(self) -> list[str]:
        return self.output_texts + self.given

    @functools.cached_property
    def output_numbers(self) -> list[float]:
        return numbers_of(self.output_texts)

    @functools.cached_property
    def given_numbers(self) -> list[float]:
        return numbers_of(self.given)


def _flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}{k}." if isinstance(v, (dict, list)) else f"{prefix}{k}"))
    elif isinstance(obj, list):
        if all(not isinstance(v, (dict, list)) for v in obj):
            out[prefix.rstrip(".")] = ";".join(str(v) for v in obj)
        else:
            for i, v in enumerate(obj):
                out.update(_flatten(v, f"{prefix}{i}."))
    elif obj is not None:
        out[prefix.rstrip(".")] = str(obj)
    return out


def records_of(tool: str, obj: Any) -> list[Record]:
    """Every dict of a JSON output that has a name field, as a record (nested dicts flattened)."""
    found: list[Record] = []
    if isinstance(obj, dict):
        name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
        if name is not None:
            found.append(Record(name.strip(), _flatten(obj), tool))
        for key in NAME_LIST_KEYS:
            if isinstance(obj.get(key), list):
                found += [Record(str(n).strip(), {}, tool) for n in obj[key] if isinstance(n, str) and n.strip()]
        for v in obj.values():
            if isinstance(v, (dict, list)):
                found += records_of(tool, v)
    elif isinstance(obj, list):
        for v in obj:
            found += records_of(tool, v)
    return found


def parse_json(content: str) -> Any:
    try:
        return json.loads(content)
    except (json.JSONDecodeError, TypeError):
        return None


def served(call: dict[str, Any]) -> bool:
    return call.get("match_type") in SERVED and not call.get("error")


def evidence_of(tool_calls: Sequence[dict[str, Any]], given: Iterable[str], city: str = "") -> Evidence:
    outputs, records = [], []
    for call in tool_calls:
        if not served(call):
            continue
        content = str(call.get("content") or "")
        outputs.append((call["name"], norm(content)))
        records += records_of(call["name"], parse_json(content))
    prefixes = tuple(p for part in (city or "").split("/") for p in (part, part.rstrip("省市区县")) if len(p) >= 2)
    return Evidence(outputs, records, [norm(g) for g in given], tuple(sorted(set(prefixes), key=len, reverse=True)))


# ---------------------------------------------------------------------------------------------
# claims


@dataclass(frozen=True)
class Claim:
    kind: str  # quote | number | clock | name
    text: str
    unit: str = ""
    grounded: bool = False
    in_output: bool = False  # grounded in a tool output (not only in what the agent was given)


def numbers_of(texts: Sequence[str]) -> list[float]:
    """Every number the texts state, sorted (for `number_grounded`'s binary search)."""
    return sorted(float(n) for text in texts for n in _NUMBER.findall(text))


def number_grounded(value: float, decimals: int, unit: str, texts: Sequence[str] | list[float]) -> bool:
    """Whether a source number equals `value` at its precision after one of the unit's scalings."""
    numbers = texts if texts and isinstance(texts[0], float) else numbers_of(texts)  # type: ignore[arg-type]
    tol = 0.5 * 10**-decimals + 1e-9
    for scale in _SCALES.get(unit.lower(), (1.0,)):
        lo = bisect.bisect_left(numbers, (value - tol) / scale - 1e-12)
        if lo < len(numbers) and numbers[lo] <= (value + tol) / scale + 1e-12:
            return True
    return False


def _name_grounded(run: str, word: str, branch: str, texts: Sequence[str], prefixes: Sequence[str]) -> bool:
    full = norm(run + word + branch)
    candidates = [full] + [full[len(norm(p)) :] for p in prefixes if full.startswith(norm(p))]
    tail = norm(run[-2:] + word + branch)
    return any(c and any(c in t for t in texts) for c in candidates) or any(tail in t for t in texts)


def _runs_of(text: str) -> Iterable[tuple[str, str, str, int, int]]:
    """(run, place word, branch, start, end) for every place word in `text` preceded by name characters."""
    pattern = re.compile("|".join(re.escape(w) for w in PLACE_WORDS))
    last_end = 0
    for m in pattern.finditer(text):
        start = m.start()
        i = start
        while i > last_end and _NAME_CHAR.match(text[i - 1]) and text[i - 1] not in _CUT_CHARS:
            i -= 1
        branch_m = re.match(r"\([^()]{1,40}\)", text[m.end() :])
        branch = branch_m.group(0) if branch_m else ""
        end = m.end() + len(branch)
        run = text[i:start]
        last_end = end
        yield run, m.group(0), branch, i, end


def _name_claims(text: str, ev: Evidence) -> list[Claim]:
    claims: list[Claim] = []
    seen: dict[str, Claim] = {}  # a name repeated is checked once
    for run, word, branch, _s, _e in _runs_of(text):
        if len(run) < 2 or (not branch and run + word in _GENERIC_NAMES):
            continue  # "附近的充电站", "停车场": a kind of place, not a named one
        name = run + word + branch
        if name not in seen:
            in_out = _name_grounded(run, word, branch, ev.output_texts, ev.place_prefixes)
            grounded = in_out or _name_grounded(run, word, branch, ev.given, ev.place_prefixes)
            seen[name] = Claim("name", name, grounded=grounded, in_output=in_out)
        claims.append(seen[name])
    return claims


def claims_of(answer: str, ev: Evidence) -> list[Claim]:
    """The answer's claims with their grounding (module docstring)."""
    text = norm(answer).replace("“", "「").replace("”", "」")
    claims: list[Claim] = []
    for m in _QUOTED.finditer(answer or ""):
        q = norm(next(g for g in m.groups() if g))
        if q:
            in_out = any(q in t for t in ev.output_texts)
            claims.append(Claim("quote", q, grounded=in_out or any(q in g for g in ev.given), in_output=in_out))
    rest = _QUOTED.sub(" ", text)
    for rec in sorted(ev.records, key=lambda r: -len(r.name)):
        rest = rest.replace(norm(rec.name), " ")  # a record's name is matched whole, not read for numbers
    claims += _name_claims(rest, ev)
    pieces, last = [], 0
    for _run, _word, _branch, s, e in _runs_of(rest):  # digits inside a name ("12店") are not numbers
        pieces += [rest[last:s], " " * (e - s)]
        last = e
    rest = "".join(pieces) + rest[last:]
    for m in _CLOCK.finditer(rest):
        c = m.group(0)
        in_out = any(c in t for t in ev.output_texts)
        claims.append(Claim("clock", c, grounded=in_out or any(c in g for g in ev.given), in_output=in_out))
    rest = _CLOCK.sub(" ", rest)
    for m in _UNIT_CLAIM.finditer(rest):
        value, unit = m.group(1), m.group(2)
        decimals = len(value.split(".")[1]) if "." in value else 0
        in_out = number_grounded(float(value), decimals, unit, ev.output_numbers)
        grounded = in_out or number_grounded(float(value), decimals, unit, ev.given_numbers)
        claims.append(Claim("number", value, unit=unit.lower(), grounded=grounded, in_output=in_out))
    return claims


def bare_base(text: str, base: str) -> int:
    """Where `base` occurs in `text` not followed by a branch "(...)" (which names another branch)."""
    for m in re.finditer(re.escape(base), text):
        if not text[m.end() :].startswith("("):
            return m.start()
    return -1


def named_records(answer: str, ev: Evidence) -> list[Record]:
    """The output records the answer names (the whole name, or, written without a branch, its
    part before the branch when that part has at least four characters), in the order the answer
    names them."""
    text = norm(answer)
    found: list[tuple[int, Record]] = []
    seen: set[str] = set()
    for rec in ev.records:
        name = norm(rec.name)
        base = name.split("(")[0]
        pos = text.find(name)
        if pos < 0 and len(base) >= 4 and base != name:
            pos = bare_base(text, base)
        if pos >= 0 and name not in seen:
            seen.add(name)
            found.append((pos, rec))
    return [r for _, r in sorted(found, key=lambda pr: pr[0])]


@dataclass
class AnswerFacts:
    text: str  # normalised answer
    claims: list[Claim]
    records: list[Record]  # output records the answer names
    substantive: bool
    invented: list[str] = field(default_factory=list)  # claims grounded nowhere
    # the robust protocol's recommended records (judging/reading.py): a term is credited to the
    # recommendation only when every candidate carries it; None under the paper protocol
    candidates: list[Record] | None = None
    # the robust protocol's words the answer asserts itself (no echo of the user, no record names):
    # what mentions and terms are read in; None under the paper protocol (`text`)
    asserted: str | None = None

    def mentions(self, words: Iterable[str]) -> bool:
        # robust: the answer's own words and the names of the records it recommends ("…停车场充电站"
        # addresses parking), not the user's words it echoes
        text = self.text if self.asserted is None else "|".join([self.asserted, *(norm(r.name) for r in self.records)])
        return any(norm(w) in text for w in words)

    def grounded_numbers(self, units: Sequence[str]) -> list[Claim]:
        return [c for c in self.claims if c.kind == "number" and c.unit in units and c.in_output]


def read_answer(answer: str, ev: Evidence) -> AnswerFacts:
    """The answer's claims and named records. It is substantive when it brings a fact of a tool
    output that the user did not already give: a named record or a quoted text not in the given
    texts (an answer that only restates the request "去X" names X, but tells nothing), or a
    grounded number or time, unless every place it names is invented."""
    claims = claims_of(answer, ev)
    records = named_records(answer, ev)
    new_record = any(not any(norm(r.name) in g for g in ev.given) for r in records)
    new_claim = any(
        c.in_output and not (c.kind in ("quote", "name") and any(c.text in g for g in ev.given)) for c in claims
    )
    # an answer whose only places are invented is invented, whatever number of it a long output
    # happens to contain; one that names a real place and adds an invented one is not (IFS says so)
    invented_place = any(c.kind in ("quote", "name") and not c.grounded for c in claims)
    substantive = new_record or (new_claim and (bool(records) or not invented_place))
    return AnswerFacts(norm(answer), claims, records, substantive, [c.text for c in claims if not c.grounded])
