"""A LifePlanner case and how many of each kind a run gets: the `Case` record (the paper's
instance with τ*, evidence, requirements and constraints), Table 4's allocation, the engine's
version and the two ways generation can fail; the case under construction (`Draft`: τ* in the
standard toolset, run as it is written, the data-engine calls and the evidence) and one
standard-toolset call (`run_standard`, `replay`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from geoeval.suites.lifeplanner.metrics import COMBINATIONS
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import city as city_handle
from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
from geoeval.suites.lifeplanner.tools import notes as note_tools
from geoeval.suites.lifeplanner.tools import places as place_tools
from geoeval.suites.lifeplanner.tools import routing as routing_tools

# Cached case files are keyed by this: change it when the engine would make different cases.
ENGINE_VERSION = "lifeplanner-cases-3"
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


class Draft:
    """τ* (standard tools, run as it is written), the data-engine calls, the evidence."""

    def __init__(self, city: city_handle.City) -> None:
        self.city = city
        self.tau: list[dict[str, Any]] = []
        self.results: list[tool_arguments.ToolResult] = []
        self.engine_path: list[dict[str, Any]] = []
        self.evidence: list[str] = []
        self.legs: dict[tuple[str, str], tuple[int, int]] = {}

    def call(self, tool: str, **arguments: Any) -> Any:
        """Run one standard-toolset call of τ*; a call that does not work rejects the case."""
        result = run_standard(self.city, tool, arguments)
        if result.failure_class == "parameter_error":
            raise Reject(f"τ* call {tool}({arguments}) failed: {result.error}")
        self.tau.append({"tool": tool, "arguments": arguments})
        self.results.append(result)
        if tool == "routing" and result.failure_class == "ok":
            p = result.payload
            self.legs[(p["start"]["place_id"], p["end"]["place_id"])] = (p["total_distance_m"], p["total_time_s"])
        return result.payload

    def need(self, *items: str) -> None:
        for it in items:
            if it not in self.evidence:
                self.evidence.append(it)


def run_standard(city: city_handle.City, tool: str, arguments: dict[str, Any]) -> tool_arguments.ToolResult:
    """One call of the standard agent toolset (Table 7) on `city`."""
    fns = {
        "place_search": place_tools.place_search,
        "place_detail": place_tools.place_detail,
        "nearby_search": nearby_tools.nearby_search,
        "routing": routing_tools.routing,
        "search_notes": note_tools.search_notes,
        "note_detail": note_tools.note_detail,
    }
    if tool not in fns:
        raise ValueError(f"{tool!r} is not a standard agent tool")
    if tool in ("place_search", "nearby_search", "search_notes"):
        return fns[tool](city, **arguments, toolset="standard")
    return fns[tool](city, **arguments)


def replay(city: city_handle.City, tau: list[dict[str, Any]]) -> list[tool_arguments.ToolResult]:
    """Run τ* with the standard tools."""
    return [run_standard(city, step["tool"], dict(step["arguments"])) for step in tau]
