"""A sample's error says what happened in one line, and a sample Inspect finished with an error and
no answer is read (not lost as "not delivered")."""

from __future__ import annotations

from inspect_ai.log import EvalError, EvalSample
from inspect_ai.model import ModelOutput

from geoeval.core.run.inspect_bridge import readable_error, sample_to_result

# what Inspect stores when the provider answers HTTP 400 (the request, kilobytes of it, comes first)
GENERATE_ERROR = (
    'ModelGenerateError(\'\\nRequest:\\n{\\n  "messages": [\\n    {"role": "user", "content": "..."}\\n  ],\\n'
    '  "model": "smollm2"\\n}\\n\\nBadRequestError(\\\'Error code: 400 - model=local_llm reads text only: a message '
    "holds a `image_url` part (choose a setting without images)\\')')"
)


def test_a_refused_request_is_its_providers_line_not_the_whole_request():
    assert readable_error(GENERATE_ERROR) == (
        "the model endpoint refused the request: BadRequestError (HTTP 400): model=local_llm reads text only: "
        "a message holds a `image_url` part (choose a setting without images)"
    )
    assert readable_error("a tool crashed: boom") == "a tool crashed: boom"


def test_a_sample_that_errored_with_no_answer_is_read_with_its_error():
    sample = EvalSample(
        id="s1",
        epoch=1,
        input="q",
        target="t",
        output=ModelOutput(model="m", choices=[]),  # Inspect's output of a failed generate
        error=EvalError(message=GENERATE_ERROR, traceback="", traceback_ansi=""),
        metadata={"dims": {"suite": "maptab"}},
    )
    result = sample_to_result(sample, run_hash="h", model="m", metric_names=["ema"])
    assert result.status == "error" and result.error.startswith("the model endpoint refused the request")
    assert (result.completion, result.stop_reason) == ("", "")
