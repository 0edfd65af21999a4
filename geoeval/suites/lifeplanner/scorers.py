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

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from geoeval.core.registry import register_metric
from geoeval.core.scoring import MetricInput, compute_metrics
from geoeval.judges.ensemble import JudgeEnsemble, JudgeRequest, JudgesFailed
from geoeval.suites.lifeplanner import metrics as M
from geoeval.suites.lifeplanner.scoring.answers import AnswerSchemaError, ParsedAnswer, load_answer, parse_answer
from geoeval.suites.lifeplanner.scoring.judging import answer_place, attribute_accuracy_of, place_records
from geoeval.suites.lifeplanner.scoring.trajectory import Trajectory, trajectory_from_messages
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import notes as note_tools

SUITE = "lifeplanner"
RECORD_KEY = "lifeplanner"
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
    ensemble: JudgeEnsemble,
    *,
    alpha: float = M.DEFAULT_ALPHA,
    tokens: dict[str, int] | None = None,
) -> SampleRecord:
    """Read the finished sample (its case and messages) and run the judges on it."""
    traj: Trajectory = trajectory_from_messages(messages)
    record = SampleRecord(
        db_path=db_path,
        alpha=alpha,
        submitted=load_answer(traj.submitted),
        tool_calls=traj.n_calls,
        refused_calls=traj.refused,
        failure_classes=traj.failure_counts(),
        observed_evidence=sorted(set(case["evidence"]) & traj.observed),
        tokens=dict(tokens or {}),
    )
    try:
        parsed = parse_answer(case["task"], case["level"], traj.submitted)
    except AnswerSchemaError as exc:
        record.schema_error = f"answer does not follow the schema: {exc}"
        record.notes.append(record.schema_error)
        parsed = None
    if traj.refused:
        record.notes.append(f"{traj.refused} call(s) refused past the tool budget")
    if parsed is None:
        return record
    city = city_handle.open_city(db_path)
    answer_text = json.dumps(parsed.raw, ensure_ascii=False)
    reference = json.dumps(case["answer"], ensure_ascii=False)
    base = {"db_path": db_path, "case": case, "parsed": parsed, "trajectory": traj}
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


async def _judge(
    ensemble: JudgeEnsemble, request: JudgeRequest, metric: str, record: SampleRecord
) -> dict[str, float] | None:
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
    def city(self) -> city_handle.City:
        return city_handle.open_city(self.record.db_path)

    def applies(self, metric: str) -> bool:
        return metric in M.applicable(self.case["task"], self.case["level"])


def _sample(inp: MetricInput) -> _Sample:
    case = inp.metadata["case"]
    raw = inp.metadata.get(RECORD_KEY)
    if raw is None:
        raise ValueError("no LifePlanner record: the lifeplanner_judging solver step did not run")
    record = SampleRecord(**raw)
    parsed = None if record.schema_error else parse_answer(case["task"], case["level"], record.submitted)
    return _Sample(case, record, parsed)


def _outcome(metric: str, compute):
    """An outcome metric: NaN where Table 11 does not apply it, 0 for an answer off the schema."""

    def fn(inp: MetricInput) -> float:
        s = _sample(inp)
        if not s.applies(metric):
            return math.nan
        if s.parsed is None:
            return 0.0
        return float(compute(s))

    return fn


def _piou(s: _Sample) -> float:
    return M.place_set_iou(_predicted_places(s.city, s.parsed), s.case["reference_places"])


def _judges(scores: dict[str, float] | None) -> list[float] | None:
    return None if scores is None else list(scores.values())


def _sc(s: _Sample) -> float:
    scores = _judges(s.record.sc_judges)
    return math.nan if scores is None else M.semantic_constraint(scores)


_COMPUTE = {
    "a": lambda s: attribute_accuracy_of(s.city, s.case, s.parsed),
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
    s = _sample(inp)
    if s.parsed is None:
        return 0.0
    app = M.applicable(s.case["task"], s.case["level"])
    values = {m: float(fn(s)) for m, fn in _COMPUTE.items() if m in app}
    if any(math.isnan(v) for v in values.values()):
        return math.nan  # SC without a verdict: the case cannot be judged
    return M.pass_rate(values, app, s.record.alpha)


@register_metric("rp", suites=[SUITE], description="Reasoning Purity: mean of the judge ensemble")
def rp_metric(inp: MetricInput) -> float:
    s = _sample(inp)
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
    s = _sample(inp)
    return M.tool_efficiency(len(s.case["tau_star"]), s.record.tool_calls)


@register_metric("input_tokens", suites=[SUITE], description="Input tokens of the evaluated agent")
def input_tokens_metric(inp: MetricInput) -> float:
    return float(_sample(inp).record.tokens.get("input", 0))


@register_metric("output_tokens", suites=[SUITE], description="Output tokens of the evaluated agent")
def output_tokens_metric(inp: MetricInput) -> float:
    return float(_sample(inp).record.tokens.get("output", 0))


def extract_answer(raw: str) -> tuple[str, str]:
    """The submitted answer, and the notes `evaluate_sample` recorded (a schema problem, calls
    refused past the budget, a failed judge) as the problem that explains the scores."""
    from geoeval.core.private_api import sample_state

    state = sample_state()
    record = ((state.metadata or {}).get(RECORD_KEY) if state is not None else None) or {}
    return raw.strip(), "; ".join(record.get("notes") or [])


def metric_values(
    case: dict[str, Any], record: SampleRecord, metric_names: list[str]
) -> tuple[dict[str, float], list[str]]:
    """The core scorer's computation for one evaluated case, without Inspect (tests, tools)."""
    inp = MetricInput(
        answer=json.dumps(record.submitted, ensure_ascii=False),
        raw="",
        target=[],
        metadata={"suite": SUITE, "case": case, RECORD_KEY: record.to_dict()},
        tokens=dict(record.tokens),
    )
    values, problems = compute_metrics(metric_names, inp)
    return values, record.notes + problems
