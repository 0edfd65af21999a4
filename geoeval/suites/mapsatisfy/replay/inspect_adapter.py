"""The Inspect side of the replay: `inspect_tools` turns the catalogue into Inspect `ToolDef`s
whose calls the sandbox answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from inspect_ai.tool import ToolDef, ToolParam, ToolParams
from inspect_ai.util import JSONSchema

from geoeval.api import GeoevalError
from geoeval.suites.mapsatisfy.replay.catalogue import ParamSpec
from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox, ToolResponse

if TYPE_CHECKING:
    from inspect_ai.util import JSONType


def inspect_tools(
    sandbox: ReplaySandbox,
    names: Iterable[str] | None = None,
    *,
    trace_id: str | None = None,
    on_response: Callable[[ToolResponse], None] | None = None,
) -> list[Any]:
    """Inspect `ToolDef`s of the catalogue tools (all, or `names`) served by `sandbox`.

    `trace_id` (the case's task_id) prefers that case's records among equal ones; `on_response`
    sees every `ToolResponse` (the solver keeps them for the judges and TS).
    """
    defs = []
    for name in sorted(sandbox.tools) if names is None else names:
        spec = sandbox.tools.get(name)
        if spec is None:
            raise GeoevalError(f"unknown MapSatisfy tool '{name}'; available: {', '.join(sorted(sandbox.tools))}")
        params = ToolParams(
            properties={
                p.name: ToolParam(
                    type=_schema_types(p),
                    description=p.description,
                    items=JSONSchema(type=cast("JSONType", p.items)) if p.items else None,  # a JSON-schema type
                )
                for p in spec.params
            },
            required=list(spec.required),
        )
        defs.append(
            ToolDef(
                _tool_function(sandbox, name, trace_id, on_response),
                name=name,
                description=spec.description,
                parameters=params,
            )
        )
    return defs


def _schema_types(param: ParamSpec) -> Any:
    """JSON-schema type(s) of a parameter; optional ones also take null ("X | None" in the
    authors' rules, and their recorder passes null for every unset parameter)."""
    types = list(param.type) + ([] if param.required else ["null"])
    return types if len(types) > 1 else types[0]


def _tool_function(
    sandbox: ReplaySandbox, name: str, trace_id: str | None, on_response: Callable[[ToolResponse], None] | None
) -> Callable[..., Awaitable[str]]:
    async def run(**kwargs: Any) -> str:
        response = await sandbox.call(name, kwargs, trace_id=trace_id)
        if on_response is not None:
            on_response(response)
        return response.content

    return run
