"""What a case's recordings can ground, and what a run's table says about it (issue 40).

A rubric line is *grounded by the recordings* when the reference answer (`generate.reference`,
the oracle's answer) composed from the recorded responses to the case's expected calls meets it
under the run's judge reading: the calls the ground truth expects, made as the oracle makes them
(`suite.oracle_plan`: the case's recorded call of each expected tool), answered by the replay
sandbox, each response as the agent receives it (Inspect's tool-output limit). A line that answer
cannot meet is one no recording grounds: the demo's search_poi has no recordings, a fact no
response states (a museum's closing day), a response past the output limit, a request the answer
restates but no record bears. A run's summary then lists those lines and scores the run on the
rest (`grounded_scores`): the oracle's self-check on the authors' demo reaches 1.000 there (its
plain ECR, 0.375, counts lines no answer built from the recordings could meet), which checks the
whole harness (the dialogue through Inspect, the sandbox's matching, the judges, the stored
verdicts) against the same answer computed directly. The other note counts the tool calls the
sandbox served: an agent whose calls find no recording answers without evidence and meets no
factor (the demo's clarify_baseline), which its table then says instead of showing bare zeros.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from geoeval.api import SampleResult
from geoeval.suites.mapsatisfy.generate.reference import reference_answer
from geoeval.suites.mapsatisfy.judging.rules_judge import rules_verdicts
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory

#: the keys of a sample's `details` the solver writes for these notes
VERDICT_DETAILS = "verdicts"  # {"explicit_met": [...], "implicit_satisfied": [...]} under the run's protocol
CALL_DETAILS = "tool_calls"  # {"made": n, "served": k}


@dataclass(frozen=True)
class Grounded:
    """The lines of one case that the recordings ground (indices into its explicit and implicit
    lists) and the labels of those they do not (`E2 <text>`, `I1 <rubric>`)."""

    explicit: tuple[int, ...]
    implicit: tuple[int, ...]
    ungrounded: tuple[str, ...]


#: Inspect's limit on a tool output the model receives (`GenerateConfig.max_tool_output`, unset
#: in MapSatisfy's task): longer outputs reach the agent middle-truncated to this many bytes
TOOL_OUTPUT_LIMIT = 16 * 1024


def as_received(content: str, limit: int = TOOL_OUTPUT_LIMIT) -> str:
    """A tool output as the agent receives it: past `limit` UTF-8 bytes, its first and last half
    of the limit (Inspect's middle truncation)."""
    encoded = content.encode("utf-8", errors="replace")
    if len(encoded) <= limit:
        return content
    half = limit // 2
    return encoded[:half].decode("utf-8", errors="ignore") + encoded[-(limit - half) :].decode("utf-8", errors="ignore")


def expected_calls_served(instance: Any, sandbox: Any) -> list[dict[str, Any]]:
    """The oracle's calls of the case (`suite.oracle_plan`) as the sandbox answers them, in the
    judges' call records."""
    from geoeval.suites.mapsatisfy.suite import oracle_plan

    calls = []
    for step in oracle_plan(instance, sandbox.store):
        response = sandbox.lookup(step["tool"], step["arguments"], trace_id=instance.task_id)
        calls.append(
            {
                "name": step["tool"],
                "arguments": dict(step["arguments"]),
                "content": as_received(response.content),
                "match_type": response.match_type,
                "error": response.error,
            }
        )
    return calls


def grounded_lines(instance: Any, sandbox: Any, protocol: str, setting: str = "normal") -> Grounded:
    """Which of the case's rubric lines the `rules` judge finds met by the reference answer over
    the recorded responses to the case's expected calls (see the module docstring)."""

    calls = expected_calls_served(instance, sandbox)
    given = [instance.query, json.dumps(instance.context.model_dump(mode="json"), ensure_ascii=False)]
    if setting == "profile" and instance.user_profile is not None:
        given.append(json.dumps(instance.user_profile.model_dump(mode="json"), ensure_ascii=False))
    served = any(c["match_type"] == "exact" for c in calls)
    answer = reference_answer(instance, calls) if served else ""
    verdicts = rules_verdicts(instance, Trajectory(answer=answer, tool_calls=calls, given=given), protocol=protocol)
    gt = instance.ground_truth
    explicit = tuple(i for i, v in enumerate(verdicts.explicit_met) if v)
    implicit = tuple(i for i, v in enumerate(verdicts.implicit_satisfied) if v)
    ungrounded = [f"E{i + 1} {text}" for i, text in enumerate(gt.explicit_intent) if i not in explicit]
    ungrounded += [
        f"I{i + 1} {factor.rubric_instruction}" for i, factor in enumerate(gt.implicit_intent) if i not in implicit
    ]
    return Grounded(explicit, implicit, tuple(ungrounded))


def grounded_scores(
    results: Sequence[SampleResult], grounding: dict[str, Grounded], instances: dict[str, Any]
) -> dict[str, tuple[float, int]]:
    """The run's ECR and IISR over the grounded lines only, each as (mean, cases): a case
    without a grounded line of the kind is left out; from each sample's verdicts
    (`details[VERDICT_DETAILS]`); {} when no sample carries them."""
    ecr, iisr = [], []
    for result in results:
        verdicts = (result.details or {}).get(VERDICT_DETAILS)
        case = grounding.get(result.sample_id)
        if not verdicts or case is None or result.status == "error":
            continue
        met = verdicts.get("explicit_met") or []
        if case.explicit:
            ecr.append(sum(float(met[i] or 0.0) for i in case.explicit) / len(case.explicit))
        satisfied = verdicts.get("implicit_satisfied") or []
        factors = instances[result.sample_id].ground_truth.implicit_intent
        weights = {i: float(factors[i].evidence_confidence) for i in case.implicit}
        if sum(weights.values()) > 0:
            iisr.append(sum(w * float(satisfied[i] or 0.0) for i, w in weights.items()) / sum(weights.values()))
    return {name: (sum(v) / len(v), len(v)) for name, v in (("ecr", ecr), ("iisr", iisr)) if v}


def summary_notes(
    instances: Sequence[Any], sandbox: Any, results: Sequence[SampleResult], protocol: str, setting: str
) -> list[str]:
    """The lines under a MapSatisfy run's summary tables (module docstring)."""
    notes = []
    recorded = [(r.details or {}).get(CALL_DETAILS) for r in results if r.status != "error"]
    counted = [c for c in recorded if c]
    if counted:
        made, served = sum(c["made"] for c in counted), sum(c["served"] for c in counted)
        without = sum(1 for c in counted if not c["served"])
        line = (
            f"Tool calls: {made} made, {served} served by the replay sandbox's recordings, {made - served} found "
            "no recorded call (a typed no_record reply)."
        )
        if without:
            line += (
                f" {without} of {len(counted)} dialogues had no served call: their answers state no evidence, so "
                "they meet no factor (ECR, IISR, IFS 0) whatever the agent asked."
            )
        notes.append(line)
    by_id = {str(i.task_id): i for i in instances}
    wanted = {r.sample_id for r in results}
    grounding = {sid: grounded_lines(by_id[sid], sandbox, protocol, setting) for sid in sorted(wanted) if sid in by_id}
    missing = {sid: g.ungrounded for sid, g in grounding.items() if g.ungrounded}
    if not missing:
        return notes
    n_lines = sum(
        len(by_id[sid].ground_truth.explicit_intent) + len(by_id[sid].ground_truth.implicit_intent) for sid in grounding
    )
    scores = grounded_scores(results, grounding, by_id)
    shown = "; ".join(f"{m.upper()} {v:.3f} ({n} cases with such lines)" for m, (v, n) in scores.items())
    lines = [
        f"Rubric lines no recording grounds: {sum(len(v) for v in missing.values())} of {n_lines}. Even the reference "
        "answer composed from the recorded responses to the case's expected calls (as the agent receives them) does "
        f"not meet them under the {protocol} reading, so an answer built from those responses cannot:"
    ]
    lines += [f"- {sid[:8]}: {'; '.join(labels)}" for sid, labels in missing.items()]
    if shown:
        lines.append(f"On the lines the recordings ground, this run scores {shown}.")
    notes.append("\n".join(lines))
    return notes
