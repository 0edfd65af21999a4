"""The replay sandbox: answers the business agent's tool calls from a store of recorded calls.

A call is answered in stages:

1. **exact**: the normalised arguments (arguments.py) equal those of a recorded call of the same tool;
2. **vector**: among the recorded calls of the same tool, the best one whose open-text arguments
   have an embedding cosine of at least `threshold` with the call's (matcher.py);
3. **simulated**: an Inspect model (`tool_simulator` role) writes the response, shown the tool,
   the arguments and the nearest recorded responses as a format reference (simulator.py);
4. otherwise a typed **no_record** response (JSON with `"status": "no_record"`).

Every `ToolResponse` says which stage answered (`match_type`) and with what `score`: 1.0 for
exact, the cosine for vector, for no_record the best cosine that stayed below the threshold
(None when no recorded call had agreeing anchors), None for simulated and live.

In record mode, responses from a live backend (which then replaces stages 2-3) or from the
simulator are added to the store, so a rerun replays them exactly.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from geoeval.api import clean_text
from geoeval.suites.mapsatisfy.replay.arguments import argument_key, canonical_text, normalize_arguments
from geoeval.suites.mapsatisfy.replay.catalogue import ARGUMENT_ALIASES, TOOL_SPECS, ToolSpec
from geoeval.suites.mapsatisfy.replay.embedders import Embedder, default_embedder, unit_rows
from geoeval.suites.mapsatisfy.replay.matcher import COORDINATE_TOLERANCE, ToolIndex
from geoeval.suites.mapsatisfy.replay.simulator import role_simulator, simulate, simulator_model, simulator_prompt
from geoeval.suites.mapsatisfy.replay.store import RecordStore, ToolRecord

MatchType = Literal["exact", "vector", "simulated", "live", "no_record"]


class ToolResponse(BaseModel):
    """What one call returned and how the sandbox found it."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)  # as the agent passed them
    key: str = ""  # the normalised-argument key
    content: str
    match_type: MatchType
    score: float | None = None
    matched_arguments: dict[str, Any] | None = None  # the record that answered (exact / vector)
    matched_trace_id: str | None = None
    matched_source: str | None = None
    error: str | None = None  # unknown tool or bad arguments: the content is the error JSON


# a live backend for record mode: (tool, arguments) -> response text, sync or async
Live = Callable[[str, dict[str, Any]], Awaitable[str] | str]


def _no_record_content(tool: str, message: str) -> str:
    return json.dumps({"status": "no_record", "tool": tool, "message": message}, ensure_ascii=False)


def _error_content(tool: str, message: str) -> str:
    return json.dumps({"status": "error", "tool": tool, "error": message}, ensure_ascii=False)


class ReplaySandbox:
    """Serves tool calls from a `RecordStore` (module docstring: the stages).

    - `embedder`: the vector stage's model; None uses `default_embedder()`, loaded on the first
      call that needs an embedding. `vector=False` turns the stage off.
    - `threshold`: the minimum cosine of the open-text arguments for a vector match; by default
      the embedder's `threshold` attribute.
    - `coordinate_tolerance`: how far (absolute) the numbers of a vector candidate's anchor
      arguments may be from the call's.
    - `tool_simulator`: an Inspect `Model` or model string for stage 3.
    - `live`: a backend `(tool, arguments) -> response text` (sync or async) for record mode.
    - `record`: add live and simulated responses to the store (origin "live" / "simulated").
    - `tools`: the catalogue the arguments are checked against (default `TOOL_SPECS`); a tool
      absent from it but present in the store is served without checks.
    """

    def __init__(
        self,
        store: RecordStore,
        *,
        embedder: Embedder | None = None,
        threshold: float | None = None,
        coordinate_tolerance: float = COORDINATE_TOLERANCE,
        vector: bool = True,
        tool_simulator: Any = None,
        live: Live | None = None,
        record: bool = False,
        tools: Mapping[str, ToolSpec] | None = None,
        simulator_examples: int = 2,
        example_chars: int = 1500,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._threshold = threshold
        self.coordinate_tolerance = coordinate_tolerance
        self.vector = vector
        self.tool_simulator = tool_simulator
        self.live = live
        self.record = record
        self.tools = dict(TOOL_SPECS if tools is None else tools)
        self.simulator_examples = simulator_examples
        self.example_chars = example_chars
        self._indexes: dict[str, ToolIndex] = {}
        self._simulator_model: Any = None

    # -- configuration ---------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @property
    def threshold(self) -> float:
        if self._threshold is not None:
            return self._threshold
        return float(getattr(self.embedder, "threshold", 0.9))

    # -- argument checks -------------------------------------------------------------------

    def check_call(self, tool: str, arguments: Mapping[str, Any] | None) -> str | None:
        """The error a call gets before any lookup, or None when it is well formed."""
        if not isinstance(arguments, Mapping) and arguments is not None:
            return f"arguments of '{tool}' must be an object of parameter values"
        spec = self.tools.get(tool)
        if spec is None:
            if self.store.records(tool):
                return None
            return f"unknown tool '{tool}'; available tools: {', '.join(sorted(self.tools))}"
        aliases = ARGUMENT_ALIASES.get(tool, {})
        given = {aliases.get(str(k), str(k)) for k in (arguments or {})}
        unknown = sorted(given - set(spec.param_names))
        if unknown:
            return f"unknown parameter(s) {unknown} for '{tool}'; its parameters are {list(spec.param_names)}"
        normalized = normalize_arguments(tool, arguments)
        missing = [p for p in spec.required if p not in normalized]
        if missing:
            return f"missing required parameter(s) {missing} for '{tool}'"
        return None

    # -- the vector index ------------------------------------------------------------------

    # -- the vector index ------------------------------------------------------------------

    @staticmethod
    def _pick(records: list[ToolRecord], trace_id: str | None) -> ToolRecord:
        """Among records with equal arguments, the current case's first, else the first loaded."""
        if trace_id:
            for r in records:
                if r.trace_id == trace_id:
                    return r
        return records[0]

    def _embed_unit(self, texts: list[str]) -> np.ndarray:
        return unit_rows(np.asarray(self.embedder.embed(texts), dtype=np.float32))

    def _index(self, tool: str) -> ToolIndex:
        """The tool's index, extended with the records added since it was last used."""
        index = self._indexes.setdefault(tool, ToolIndex())
        index.extend(tool, self.store.records(tool), self._embed_unit)
        return index

    def build_index(self, tools: Iterable[str] | None = None) -> None:
        """Embed the recorded calls now (otherwise done on the first vector lookup of a tool)."""
        for tool in self.store.tools if tools is None else tools:
            self._index(tool)

    def nearest(self, tool: str, normalized: Mapping[str, Any]) -> tuple[float, str] | None:
        """The best vector candidate of a call as (similarity, recorded key), or None when no
        recorded call of the tool has agreeing anchor arguments (`ToolIndex.nearest`)."""
        return self._index(tool).nearest(tool, normalized, self.coordinate_tolerance, self._embed_unit)

    # -- lookup ----------------------------------------------------------------------------

    def lookup(self, tool: str, arguments: Mapping[str, Any] | None, trace_id: str | None = None) -> ToolResponse:
        """Stages 1-2 (and the typed no_record), synchronously; no model or backend is called."""
        args = dict(arguments or {})
        error = self.check_call(tool, arguments)
        if error:
            return ToolResponse(
                tool=tool, arguments=args, content=_error_content(tool, error), match_type="no_record", error=error
            )
        normalized = normalize_arguments(tool, args)
        key = canonical_text(normalized)
        hits = self.store.exact(tool, key)
        if hits:
            return self._answer(tool, args, key, self._pick(hits, trace_id), "exact", 1.0)
        if not self.store.records(tool):
            return ToolResponse(
                tool=tool,
                arguments=args,
                key=key,
                match_type="no_record",
                content=_no_record_content(tool, "no recorded calls of this tool"),
            )
        best = self.nearest(tool, normalized) if self.vector else None
        if best is not None and best[0] >= self.threshold:
            return self._answer(
                tool, args, key, self._pick(self.store.exact(tool, best[1]), trace_id), "vector", best[0]
            )
        message = (
            "no recorded call of this tool with these arguments"
            if best is None
            else "no recorded call close enough to these arguments"
        )
        return ToolResponse(
            tool=tool,
            arguments=args,
            key=key,
            content=_no_record_content(tool, message),
            match_type="no_record",
            score=None if best is None else best[0],
        )

    @staticmethod
    def _answer(
        tool: str, args: dict[str, Any], key: str, record: ToolRecord, match: MatchType, score: float
    ) -> ToolResponse:
        return ToolResponse(
            tool=tool,
            arguments=args,
            key=key,
            content=record.result,
            match_type=match,
            score=score,
            matched_arguments=record.arguments,
            matched_trace_id=record.trace_id,
            matched_source=record.source or None,
        )

    # -- the full call ---------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: Mapping[str, Any] | None = None, trace_id: str | None = None
    ) -> ToolResponse:
        """Answer one call through every stage. Never raises for a bad call: the error is the
        response, as a live tool service would return it."""
        args = dict(arguments or {})
        error = self.check_call(tool, arguments)
        if error:
            return ToolResponse(
                tool=tool, arguments=args, content=_error_content(tool, error), match_type="no_record", error=error
            )
        if self.record and self.live is not None:
            # record mode against a live service: replay only exact repeats, capture the rest
            key = argument_key(tool, args)
            hits = self.store.exact(tool, key)
            if hits:
                return self._answer(tool, args, key, self._pick(hits, trace_id), "exact", 1.0)
            result = self.live(tool, args)
            # a live service or a simulator model may answer anything; the agent is sent it next
            content = clean_text(str(await result) if inspect.isawaitable(result) else str(result))
            self.store.add(tool, args, content, trace_id=trace_id or "", origin="live")
            return ToolResponse(tool=tool, arguments=args, key=key, content=content, match_type="live")
        response = self.lookup(tool, args, trace_id)
        simulator = self._simulator()
        if response.match_type != "no_record" or simulator is None:
            return response
        content = await self._simulate(simulator, tool, args)
        if self.record:
            self.store.add(tool, args, content, trace_id=trace_id or "", origin="simulated")
        return ToolResponse(tool=tool, arguments=args, key=response.key, content=content, match_type="simulated")

    def _simulator(self) -> Any:
        """The model of stage 3: the one given to the sandbox, else the running eval's
        `tool_simulator` model role, else None (typed no_record)."""
        if self.tool_simulator is None:
            return role_simulator()
        if self._simulator_model is None:
            self._simulator_model = simulator_model(self.tool_simulator)
        return self._simulator_model

    def simulator_prompt(self, tool: str, arguments: Mapping[str, Any]) -> str:
        return simulator_prompt(
            tool, self.tools.get(tool), arguments, self._simulator_examples(tool, arguments), self.example_chars
        )

    def _simulator_examples(self, tool: str, arguments: Mapping[str, Any]) -> list[ToolRecord]:
        """The recorded calls a simulator prompt shows: the closest (when one has agreeing
        anchors) first, then the earliest, `simulator_examples` in all."""
        if self.simulator_examples <= 0 or not self.store.records(tool):
            return []
        chosen: list[ToolRecord] = []
        best = self.nearest(tool, normalize_arguments(tool, arguments)) if self.vector else None
        if best is not None:
            chosen.append(self.store.exact(tool, best[1])[0])
        for record in self.store.records(tool):
            if len(chosen) >= self.simulator_examples:
                break
            if all(record.key != c.key for c in chosen):
                chosen.append(record)
        return chosen

    async def _simulate(self, simulator: Any, tool: str, arguments: Mapping[str, Any]) -> str:
        return await simulate(simulator, self.simulator_prompt(tool, arguments))
