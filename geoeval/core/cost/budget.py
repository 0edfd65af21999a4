"""A run's budget (`budget.*`): before each sample starts, is there room for it and for the
samples already let in with it?

What counts as spent: the dollars and tokens of the calls that were made (replayed and cached
calls are free), over every invocation of the run (what the warehouse holds for its run hash) and,
for a sweep's limits, over the sweep's finished jobs. What a sample is expected to cost is
measured, apart for the two kinds of sample: one the model generates (the mean of the samples
that paid the evaluated model, or a simulated role) and one whose calls are all replayed from a
stored trajectory (the mean of those: their judges', usually $0). A sample starts only when what
is spent, plus what the samples let in before it in the same start are expected to cost, plus its
own expected cost stays within every limit (`admit`). A kind with nothing measured yet lets in
one sample at a time (the measurement: the rest wait for it to finish), so with 4 samples in
flight and a first sample costing more than the whole budget the run pays for that one, not 4.
Past a limit no new sample starts; the ones in flight finish and are stored. So a run overshoots
its limit by at most what the samples in flight cost beyond their expectation.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from geoeval.core.cost.pricing import live_tokens, paid_tokens

if TYPE_CHECKING:
    from geoeval.core.config.schema import BudgetSpec

#: the warehouse status, the MLflow tag value and the exit status of a run its budget stopped
BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
EXIT_BUDGET_EXCEEDED = 3


def has_limit(budget: BudgetSpec) -> bool:
    return any(v is not None for v in (budget.usd, budget.tokens, budget.sweep_usd, budget.sweep_tokens))


def generated(usage: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether a sample paid for a call of the models that make its trajectory (the evaluated
    model, a simulated role): it was generated, not replayed."""
    return any(entry.get("role", "agent") == "agent" and any(paid_tokens(entry)) for entry in usage.values())


@dataclass
class Spending:
    """What some samples cost: dollars (NaN once one has no price), tokens, how many."""

    usd: float = 0.0
    tokens: float = 0.0
    samples: int = 0

    def add(self, usd: float | None, tokens: float) -> None:
        self.usd = math.nan if usd is None else self.usd + usd
        self.tokens += tokens
        self.samples += 1

    def mean(self, unit: str) -> float | None:
        """A sample's mean dollars (`usd`) or tokens; None with nothing measured."""
        return (self.usd if unit == "usd" else self.tokens) / self.samples if self.samples else None


def stored_spending(rows: Sequence[tuple[float | None, Mapping[str, Any]]]) -> dict[str, Spending]:
    """The spending of stored samples `(cost_usd, usage)`, by kind: {"generated", "replayed"}."""
    kinds = {"generated": Spending(), "replayed": Spending()}
    for cost, usage in rows:
        kinds["generated" if generated(usage) else "replayed"].add(cost, live_tokens(usage))
    return kinds


@dataclass
class BudgetGuard:
    """Tracks a run's spending against its limits. `before`: what earlier invocations of the run
    spent, by kind (`stored_spending`); `sweep_before`: what the sweep's other finished jobs spent
    ({"usd", "tokens"})."""

    budget: BudgetSpec
    before: dict[str, Spending] = field(default_factory=dict)
    sweep_before: dict[str, float] = field(default_factory=dict)
    now: dict[str, Spending] = field(default_factory=lambda: {"generated": Spending(), "replayed": Spending()})
    reason: str | None = None

    def add(self, result: Any) -> None:
        """Count a finished sample (a `SampleResult` already priced)."""
        kind = "generated" if generated(result.usage) else "replayed"
        self.now[kind].add(result.cost_usd, live_tokens(result.usage))

    def _kind(self, kind: str) -> Spending:
        both = Spending()
        for part in (self.before.get(kind), self.now[kind]):
            if part is not None:
                both.usd += part.usd
                both.tokens += part.tokens
                both.samples += part.samples
        return both

    def spent(self) -> dict[str, float]:
        """What the run has spent, earlier invocations included: {"usd", "tokens", "samples"}."""
        kinds = [self._kind("generated"), self._kind("replayed")]
        return {
            "usd": sum(k.usd for k in kinds),
            "tokens": sum(k.tokens for k in kinds),
            "samples": float(sum(k.samples for k in kinds)),
        }

    def admit(self, candidates: Sequence[tuple[int, int]]) -> int:
        """How many of the next samples, in order, may start now, together. Each is given as
        (its runs the model generates, its runs replayed from a stored trajectory); a sample's
        expected cost is its runs times the mean of their kind. 0 means the budget stops the run,
        and `reason` says which limit."""
        spent = self.spent()
        kinds = {"generated": self._kind("generated"), "replayed": self._kind("replayed")}
        limits = [
            ("budget.usd", self.budget.usd, spent["usd"], "usd", "$"),
            ("budget.tokens", self.budget.tokens, spent["tokens"], "tokens", ""),
            ("budget.sweep_usd", self.budget.sweep_usd, spent["usd"] + self.sweep_before.get("usd", 0.0), "usd", "$"),
            (
                "budget.sweep_tokens",
                self.budget.sweep_tokens,
                spent["tokens"] + self.sweep_before.get("tokens", 0.0),
                "tokens",
                "",
            ),
        ]
        admitted = len(candidates)
        for key, limit, used, unit, sign in limits:
            if limit is None:
                continue
            if math.isnan(used):
                self.reason = f"{key}={limit:g}: a model without a price was called, so dollars spent are unknown"
                return 0
            n, expected = fit(limit, used, {kind: spending.mean(unit) for kind, spending in kinds.items()}, candidates)
            if n == 0:
                said = f"{key}={sign}{limit:g}: {sign}{used:.4g} spent over {int(spent['samples'])} sample(s)"
                self.reason = said + (
                    f"; the next sample would bring it to about {sign}{expected:.4g}" if expected > used else ""
                )
                return 0
            admitted = min(admitted, n)
        return admitted


T = TypeVar("T")


def run_within_budget(
    guard: BudgetGuard,
    todo: Sequence[T],
    size: int,
    pending: Callable[[T], tuple[int, int]],
    run_batch: Callable[[list[T]], list[str]],
) -> tuple[list[str], str | None]:
    """Run `todo` a start at a time: before each, `guard` says how many of the next `size` samples
    fit in the budget with what they are expected to cost (`pending(sample)`: its runs the model
    generates and its runs replayed), and those start together (`run_batch`, returning its log
    paths). Returns the log paths and, when the budget stopped the run, why."""
    log_paths: list[str] = []
    left = list(todo)
    while left:
        n = guard.admit([pending(s) for s in left[:size]])
        if n == 0:
            print(f"[geoeval] budget: no new sample starts: {guard.reason}", file=sys.stderr)
            return log_paths, guard.reason
        batch, left = left[:n], left[n:]
        log_paths += run_batch(batch)
    return log_paths, None


def fit(
    limit: float, used: float, means: Mapping[str, float | None], candidates: Sequence[tuple[int, int]]
) -> tuple[int, float]:
    """How many of `candidates` ((generated runs, replayed runs) each) may start under `limit`
    with `used` spent and a run of each kind expected to cost `means[kind]` (None: not measured
    yet), and the expected total where it stops. A kind not measured yet lets in one sample (the
    measurement): the samples after it wait for it to finish."""
    if used >= limit:
        return 0, used
    expected = used
    measuring: set[str] = set()
    n = 0
    for runs in candidates:
        unknown = {kind for kind, count in zip(("generated", "replayed"), runs) if count and means[kind] is None}
        if unknown & measuring:
            break
        measuring |= unknown
        each = sum(count * (means[kind] or 0.0) for kind, count in zip(("generated", "replayed"), runs))
        if expected + each > limit:
            return n, expected + each
        expected += each
        n += 1
    return n, expected
