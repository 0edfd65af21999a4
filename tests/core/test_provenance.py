"""Runs by offline stand-ins say so (summary, MLflow tags); runs by real models and judges do not."""

from __future__ import annotations

from types import SimpleNamespace

from geoeval.core.analysis.provenance import mlflow_tags, provenance


def _spec(model: str, judges: list[str]):
    return SimpleNamespace(model=SimpleNamespace(name=model), judge=SimpleNamespace(models=judges))


JUDGED = SimpleNamespace(uses_judges=True)
UNJUDGED = SimpleNamespace(uses_judges=False)


def test_an_offline_agent_is_marked_not_comparable():
    p = provenance(_spec("geoeval/perception_baseline", ["rules"]), UNJUDGED)
    assert p["offline_model"] and p["offline_judges"] == [] and not p["comparable_with_papers"]
    assert "geoeval/perception_baseline is an offline scripted agent" in p["note"]
    assert "judge" not in p["note"]  # MapTab uses no judge: its judge config is not mentioned


def test_a_real_model_with_the_rules_judge_is_marked_for_the_judge():
    p = provenance(_spec("openai/gpt-4o", ["rules", "anthropic/claude-3-5-sonnet"]), JUDGED)
    assert not p["offline_model"] and p["offline_judges"] == ["rules"]
    assert "rules is a rule-based offline stand-in" in p["note"] and not p["comparable_with_papers"]


def test_a_real_model_and_real_judges_carry_no_note():
    spec = _spec("openai/gpt-4o", ["openai/gpt-4o-mini"])
    assert provenance(spec, JUDGED)["note"] == ""
    tags = mlflow_tags(spec, JUDGED)
    assert tags["geoeval.comparable_with_papers"] == "true" and "mlflow.note.content" not in tags
    tags = mlflow_tags(_spec("mockllm/model", ["rules"]), JUDGED)
    assert tags["geoeval.offline_model"] == "true" and tags["geoeval.offline_judges"] == "rules"
    assert "not comparable" in tags["mlflow.note.content"]


def test_the_run_description_leads_with_headline_metrics_and_their_intervals():
    from geoeval.core.tracking.values import run_description

    metrics = {"ema": 0.75, "ema/ci95_low": 0.5, "ema/ci95_high": 1.0, "ema/n": 24.0, "pma": float("nan"), "ds": 3.0}
    text = run_description(metrics, ("ema", "pma", "acc"), "Offline stand-ins: x.")
    assert text == "**ema** 0.750 [0.500, 1.000] (n=24)\n\n> Offline stand-ins: x."
    assert run_description({}, ("ema",)) == ""
