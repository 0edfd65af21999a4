"""The judge ensemble (`judge=` config group), shared by the suites that need judges.

Each judge scores a request in [0, 1]. `rules` is the suite's deterministic offline judge; any
other entry is an Inspect model string, run at the configured temperature (0 by default) `votes`
times. A judge's votes are combined by `aggregation`: "median" (the default, LifePlanner's graded
scores) or "majority" (`majority_vote`: the most frequent value, MapSatisfyBench section 4.2's
majority vote; a tie is the mean of the tied values). For 0/1 votes with no tie the two agree.
The ensemble's score is the mean over judges (LifePlanner's SC/RP).

Failures are visible, never a silent 0 and never a shrunken denominator: every vote is kept with
its raw reply (`JudgeVerdict.votes` / `.raw`). A vote whose reply has no readable score, or whose
call raised, is None with the reason in `.errors`. A judge with no readable vote has no score
(it is left out of the mean and named in `.failed`); when every judge fails, `score` raises
`JudgesFailed`, which the suites turn into an errored sample (counted in `n_errors`).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from geoeval.core.run.preflight import RETRY_DEFAULTS
from geoeval.core.text import clean_text

if TYPE_CHECKING:
    from geoeval.core.config.schema import JudgeSpec

JUDGE_PROMPT = """You are a strict evaluator. Score how well the ANSWER satisfies the RUBRIC,
using the REFERENCE and the EVIDENCE. Reply with one line `SCORE: <number between 0 and 1>`
followed by a one-sentence reason.

RUBRIC:
{rubric}

REFERENCE:
{reference}

EVIDENCE:
{evidence}

ANSWER:
{answer}
"""

_SCORE_RE = re.compile(r"SCORE\s*[:=]\s*([01](?:\.\d+)?|\.\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeRequest:
    rubric: str
    answer: str
    reference: str = ""
    evidence: str = ""
    context: dict[str, Any] = field(default_factory=dict)  # what a rules judge may need (db path, ids)


@dataclass
class JudgeVerdict:
    score: float
    per_judge: dict[str, float]  # the judges that gave a readable score
    raw: dict[str, list[str]] = field(default_factory=dict)  # every reply, per judge
    votes: dict[str, list[float | None]] = field(default_factory=dict)  # None: unreadable or failed
    errors: dict[str, list[str]] = field(default_factory=dict)  # why a vote is None
    failed: list[str] = field(default_factory=list)  # judges without a readable vote

    def record(self) -> dict[str, Any]:
        """The verdict as JSON-ready data, for the sample's stored details."""
        return {
            "score": self.score,
            "per_judge": self.per_judge,
            "votes": self.votes,
            "raw": self.raw,
            "errors": self.errors,
            "failed": self.failed,
        }


class JudgesFailed(RuntimeError):
    """Every judge of the ensemble failed: the case cannot be judged (an error, not a 0)."""

    def __init__(self, message: str, verdict: JudgeVerdict) -> None:
        super().__init__(message)
        self.verdict = verdict


def parse_score(text: str) -> float | None:
    """`SCORE: 0.8` -> 0.8; None when the reply carries no score in [0, 1]."""
    m = _SCORE_RE.search(text or "")
    if not m:
        return None
    value = float(m.group(1))
    return value if 0.0 <= value <= 1.0 else None


def combine_votes(votes: list[float]) -> float:
    return float(statistics.median(votes)) if votes else 0.0


def majority_vote(votes: list[float]) -> float:
    """The value most votes gave (section 4.2 of MapSatisfyBench: majority of three). A tie between
    values (two votes that disagree, when the third failed) is the mean of the tied values: the
    votes do not decide, so the verdict is graded halfway. Raises on no votes (no verdict)."""
    if not votes:
        raise ValueError("majority_vote: no votes")
    counts: dict[float, int] = {}
    for v in votes:
        counts[float(v)] = counts.get(float(v), 0) + 1
    top = max(counts.values())
    tied = [v for v, n in counts.items() if n == top]
    return sum(tied) / len(tied)


AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {"median": combine_votes, "majority": majority_vote}


def vote_cache(setting: bool | str, vote: int, attempt: int = 0) -> Any:
    """The `CachePolicy` of one judge vote (False: no cache): the vote's and attempt's numbers are
    part of the key (votes stay independent; a reply asked again is not read back)."""
    if setting is False:
        return False
    from inspect_ai.model import CachePolicy

    scopes = {"vote": str(vote), "attempt": str(attempt)}
    if setting is True:  # Inspect's default expiry
        return CachePolicy(scopes=scopes)
    return CachePolicy(expiry=str(setting), scopes=scopes)


class JudgeEnsemble:
    def __init__(
        self,
        spec: JudgeSpec,
        rules: Callable[[JudgeRequest], float] | None = None,
        model_factory: Callable[..., Any] | None = None,
        aggregation: str = "median",
    ) -> None:
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {sorted(AGGREGATIONS)}, got {aggregation!r}")
        self.aggregate = AGGREGATIONS[aggregation]
        self.models: list[str] = list(spec.models)
        self.temperature: float = spec.temperature
        self.votes: int = spec.votes
        # Inspect's model-call cache (`judge.cache`): a rerun or rescore asks a judge the same
        # question again; each vote is its own entry, so votes at temperature > 0 stay independent
        self.cache: bool | str = spec.cache
        self.rules = rules
        self._model_factory = model_factory  # default: inspect_ai.model.get_model

    def _model(self, name: str) -> Any:
        from inspect_ai.model import GenerateConfig

        from geoeval.core.run.models import build_role_model, clean_model_replies

        # bounded retries: a dead judge endpoint becomes failed votes, never an endless wait
        config = GenerateConfig(temperature=self.temperature, **RETRY_DEFAULTS)
        if self._model_factory is None:
            return build_role_model(name, config)  # cleaned replies, the SDK's own retries off
        return clean_model_replies(self._model_factory(name, config=config))  # a judge's reply enters the log too

    async def score(self, request: JudgeRequest) -> JudgeVerdict:
        verdict = JudgeVerdict(score=math.nan, per_judge={})
        for name in self.models:
            if name == "rules":
                if self.rules is None:
                    raise ValueError("the `rules` judge is not available for this suite")
                try:
                    verdict.per_judge[name] = float(self.rules(request))
                    verdict.votes[name] = [verdict.per_judge[name]]
                except Exception as exc:  # a broken rule is a failed judge, reported like any other
                    verdict.votes[name] = [None]
                    verdict.errors[name] = [f"{type(exc).__name__}: {exc}"[:500]]
                    verdict.failed.append(name)
                continue
            prompt = JUDGE_PROMPT.format(
                rubric=request.rubric, reference=request.reference, evidence=request.evidence, answer=request.answer
            )
            model = self._model(name)
            replies: list[str] = []
            votes: list[float | None] = []
            errors: list[str] = []
            for vote in range(self.votes):
                try:
                    cache = vote_cache(self.cache, vote)
                    out = await (model.generate(prompt, cache=cache) if cache else model.generate(prompt))
                except Exception as exc:  # provider failure after its retries: this vote is lost
                    replies.append("")
                    votes.append(None)
                    errors.append(f"{type(exc).__name__}: {exc}"[:500])
                    continue
                replies.append(clean_text(out.completion or ""))
                parsed = parse_score(out.completion)
                votes.append(parsed)
                if parsed is None:
                    errors.append("reply has no readable `SCORE: x` in [0, 1]")
            verdict.raw[name], verdict.votes[name] = replies, votes
            if errors:
                verdict.errors[name] = errors
            readable = [v for v in votes if v is not None]
            if readable:
                verdict.per_judge[name] = self.aggregate(readable)
            else:
                verdict.failed.append(name)
        if not verdict.per_judge:
            reasons = "; ".join(f"{n}: {(verdict.errors.get(n) or ['no vote'])[0]}" for n in verdict.failed)
            raise JudgesFailed(f"every judge failed ({reasons})", verdict)
        verdict.score = sum(verdict.per_judge.values()) / len(verdict.per_judge)
        return verdict
