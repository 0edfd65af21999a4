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
