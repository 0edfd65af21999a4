"""Tokens into dollars: the price table (`pricing`) and what one sample's model calls cost.

A sample's `usage` (recorded where it ran, `run/inspect_bridge.sample_usage`) holds per model:
its role (`agent`: the evaluated model and the suite's simulated roles, which make the
trajectory; `judge`: every other model, which scores it), the tokens Inspect counted
(`input`, `output`, and `cache_read`, the provider's own prompt-cache reads within `input`),
the tokens of calls replayed from a stored trajectory (`replayed_input`, `replayed_output`:
counted by Inspect, but never sent) and the tokens of calls answered from Inspect's cache
(`cached_input`, `cached_output`: not counted by Inspect). What was paid for is the first set
minus the replayed one; what was saved is the replayed and cached calls at the same prices.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geoeval.core.config.schema import ModelPrice, PricingSpec

PER_TOKEN = 1e-6  # prices are per million tokens


def price_for(pricing: PricingSpec, model: str) -> ModelPrice | None:
    """The price of `model`: its exact entry, else the longest matching pattern, else None."""
    if model in pricing.models:
        return pricing.models[model]
    patterns = [p for p in pricing.models if any(c in p for c in "*?[") and fnmatch.fnmatchcase(model, p)]
    return pricing.models[max(patterns, key=len)] if patterns else None


def paid_tokens(entry: Mapping[str, Any]) -> tuple[int, int, int]:
    """(input not read from the provider's cache, input read from it, output) that were sent."""
    input_tokens = max(0, int(entry.get("input", 0)) - int(entry.get("replayed_input", 0)))
    output_tokens = max(0, int(entry.get("output", 0)) - int(entry.get("replayed_output", 0)))
    cache_read = min(input_tokens, int(entry.get("cache_read", 0)))
    return input_tokens - cache_read, cache_read, output_tokens


def live_tokens(usage: Mapping[str, Mapping[str, Any]]) -> int:
    """Input + output tokens of the calls that were made (not replayed, not cached)."""
    return sum(sum(paid_tokens(entry)) for entry in usage.values())


def _cost(price: ModelPrice, input_tokens: int, cached_input: int, output_tokens: int) -> float:
    cached_price = price.input if price.cached_input is None else price.cached_input
    return (input_tokens * price.input + cached_input * cached_price + output_tokens * price.output) * PER_TOKEN


def sample_cost(pricing: PricingSpec, usage: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What one sample's calls cost: `usd` and `judge_usd` (NaN when a model that was called has
    no price), `saved_usd` (replayed and cached calls at their prices; unknown prices count 0),
    and `unpriced` (the models without a price)."""
    usd = judge_usd = saved = 0.0
    unpriced: list[str] = []
    for model, entry in usage.items():
        paid = paid_tokens(entry)
        price = price_for(pricing, model)
        if price is None:
            if any(paid) or int(entry.get("replayed_input", 0)) or int(entry.get("cached_input", 0)):
                unpriced.append(model)
            if any(paid):
                usd = math.nan
                if entry.get("role") == "judge":
                    judge_usd = math.nan
            continue
        cost = _cost(price, *paid)
        usd += cost
        if entry.get("role") == "judge":
            judge_usd += cost
        saved += _cost(
            price,
            int(entry.get("replayed_input", 0)) + int(entry.get("cached_input", 0)),
            0,
            int(entry.get("replayed_output", 0)) + int(entry.get("cached_output", 0)),
        )
    return {"usd": usd, "judge_usd": judge_usd, "saved_usd": saved, "unpriced": sorted(unpriced)}


def price_result(pricing: PricingSpec, result: Any) -> Any:
    """`result` (a `SampleResult`) with `cost_usd`, `judge_cost_usd` and `details["saved_usd"]` set
    from its usage (None where a price is unknown; the unpriced models in `details["unpriced_models"]`)."""
    cost = sample_cost(pricing, result.usage)
    result.cost_usd = None if math.isnan(cost["usd"]) else cost["usd"]
    result.judge_cost_usd = None if math.isnan(cost["judge_usd"]) else cost["judge_usd"]
    if cost["saved_usd"]:
        result.details["saved_usd"] = cost["saved_usd"]
    if cost["unpriced"]:
        result.details["unpriced_models"] = cost["unpriced"]
    return result


def run_costs(results: list[Any]) -> dict[str, float]:
    """A run's totals for MLflow, the console and the reports: `cost_usd` (NaN when any sample's
    price is unknown), `cost_usd/judge`, `saved_usd`, `tokens_in`, `tokens_out` (tokens sent),
    `cache_hits`, `replayed_calls` and `model_calls` (calls that reached a model)."""
    totals = {
        "cost_usd": 0.0,
        "cost_usd/judge": 0.0,
        "saved_usd": 0.0,
        "tokens_in": 0.0,
        "tokens_out": 0.0,
        "cache_hits": 0.0,
        "replayed_calls": 0.0,
        "model_calls": 0.0,
    }
    for r in results:
        totals["cost_usd"] = math.nan if r.cost_usd is None else totals["cost_usd"] + r.cost_usd
        totals["cost_usd/judge"] = math.nan if r.judge_cost_usd is None else totals["cost_usd/judge"] + r.judge_cost_usd
        totals["saved_usd"] += float(r.details.get("saved_usd", 0.0) or 0.0)
        totals["cache_hits"] += r.cache_hits
        totals["replayed_calls"] += r.replayed_calls
        for entry in r.usage.values():
            fresh_input, cache_read, output_tokens = paid_tokens(entry)
            totals["tokens_in"] += fresh_input + cache_read
            totals["tokens_out"] += output_tokens
            totals["model_calls"] += int(entry.get("calls", 0))
    return totals


def local_models(pricing: PricingSpec, results: list[Any]) -> tuple[list[str], bool]:
    """The models the results sent calls to that the price table marks `local` (they run on this
    machine: compute, not dollars), and whether every model of the trajectories they sent calls
    to (role `agent`) is one of them (the agent's dollar figure then says nothing)."""
    local: set[str] = set()
    agent_models: set[str] = set()
    for r in results:
        for model, entry in r.usage.items():
            if not (any(paid_tokens(entry)) or int(entry.get("calls", 0))):
                continue  # replayed or cached: nothing was sent to it
            price = price_for(pricing, model)
            if price is not None and price.local:
                local.add(model)
            if entry.get("role", "agent") == "agent":
                agent_models.add(model)
    return sorted(local), bool(agent_models) and agent_models <= local
