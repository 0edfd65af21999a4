"""MapTab's typed submit channel (`suite.answer_channel=tool`, `submit.py`): the prompt asks for the
tool, a model that calls it is read exactly under both protocols, and the paper's text channel
stays the default with its prompt and its run identity unchanged."""

from __future__ import annotations

import pytest
from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from geoeval.core.registry import get_suite
from geoeval.suites.maptab.metrics import TRANSFER_MARK, split_route
from geoeval.suites.maptab.rp.prompts import TEXT_ROUTE_LINE
from geoeval.suites.maptab.submit import RP_TOOL_LINE, route_answer, value_answer
from tests.conftest import compose_spec

MODEL = "mockllm/model"
SMALL = ["suite=maptab", "env.n_maps=1", "suite.n_per_category=1", "suite.categories=[edge_only]", "limit=1"]


def test_submitted_values_are_written_in_the_papers_format():
    assert route_answer(["A", "B", "C"], ["B"]) == f"A-B{TRANSFER_MARK}-C"
    assert route_answer([" A ", "B"], None) == "A-B"
    assert value_answer(True) == "<answer_begin>1<answer_end>"
    assert value_answer(2.5) == "<answer_begin>2.5<answer_end>"
    assert value_answer(" 3 ") == "<answer_begin>3<answer_end>"


def _user_text(sample):
    return sample.input[-1].content[0].text


def test_the_prompt_asks_for_what_the_channel_takes_and_text_stays_the_default(tmp_path):
    suite = get_suite("maptab")
    text_spec = compose_spec(tmp_path / "a", *SMALL)
    tool_spec = compose_spec(tmp_path / "b", *SMALL, "suite.answer_channel=tool")
    env = suite.build_env(text_spec)
    (text_sample,) = suite.build_samples(text_spec, env)[:1]
    (tool_sample,) = suite.build_samples(tool_spec, env)[:1]
    assert TEXT_ROUTE_LINE in _user_text(text_sample) and RP_TOOL_LINE not in _user_text(text_sample)
    assert RP_TOOL_LINE in _user_text(tool_sample) and TEXT_ROUTE_LINE not in _user_text(tool_sample)
    # the default is left out of the identity: every earlier run keeps its identity
    assert "answer_channel" not in text_spec.identity()["suite"]
    assert tool_spec.identity()["suite"]["answer_channel"] == "tool"
    assert text_spec.config_hash() != tool_spec.config_hash()


def _scored(tmp_path, spec, outputs):
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)[:1]
    for o in outputs:
        o.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    model = get_model(MODEL, custom_outputs=outputs, memoize=False)
    [log] = eval(suite.build_task(spec, env, samples), model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    (sample,) = log.samples
    return samples[0], sample


@pytest.mark.parametrize("protocol", ["robust", "paper"])
def test_a_submitted_route_is_read_exactly_under_both_protocols(tmp_path, protocol):
    spec = compose_spec(tmp_path, *SMALL, "suite.answer_channel=tool", f"scoring.protocol={protocol}")
    suite = get_suite("maptab")
    (probe,) = suite.build_samples(spec, suite.build_env(spec))[:1]
    stops = split_route(probe.target[0])
    route = [s.replace(TRANSFER_MARK, "") for s in stops]
    transfers = [s.replace(TRANSFER_MARK, "") for s in stops if TRANSFER_MARK in s]
    right = ModelOutput.for_tool_call(MODEL, "submit_route", {"route": route, "transfer_at": transfers})
    built, sample = _scored(tmp_path / "right", spec, [right])
    score = next(iter(sample.scores.values()))
    assert sample.output.completion == built.target[0]
    assert score.value["ema"] == 1.0 and score.value["pma"] == 1.0
    wrong = ModelOutput.for_tool_call(MODEL, "submit_route", {"route": [route[0], route[-1]], "transfer_at": []})
    _built, sample = _scored(tmp_path / "wrong", spec, [wrong])
    assert next(iter(sample.scores.values())).value["ema"] == 0.0
