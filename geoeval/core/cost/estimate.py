"""What a run or sweep is expected to cost, before any model call (`geoeval estimate`).

Per job: its samples (after `limit`, times `epochs`), those its warehouse already holds (a rerun
resumes them for free), those with a stored trajectory (replayed for free, unless
`generation=fresh`), and what is left to generate. The tokens and dollars a generated sample
costs are measured, never guessed: the paid tokens of stored samples of the same model and suite
(those of the job's own generation identity when there are, else any run of that model on that
suite), priced with the job's `pricing`. The expectation is n x the mean; its 95% interval
n x mean +- 1.96 x sd x sqrt(n) (samples as independent draws; the interval narrows as more
samples are stored). With nothing stored, a pilot of a few samples measures it (`--pilot N`:
the first N samples run as a normal run, stored, so the full run resumes them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from geoeval.core.cost.pricing import paid_tokens, sample_cost

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.warehouse.store import Warehouse

Z95 = 1.96


@dataclass
class Measured:
    """Paid tokens and dollars per generated sample, from stored samples."""

    basis: str  # where they come from: "generation <hash>", "model on suite", or "none"
    n: int = 0
    tokens: list[float] = field(default_factory=list)
    usd: list[float] = field(default_factory=list)


@dataclass
class JobEstimate:
    label: str
    samples: int
    stored: int
    replayable: int
    to_generate: int
    measured: Measured
    tokens: tuple[float, float] = (math.nan, math.nan)  # (expected, half-width of the 95% interval)
    usd: tuple[float, float] = (math.nan, math.nan)


def _mean_sd(values: list[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def projected(values: list[float], n: int) -> tuple[float, float]:
    """n samples' expected total and the half-width of its 95% interval (NaN with < 2 values;
    0 for n = 0)."""
    if n == 0:
        return 0.0, 0.0
    mean, sd = _mean_sd(values)
    return n * mean, Z95 * sd * math.sqrt(n)


def measured(wh: Warehouse, spec: RunSpec) -> Measured:
    """Per-sample paid tokens and dollars of stored samples that were generated (not replayed or
    cached): of this generation identity when there are, else of this model on this suite."""
    generation_hash = spec.generation_hash()
    _, rows = wh.query(
        """
        SELECT t.generation_hash = ? AS same, CAST(s.usage AS VARCHAR)
        FROM samples s JOIN runs r USING (run_hash)
        LEFT JOIN trajectories t ON t.run_hash = s.run_hash AND t.sample_id = s.sample_id AND t.epoch = s.epoch
        WHERE r.model = ? AND r.suite = ? AND s.status = 'scored'
        """,
        [generation_hash, spec.model.name, spec.suite.name],
    )
    same: list[dict] = []
    others: list[dict] = []
    for is_same, usage in rows:
        parsed = json.loads(usage) if usage else {}
        if not any(any(paid_tokens(entry)) for entry in parsed.values()):
            continue  # replayed, cached, or stored before usage was recorded: says nothing of the price
        (same if is_same else others).append(parsed)
    chosen, basis = (same, f"generation {generation_hash}") if same else (others, "this model on this suite")
    if not chosen:
        return Measured(basis="none")
    found = Measured(basis=basis, n=len(chosen))
    for usage in chosen:
        found.tokens.append(float(sum(sum(paid_tokens(entry)) for entry in usage.values())))
        found.usd.append(sample_cost(spec.pricing, usage)["usd"])
    return found


def estimate_job(wh: Warehouse, spec: RunSpec, samples: list[Any], label: str) -> JobEstimate:
    """The estimate of one job whose samples are `samples` (already cut to `limit`)."""
    wanted = {(str(s.id), e) for s in samples for e in range(1, spec.epochs + 1)}
    run_hash = spec.config_hash()
    done = wh.finished_keys(run_hash, include_errors=not spec.retry_errors_on_resume) & wanted
    left = wanted - done
    replayable = set(wh.trajectories(spec.generation_hash(), left)) if spec.generation != "fresh" else set()
    to_generate = len(left - replayable)
    found = measured(wh, spec)
    estimate = JobEstimate(label, len(wanted), len(done), len(replayable), to_generate, found)
    if found.n:
        estimate.tokens = projected(found.tokens, to_generate)
        estimate.usd = projected(found.usd, to_generate)
    elif to_generate == 0:
        estimate.tokens = estimate.usd = (0.0, 0.0)
    return estimate
