"""The model judges: one Inspect model asked once per rubric item, `votes` times (section 4.2:
three evaluations at temperature 1.0, majority vote; `suite.judge_votes` and
`suite.judge_temperature`).

A reply without a parseable verdict is retried once, and an item whose votes all fail is that
judge's None. The votes are combined by `geoeval.judges.ensemble.majority_vote` (a tie, possible
only when a vote failed, is the mean of the tied votes).

A model judge sees every tool response whole, up to `evidence_chars` characters of tool output
per prompt (default `EVIDENCE_CHARS`); a response cut to fit is marked in the prompt and counted
in the verdicts' `raw["evidence"]` (`responses`, `truncated`, `chars_cut`), so a run can report how
much evidence its judges did not see.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from geoeval.api import clean_text
from geoeval.judges.ensemble import majority_vote, vote_cache
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory, Verdicts
from geoeval.suites.mapsatisfy.metrics import FactCheck

EVIDENCE_CHARS = 200_000  # tool-output characters per judge prompt (the longest demo response is 40,189)

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
    "grounding": (
        "Every fact the final answer claims under this rubric row must be supported by the tool "
        "responses, the user's input or the context; facts it does not claim are ignored. Is the "
        "answer faithful under this row (YES also when it claims nothing under this row, as long as "
        "the answer states some fact from the tool responses; NO when it states none at all: an "
        "empty answer, a refusal, or an answer made of facts no tool returned)?"
    ),
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
    """Majority of the parsed votes (`geoeval.judges.ensemble.majority_vote`; a tie is the mean of the tied
    values); None when no vote parsed."""

    parsed = [v for v in votes if v is not None]
    return majority_vote(parsed) if parsed else None


async def model_item_verdict(
    model: Any, prompt: str, votes: int, retries: int = 1, cache: bool | str = False
) -> tuple[float | None, list[str]]:
    """A model judge's majority verdict on one item over `votes` votes. `cache` (`judge.cache`):
    Inspect's cache, one entry per vote and attempt, so that votes stay independent and an
    unparseable reply is asked again rather than read back from the cache."""

    replies: list[str] = []
    results: list[float | None] = []
    for vote in range(votes):
        verdict = None
        for attempt in range(1 + retries):  # an unparseable reply is asked again before it counts as failed
            policy = vote_cache(cache, vote, attempt)
            out = await (model.generate(prompt, cache=policy) if policy else model.generate(prompt))
            replies.append(clean_text(out.completion or "", max_chars=RAW_REPLY_CHARS))
            verdict = parse_verdict(out.completion)
            if verdict is not None:
                break
        results.append(verdict)
    return majority(results), replies


def evidence_text(tool_calls: Sequence[dict[str, Any]], budget: int = EVIDENCE_CHARS) -> tuple[str, dict[str, int]]:
    """The tool responses for a judge prompt, whole while they fit in `budget` characters of
    output; past it each response gets an equal share of what is left, cut with a marker. Returns
    the text and the count of responses, truncated responses and characters cut."""
    contents = [str(c.get("content") or "") for c in tool_calls]
    stats = {"responses": len(contents), "truncated": 0, "chars_cut": 0}
    left, lines = budget, []
    for i, (call, content) in enumerate(zip(tool_calls, contents)):
        share = left // max(1, len(contents) - i)
        if len(content) > share:
            stats["truncated"] += 1
            stats["chars_cut"] += len(content) - share
            content = content[:share] + f" …[{len(content) - share} characters cut: evidence budget]"
        left -= min(len(contents[i]), share)
        lines.append(f"{call['name']}({json.dumps(call.get('arguments') or {}, ensure_ascii=False)}) -> {content}")
    return "\n".join(lines) or "(none)", stats


async def model_verdicts(
    model: Any,
    name: str,
    instance: Any,
    trajectory: Trajectory,
    votes: int,
    evidence_chars: int = EVIDENCE_CHARS,
    cache: bool | str = False,
) -> Verdicts:
    gt = instance.ground_truth
    evidence, stats = evidence_text(trajectory.tool_calls, evidence_chars)
    given = "\n".join(trajectory.given)
    raw: dict[str, Any] = {"evidence": stats}

    async def ask(kind: str, index: int, item: str) -> float | None:
        prompt = JUDGE_PROMPT.format(
            question=QUESTIONS[kind], item=item, given=given, evidence=evidence, answer=trajectory.answer
        )
        verdict, replies = await model_item_verdict(model, prompt, votes, cache=cache)
        raw[f"{name}:{kind}:{index}"] = replies
        return verdict

    explicit = [await ask("explicit", i, item) for i, item in enumerate(gt.explicit_intent)]
    implicit = [await ask("implicit", i, f.rubric_instruction) for i, f in enumerate(gt.implicit_intent)]
    rows: list[list[FactCheck] | None] = []
    for i, row in enumerate(instance.factual_answer_rubric):
        v = await ask("grounding", i, row)
        rows.append(None if v is None else [FactCheck(True, v >= 0.5)])
    return Verdicts(explicit, implicit, rows, raw)
