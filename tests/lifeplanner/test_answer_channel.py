"""LifePlanner's answer channels (`suite.answer_channel`): `tool` (the paper's `submit_answer`, the
default) and `text` (the JSON in the last reply, no submit tool), and the last reply read as the
answer under the robust protocol when a model never called `submit_answer`."""

from __future__ import annotations

import asyncio
import json

from inspect_ai.model import ChatMessageAssistant

from geoeval.suites.lifeplanner import meta_eval as ME
from geoeval.suites.lifeplanner.prompts import system_prompt
from geoeval.suites.lifeplanner.scorers import evaluate_sample, metric_values

from .test_scoring import ALL, rules_only


def _scores(city, city_path, case, reply, protocol, channel="tool"):
    messages = [*ME.reference_messages(city, case), ChatMessageAssistant(content=reply)]
    case = {**case, **({"answer_channel": channel} if channel != "tool" else {})}
    record = asyncio.run(evaluate_sample(case, messages, str(city_path), rules_only(), protocol=protocol))
    values, _ = metric_values(case, record, ALL)
    return values, record


def test_the_text_channel_prompt_asks_for_the_json_in_the_last_reply():
    tool, text = system_prompt("place"), system_prompt("place", "text")
    assert "submit_answer" in tool
    assert "submit_answer" not in text and "in your last message" in text


def test_a_reply_without_submit_answer(city, city_path, cases):
    case = next(c for c in cases if c.task == "nearby").to_dict()
    reply = "Here is what I found:\n```json\n" + json.dumps(case["answer"]) + "\n```"
    submitted = ME.score_messages(
        case, ME._submitted(ME.reference_messages(city, case), case["answer"]), str(city_path), rules_only(), 0.9
    )
    # the text channel asked for the reply: both protocols read it as the submission, the paper
    # as it reads a submitted result (the JSON alone), robust with the prose around it too
    for protocol in ("robust", "paper"):
        values, _record = _scores(city, city_path, case, json.dumps(case["answer"]), protocol, channel="text")
        assert values["piou"] == submitted["piou"] == 1.0, (protocol, values)
    assert _scores(city, city_path, case, reply, "robust", channel="text")[0]["piou"] == 1.0
    assert _scores(city, city_path, case, reply, "paper", channel="text")[0]["piou"] == 0.0
    # the tool channel: the paper has no answer without the call; robust reads what the model said
    paper, record = _scores(city, city_path, case, reply, "paper")
    assert paper["piou"] == 0.0 and record.schema_error
    robust, record = _scores(city, city_path, case, reply, "robust")
    assert robust["piou"] == 1.0 and "no submit_answer call: the last reply read as the answer" in record.reading
    # a reply that is no answer is still none
    nothing, record = _scores(city, city_path, case, "I could not find anything suitable.", "robust")
    assert nothing["piou"] == 0.0
