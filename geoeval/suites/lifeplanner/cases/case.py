"""A LifePlanner case and how many of each kind a run gets: the `Case` record (the paper's
instance with τ*, evidence, requirements and constraints), Table 4's allocation, the engine's
version and the two ways generation can fail."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from geoeval.suites.lifeplanner.metrics import COMBINATIONS

# Cached case files are keyed by this: change it when the engine would make different cases.
ENGINE_VERSION = "lifeplanner-cases-2"
# Table 4: cases per task and level (667 in all).
TABLE4: dict[tuple[str, str], int] = {
    ("place", "l0"): 100,
    ("place", "l1"): 72,
    ("place", "l2"): 35,
    ("nearby", "l0"): 104,
    ("nearby", "l1"): 52,
    ("nearby", "l2"): 35,
    ("routing", "l0"): 100,
    ("routing", "l1"): 50,
    ("routing", "l2"): 31,
    ("trip", "l1"): 53,
    ("trip", "l2"): 35,
}
TASK_TITLES = {"place": "Place Perception", "nearby": "Nearby Discovery", "routing": "Routing", "trip": "Trip Design"}
# τ* must leave room in the 30-call budget for an agent that is not omniscient
MAX_REFERENCE_CALLS = 26


class CaseGenerationError(ValueError):
    """The city cannot supply the requested cases (too small for some combination)."""


class Reject(Exception):
    """One attempt at a case failed a check; the engine draws again."""


@dataclass
class Case:
    id: str
    task: str  # place | nearby | routing | trip
    level: str  # l0 | l1 | l2
    question: str
    answer: Any  # a*, Table 5 schema with the Table 6 fields
    tau_star: list[dict[str, Any]]  # [{"tool", "arguments"}], standard toolset
    evidence: list[str]  # identities IG requires (see scoring/trajectory.py)
    implicit_logic: bool
    requirements: list[dict[str, Any]]  # A (scoring.judging.attribute_accuracy_of)
    constraints: list[dict[str, Any]]  # SC (scoring.judging.constraint_results)
    reference_places: list[str]  # p*
    reference_order: list[str]  # visiting order (routing/trip)
    context: dict[str, Any]  # anchor, vehicle, mode, weekday, departure, scenario, ...
    engine_path: list[dict[str, Any]] = field(default_factory=list)  # data-engine verification calls

    @property
    def type(self) -> str:
        return f"{self.task}_L{self.level[1]}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        return cls(**{k: v for k, v in d.items() if k != "type"})

    def instance(self) -> dict[str, Any]:
        """The case as the paper's instances look (Figure 8): type, question, answer."""
        return {"type": self.type, "question": self.question, "answer": self.answer}


def allocate(n_cases: int, combos: list[tuple[str, str]] | None = None) -> dict[tuple[str, str], int]:
    """Cases per combination for `n_cases` in all, in Table 4's proportions (largest remainder;
    ties go to the combination listed first). `combos` restricts to a subset, renormalised."""
    combos = list(combos or COMBINATIONS)
    if n_cases < 0:
        raise ValueError("n_cases must be >= 0")
    unknown = [c for c in combos if c not in TABLE4]
    if unknown:
        raise ValueError(f"unknown task/level combinations {unknown}")
    total = sum(TABLE4[c] for c in combos)
    quotas = {c: n_cases * TABLE4[c] / total for c in combos}
    counts = {c: int(math.floor(q)) for c, q in quotas.items()}
    left = n_cases - sum(counts.values())
    for c in sorted(combos, key=lambda c: (-(quotas[c] - counts[c]), combos.index(c)))[:left]:
        counts[c] += 1
    return counts
