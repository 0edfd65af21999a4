"""LifePlanner scoring: the metrics of section 3.2, registered with the core for suite
"lifeplanner" and computed by the core's `geoeval_scorer`.

Two steps, because judges are asynchronous model calls and metric functions are not:

1. `evaluate_sample` (run by the task's last solver step, `task.lifeplanner_judging`) reads the
   trajectory and the submitted answer from the sample's messages, checks the answer against its
   task's schema, asks the judge ensemble (`judge=`; the offline `rules` judge checks constraints
   against the database) for SC and RP, and records the outcome in `metadata["lifeplanner"]`
   (`SampleRecord`): the answer, the schema problem if any, the evidence the trajectory observed,
   the call counts and failure classes, the judges' scores and the agent's tokens.
2. Each registered metric function computes its value from that record, the case and the city
   database (`fn(MetricInput) -> float`).

A metric that Table 11 does not apply to the sample's task and level is NaN, the core's "no
value": averages skip it (Table 3 prints "-" for OC and SC at L0). An answer off its task's schema
scores 0 on the applicable outcome metrics (A, PIoU, RD, OC, SC, PR) and on RP, and the reason is
the sample's explanation; IG, TE and the token counts still describe the trajectory, which exists
whatever the answer. Every judge vote is kept with its raw reply (the sample's stored details);
when every judge of SC or RP fails, the case cannot be judged and the sample is an error (its
metrics NaN, counted in n_errors, retried on resume), never a PR over the judged cases only.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from geoeval.api import MetricInput, compute_metrics, register_metric
from geoeval.judges.ensemble import JudgeEnsemble, JudgeRequest, JudgesFailed, JudgeVerdict
from geoeval.suites.lifeplanner import metrics as M
from geoeval.suites.lifeplanner.scoring.answers import AnswerSchemaError, ParsedAnswer, load_answer, parse_answer
from geoeval.suites.lifeplanner.scoring.judging import answer_place, attribute_accuracy_of, place_records
from geoeval.suites.lifeplanner.scoring.reading import PROTOCOLS, read_submission
from geoeval.suites.lifeplanner.scoring.trajectory import Trajectory, trajectory_from_messages
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import notes as note_tools

SUITE = "lifeplanner"
RECORD_KEY = "lifeplanner"
#: `metadata` key of {protocol: record}: the judging step reads the answer under both protocols
BY_PROTOCOL_KEY = "lifeplanner_by_protocol"
_JUDGE_EVIDENCE_CHARS = 24_000

SC_RUBRIC = (
    "Score 1 when the answer satisfies every constraint of the user's request below, 0 when it satisfies "
    "none; give partial credit in proportion. Check each against the evidence (the database records of the "
    "places involved, with their social-media memory, and the notes cited).\n"
)
RP_RUBRIC = (
    "Score how faithful the agent's answer and reasoning are to the database: 1 when every place, note, "
    "attribute and number it states appears in the tool results below (the evidence) as stated, lower for "
    "each hallucinated or distorted fact."
)


@dataclass
class SampleRecord:
    """What `evaluate_sample` found, kept in the sample's metadata (JSON) for the metrics."""

    db_path: str
    alpha: float
    submitted: Any = None
    schema_error: str | None = None
    tool_calls: int = 0
    refused_calls: int = 0
    failure_classes: dict[str, int] = field(default_factory=dict)
    observed_evidence: list[str] = field(default_factory=list)  # the case's evidence the trajectory showed
    sc_judges: dict[str, float] | None = None
    rp_judges: dict[str, float] | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why the scores are what they are
    judge_votes: dict[str, Any] = field(default_factory=dict)  # per metric: every vote and raw reply
    judge_error: str | None = None  # every judge of a metric failed: the sample is an error
    protocol: str = "paper"  # the answer protocol this record read the submission under
    reading: list[str] = field(default_factory=list)  # the robust reader's rules that fired
    #: the one-answer rule: one record per distinct answer the submission offers (each scored,
    #: the minimum kept); empty for a submission with one answer
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# Step 1: trajectory, schema, judges
# --------------------------------------------------------------------------------------------


def _predicted_places(city: city_handle.City, parsed: ParsedAnswer) -> list[str]:
    if parsed.task == "place":
        pid = answer_place(city, parsed)
        return [pid] if pid else []
    return list(parsed.places)


def _judge_evidence(city: city_handle.City, case: dict[str, Any], parsed: ParsedAnswer) -> str:
    """What a model judge checks constraints with: the full records (memory included) of the
    places of the answer and the reference, and the text of the notes the answer cites."""
    recs = place_records(city)
    lines = []
    for pid in dict.fromkeys([*_predicted_places(city, parsed), *case["reference_places"]]):
        rec = recs.get(pid)
        if rec:
            lines.append(json.dumps({k: v for k, v in rec.items() if k != "facts"}, ensure_ascii=False))
    for nid in parsed.note_ids[:10]:
        res = note_tools.note_detail(city, nid)
        if res.failure_class == "ok":
            lines.append(json.dumps(res.payload, ensure_ascii=False))
    return "\n".join(lines)[:_JUDGE_EVIDENCE_CHARS]


async def evaluate_sample(
    case: dict[str, Any],
    messages: list[Any],
    db_path: str,
    ensemble: Any,
    *,
    alpha: float = M.DEFAULT_ALPHA,
    tokens: dict[str, int] | None = None,
    protocol: str = "robust",
) -> SampleRecord:
    """Read the finished sample (its case and messages) under the answer `protocol` and run the
    judges on it."""
    traj: Trajectory = trajectory_from_messages(messages)
    base = SampleRecord(
        db_path=db_path,
        alpha=alpha,
        tool_calls=traj.n_calls,
        refused_calls=traj.refused,
        failure_classes=traj.failure_counts(),
        observed_evidence=sorted(set(case["evidence"]) & traj.observed),
        tokens=dict(tokens or {}),
        protocol=protocol,
    )
    submitted, read_reply = traj.submission(protocol, case.get("answer_channel", "tool"))
    if protocol == "paper":
        return await _judge_answer(case, traj, base, load_answer(submitted), ensemble)
    city = city_handle.open_city(db_path)
    reading = read_submission(city, case["task"], submitted, protocol, question=case["question"])
    base.reading = (["no submit_answer call: the last reply read as the answer"] if read_reply else []) + list(
        reading.rules
    )
    if reading.void or not reading.candidates:
        # the one-answer rule: the worst candidate is no answer, scored as an answer off the schema
        base.submitted = reading.candidates[0] if reading.candidates else load_answer(submitted)
        base.schema_error = f"one-answer rule: {reading.void}" if reading.void else "no answer was submitted"
        base.notes.append(base.schema_error)
        _note_refused(base, traj)
        return base
    if len(reading.candidates) == 1:
        return await _judge_answer(case, traj, base, reading.candidates[0], ensemble)
    records = [
        await _judge_answer(case, traj, dataclasses.replace(base, notes=[], judge_votes={}), cand, ensemble)
        for cand in reading.candidates
    ]
    record = dataclasses.replace(records[0], candidates=[r.to_dict() for r in records])
    record.notes = [
        *base.notes,
        f"one-answer rule: {len(records)} different answers, the worst is scored",
        *dict.fromkeys(n for r in records for n in r.notes),
    ]
    record.judge_error = next((r.judge_error for r in records if r.judge_error), None)
    return record


async def evaluate_both(
    case: dict[str, Any],
    messages: list[Any],
    db_path: str,
    ensemble: JudgeEnsemble,
    *,
    alpha: float = M.DEFAULT_ALPHA,
    tokens: dict[str, int] | None = None,
) -> dict[str, SampleRecord]:
    """The sample's record under each answer protocol; a model judge asked the same question under
    both is asked once (`SharedVerdicts`)."""
    shared = SharedVerdicts(ensemble)
    return {
        p: await evaluate_sample(case, messages, db_path, shared, alpha=alpha, tokens=tokens, protocol=p)
        for p in PROTOCOLS
    }


class SharedVerdicts:
    """A judge ensemble that reuses a model judge's verdict on a request it has already judged
    (the robust and paper readings of one answer are often the same text); the offline rules
    judge, which reads the protocol from the request, is asked every time."""

    def __init__(self, ensemble: JudgeEnsemble) -> None:
        self.ensemble = ensemble
        self.cache: dict[tuple[str, str, str, str], JudgeVerdict] = {}

    async def score(self, request: JudgeRequest) -> JudgeVerdict:
        key = (request.rubric, request.answer, request.reference, request.evidence)
        cached = self.cache.get(key)
        models = list(self.ensemble.models)
        if cached is None or models == ["rules"]:
            verdict = await self.ensemble.score(request)
            self.cache[key] = verdict
            return verdict
        if "rules" not in models:
            return cached
        rules_only = copy.copy(self.ensemble)
        rules_only.models = ["rules"]
        rules = await rules_only.score(request)
        per_judge = {k: v for k, v in cached.per_judge.items() if k != "rules"} | rules.per_judge
        return JudgeVerdict(
            score=sum(per_judge.values()) / len(per_judge),
            per_judge=per_judge,
            raw=dict(cached.raw),
            votes={**cached.votes, **rules.votes},
            errors={k: v for k, v in cached.errors.items() if k != "rules"} | rules.errors,
            failed=[f for f in cached.failed if f != "rules"] + rules.failed,
        )


def _note_refused(record: SampleRecord, traj: Trajectory) -> None:
    if traj.refused:
        record.notes.append(f"{traj.refused} call(s) refused past the tool budget")


async def _judge_answer(
    case: dict[str, Any], traj: Trajectory, record: SampleRecord, submitted: Any, ensemble: Any
) -> SampleRecord:
    """Check one answer against its task's schema and ask the judges for SC and RP."""
    record.submitted = submitted
    try:
        parsed = parse_answer(case["task"], case["level"], submitted)
    except AnswerSchemaError as exc:
        record.schema_error = f"answer does not follow the schema: {exc}"
        record.notes.append(record.schema_error)
        _note_refused(record, traj)
        return record
    _note_refused(record, traj)
    db_path = record.db_path
    city = city_handle.open_city(db_path)
    answer_text = json.dumps(parsed.raw, ensure_ascii=False)
    reference = json.dumps(case["answer"], ensure_ascii=False)
    base = {"db_path": db_path, "case": case, "parsed": parsed, "trajectory": traj, "protocol": record.protocol}
    if "sc" in M.applicable(case["task"], case["level"]):
        rubric = (
            SC_RUBRIC
            + f"Request: {case['question']}\nConstraints:\n"
            + "\n".join(f"- {c['text']}" for c in case["constraints"])
        )
        request = JudgeRequest(
            rubric=rubric,
            answer=answer_text,
            reference=reference,
            evidence=_judge_evidence(city, case, parsed),
            context={**base, "metric": "sc"},
        )
        record.sc_judges = await _judge(ensemble, request, "sc", record)
    record.rp_judges = await _judge(
        ensemble,
        JudgeRequest(
            rubric=RP_RUBRIC,
            answer=answer_text,
            reference="",
            evidence=traj.observed_text()[:_JUDGE_EVIDENCE_CHARS],
            context={**base, "metric": "rp"},
        ),
        "rp",
        record,
    )
    return record


async def _judge(ensemble: Any, request: JudgeRequest, metric: str, record: SampleRecord) -> dict[str, float] | None:
    """The judges' scores for `metric`, every vote kept in `record.judge_votes`. When every judge
    fails the case cannot be judged: `record.judge_error` makes the sample an error (counted in
    n_errors), instead of a metric that silently drops out of the mean."""
    try:
        verdict = await ensemble.score(request)
    except JudgesFailed as exc:
        record.judge_votes[metric] = exc.verdict.record()
        record.judge_error = f"{metric.upper()} judges failed: {exc}"
        record.notes.append(record.judge_error)
        return None
    record.judge_votes[metric] = verdict.record()
    if verdict.failed:
        record.notes.append(f"{metric.upper()} judge(s) without a readable vote: {', '.join(verdict.failed)}")
    return dict(verdict.per_judge)


# --------------------------------------------------------------------------------------------
# Step 2: the registered metrics
# --------------------------------------------------------------------------------------------


@dataclass
class _Sample:
    case: dict[str, Any]
    record: SampleRecord
    parsed: ParsedAnswer | None  # None: the answer is off the schema

    @property
    def loose(self) -> bool:
        """Text values compared ignoring punctuation (the robust protocol)."""
        return self.record.protocol == "robust"

    @property
    def city(self) -> city_handle.City:
        return city_handle.open_city(self.record.db_path)

    def applies(self, metric: str) -> bool:
        return metric in M.applicable(self.case["task"], self.case["level"])


def record_of(metadata: dict[str, Any], protocol: str) -> dict[str, Any]:
    """The sample's record under `protocol` (the judging step keeps one per protocol)."""
    by_protocol = metadata.get(BY_PROTOCOL_KEY)
    raw = by_protocol.get(protocol) if by_protocol else metadata.get(RECORD_KEY)
    if raw is None:
        raise ValueError("no LifePlanner record: the lifeplanner_judging solver step did not run")
    return raw


#: the last records read, by identity: the metrics of one sample read the same record in turn
_READ: dict[int, tuple[dict[str, Any], list[_Sample]]] = {}


def _samples(case: dict[str, Any], raw: dict[str, Any]) -> list[_Sample]:
    """The record's sample, or one per candidate answer (the one-answer rule)."""
    got = _READ.get(id(raw))
    if got is not None and got[0] is raw:
        return got[1]
    samples = _read_samples(case, raw)
    if len(_READ) >= 4:
        _READ.clear()
    _READ[id(raw)] = (raw, samples)
    return samples


def _read_samples(case: dict[str, Any], raw: dict[str, Any]) -> list[_Sample]:
    record = SampleRecord(**raw)
    if record.candidates:
        return [s for c in record.candidates for s in _read_samples(case, c)]
    parsed = None if record.schema_error else parse_answer(case["task"], case["level"], record.submitted)
    return [_Sample(case, record, parsed)]


def _worst(inp: MetricInput, fn) -> float:
    """`fn` of the sample, the minimum over its candidate answers (NaN where it does not apply)."""
    values = [float(fn(s)) for s in _samples(inp.metadata["case"], record_of(inp.metadata, inp.protocol))]
    return math.nan if any(math.isnan(v) for v in values) else min(values)


def _sample(inp: MetricInput) -> _Sample:
    return _samples(inp.metadata["case"], record_of(inp.metadata, inp.protocol))[0]


def _outcome(metric: str, compute):
    """An outcome metric: NaN where Table 11 does not apply it, 0 for an answer off the schema."""

    def one(s: _Sample) -> float:
        if not s.applies(metric):
            return math.nan
        if s.parsed is None:
            return 0.0
        return float(compute(s))

    return lambda inp: _worst(inp, one)


def _piou(s: _Sample) -> float:
    # an `_outcome` metric: called on a parsed answer only
    return M.place_set_iou(_predicted_places(s.city, cast(ParsedAnswer, s.parsed)), s.case["reference_places"])


def _judges(scores: dict[str, float] | None) -> list[float] | None:
    return None if scores is None else list(scores.values())


def _sc(s: _Sample) -> float:
    scores = _judges(s.record.sc_judges)
    return math.nan if scores is None else M.semantic_constraint(scores)


_COMPUTE = {
    "a": lambda s: attribute_accuracy_of(s.city, s.case, s.parsed, loose=s.loose),
    "piou": _piou,
    "rd_distance": lambda s: M.routing_deviation(
        s.parsed.total_distance_m, s.case["answer"]["total_distance_m"], _piou(s)
    ),
    "rd_time": lambda s: M.routing_deviation(s.parsed.total_time_s, s.case["answer"]["total_time_s"], _piou(s)),
    "oc": lambda s: M.order_consistency(s.parsed.order, s.case["reference_order"], _piou(s)),
    "sc": _sc,
}
DESCRIPTIONS = {
    "a": "Attribute Accuracy (eq. 1)",
    "piou": "Place-set IoU (eq. 2)",
    "rd_distance": "Routing Deviation of the total distance (eq. 3)",
    "rd_time": "Routing Deviation of the total time (eq. 3)",
    "oc": "Order Consistency (eq. 4)",
    "sc": "Semantic Constraint satisfaction: mean of the judge ensemble",
}
for _name, _fn in _COMPUTE.items():
    register_metric(_name, suites=[SUITE], description=DESCRIPTIONS[_name])(_outcome(_name, _fn))


@register_metric("pr", suites=[SUITE], description="Pass Rate at alpha: SC > alpha and every other outcome metric = 1")
def pr_metric(inp: MetricInput) -> float:
    return _worst(inp, _pr)


def _pr(s: _Sample) -> float:
    if s.parsed is None:
        return 0.0
    app = M.applicable(s.case["task"], s.case["level"])
    values = {m: float(fn(s)) for m, fn in _COMPUTE.items() if m in app}
    if any(math.isnan(v) for v in values.values()):
        return math.nan  # SC without a verdict: the case cannot be judged
    return M.pass_rate(values, app, s.record.alpha)


@register_metric("rp", suites=[SUITE], description="Reasoning Purity: mean of the judge ensemble")
def rp_metric(inp: MetricInput) -> float:
    return _worst(inp, _rp)


def _rp(s: _Sample) -> float:
    if s.parsed is None:
        return 0.0
    scores = _judges(s.record.rp_judges)
    return math.nan if scores is None else M.reasoning_purity(scores)


@register_metric("ig", suites=[SUITE], description="Information Grounding (eq. 5): coverage of τ*'s evidence")
def ig_metric(inp: MetricInput) -> float:
    s = _sample(inp)
    return M.information_grounding(s.record.observed_evidence, s.case["evidence"])


@register_metric("te", suites=[SUITE], description="Tool Efficiency (eq. 6): min(1, |τ*| / |τ|)")
def te_metric(inp: MetricInput) -> float:
    """|τ| is every call the agent issued (issue 29: "the actual number of calls"), those the
    budget refused included: an agent that keeps calling past the budget is no more efficient for
    being stopped."""
    s = _sample(inp)
    return M.tool_efficiency(len(s.case["tau_star"]), s.record.tool_calls + s.record.refused_calls)


@register_metric("input_tokens", suites=[SUITE], description="Input tokens of the evaluated agent")
def input_tokens_metric(inp: MetricInput) -> float:
    return float(_sample(inp).record.tokens.get("input", 0))


@register_metric("output_tokens", suites=[SUITE], description="Output tokens of the evaluated agent")
def output_tokens_metric(inp: MetricInput) -> float:
    return float(_sample(inp).record.tokens.get("output", 0))


def extract_answer(raw: str, protocol: str = "robust") -> tuple[str, str]:
    """The submitted answer, and the notes `evaluate_sample` recorded under `protocol` (a schema
    problem, the one-answer rule, calls refused past the budget, a failed judge) as the problem
    that explains the scores."""
    from geoeval.api import sample_state

    state = sample_state()
    metadata = (state.metadata or {}) if state is not None else {}
    try:
        record = record_of(metadata, protocol)
    except ValueError:
        record = {}
    return raw.strip(), "; ".join(record.get("notes") or [])


def record_metadata(records: dict[str, SampleRecord], protocol: str) -> dict[str, Any]:
    """The sample metadata the judging step leaves for the metrics: the record under the run's
    `protocol` (`RECORD_KEY`, what reports read) and every protocol's (`BY_PROTOCOL_KEY`)."""
    return {
        RECORD_KEY: records[protocol].to_dict(),
        BY_PROTOCOL_KEY: {p: r.to_dict() for p, r in records.items()},
    }


def metric_values(
    case: dict[str, Any], record: SampleRecord, metric_names: list[str]
) -> tuple[dict[str, float], list[str]]:
    """The core scorer's computation for one evaluated case under the record's protocol, without
    Inspect (tests, tools)."""
    inp = MetricInput(
        answer=json.dumps(record.submitted, ensure_ascii=False),
        raw="",
        target=[],
        metadata={"suite": SUITE, "case": case, RECORD_KEY: record.to_dict()},
        tokens=dict(record.tokens),
        protocol=record.protocol,
    )
    values, problems = compute_metrics(metric_names, inp)
    return values, record.notes + problems


@dataclass
class ScoredSample:
    """One sample scored outside Inspect exactly as a run scores it (`score_sample`)."""

    values: dict[str, float]
    records: dict[str, SampleRecord]  # per protocol
    protocol_disagreement: dict[str, dict[str, float]]
    failures: list[str]

    @property
    def record(self) -> SampleRecord:
        return next(iter(self.records.values()))

    def reading(self, protocol: str) -> dict[str, Any]:
        """What the reader made of the answer under `protocol` (for `AnswerScore.reading`)."""
        r = self.records[protocol]
        return {
            "protocol": protocol,
            "submitted_as_read": r.submitted,
            "rules": list(r.reading),
            "schema_error": r.schema_error,
            "candidates": len(r.candidates) or 1,
            "sc_judges": r.sc_judges,
            "rp_judges": r.rp_judges,
            "notes": list(r.notes),
        }


def score_sample(
    sample_metadata: dict[str, Any],
    messages: list[Any],
    db_path: str,
    ensemble: JudgeEnsemble,
    *,
    alpha: float,
    protocol: str,
    metric_names: list[str],
    completion: str = "",
    tokens: dict[str, int] | None = None,
) -> ScoredSample:
    """The judging step and the core scorer (`score_both_protocols`) for one finished sample: what
    `task.lifeplanner_judging` and `geoeval_scorer` do in a run, for the public scoring entry point
    (`LifePlannerSuite.score_answers`) and the meta-evaluation."""

    from geoeval.api import score_both_protocols

    case = sample_metadata["case"]
    records = asyncio.run(evaluate_both(case, messages, db_path, ensemble, alpha=alpha, tokens=tokens))
    metadata = {**sample_metadata, "suite": SUITE, **record_metadata(records, protocol)}
    _, _, values, failures, disagreement = score_both_protocols(
        list(metric_names),
        lambda raw, protocol="robust": (raw.strip(), ""),
        completion,
        [],
        metadata,
        dict(tokens or {}),
        protocol,
    )
    ordered = {protocol: records[protocol], **{p: r for p, r in records.items() if p != protocol}}
    return ScoredSample(values, ordered, disagreement, failures)
