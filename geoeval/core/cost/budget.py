"""A run's budget (`budget.*`): before each batch of samples, is there room for it?

What counts as spent: the dollars and tokens of the calls that were made (replayed and cached
calls are free), over every invocation of the run (what the warehouse holds for its run hash) and,
for a sweep's limits, over the sweep's finished jobs. A batch starts when what is spent plus what
the batch is expected to cost (its samples times the mean cost of a sample so far) stays within
every limit; the first batch of a run with nothing spent yet always starts (it is the measurement).
So a run stops within one batch of its limit, having finished and stored what it started.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from geoeval.core.cost.pricing import live_tokens

if TYPE_CHECKING:
    from geoeval.core.config.schema import BudgetSpec

#: the warehouse status, the MLflow tag value and the exit status of a run its budget stopped
BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
EXIT_BUDGET_EXCEEDED = 3


def has_limit(budget: BudgetSpec) -> bool:
    return any(v is not None for v in (budget.usd, budget.tokens, budget.sweep_usd, budget.sweep_tokens))


@dataclass
class BudgetGuard:
    """Tracks a run's spending against its limits. `before`: what earlier invocations of the run
    spent ({"usd", "tokens", "samples"}); `sweep_before`: what the sweep's other finished jobs spent."""

    budget: BudgetSpec
    before: dict[str, float] = field(default_factory=dict)
    sweep_before: dict[str, float] = field(default_factory=dict)
    usd: float = 0.0
    tokens: float = 0.0
    samples: int = 0
    reason: str | None = None

    def add(self, result: Any) -> None:
        """Count a finished sample (a `SampleResult` already priced)."""
        self.usd = math.nan if result.cost_usd is None else self.usd + result.cost_usd
        self.tokens += live_tokens(result.usage)
        self.samples += 1

    def spent(self) -> dict[str, float]:
        """What the run has spent, earlier invocations included."""
        return {
            "usd": self.before.get("usd", 0.0) + self.usd,
            "tokens": self.before.get("tokens", 0.0) + self.tokens,
            "samples": self.before.get("samples", 0.0) + self.samples,
        }

    def allows(self, n_next: int) -> bool:
        """Whether a batch of `n_next` samples may start; when not, `reason` says which limit."""
        spent = self.spent()
        per_sample = {k: (spent[k] / spent["samples"] if spent["samples"] else 0.0) for k in ("usd", "tokens")}
        limits = [
            ("budget.usd", self.budget.usd, spent["usd"], per_sample["usd"], "$"),
            ("budget.tokens", self.budget.tokens, spent["tokens"], per_sample["tokens"], ""),
            (
                "budget.sweep_usd",
                self.budget.sweep_usd,
                spent["usd"] + self.sweep_before.get("usd", 0.0),
                per_sample["usd"],
                "$",
            ),
            (
                "budget.sweep_tokens",
                self.budget.sweep_tokens,
                spent["tokens"] + self.sweep_before.get("tokens", 0.0),
                per_sample["tokens"],
                "",
            ),
        ]
        for key, limit, used, each, unit in limits:
            if limit is None:
                continue
            if math.isnan(used):
                self.reason = f"{key}={limit:g}: a model without a price was called, so dollars spent are unknown"
                return False
            expected = used + each * n_next
            if used >= limit or (spent["samples"] and expected > limit):
                self.reason = (
                    f"{key}={unit}{limit:g}: {unit}{used:.4g} spent over {int(spent['samples'])} sample(s); the next "
                    f"{n_next} would bring it to about {unit}{expected:.4g}"
                )
                return False
        return True
