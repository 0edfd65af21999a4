"""The judge ensemble (`judge=` config group), shared by the suites that need judges.

Each judge scores a request in [0, 1]. `rules` is the suite's deterministic offline judge; any
other entry is an Inspect model string, run at the configured temperature (0 by default) `votes`
times. A judge's votes are combined by the median (for 0/1 verdicts that is the majority vote of
MapSatisfyBench section 4.2); the ensemble's score is the mean over judges (LifePlanner's SC/RP).
A model judge whose reply has no parseable score counts as 0 and the reply is kept for review.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    per_judge: dict[str, float]
    raw: dict[str, list[str]] = field(default_factory=dict)


def parse_score(text: str) -> float | None:
    """`SCORE: 0.8` -> 0.8; None when the reply carries no score in [0, 1]."""
    m = _SCORE_RE.search(text or "")
    if not m:
        return None
    value = float(m.group(1))
    return value if 0.0 <= value <= 1.0 else None


def combine_votes(votes: list[float]) -> float:
    return float(statistics.median(votes)) if votes else 0.0


class JudgeEnsemble:
    def __init__(self, spec: Any, rules: Callable[[JudgeRequest], float] | None = None,
                 model_factory: Callable[..., Any] | None = None) -> None:
        self.models: list[str] = list(spec.models)
        self.temperature: float = spec.temperature
        self.votes: int = spec.votes
        self.rules = rules
        self._model_factory = model_factory  # default: inspect_ai.model.get_model

    def _model(self, name: str) -> Any:
        from inspect_ai.model import GenerateConfig, get_model

        factory = self._model_factory or get_model
        return factory(name, config=GenerateConfig(temperature=self.temperature))

    async def score(self, request: JudgeRequest) -> JudgeVerdict:
        per_judge: dict[str, float] = {}
        raw: dict[str, list[str]] = {}
        for name in self.models:
            if name == "rules":
                if self.rules is None:
                    raise ValueError("the `rules` judge is not available for this suite")
                per_judge[name] = float(self.rules(request))
                continue
            model = self._model(name)
            prompt = JUDGE_PROMPT.format(rubric=request.rubric, reference=request.reference,
                                         evidence=request.evidence, answer=request.answer)
            replies, votes = [], []
            for _ in range(self.votes):
                out = await model.generate(prompt)
                replies.append(out.completion)
                parsed = parse_score(out.completion)
                votes.append(parsed if parsed is not None else 0.0)
            per_judge[name] = combine_votes(votes)
            raw[name] = replies
        score = sum(per_judge.values()) / len(per_judge) if per_judge else 0.0
        return JudgeVerdict(score=score, per_judge=per_judge, raw=raw)
