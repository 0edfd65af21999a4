"""The one-answer rule, once for every suite: which of an answer's candidates are its answer.

Over the candidates in reading order (`candidates.assign_roles`):

1. an `ECHOED` or `REJECTED` candidate is never the answer, and a value the answer rejects
   anywhere is not its answer elsewhere either (naming a rejected place again does not recommend
   it), unless a correction after the rejection restores it;
2. a `CORRECTION` retracts every candidate of the sentences before it, and so does a `Retraction` ("Scratch
   that."): the last committed candidate is the answer; a `Retraction` of the last candidate ("It
   has closed down.") rejects that candidate;
3. a commitment supersedes the weaker candidates before it: an explicit final answer (strength 2)
   those of reasoning and conclusions before it, a conclusion (1) the candidates merely stated
   (0) before it. Candidates of equal strength stand together, and candidates after the last
   commitment stand beside it (an alternative offered after the answer is still offered);
4. equal candidates (the same `key`) are one, and a candidate the suite says another one subsumes
   (a leg of the route it restates) adds nothing.

What remains are the live candidates: none is no answer, one is the answer, two or more (a hedge,
options, two final answers) are scored by the suite at the worst candidate's value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from geoeval.core.reading.candidates import Candidate, Retraction, Role

T = TypeVar("T")

#: why a candidate was set aside
REJECTED, ECHOED, REJECTED_ELSEWHERE = "rejected", "echoed", "rejected elsewhere in the answer"
RETRACTED, SUPERSEDED, REPEATED, SUBSUMED = "retracted", "superseded", "repeated", "subsumed"


@dataclass
class Decision(Generic[T]):
    """The live candidates (the answer, or the hedge among them) and what was set aside, and why."""

    live: list[Candidate[T]] = field(default_factory=list)
    set_aside: list[tuple[Candidate[T], str]] = field(default_factory=list)
    retractions: list[Retraction] = field(default_factory=list)

    @property
    def values(self) -> list[T]:
        return [c.value for c in self.live]

    def aside(self, why: str) -> list[Candidate[T]]:
        return [c for c, reason in self.set_aside if reason == why]

    def rules(self) -> list[str]:
        """The rules that shaped the reading, in words (the scoring entry point returns them)."""
        out = []
        for why in (REJECTED, REJECTED_ELSEWHERE, ECHOED, RETRACTED, SUPERSEDED, SUBSUMED):
            if n := len(self.aside(why)):
                out.append(f"{n} candidate(s) {why}")
        if self.retractions:
            out.append(f"{len(self.retractions)} retraction(s)")
        if len(self.live) > 1:
            out.append(f"{len(self.live)} live candidates: scored by the worst")
        elif not self.live:
            out.append("no candidate answer")
        return out

    def as_dict(self, show: Callable[[T], Any] = str) -> dict[str, Any]:
        """The reading as JSON: the live candidates, each set-aside one with why, the evidence."""
        return {
            "candidates": [show(c.value) for c in self.live],
            "set_aside": [{"value": show(c.value), "why": why, "evidence": c.evidence} for c, why in self.set_aside],
            "evidence": [{"value": show(c.value), "evidence": c.evidence} for c in self.live if c.evidence],
            "rules": self.rules(),
        }


def decide(
    candidates: Sequence[Candidate[T]],
    retractions: Sequence[Retraction] = (),
    subsumes: Callable[[T, T], bool] | None = None,
) -> Decision[T]:
    """The one-answer rule over the candidates (module docstring); `subsumes(a, b)`: whether
    candidate value `a` already says all that `b` does (b adds nothing beside a)."""
    decision: Decision[T] = Decision(retractions=list(retractions))
    last_rejection: dict[Hashable, tuple[int, int]] = {}
    for c in candidates:
        if c.role is Role.REJECTED:
            last_rejection[c.key] = c.position
    events: list[Candidate[T] | Retraction] = sorted([*candidates, *retractions], key=lambda e: e.position)
    live: list[Candidate[T]] = []
    for event in events:
        if isinstance(event, Retraction) and event.last:
            if live:  # "It has closed down.": the candidate named last, wherever it is named
                named = live[-1]
                decision.set_aside += [(c, REJECTED) for c in live if c.key == named.key]
                live = [c for c in live if c.key != named.key]
                last_rejection[named.key] = event.position
            continue
        if isinstance(event, Retraction):
            decision.set_aside += [(c, RETRACTED) for c in live]
            live = []
            continue
        c = event
        if c.role is Role.REJECTED:
            decision.set_aside.append((c, REJECTED))
            continue
        if c.role is Role.ECHOED:
            decision.set_aside.append((c, ECHOED))
            continue
        rejected_at = last_rejection.get(c.key)
        if rejected_at is not None and not (c.role is Role.CORRECTION and c.position > rejected_at):
            decision.set_aside.append((c, REJECTED_ELSEWHERE))
            continue
        if c.role is Role.CORRECTION:
            # what it corrects came before its sentence; its own sentence may offer more ("X or Y")
            decision.set_aside += [(x, RETRACTED) for x in live if x.sentence != c.sentence]
            live = [x for x in live if x.sentence == c.sentence] + [c]
            continue
        if c.strength > 0:
            decision.set_aside += [(x, SUPERSEDED) for x in live if x.strength < c.strength]
            live = [x for x in live if x.strength >= c.strength]
        live.append(c)
    decision.live = _distinct(live, decision, subsumes)
    return decision


def _distinct(
    live: list[Candidate[T]], decision: Decision[T], subsumes: Callable[[T, T], bool] | None
) -> list[Candidate[T]]:
    """One candidate per key (the firmest, then the last), and none another one subsumes."""
    by_key: dict[Hashable, Candidate[T]] = {}
    for c in live:
        kept = by_key.get(c.key)
        if kept is None or c.strength >= kept.strength:
            if kept is not None:
                decision.set_aside.append((kept, REPEATED))
            by_key[c.key] = c
        else:
            decision.set_aside.append((c, REPEATED))
    unique = sorted(by_key.values(), key=lambda c: c.position)
    if subsumes is None:
        return unique
    out = []
    for c in unique:
        if any(other is not c and subsumes(other.value, c.value) for other in unique):
            decision.set_aside.append((c, SUBSUMED))
        else:
            out.append(c)
    return out
