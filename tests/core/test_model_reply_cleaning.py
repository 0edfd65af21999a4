"""Every string field of a model's reply is cleaned before Inspect sees it (issue 43): a lone
surrogate in a field no text cleaner names (a tool call's id, the reply's id, a provider's
metadata) failed Inspect's sample log with `PydanticSerializationError`, and with it every sample
of the eval."""

from __future__ import annotations

import dataclasses

from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ContentReasoning, ContentText, ModelOutput
from inspect_ai.tool import ToolCall

from geoeval.core.run.models import clean_model_output
from geoeval.core.text import REPLACEMENT, TOO_DEEP, clean_fields

S = "\ud800"


def _strings(value, found):
    """Every string inside `value`, as `clean_fields` walks it."""
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(k, found)
            _strings(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, found)
    return found


def _dirty_output() -> ModelOutput:
    message = ChatMessageAssistant(
        id=f"msg{S}",
        content=[ContentReasoning(reasoning=f"think{S}"), ContentText(text=f"answer{S}")],
        tool_calls=[ToolCall(id=f"call{S}", function=f"sub{S}mit", arguments={f"a{S}": [f"x{S}", {"k": S}]})],
        model=f"model{S}",
    )
    return ModelOutput(
        model=f"hostile{S}",
        choices=[ChatCompletionChoice(message=message, stop_reason="tool_calls")],
        metadata={f"key{S}": f"value{S}"},
        response_id=f"resp{S}",
    )


def test_every_field_of_a_reply_is_cleaned_in_place():
    output = _dirty_output()
    message = output.choices[0].message
    assert clean_model_output(output) is output
    dumped = output.model_dump(mode="json")
    assert not any(S in text for text in _strings(dumped, []))
    output.model_dump_json()  # what Inspect's sample log does: raised PydanticSerializationError before
    call = message.tool_calls[0]
    assert (call.id, call.function, message.id, output.response_id) == (
        f"call{REPLACEMENT}",
        f"sub{REPLACEMENT}mit",
        f"msg{REPLACEMENT}",
        f"resp{REPLACEMENT}",
    )
    assert output.choices[0].message is message  # the same objects: what Inspect holds already sees them clean


def test_clean_text_passes_unchanged_and_deep_nesting_is_cut():
    clean = ModelOutput.from_content("m", "plain text, emoji 🗺️ and 中文")
    before = clean.model_dump()
    clean_model_output(clean)
    assert clean.model_dump() == before

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        name: str

    frozen = clean_fields(Frozen(f"x{S}"))
    assert frozen.name == f"x{REPLACEMENT}"
    deep: list = []
    node = deep
    for _ in range(300):
        node.append([])
        node = node[0]
    assert TOO_DEEP in repr(clean_fields({"a": deep}, max_depth=50))
