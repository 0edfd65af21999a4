"""LifePlanner metrics (section 3.2) as pure functions, and where each applies (Table 11).

Outcome metrics score the answer a against the reference a*: Attribute Accuracy `a`, Place-set
IoU `piou`, Routing Deviation `rd_distance` / `rd_time`, Order Consistency `oc`, Semantic
Constraint `sc` (mean of the judge ensemble) and Pass Rate `pr`. Process metrics score the
trajectory τ against the reference path τ*: Information Grounding `ig`, Tool Efficiency `te`,
Reasoning Purity `rp` (judge ensemble); plus `input_tokens` and `output_tokens`.

Nothing here reads a database or calls a model: the scorer resolves the answer's places to their
records, runs the judges, and passes plain values in.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from geoeval.suites.lifeplanner.city.opening_hours import is_open

OUTCOME_METRICS = ("a", "piou", "rd_distance", "rd_time", "oc", "sc", "pr")
PROCESS_METRICS = ("ig", "te", "rp")
TOKEN_METRICS = ("input_tokens", "output_tokens")
METRICS = OUTCOME_METRICS + PROCESS_METRICS + TOKEN_METRICS
# PR passes a case when SC > α and every other applicable outcome metric (those listed before PR
# in section 3.2) equals 1. Process metrics and tokens do not enter it.
PR_EXACT_METRICS = ("a", "piou", "rd_distance", "rd_time", "oc")
DEFAULT_ALPHA = 0.9
_EPS = 1e-9

TASKS = ("place", "nearby", "routing", "trip")
LEVELS = ("l0", "l1", "l2")
_TASK_ALIASES = {
    "place": "place",
    "place_perception": "place",
    "nearby": "nearby",
    "nearby_discovery": "nearby",
    "routing": "routing",
    "route": "routing",
    "trip": "trip",
    "trip_design": "trip",
    "trip_planning": "trip",
}

# Table 11. The extracted paper text lost the matrix's check marks, so this is reconstructed from
# the metric definitions, Table 3 (OC and SC are "-" at L0) and the answer fields of Table 6:
# - A everywhere: every answer carries attributes checked against the query (the value asked
#   for at Place L0, rating/cost/hours/type of chosen places, vehicle and mode of a route);
# - PIoU wherever the answer names places by place_id (Nearby, Routing, Trip; Place answers are
#   values or verdicts without place_id, Table 6);
# - RD (distance and time) wherever the answer has total_distance_m/total_time_s (Routing, Trip);
# - OC wherever the answer has optimal_order (Routing and Trip from L1);
# - SC from L1 (rule-based and implicit constraints), never at L0;
# - IG, TE, RP, tokens and PR everywhere.
_ALWAYS = frozenset({"pr", "ig", "te", "rp", "input_tokens", "output_tokens"})
APPLICABLE: dict[tuple[str, str], frozenset[str]] = {
    ("place", "l0"): _ALWAYS | {"a"},
    ("place", "l1"): _ALWAYS | {"a", "sc"},
    ("place", "l2"): _ALWAYS | {"a", "sc"},
    ("nearby", "l0"): _ALWAYS | {"a", "piou"},
    ("nearby", "l1"): _ALWAYS | {"a", "piou", "sc"},
    ("nearby", "l2"): _ALWAYS | {"a", "piou", "sc"},
    ("routing", "l0"): _ALWAYS | {"a", "piou", "rd_distance", "rd_time"},
    ("routing", "l1"): _ALWAYS | {"a", "piou", "rd_distance", "rd_time", "oc", "sc"},
    ("routing", "l2"): _ALWAYS | {"a", "piou", "rd_distance", "rd_time", "oc", "sc"},
    ("trip", "l1"): _ALWAYS | {"a", "piou", "rd_distance", "rd_time", "oc", "sc"},
    ("trip", "l2"): _ALWAYS | {"a", "piou", "rd_distance", "rd_time", "oc", "sc"},
}
COMBINATIONS: tuple[tuple[str, str], ...] = tuple(APPLICABLE)


def normalize_task_level(task: str, level: str | int) -> tuple[str, str]:
    """('Trip_Design', 'L2') -> ('trip', 'l2'); raises ValueError for a combination the paper lacks."""
    t = _TASK_ALIASES.get(str(task).strip().lower())
    lv = str(level).strip().lower()
    lv = f"l{lv}" if lv.isdigit() else lv
    if t is None or (t, lv) not in APPLICABLE:
        raise ValueError(
            f"unknown task/level {task!r}/{level!r}; the paper has {', '.join(f'{a}_{b}' for a, b in COMBINATIONS)}"
        )
    return t, lv


def parse_case_type(case_type: str) -> tuple[str, str]:
    """Table 5's `type` field: 'routing_L1' -> ('routing', 'l1')."""
    m = re.fullmatch(r"\s*([A-Za-z_]+?)_?[Ll]([0-2])\s*", case_type or "")
    if not m:
        raise ValueError(f"case type {case_type!r} is not '<task>_L<level>'")
    return normalize_task_level(m.group(1), m.group(2))


def applicable(task: str, level: str | int) -> frozenset[str]:
    return APPLICABLE[normalize_task_level(task, level)]


# --------------------------------------------------------------------------------------------
# Attribute Accuracy (eq. 1)
# --------------------------------------------------------------------------------------------

_OPS = ("==", "!=", ">=", "<=", ">", "<", "contains", "not_contains", "in", "open_at", "closed_at")


@dataclass(frozen=True)
class Requirement:
    """One explicit attribute requirement x_q of a query, checked on a place record (or on the
    answer itself, as attribute "value", for Place Perception).

    ops: ==, !=, >=, <=, >, < (numbers; == also compares text case- and space-insensitively, and
    verdicts True/"true"/"yes"), contains / not_contains (case-insensitive substring of a text, or
    membership in a list), in (value is one of a collection), open_at / closed_at (value =
    (weekday, "HH:MM"), checked on the attribute's opentime_week)."""

    attribute: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"unknown requirement op {self.op!r} (known: {', '.join(_OPS)})")


def _norm_text(v: Any) -> str:
    return " ".join(str(v).casefold().split())


def _verdict(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and _norm_text(v) in {"true", "yes"}:
        return True
    if isinstance(v, str) and _norm_text(v) in {"false", "no"}:
        return False
    return None


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


_DAY_WORDS = {
    "mon": "monday",
    "tue": "tuesday",
    "tues": "tuesday",
    "wed": "wednesday",
    "thu": "thursday",
    "thur": "thursday",
    "thurs": "thursday",
    "fri": "friday",
    "sat": "saturday",
    "sun": "sunday",
    "to": "",
    "through": "",
    "thru": "",
}


def _loose_text(v: Any) -> str:
    """Text as the robust protocol compares it: NFKC, case, punctuation and spacing ignored, day
    names abbreviated or not ("Mon to Sun 10:00-22:00" is "Monday-Sunday 10:00-22:00")."""
    words = re.sub(r"[^\w]+", " ", unicodedata.normalize("NFKC", str(v)).casefold()).split()
    return " ".join(w for w in (_DAY_WORDS.get(w, w) for w in words) if w)


def _equal(a: Any, b: Any, loose: bool = False) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        va, vb = _verdict(a), _verdict(b)
        return va is not None and va == vb
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return abs(na - nb) <= _EPS * max(1.0, abs(nb))
    if loose:
        return _loose_text(a) == _loose_text(b)
    return _norm_text(a) == _norm_text(b)


def satisfies(record: Mapping[str, Any], req: Requirement, loose: bool = False) -> bool:
    """Whether one record meets one requirement. A missing or null attribute meets none. `loose`:
    text equality also ignores punctuation (the robust answer protocol)."""
    if req.attribute not in record or record[req.attribute] is None:
        return False
    x = record[req.attribute]
    op, v = req.op, req.value
    if op == "==":
        return _equal(x, v, loose)
    if op == "!=":
        return not _equal(x, v, loose)
    if op in (">=", "<=", ">", "<"):
        nx, nv = _number(x), _number(v)
        if nx is None or nv is None:
            return False
        return {">=": nx >= nv - _EPS, "<=": nx <= nv + _EPS, ">": nx > nv + _EPS, "<": nx < nv - _EPS}[op]
    if op in ("contains", "not_contains"):
        if isinstance(x, (list, tuple, set, frozenset)):
            hit = any(_norm_text(v) in _norm_text(item) for item in x)
        else:
            hit = _norm_text(v) in _norm_text(x)
        return hit if op == "contains" else not hit
    if op == "in":
        return any(_equal(x, item, loose) for item in v)
    weekday, hhmm = v
    try:
        open_now = is_open(x, weekday, hhmm)
    except ValueError:
        return False
    return open_now if op == "open_at" else not open_now


def attribute_accuracy(
    records: Sequence[Mapping[str, Any]], requirements: Sequence[Requirement], loose: bool = False
) -> float:
    """A = 1[x ⊨ x_q] (eq. 1): 1 when every record of the answer meets every requirement, else 0.
    An answer with no record (no place, no value) meets nothing: 0."""
    if not records:
        return 0.0
    return 1.0 if all(satisfies(r, q, loose) for r in records for q in requirements) else 0.0


# --------------------------------------------------------------------------------------------
# Place-set IoU (eq. 2), Routing Deviation (eq. 3), Order Consistency (eq. 4)
# --------------------------------------------------------------------------------------------


def place_set_iou(predicted: Iterable[str], reference: Iterable[str]) -> float:
    """PIoU = |p ∩ p*| / |p ∪ p*| over place ids; two empty sets agree (1.0)."""
    p, r = set(predicted), set(reference)
    union = p | r
    return 1.0 if not union else len(p & r) / len(union)


def routing_deviation(value: Any, reference: float, piou: float) -> float:
    """RD_v = PIoU · max(0, 1 − |v − v*| / v*) (eq. 3), for a route's distance or time. A missing
    or non-numeric v scores 0; with v* = 0 only v = 0 keeps the PIoU."""
    v = _number(value)
    ref = _number(reference)
    if v is None or ref is None or v < 0:
        return 0.0
    if ref <= 0:
        return piou if v == ref else 0.0
    return piou * max(0.0, 1.0 - abs(v - ref) / ref)


def _dedupe(seq: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(seq))


def discordant_pairs(sequence: Sequence[str], reference_order: Sequence[str]) -> int:
    """D(s) = Σ_{i<j} 1[r(s_i) > r(s_j)] with r the rank in the reference order."""
    rank = {pid: k for k, pid in enumerate(_dedupe(reference_order))}
    ranks = [rank[x] for x in sequence]
    return sum(1 for i in range(len(ranks)) for j in range(i + 1, len(ranks)) if ranks[i] > ranks[j])


def order_consistency(predicted_order: Sequence[str], reference_order: Sequence[str], piou: float) -> float:
    """OC = PIoU · (1 − D(s) / C(n, 2)) for n ≥ 2, else 0 (eq. 4), where s is the predicted order
    restricted to places in the reference (first visits only) and n = |s|."""
    ref = set(reference_order)
    s = [x for x in _dedupe(predicted_order) if x in ref]
    n = len(s)
    if n < 2:
        return 0.0
    return piou * (1.0 - discordant_pairs(s, reference_order) / math.comb(n, 2))


# --------------------------------------------------------------------------------------------
# Judge-based: Semantic Constraint, Reasoning Purity
# --------------------------------------------------------------------------------------------


def _mean_of_judges(scores: Sequence[float], name: str) -> float:
    vals = [float(s) for s in scores]
    if not vals:
        raise ValueError(f"{name} needs at least one judge score")
    bad = [s for s in vals if not (0.0 <= s <= 1.0)]
    if bad:
        raise ValueError(f"{name}: judge scores must lie in [0, 1], got {bad}")
    return sum(vals) / len(vals)


def semantic_constraint(judge_scores: Sequence[float]) -> float:
    """SC: the mean of the judges' scores, each in [0, 1]."""
    return _mean_of_judges(judge_scores, "SC")


def reasoning_purity(judge_scores: Sequence[float]) -> float:
    """RP: the mean of the judges' scores of the trajectory against the database evidence."""
    return _mean_of_judges(judge_scores, "RP")


# --------------------------------------------------------------------------------------------
# Pass Rate
# --------------------------------------------------------------------------------------------


def passes(scores: Mapping[str, float], applicable_metrics: Iterable[str], alpha: float = DEFAULT_ALPHA) -> bool:
    """A case passes at α when SC > α (if SC applies) and every other applicable outcome metric is
    1. A score missing for an applicable metric is a caller bug and raises."""
    app = set(applicable_metrics)
    needed = [m for m in PR_EXACT_METRICS if m in app] + (["sc"] if "sc" in app else [])
    missing = [m for m in needed if m not in scores]
    if missing:
        raise ValueError(f"pass rate needs the applicable scores {missing}")
    if "sc" in app and not scores["sc"] > alpha:
        return False
    return all(scores[m] >= 1.0 - _EPS for m in PR_EXACT_METRICS if m in app)


def pass_rate(scores: Mapping[str, float], applicable_metrics: Iterable[str], alpha: float = DEFAULT_ALPHA) -> float:
    """PR@α of one case as 1.0 / 0.0 (the percentage is the mean over cases)."""
    return 1.0 if passes(scores, applicable_metrics, alpha) else 0.0


# --------------------------------------------------------------------------------------------
# Process metrics
# --------------------------------------------------------------------------------------------


def information_grounding(observed: Iterable[str], required: Iterable[str]) -> float:
    """IG (eq. 5): the share of the required information identities (notes, place attributes, as
    the case names them) that appear in the trajectory's observations. With nothing required: 1.

    Eq. 5 is printed as a sum over o normalised by |o|; the text ("whether the intermediate
    information covers the required information") and Table 3's reading (agents "decide before
    collecting all required evidence") make it a coverage of τ*'s items, which this computes."""
    req = set(required)
    if not req:
        return 1.0
    return len(req & set(observed)) / len(req)


def tool_efficiency(reference_calls: int, calls: int) -> float:
    """TE = min(1, |τ*| / |τ|) (eq. 6). With no calls made, TE is 1 only if none were needed."""
    if reference_calls < 0 or calls < 0:
        raise ValueError("call counts must be >= 0")
    if calls == 0:
        return 1.0 if reference_calls == 0 else 0.0
    return min(1.0, reference_calls / calls)


def token_usage(input_tokens: int, output_tokens: int) -> dict[str, float]:
    """Token Usage: the agent's input tokens (prompts, queries, tool feedback, context) and output
    tokens, summed over the whole trajectory."""
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError("token counts must be >= 0")
    return {"input_tokens": float(input_tokens), "output_tokens": float(output_tokens)}


# --------------------------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------------------------


def case_scores(
    task: str, level: str | int, values: Mapping[str, float], *, alpha: float = DEFAULT_ALPHA
) -> dict[str, float]:
    """Keep the applicable metrics of `values` (raising if one is missing) and add `pr`."""
    app = applicable(task, level)
    out = {}
    for m in METRICS:
        if m == "pr" or m not in app:
            continue
        if m not in values:
            raise ValueError(f"{task}/{level}: the applicable metric {m!r} has no value")
        out[m] = float(values[m])
    out["pr"] = pass_rate(out, app, alpha)
    return out
