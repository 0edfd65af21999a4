"""MapTab's typed submit channel (`suite.answer_channel=tool`; `core/reading/submit.py`): the
route and the QA value as Inspect tools, and the prompt line that asks for them.

The paper asks for the answer as text (`answer_channel=text`, the default): the route "A-B(transfer)-C"
and the QA value between `<answer_begin>` and `<answer_end>`. With `tool`, the model calls
`submit_route(route, transfer_at)` or `submit_answer(value)`, and the tool returns the answer in
exactly that text, which both answer protocols read as written.
"""

from __future__ import annotations

from inspect_ai.tool import Tool, ToolDef

from geoeval.suites.maptab.metrics import TRANSFER_MARK
from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END

SUBMIT_ROUTE = "submit_route"
SUBMIT_VALUE = "submit_answer"
#: the user prompt's last line under `answer_channel=tool` (in place of the text format's)
RP_TOOL_LINE = (
    f"Submit the route by calling `{SUBMIT_ROUTE}` with the stations in order (`route`) and the "
    "stations where you change lines (`transfer_at`)."
)
QA_TOOL_LINE = f"Submit your answer by calling `{SUBMIT_VALUE}` with the value: 1 or 0 for yes or no, or the number."


def route_answer(route: list[str], transfer_at: list[str] | None = None) -> str:
    """The submitted route in the paper's format: stations joined by "-", a transfer station marked."""
    changes = {name.strip() for name in transfer_at or []}
    return "-".join(f"{name.strip()}{TRANSFER_MARK if name.strip() in changes else ''}" for name in route)


def value_answer(value: str | float | bool) -> str:
    """The submitted QA value between the answer tags, a boolean as 1 / 0."""
    if isinstance(value, bool):
        value = "1" if value else "0"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{ANSWER_BEGIN}{text.strip()}{ANSWER_END}"


def submit_route_tool() -> Tool:
    async def submit_route(route: list[str], transfer_at: list[str] | None = None) -> str:
        return route_answer(route, transfer_at)

    return ToolDef(
        submit_route,
        name=SUBMIT_ROUTE,
        description="Submit your final route.",
        parameters={
            "route": "The stations of the route in riding order, origin first, destination last.",
            "transfer_at": "The stations of the route where you change lines (empty if none).",
        },
    ).as_tool()


def submit_value_tool() -> Tool:
    async def submit_answer(value: str) -> str:
        return value_answer(value)

    return ToolDef(
        submit_answer,
        name=SUBMIT_VALUE,
        description="Submit your final answer.",
        parameters={"value": "The answer: 1 or 0 for a yes/no question, otherwise the number."},
    ).as_tool()
