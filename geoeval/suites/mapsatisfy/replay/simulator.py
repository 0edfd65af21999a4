"""Stage 3 of the replay: an Inspect model (the `tool_simulator` role, or a model given to the
sandbox) writes the response of a call no recorded call answers, shown the tool, the arguments
and the nearest recorded responses as a format reference."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from geoeval.api import clean_text
from geoeval.suites.mapsatisfy.replay.arguments import canonical_text, normalize_arguments
from geoeval.suites.mapsatisfy.replay.catalogue import ToolSpec
from geoeval.suites.mapsatisfy.replay.store import ToolRecord

SIMULATOR_ROLE = "tool_simulator"  # the Inspect model role of stage 3

SIMULATOR_PROMPT = """You simulate the map-service tool `{tool}` of a map app inside an offline evaluation sandbox.
Tool: {description}
Parameters:
{parameters}

The agent called it with these arguments:
{arguments}

{examples}Reply with the tool's response body only (JSON when the recorded responses are JSON), consistent with
the arguments and realistic for the place and time; no explanation, no code fence."""


def role_simulator() -> Any:
    """The running eval's `tool_simulator` model role, or None (read per call: one sandbox serves
    every eval of the process, and the role belongs to the eval)."""
    from inspect_ai.model import model_roles

    return model_roles().get(SIMULATOR_ROLE)


def simulator_model(tool_simulator: Any) -> Any:
    """The Inspect model of a sandbox's `tool_simulator`: a model string is resolved with the
    harness's retry defaults, a model is used as it is."""
    if not isinstance(tool_simulator, str):
        return tool_simulator
    from inspect_ai.model import GenerateConfig

    from geoeval.api import RETRY_DEFAULTS, build_role_model

    return build_role_model(tool_simulator, GenerateConfig(**RETRY_DEFAULTS))


def simulator_prompt(
    tool: str, spec: ToolSpec | None, arguments: Mapping[str, Any], examples: Sequence[ToolRecord], example_chars: int
) -> str:
    """The stage-3 prompt of one call; `examples` are the recorded calls shown as a format
    reference (each response cut to `example_chars`)."""
    description = spec.description if spec else "(not in the catalogue)"
    parameters = "\n".join(f"- {p.name}: {p.description}" for p in spec.params) if spec else "-"
    shown_examples = ""
    if examples:
        shown = [
            f"Arguments: {canonical_text(normalize_arguments(tool, r.arguments))}\nResponse: {r.result[:example_chars]}"
            for r in examples
        ]
        shown_examples = (
            "Recorded responses of this tool for similar calls (format reference):\n" + "\n\n".join(shown) + "\n\n"
        )
    return SIMULATOR_PROMPT.format(
        tool=tool,
        description=description,
        parameters=parameters,
        arguments=json.dumps(dict(arguments), ensure_ascii=False),
        examples=shown_examples,
    )


async def simulate(model: Any, prompt: str) -> str:
    """The simulator's response body: its completion, cleaned, without a code fence."""
    output = await model.generate(prompt)
    return strip_fence(clean_text(output.completion or ""))


def strip_fence(text: str) -> str:
    text = (text or "").strip()
    m = re.match(r"^```[^\n]*\n(.*)\n```$", text, re.DOTALL)
    return m.group(1).strip() if m else text
