"""Optional LLM phrasing of queries: rewrites that keep every protected token are used; ones that
drop a name or number fall back to the template; the default config is unchanged."""

from __future__ import annotations

from inspect_ai.model import ModelOutput, ModelUsage, get_model

from geoeval.core.config.validate import validate_config
from geoeval.suites.lifeplanner.phrasing import accept_rewrite, protected_tokens, rephrase_questions


def scripted(replies):
    outs = [ModelOutput.from_content("mockllm/model", r) for r in replies]
    for o in outs:  # usage set: mockllm's default token counting would download a tokenizer
        o.usage = ModelUsage(input_tokens=5, output_tokens=5, total_tokens=10)
    return get_model("mockllm/model", custom_outputs=outs, memoize=False)


def test_protected_tokens():
    q = "Is Harbor Lane Coffee open at 21:30 on Friday? I need 2 seats."
    assert protected_tokens(q) == {"Harbor Lane Coffee", "21:30", "Friday", "2"}
    assert accept_rewrite(q, "Hey, on Friday around 21:30, is Harbor Lane Coffee still open? We are 2.")
    assert not accept_rewrite(q, "Is Harbor Lane Coffee open late on Friday? We are 2.")  # time lost
    assert not accept_rewrite(q, "")


def test_rewrites_used_only_when_faithful(tmp_path):
    questions = ["Find Elm Park Bakery near Mill Street.", "Route from Oak Hall to Bay Pier by 18:00."]
    model = scripted(
        ["Could you find Elm Park Bakery somewhere near Mill Street?", "How do I get from Oak Hall to Bay Pier?"]
    )  # second drops 18:00
    out = rephrase_questions(questions, model, cache=tmp_path)
    assert out == ["Could you find Elm Park Bakery somewhere near Mill Street?", questions[1]]
    # cached: a second call needs no model
    assert rephrase_questions(questions, model, cache=tmp_path) == out


def test_phrasing_model_is_part_of_the_run_identity():
    base = {
        "env": {"name": "lifeplanner_synthetic"},
        "suite": {"name": "lifeplanner"},
        "model": {"name": "geoeval/oracle"},
        "judge": {"models": ["rules"]},
        "metrics": {"name": "lifeplanner", "metrics": ["pr"]},
        "runner": {"name": "local"},
        "tracking": {"enabled": False},
    }
    spec = validate_config(base)
    assert spec.identity()["suite"]["phrasing_model"] is None  # shown, never hidden
    phrased = validate_config({**base, "suite": {"name": "lifeplanner", "phrasing_model": "openai/gpt-4o-mini"}})
    assert phrased.config_hash() != spec.config_hash()
