"""MapSatisfy's typed submit channel (`suite.answer_channel=tool`, `submit.py`): the prompt asks
for `submit_reply`, a dialogue delivered through it is judged on the records it names, and the
paper's text channel stays the default with its identity unchanged."""

from __future__ import annotations

import json

from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from geoeval.core.registry import get_suite
from geoeval.suites.mapsatisfy.judging.rules_judge import rules_verdicts
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory
from geoeval.suites.mapsatisfy.schema import parse_instance
from geoeval.suites.mapsatisfy.submit import SUBMIT_REPLY, TOOL_LINE
from tests.conftest import compose_spec
from tests.mapsatisfy.factories import record
from tests.mapsatisfy.test_answer_protocol import CALLS, OTHER, PLAIN, STATION

GIVEN = ["去万象城附近的充电站"]


def _verdicts(answer, recommended):
    instance = parse_instance(record())
    return rules_verdicts(instance, Trajectory(answer, list(CALLS), GIVEN, recommended=recommended), "robust")


def test_the_recommended_records_are_the_recommendation_exactly():
    text = _verdicts(PLAIN, None)
    assert _verdicts(PLAIN, [STATION]).explicit_met == text.explicit_met
    # a hedge in the text, one record named: the named one is the recommendation
    hedge = f"可能是「{OTHER}」，也可能是" + PLAIN
    assert _verdicts(hedge, None).raw["rules"]["candidates"] == [OTHER, STATION]
    exact = _verdicts(hedge, [STATION])
    assert exact.raw["rules"]["candidates"] == [STATION] and "submitted" in exact.raw["rules"]["fired"]
    assert _verdicts(PLAIN, ["no such place"]).raw["rules"]["candidates"] == []


def test_the_channel_prompt_and_a_dialogue_through_the_tool(tmp_path):
    overrides = [
        "suite=mapsatisfy",
        "env=mapsatisfy_generated",
        "metrics=mapsatisfy",
        "env.n=2",
        "env.embedder=hashing",
    ]
    overrides += ["judge=rules"]
    suite = get_suite("mapsatisfy")
    text_spec = compose_spec(tmp_path / "a", *overrides, f"env.out_dir={tmp_path / 'gen'}")
    tool_spec = compose_spec(tmp_path / "b", *overrides, f"env.out_dir={tmp_path / 'gen'}", "suite.answer_channel=tool")
    assert "answer_channel" not in text_spec.identity()["suite"] and text_spec.config_hash() != tool_spec.config_hash()
    env = suite.build_env(tool_spec)
    samples = suite.build_samples(tool_spec, env)[:1]
    assert samples[0].input[0].content.endswith(TOOL_LINE)
    assert TOOL_LINE not in suite.build_samples(text_spec, env)[0].input[0].content
    reply = ModelOutput.for_tool_call("mockllm/model", SUBMIT_REPLY, {"reply": "推荐这家。", "recommended": []})
    reply.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    model = get_model("mockllm/model", custom_outputs=[reply] * 10, memoize=False)
    [log] = eval(suite.build_task(tool_spec, env, samples), model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    (sample,) = log.samples
    kept = sample.metadata["mapsatisfy"]
    assert kept["answer"] == "推荐这家。" and kept["recommended"] == [] and kept["turns"] >= 1
    assert json.dumps(kept["verdicts"])  # judged
