"""What a MapSatisfy judge reads and returns: the solver's `Trajectory` of one dialogue and the
`Verdicts` on it (explicit factors met, c_i per implicit rubric, the grounding of each
factual-rubric row), shared by the rules judge, the model judges and their ensemble."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from geoeval.suites.mapsatisfy.metrics import FactCheck


@dataclass
class Trajectory:
    """What the solver recorded for the judges and TS."""

    answer: str
    tool_calls: list[dict[str, Any]]  # {name, arguments, content, match_type, error}
    given: list[str]  # texts the agent was given: query, context, profile, user replies
    profile_in_prompt: bool = False
    #: the records the last reply recommends, as the typed channel named them (None: text)
    recommended: list[str] | None = None

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Trajectory:
        recommended = record.get("recommended")
        return cls(
            answer=record.get("answer", ""),
            tool_calls=list(record.get("tool_calls", [])),
            given=list(record.get("given", [])),
            profile_in_prompt=bool(record.get("profile_in_prompt")),
            recommended=list(recommended) if recommended is not None else None,
        )


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
