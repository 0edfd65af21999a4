"""The judges' verdicts of one dialogue: explicit factors met, c_i per implicit rubric, and the
grounding of each factual-rubric row.

The `judge` ensemble (`judge=`) names the judges. Each model judge is asked once per rubric item,
`votes` times (section 4.2: three evaluations, majority vote); a reply without a parseable
verdict is retried once, and an item whose votes all fail is that judge's None. Several judges
are averaged over those that gave a verdict; an item no judge could decide is None, which makes
only the metrics that depend on it None (as the authors' calculator does), and a case where no
judge decided any item is an error (counted in n_errors), not a case without values.

The offline `rules` judge decides from the trajectory and the sandbox records, with these rules
(it cannot read the semantics of a Chinese rubric line, so it checks what the trajectory shows):

1. The answer is *delivered* when the final assistant message is not a request to the user
   (`user_sim.is_request`) and is not empty.
2. *Claims* of the answer are its numbers and the texts it quotes in 「」, “” or "". A claim is
   *grounded* when it occurs in a served tool response (match type exact, vector, simulated or
   live; errors and no_record responses ground nothing) or in what the agent was given (the query,
   the context, the profile in the profile setting, the user's replies).
3. Explicit factor i is met when the answer is delivered and every expected tool was called with
   every required parameter (`paramter`) carried: the evidence the ground truth requires for the
   request was fetched and an answer was given.
4. Implicit factor i is satisfied (c_i = 1) when rule 3 holds and, for a factor whose evidence
   cites the user's profile, preferences or history (画像, 偏好, 习惯, 历史行为, profile,
   preference, habit) in a case whose expected tools include a profile tool
   (`search_user_profile`, `search_user_action_summary`), the profile evidence was acquired: a
   profile tool returned a served response, or the profile was given in the prompt (profile
   setting). Where the ground truth expects no profile tool, such evidence is in the context
   (the same-day history) the agent was given.
5. Each factual-rubric row covers every claim of the answer (the rules judge cannot attribute a
   claim to one row), so a row is faithful when every claim is grounded, and a row of an answer
   with no claims is faithful (facts not claimed are ignored).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from geoeval.core.text import clean_text
from geoeval.suites.mapsatisfy.metrics import FactCheck, tool_selection
from geoeval.suites.mapsatisfy.user_sim import is_request

PROFILE_TOOLS = ("search_user_profile", "search_user_action_summary")
SERVED = ("exact", "vector", "simulated", "live")
_PROFILE_EVIDENCE = ("画像", "偏好", "习惯", "历史行为", "长期", "profile", "preference", "habit")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUOTED = re.compile(r"「([^」]+)」|“([^”]+)”|\"([^\"]+)\"")


@dataclass
class Trajectory:
    """What the solver recorded for the judges and TS."""

    answer: str
    tool_calls: list[dict[str, Any]]  # {name, arguments, content, match_type, error}
    given: list[str]  # texts the agent was given: query, context, profile, user replies
    profile_in_prompt: bool = False

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Trajectory:
        return cls(answer=record.get("answer", ""), tool_calls=list(record.get("tool_calls", [])),
                   given=list(record.get("given", [])), profile_in_prompt=bool(record.get("profile_in_prompt")))


@dataclass
class Verdicts:
    explicit_met: list[float | None]
    implicit_satisfied: list[float | None]
    fact_rows: list[list[FactCheck] | None]
    raw: dict[str, Any] = field(default_factory=dict)  # model judges' replies, for review

    def all_failed(self) -> bool:
        """True when there were items to judge and no judge gave a verdict on any of them: the
        case cannot be judged (an error, counted in n_errors), not a case with no value."""
        items = [*self.explicit_met, *self.implicit_satisfied, *self.fact_rows]
        return bool(items) and all(item is None for item in items)

    def to_record(self) -> dict[str, Any]:
        return {
            "explicit_met": self.explicit_met,
            "implicit_satisfied": self.implicit_satisfied,
            "fact_rows": [None if row is None else [[f.claimed, f.grounded] for f in row] for row in self.fact_rows],
            "raw": self.raw,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Verdicts:
        rows = [None if row is None else [FactCheck(bool(c), g) for c, g in row] for row in record["fact_rows"]]
        return cls(list(record["explicit_met"]), list(record["implicit_satisfied"]), rows, record.get("raw", {}))


def answer_claims(answer: str) -> list[str]:
    """The answer's checkable claims (rule 2): quoted texts, then numbers outside the quotes."""
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(answer or "")]
    rest = _QUOTED.sub(" ", answer or "")
    return [q.strip() for q in quoted if q.strip()] + _NUMBER.findall(rest)


def _sources(trajectory: Trajectory) -> list[str]:
    served = [c.get("content", "") for c in trajectory.tool_calls if c.get("match_type") in SERVED and not c.get("error")]
    return served + list(trajectory.given)


def claim_grounded(claim: str, sources: Sequence[str]) -> bool:
    if _NUMBER.fullmatch(claim):
        # a number is grounded when a source states the same number (not a digit run inside another)
        return any(claim in _NUMBER.findall(text) or _same_number(claim, text) for text in sources)
    return any(claim in text for text in sources)


def _same_number(claim: str, text: str) -> bool:
    value = float(claim)
    return any(abs(float(n) - value) < 1e-9 for n in _NUMBER.findall(text))


def delivered(answer: str) -> bool:
    return bool((answer or "").strip()) and not is_request(answer)


def rules_verdicts(instance: Any, trajectory: Trajectory) -> Verdicts:
    """The offline `rules` judge (see the module docstring for its rules)."""
    from geoeval.suites.mapsatisfy.sandbox import ARGUMENT_ALIASES

    gt = instance.ground_truth
    calls = [(c["name"], c.get("arguments") or {}) for c in trajectory.tool_calls]
    selection = tool_selection(calls, instance.expected_tools, instance.required_parameters, ARGUMENT_ALIASES)
    evidence_fetched = not (selection.incorrect or selection.missed)
    answered = delivered(trajectory.answer)
    explicit = 1.0 if answered and evidence_fetched else 0.0
    profile_acquired = trajectory.profile_in_prompt or any(
        c["name"] in PROFILE_TOOLS and c.get("match_type") in SERVED and not c.get("error") for c in trajectory.tool_calls)
    profile_expected = any(t in PROFILE_TOOLS for t in instance.expected_tools)
    implicit = []
    for factor in gt.implicit_intent:
        needs_profile = profile_expected and any(w in (factor.evidence or "").lower() for w in _PROFILE_EVIDENCE)
        implicit.append(explicit if not needs_profile else (explicit if profile_acquired else 0.0))
    sources = _sources(trajectory)
    claims = [FactCheck(True, claim_grounded(c, sources)) for c in answer_claims(trajectory.answer)]
    return Verdicts([explicit] * len(gt.explicit_intent), implicit, [list(claims) for _ in instance.factual_answer_rubric])


# ---------------------------------------------------------------------------------------------
# Model judges

JUDGE_PROMPT = """You judge one reply of a map assistant against one rubric item. Reply with one line
`VERDICT: YES` or `VERDICT: NO`, then one sentence of reason.

{question}

RUBRIC ITEM:
{item}

USER REQUEST AND CONTEXT:
{given}

TOOL RESPONSES THE ASSISTANT RECEIVED:
{evidence}

ASSISTANT'S FINAL ANSWER:
{answer}
"""

QUESTIONS = {
    "explicit": "Does the final answer meet this explicit requirement of the user?",
    "implicit": "Does the final answer satisfy this implicit decision factor of the user?",
    "grounding": ("Every fact the final answer claims under this rubric row must be supported by the tool "
                  "responses, the user's input or the context; facts it does not claim are ignored. Is the "
                  "answer faithful under this row (YES also when it claims nothing under it)?"),
}
# a judge's raw reply is kept for review up to this length (the rest is cut, and says so)
RAW_REPLY_CHARS = 20_000
_VERDICT = re.compile(r"VERDICT\s*[:：]\s*(YES|NO)", re.IGNORECASE)


def parse_verdict(text: str) -> float | None:
    m = _VERDICT.search(text or "")
    if not m:
        return None
    return 1.0 if m.group(1).upper() == "YES" else 0.0


def majority(votes: Sequence[float | None]) -> float | None:
    """Majority of the parsed votes (the median, so a tie of two resolves to their mean); None when
    no vote parsed."""
    parsed = [v for v in votes if v is not None]
    return float(statistics.median(parsed)) if parsed else None


async def model_item_verdict(model: Any, prompt: str, votes: int, retries: int = 1) -> tuple[float | None, list[str]]:
    replies: list[str] = []
    results: list[float | None] = []
    for _ in range(votes):
        verdict = None
        for _attempt in range(1 + retries):  # an unparseable reply is asked again before it counts as failed
            out = await model.generate(prompt)
            replies.append(clean_text(out.completion or "", max_chars=RAW_REPLY_CHARS))
            verdict = parse_verdict(out.completion)
            if verdict is not None:
                break
        results.append(verdict)
    return majority(results), replies


async def model_verdicts(model: Any, name: str, instance: Any, trajectory: Trajectory, votes: int) -> Verdicts:
    gt = instance.ground_truth
    evidence = "\n".join(f"{c['name']}({json.dumps(c.get('arguments') or {}, ensure_ascii=False)}) -> "
                         f"{c.get('content', '')[:2000]}" for c in trajectory.tool_calls) or "(none)"
    given = "\n".join(trajectory.given)
    raw: dict[str, list[str]] = {}

    async def ask(kind: str, index: int, item: str) -> float | None:
        prompt = JUDGE_PROMPT.format(question=QUESTIONS[kind], item=item, given=given, evidence=evidence,
                                     answer=trajectory.answer)
        verdict, replies = await model_item_verdict(model, prompt, votes)
        raw[f"{name}:{kind}:{index}"] = replies
        return verdict

    explicit = [await ask("explicit", i, item) for i, item in enumerate(gt.explicit_intent)]
    implicit = [await ask("implicit", i, f.rubric_instruction) for i, f in enumerate(gt.implicit_intent)]
    rows: list[list[FactCheck] | None] = []
    for i, row in enumerate(instance.factual_answer_rubric):
        v = await ask("grounding", i, row)
        rows.append(None if v is None else [FactCheck(True, v >= 0.5)])
    return Verdicts(explicit, implicit, rows, raw)


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean over the judges that gave a verdict (a failed judge is left out and its reply
    kept, as in the shared ensemble); None only when none did."""
    given = [v for v in values if v is not None]
    return sum(given) / len(given) if given else None


def combine(verdicts: Sequence[Verdicts]) -> Verdicts:
    """Several judges: each item is the mean of the verdicts the judges gave (None when none
    did); a row is faithful when the mean of the judges' row verdicts is at least 1/2."""
    if len(verdicts) == 1:
        return verdicts[0]
    from geoeval.suites.mapsatisfy.metrics import row_faithful

    first = verdicts[0]
    explicit = [_mean([v.explicit_met[i] for v in verdicts]) for i in range(len(first.explicit_met))]
    implicit = [_mean([v.implicit_satisfied[i] for v in verdicts]) for i in range(len(first.implicit_satisfied))]
    rows: list[list[FactCheck] | None] = []
    for i in range(len(first.fact_rows)):
        per_judge = [None if v.fact_rows[i] is None else row_faithful(v.fact_rows[i]) for v in verdicts]
        score = _mean([None if p is None else float(p) for p in per_judge])
        rows.append(None if score is None else [FactCheck(True, score >= 0.5)])
    raw: dict[str, Any] = {}
    for v in verdicts:
        raw.update(v.raw)
    return Verdicts(explicit, implicit, rows, raw)


async def judge_dialogue(instance: Any, trajectory: Trajectory, judges: Sequence[str], votes: int,
                         temperature: float = 0.0, model_factory: Any = None) -> Verdicts:
    """Every judge's verdicts on one dialogue, combined."""
    from inspect_ai.model import GenerateConfig, get_model

    from geoeval.core.preflight import RETRY_DEFAULTS

    factory = model_factory or get_model
    results = []
    for name in judges:
        if name == "rules":
            results.append(rules_verdicts(instance, trajectory))
        else:
            model = factory(name, config=GenerateConfig(temperature=temperature, **RETRY_DEFAULTS))
            results.append(await model_verdicts(model, name, instance, trajectory, votes))
    return combine(results)
