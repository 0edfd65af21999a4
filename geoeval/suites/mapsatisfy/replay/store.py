"""The store of recorded calls (`RecordStore`), indexed by normalised-argument key, and its CSV
form: `load_mock_store` reads the authors' `mock_data/<tool>.csv` layout and
`RecordStore.save_csv` writes it."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geoeval.api import GeoevalError
from geoeval.suites.mapsatisfy.replay.arguments import argument_key


@dataclass(frozen=True)
class ToolRecord:
    """One recorded call. `result` is the response body as recorded (JSON text or plain text)."""

    tool: str
    arguments: dict[str, Any]
    result: str
    key: str
    trace_id: str = ""
    origin: str = "recorded"  # "recorded" (loaded) | "live" | "simulated" (captured in record mode)
    source: str = ""  # where it was loaded from, e.g. "get_navigation.csv:12"


class RecordStore:
    """Recorded calls by tool, indexed by their normalised-argument key. Append-only, so that a
    vector index can extend itself with the records added since it was built."""

    def __init__(self, records: Iterable[ToolRecord] = ()) -> None:
        self._by_tool: dict[str, list[ToolRecord]] = {}
        self._by_key: dict[tuple[str, str], list[ToolRecord]] = {}
        for record in records:
            self._insert(record)

    def _insert(self, record: ToolRecord) -> ToolRecord:
        self._by_tool.setdefault(record.tool, []).append(record)
        self._by_key.setdefault((record.tool, record.key), []).append(record)
        return record

    def add(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        result: str,
        *,
        trace_id: str = "",
        origin: str = "recorded",
        source: str = "",
    ) -> ToolRecord:
        args = dict(arguments)
        return self._insert(ToolRecord(tool, args, str(result), argument_key(tool, args), trace_id, origin, source))

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_tool.values())

    @property
    def tools(self) -> list[str]:
        return sorted(self._by_tool)

    def records(self, tool: str) -> list[ToolRecord]:
        return self._by_tool.get(tool, [])

    def exact(self, tool: str, key: str) -> list[ToolRecord]:
        return self._by_key.get((tool, key), [])

    def save_csv(self, directory: str | Path) -> list[Path]:
        """One `<tool>.csv` per tool in the authors' layout (trace_id, tool_name, arguments,
        result; UTF-8 with BOM, as theirs)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for tool in self.tools:
            path = directory / f"{tool}.csv"
            with path.open("w", encoding="utf-8-sig", newline="") as fh:
                writer = csv.writer(fh)
                writer.writerow(["trace_id", "tool_name", "arguments", "result"])
                for r in self.records(tool):
                    writer.writerow(
                        [
                            r.trace_id,
                            r.tool,
                            json.dumps(r.arguments, ensure_ascii=False, separators=(",", ":")),
                            r.result,
                        ]
                    )
            written.append(path)
        return written


def load_mock_store(directory: str | Path, store: RecordStore | None = None) -> RecordStore:
    """The authors' `mock_data/*.csv` (or a store saved by `save_csv`) as a `RecordStore`.

    Columns: trace_id, tool_name, arguments (JSON), result (JSON or plain text), and in some
    files `feature`: text-embedding-v2 vectors of the open-text arguments, which geoeval cannot
    reproduce for new calls offline and so ignores. Empty files are skipped.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise GeoevalError(f"mock store: {directory} is not a directory of <tool>.csv files")
    store = store if store is not None else RecordStore()
    csv.field_size_limit(sys.maxsize)  # recorded navigation results run to hundreds of KB
    for path in sorted(directory.glob("*.csv")):
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None:
                continue  # an empty file: no recorded calls of that tool
            missing = {"arguments", "result"} - set(reader.fieldnames)
            if missing:
                raise GeoevalError(
                    f"{path}: missing column(s) {sorted(missing)}; expected trace_id, tool_name, arguments, result"
                )
            for line, row in enumerate(reader, start=2):
                tool = (row.get("tool_name") or path.stem).strip()
                try:
                    arguments = json.loads(row["arguments"] or "{}")
                except json.JSONDecodeError as exc:
                    raise GeoevalError(f"{path.name}:{line}: arguments are not valid JSON ({exc.msg})") from None
                if not isinstance(arguments, dict):
                    raise GeoevalError(f"{path.name}:{line}: arguments must be a JSON object")
                store.add(
                    tool,
                    arguments,
                    row["result"] or "",
                    trace_id=(row.get("trace_id") or "").strip(),
                    source=f"{path.name}:{line}",
                )
    return store
