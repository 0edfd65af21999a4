"""The deterministic replay sandbox of MapSatisfyBench's map-service tools (section 3.2, 4.2).

The business agent calls the authors' tools; a call is answered from a store of recorded calls
(exact, then vector match), else by a simulator model, else with a typed no_record response.
One module per concern:

- `catalogue`: the tools, their parameters and the authors' parameter aliases (`TOOL_SPECS`);
- `arguments`: argument normalisation and the exact-match key (`normalize_arguments`);
- `store`: the recorded calls (`RecordStore`) and the authors' `mock_data/<tool>.csv` layout;
- `embedders`: the vector stage's embedders (`E5Embedder`, the default; `HashingEmbedder`);
- `matcher`: anchor and open-text arguments, and the per-tool vector index (`ToolIndex`);
- `simulator`: stage 3, the `tool_simulator` model's prompt and response;
- `sandbox`: `ReplaySandbox`, which runs the stages, and its `ToolResponse`;
- `inspect_adapter`: the catalogue as Inspect tools served by a sandbox (`inspect_tools`).
"""

from geoeval.suites.mapsatisfy.replay.arguments import (
    NUMBER_DECIMALS,
    argument_key,
    canonical_text,
    normalize_arguments,
    normalize_value,
)
from geoeval.suites.mapsatisfy.replay.catalogue import (
    ARGUMENT_ALIASES,
    TOOL_SPECS,
    ParamSpec,
    ToolSpec,
)
from geoeval.suites.mapsatisfy.replay.embedders import (
    E5Embedder,
    Embedder,
    HashingEmbedder,
    default_embedder,
)
from geoeval.suites.mapsatisfy.replay.inspect_adapter import inspect_tools
from geoeval.suites.mapsatisfy.replay.matcher import (
    COORDINATE_TOLERANCE,
    LABEL_PARAMS,
    OPEN_TEXT_PARAMS,
    ToolIndex,
    anchor_signature,
    open_text,
)
from geoeval.suites.mapsatisfy.replay.sandbox import (
    Live,
    MatchType,
    ReplaySandbox,
    ToolResponse,
)
from geoeval.suites.mapsatisfy.replay.simulator import SIMULATOR_PROMPT, SIMULATOR_ROLE
from geoeval.suites.mapsatisfy.replay.store import (
    RecordStore,
    ToolRecord,
    load_mock_store,
)

__all__ = [
    "ARGUMENT_ALIASES", "COORDINATE_TOLERANCE", "LABEL_PARAMS", "NUMBER_DECIMALS", "OPEN_TEXT_PARAMS",
    "SIMULATOR_PROMPT", "SIMULATOR_ROLE", "TOOL_SPECS", "E5Embedder", "Embedder", "HashingEmbedder", "Live",
    "MatchType", "ParamSpec", "RecordStore", "ReplaySandbox", "ToolIndex", "ToolRecord", "ToolResponse",
    "ToolSpec", "anchor_signature", "argument_key", "canonical_text", "default_embedder", "inspect_tools",
    "load_mock_store", "normalize_arguments", "normalize_value", "open_text",
]
