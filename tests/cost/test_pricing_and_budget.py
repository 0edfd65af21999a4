"""Prices, costs, budgets, estimates and call digests, with hand-computed values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from geoeval.core.config.schema import BudgetSpec, ModelPrice, PricingSpec
from geoeval.core.cost.budget import BudgetGuard, stored_spending
from geoeval.core.cost.estimate import projected
from geoeval.core.cost.pricing import live_tokens, price_for, run_costs, sample_cost
from geoeval.core.errors import GeoevalError
from geoeval.core.run.replay import call_digest, replayed_usage

PRICING = PricingSpec(
    models={
        "openai/gpt-4o": ModelPrice(input=2.5, output=10.0, cached_input=1.25),
        "openai/*": ModelPrice(input=1.0, output=1.0),
        "openai/gpt-4*": ModelPrice(input=2.0, output=2.0),
        "judge/j": ModelPrice(input=1.0, output=4.0),
    }
)


def test_exact_name_wins_then_the_longest_pattern_and_unknown_is_none():
    assert price_for(PRICING, "openai/gpt-4o").input == 2.5
    assert price_for(PRICING, "openai/gpt-4.1").input == 2.0  # "openai/gpt-4*" is longer than "openai/*"
    assert price_for(PRICING, "openai/o3").input == 1.0
    assert price_for(PRICING, "anthropic/claude") is None


def test_sample_cost_by_hand():
    usage = {
        # 1,000,000 input of which 200,000 read from the provider's cache, 100,000 output; one call replayed
        "openai/gpt-4o": {
            "role": "agent",
            "input": 1_200_000,
            "output": 150_000,
            "cache_read": 200_000,
            "replayed_input": 200_000,
            "replayed_output": 50_000,
        },
        "judge/j": {"role": "judge", "input": 10_000, "output": 1_000, "cached_input": 5_000, "cached_output": 500},
    }
    cost = sample_cost(PRICING, usage)
    agent = 0.8 * 2.5 + 0.2 * 1.25 + 0.1 * 10.0  # 800k fresh input, 200k cached input, 100k output
    judge = 0.01 * 1.0 + 0.001 * 4.0
    assert cost["usd"] == pytest.approx(agent + judge)
    assert cost["judge_usd"] == pytest.approx(judge)
    # saved: the replayed call at the agent's prices, the cached judge call at the judge's
    assert cost["saved_usd"] == pytest.approx(0.2 * 2.5 + 0.05 * 10.0 + 0.005 * 1.0 + 0.0005 * 4.0)
    assert cost["unpriced"] == []
    assert live_tokens(usage) == 1_000_000 + 100_000 + 10_000 + 1_000


def test_an_unpriced_model_makes_the_cost_unknown_never_zero():
    cost = sample_cost(PRICING, {"anthropic/x": {"role": "agent", "input": 10, "output": 1}})
    assert math.isnan(cost["usd"]) and cost["unpriced"] == ["anthropic/x"]
    # an unpriced model that only replayed costs nothing unknown: nothing was sent to it
    replayed = {"anthropic/x": {"role": "agent", "input": 10, "output": 1, "replayed_input": 10, "replayed_output": 1}}
    assert sample_cost(PRICING, replayed)["usd"] == 0.0


def _result(cost, usage=None, cache_hits=0, replayed=0, saved=0.0):
    return SimpleNamespace(
        cost_usd=cost,
        judge_cost_usd=0.0 if cost is not None else None,
        usage=usage or {},
        cache_hits=cache_hits,
        replayed_calls=replayed,
        details={"saved_usd": saved} if saved else {},
    )


def test_run_costs_sum_and_unknown_propagates():
    results = [
        _result(0.5, {"m": {"input": 100, "output": 10, "calls": 2}}, cache_hits=1, saved=0.25),
        _result(0.25, {"m": {"input": 50, "output": 5, "replayed_input": 50, "replayed_output": 5}}, replayed=1),
    ]
    totals = run_costs(results)
    assert totals["cost_usd"] == 0.75 and totals["saved_usd"] == 0.25
    assert (totals["tokens_in"], totals["tokens_out"], totals["model_calls"]) == (100, 10, 2)
    assert (totals["cache_hits"], totals["replayed_calls"]) == (1, 1)
    assert math.isnan(run_costs([*results, _result(None)])["cost_usd"])


PAID = {"m": {"role": "agent", "input": 10, "output": 0}}  # a generated sample's usage: 10 tokens sent


def test_budget_lets_one_sample_measure_then_admits_what_fits():
    guard = BudgetGuard(BudgetSpec(usd=1.0))
    generate = [(1, 0)] * 4  # four samples of one run each, to generate
    assert guard.admit(generate) == 1  # nothing measured yet: one sample, the measurement
    guard.add(_result(0.1, PAID))
    assert guard.admit(generate) == 4  # 0.1 spent + 4 x 0.1 = 0.5 <= 1.0
    for _ in range(4):
        guard.add(_result(0.1, PAID))
    assert guard.admit(generate) == 4  # 0.5 + 0.4 = 0.9
    for _ in range(4):
        guard.add(_result(0.1, PAID))
    assert guard.admit(generate) == 1  # 0.9 + 0.1 = 1.0: one more fits, not two
    assert guard.admit([(3, 0)]) == 0  # a sample of three epochs would bring it to 1.2
    assert "budget.usd=$1" in guard.reason and "about $1.2" in guard.reason
    guard.add(_result(0.1, PAID))
    assert guard.admit(generate) == 0 and "$1 spent over 10 sample(s)" in guard.reason


def test_a_first_sample_dearer_than_the_budget_is_the_only_one_paid():
    """budget.usd=0.5 with 4 samples in flight and $1 a sample spent $4 (issue 43.7): the first
    sample alone is let in, and after it none."""
    guard = BudgetGuard(BudgetSpec(usd=0.5))
    assert guard.admit([(1, 0)] * 4) == 1
    guard.add(_result(1.0, PAID))
    assert guard.admit([(1, 0)] * 4) == 0 and guard.spent()["usd"] == 1.0


def test_replayed_samples_are_measured_apart_from_generated_ones():
    guard = BudgetGuard(BudgetSpec(tokens=100))
    for _ in range(2):
        guard.add(_result(0.0, PAID))  # 20 tokens spent by generated samples (10 each)
    # a replayed sample (every call from its stored trajectory) is not measured yet: one of it
    assert guard.admit([(0, 1), (0, 1), (1, 0)]) == 1
    guard.add(_result(0.0, {"m": {"role": "agent", "input": 10, "replayed_input": 10}}))  # free
    assert guard.admit([(0, 1)] * 8) == 8  # replays cost nothing: all of them
    assert guard.admit([(1, 0)] * 9) == 8  # 20 + 8 x 10 = 100 tokens


def test_budget_counts_earlier_invocations_and_the_sweep():
    earlier = stored_spending([(0.0, {"m": {"role": "agent", "input": 20}})] * 5)  # 100 tokens over 5 samples
    assert BudgetGuard(BudgetSpec(tokens=100), before=earlier).admit([(1, 0)]) == 0
    assert BudgetGuard(BudgetSpec(tokens=120), before=earlier).admit([(1, 0)] * 3) == 1  # 20 tokens a sample
    guard = BudgetGuard(BudgetSpec(sweep_usd=1.0), sweep_before={"usd": 0.95, "tokens": 0.0})
    guard.add(_result(0.1, PAID))
    assert guard.admit([(1, 0)]) == 0 and "budget.sweep_usd" in guard.reason
    unknown = BudgetGuard(BudgetSpec(usd=1.0))
    unknown.add(_result(None, PAID))
    assert unknown.admit([(1, 0)]) == 0 and "without a price" in unknown.reason


def test_projection_and_its_interval_by_hand():
    mean, half = projected([1.0, 3.0], 4)  # mean 2, sd sqrt(2)
    assert mean == 8.0 and half == pytest.approx(1.96 * math.sqrt(2) * 2)
    assert projected([1.0], 0) == (0.0, 0.0)
    assert math.isnan(projected([1.0], 3)[1])  # one measurement: no spread to say


def test_call_digest_ignores_random_message_ids_but_not_content():
    a = [ChatMessageSystem(content="s"), ChatMessageUser(content="u")]
    b = [ChatMessageSystem(content="s"), ChatMessageUser(content="u")]
    assert a[1].id != b[1].id  # Inspect draws ids at random
    assert call_digest("m", a, [], "auto") == call_digest("m", b, [], "auto")
    assert call_digest("m", a, [], "auto") != call_digest("m", [a[0], ChatMessageUser(content="v")], [], "auto")
    assert call_digest("m", a, [], "auto") != call_digest("other", a, [], "auto")


def test_replayed_usage_counts_only_replayed_calls():
    calls = [
        {"model": "m", "replayed": True, "output": {"usage": {"input_tokens": 10, "output_tokens": 2}}},
        {"model": "m", "output": {"usage": {"input_tokens": 99, "output_tokens": 9}}},
    ]
    assert replayed_usage(calls) == {"m": {"input": 10, "output": 2, "calls": 1}}


def _compose(tmp_path, *overrides):
    from tests.conftest import compose_spec

    return compose_spec(tmp_path, *overrides)


def test_a_dollar_budget_needs_a_price_for_every_model_before_any_work(tmp_path):
    with pytest.raises(GeoevalError, match=r"budget.usd: model.name 'openai-api/local/x' has no price"):
        _compose(tmp_path, "model=openai_api", "model.name=openai-api/local/x", "budget.usd=5")
    _compose(tmp_path, "model=openai_api", "model.name=openai-api/local/x", "budget.tokens=5000")  # tokens need none


def test_pricing_file_adds_models_and_a_bad_one_names_the_key(tmp_path):
    (tmp_path / "p.yaml").write_text("models:\n  openai-api/local/x: {input: 1.0, output: 2.0}\n")
    spec = _compose(
        tmp_path, "model=openai_api", "model.name=openai-api/local/x", f"pricing.file={tmp_path / 'p.yaml'}"
    )
    assert price_for(spec.pricing, "openai-api/local/x").output == 2.0
    assert price_for(spec.pricing, "openai/gpt-4o").input == 2.5  # the shipped table is kept
    (tmp_path / "bad.yaml").write_text("- not a mapping\n")
    with pytest.raises(GeoevalError, match="pricing.file"):
        _compose(tmp_path, f"pricing.file={tmp_path / 'bad.yaml'}")
    with pytest.raises(GeoevalError, match="pricing.file"):
        _compose(tmp_path, f"pricing.file={tmp_path / 'missing.yaml'}")


def test_cache_settings_are_checked_and_stay_out_of_the_run_identity(tmp_path):
    with pytest.raises(GeoevalError, match="model.cache"):
        _compose(tmp_path, "model.cache=soon")
    plain = _compose(tmp_path)
    cached = _compose(tmp_path, "model.cache=2W", "judge.cache=false")
    assert plain.config_hash() == cached.config_hash()


def test_generation_identity_ignores_scoring_but_not_what_the_model_sees(tmp_path):
    base = _compose(tmp_path)
    paper = _compose(tmp_path, "scoring.protocol=paper")
    assert base.config_hash() != paper.config_hash()
    assert base.generation_hash() == paper.generation_hash()
    assert base.generation_hash() == _compose(tmp_path, "metrics.metrics=[ema]", "epochs=3").generation_hash()
    assert base.generation_hash() != _compose(tmp_path, "seed=1").generation_hash()
    assert base.generation_hash() != _compose(tmp_path, "model=oracle").generation_hash()
    # budgets and the generation mode change neither identity: a raised budget resumes the run
    other = _compose(tmp_path, "budget.tokens=10", "generation=fresh")
    assert (other.config_hash(), other.generation_hash()) == (base.config_hash(), base.generation_hash())


def test_a_local_models_cost_line_says_compute_not_dollars(tmp_path):
    """The default table prices the local model at $0 and marks it `local`: the cost line says it
    is a local model instead of a dollar figure that reads as free (issue 41.5)."""
    from geoeval.core.analysis.job_reports import cost_line
    from geoeval.core.cost.pricing import local_models

    pricing = _compose(tmp_path, "model=local_llm").pricing
    local = {"openai-api/local/smollm2": {"role": "agent", "input": 120, "output": 8, "calls": 2}}
    metrics = {"cost_usd": 0.0, "cost_usd/judge": 0.0, "tokens_in": 120, "tokens_out": 8, "model_calls": 2}
    assert local_models(pricing, [_result(0.0, local)]) == (["openai-api/local/smollm2"], True)
    line = cost_line(metrics, local_models(pricing, [_result(0.0, local)]))
    assert line.startswith("cost: local model (compute, not dollars; judges $0.0000)") and "$0.0000 (" not in line
    assert "local (priced $0, run here): openai-api/local/smollm2" in line
    # a paid judge beside it: the dollars are the judge's, and still shown
    judged = {**local, "openai/gpt-4o": {"role": "judge", "input": 1000, "output": 0, "calls": 1}}
    assert local_models(pricing, [_result(0.0025, judged)]) == (["openai-api/local/smollm2"], True)
    # a paid agent: dollars, with the local model named apart
    mixed = {**local, "openai/gpt-4o": {"role": "agent", "input": 1000, "output": 0, "calls": 1}}
    assert local_models(pricing, [_result(0.0025, mixed)]) == (["openai-api/local/smollm2"], False)
    assert cost_line({**metrics, "cost_usd": 0.0025}, local_models(pricing, [_result(0.0025, mixed)])).startswith(
        "cost: $0.0025 (judges $0.0000; local models: compute)"
    )
    # replayed calls sent nothing: no local model to name, and $0 is what it cost
    replayed = {
        "openai-api/local/smollm2": {
            "role": "agent",
            "input": 120,
            "output": 8,
            "replayed_input": 120,
            "replayed_output": 8,
            "calls": 0,
        }
    }
    assert local_models(pricing, [_result(0.0, replayed)]) == ([], False)
    assert cost_line(metrics).startswith("cost: $0.0000 (judges $0.0000);")
