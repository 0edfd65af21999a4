"""MapSatisfyBench instances: the authors' ground-truth format as pydantic models, and loaders.

One instance is a root query with the context the agent may see (uid, time, location, city,
same-day history), the full intent only the simulated user sees, an optional user profile, the
ground truth the judges and metrics read, and descriptive metadata (domain, sub-task, ...).

The field names are the authors' (`peers/mapsatisfy/demo_bench.xlsx`, appendix C.3), including
their spelling `paramter` for the required parameters of a tool; `parameter` is accepted too.
Models of the authors' format keep keys they do not know (`extra="allow"`), so a record of a
larger release survives a load/save round trip.

Loaders read the demo workbook as it is (`load_demo_bench`), and the same records as JSON or
JSONL (`load_instances`). A record that fails the schema is reported with its row, task id and
the field path (`ground_truth.implicit_intent.0.constraint_type: ...`) as a `GeoevalError`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from geoeval.api import GeoevalError

# The six task domains of the paper (section 4.3, Figure 3) and the three sources an implicit
# factor can be recovered from (appendix B.1, Table B1). Metadata fields accept other labels too,
# since the authors' full release may label them in Chinese; these are the names geoeval writes.
DOMAINS = ("search", "navigation", "ride_hailing", "itinerary", "real_time_info", "local_services")
IMPLICIT_FACTOR_SOURCES = ("context", "preference", "spatio_temporal")

# Columns of the authors' workbook. The demo has exactly the first five; a profile or metadata
# column, when a release has one, is read too.
REQUIRED_COLUMNS = ("task_id", "query", "context", "full_intent", "ground_truth")
OPTIONAL_COLUMNS = ("user_profile", "metadata")

_MAX_REPORTED_ERRORS = 20


class _AuthorsModel(BaseModel):
    """Base of the models that mirror the authors' JSON: unknown keys are kept, not dropped."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ImplicitIntent(_AuthorsModel):
    """One implicit decision factor: the rubric a judge checks, whether it is a hard constraint
    or a soft preference, and its evidence-supported weight w_i (appendix A.2)."""

    rubric_instruction: str = Field(min_length=1)
    constraint_type: Literal["hard", "soft"]
    # w_i: a product of preference strength, recency, momentum and CurrentNeed, so it is not
    # bounded by 1 (the demo has 1.2). Only negative weights are meaningless.
    evidence_confidence: float = Field(ge=0.0)
    evidence: str = ""
    # The recovery source (context | preference | spatio_temporal). Appendix C.3 shows it per
    # factor; the demo JSON does not carry it, so it is optional.
    source: str | None = None


class ClarificationPolicy(_AuthorsModel):
    """How many clarification turns the case allows (S_median of Eff) and why."""

    max_allowed: int = Field(ge=0)
    evidence: str = ""


class ParameterRule(_AuthorsModel):
    param: str
    rule_description: str = ""


class ToolParameterRules(_AuthorsModel):
    """The parameters a call of one expected tool must carry (`paramter`, the authors' spelling),
    and a description of the value each parameter should take (`rules`, which also covers
    optional parameters)."""

    required: list[str] = Field(
        validation_alias=AliasChoices("paramter", "parameter", "required"),
        serialization_alias="paramter",
    )
    rules: list[ParameterRule] = Field(default_factory=list)


class ToolCallsTruth(_AuthorsModel):
    expected_tools: list[str] = Field(default_factory=list)
    parameter_rules: dict[str, ToolParameterRules] = Field(default_factory=dict)
    factual_answer_rubric: list[str] = Field(default_factory=list)


class TruthTrajectory(_AuthorsModel):
    tool_calls: ToolCallsTruth


class GroundTruth(_AuthorsModel):
    explicit_intent: list[str] = Field(default_factory=list)
    implicit_intent: list[ImplicitIntent] = Field(default_factory=list)
    clarification_policy: ClarificationPolicy
    truth_trajectory: TruthTrajectory


def parse_history(value: Any) -> list[str]:
    """The same-day history as a list of sentences.

    The demo stores it as a JSON string inside the context JSON; one instance
    (ed34703d53d0bc4654b67c466cf8b672) escapes it once more (`[\\"...\\", ...]`), which is read as
    the body of a JSON string literal and then decoded.
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if not isinstance(value, str):
        raise ValueError(f"history must be a list of strings or a JSON list, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return []
    try:
        decoded: Any = json.loads(text)
    except json.JSONDecodeError:
        try:  # one more escaping layer: the text is the body of a JSON string literal
            decoded = json.loads(json.loads(f'"{text}"'))
        except json.JSONDecodeError:
            raise ValueError("history is not a JSON list of strings") from None
    if isinstance(decoded, str):  # encoded twice: decode once more
        try:
            decoded = json.loads(decoded)
        except json.JSONDecodeError:
            raise ValueError("history is not a JSON list of strings") from None
    if not isinstance(decoded, list):
        raise ValueError("history is not a JSON list of strings")
    return [str(v) for v in decoded]


class Context(_AuthorsModel):
    """What the business agent sees besides the query (the C.2 prompt's {context})."""

    uid: str
    time: str  # "YYYY-MM-DD HH:MM:SS", local time of the query, kept as the authors write it
    user_current_loc: str  # "lon,lat"
    user_loc_name: str = ""
    city: str = ""  # "province/city", e.g. "广东省/深圳市"
    history: list[str] = Field(default_factory=list)

    @field_validator("uid", mode="before")
    @classmethod
    def _uid_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @field_validator("time")
    @classmethod
    def _time_parses(cls, v: str) -> str:
        try:
            datetime.fromisoformat(v.strip())
        except ValueError:
            raise ValueError(f"time must be 'YYYY-MM-DD HH:MM:SS', got {v!r}") from None
        return v.strip()

    @field_validator("user_current_loc", mode="before")
    @classmethod
    def _loc_text(cls, v: Any) -> Any:
        if isinstance(v, (list, tuple)) and len(v) == 2:
            return f"{v[0]},{v[1]}"
        return v

    @field_validator("user_current_loc")
    @classmethod
    def _loc_parses(cls, v: str) -> str:
        lon, lat = _split_lon_lat(v)
        if not (-180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0):
            raise ValueError(f"user_current_loc must be 'lon,lat' within range, got {v!r}")
        return v.strip()

    @field_validator("history", mode="before")
    @classmethod
    def _history(cls, v: Any) -> list[str]:
        return parse_history(v)

    @property
    def lon(self) -> float:
        return _split_lon_lat(self.user_current_loc)[0]

    @property
    def lat(self) -> float:
        return _split_lon_lat(self.user_current_loc)[1]

    @property
    def timestamp(self) -> datetime:
        return datetime.fromisoformat(self.time)


def _split_lon_lat(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2:
        raise ValueError(f"user_current_loc must be 'lon,lat', got {text!r}")
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise ValueError(f"user_current_loc must be two numbers 'lon,lat', got {text!r}") from None


class UserProfile(_AuthorsModel):
    """The user profile of the B.4 setting and of generated instances. The demo has none (its
    profiles come only as `search_user_profile` tool results, which are free text)."""

    summary: str = ""  # free text, like the authors' search_user_profile result
    attributes: dict[str, Any] = Field(default_factory=dict)  # e.g. {"gender": "male", "has_car": true}
    # decision dimension -> option -> share of the user's behaviours, e.g.
    # {"travel_mode_local": {"driving": 0.852}}: the S_i of appendix A.2 for profile evidence.
    preferences: dict[str, dict[str, float]] = Field(default_factory=dict)


def _split_labels(v: Any) -> Any:
    if isinstance(v, str):
        return [p.strip() for p in re.split(r"[;；]", v) if p.strip()]
    return v


class InstanceMetadata(BaseModel):
    """Descriptive dimensions (appendix C.3 "Meta information", Figure 3, Table B1); the demo
    carries none, so every field is optional. Multi-label fields accept "a; b" strings."""

    model_config = ConfigDict(extra="allow")

    domain: list[str] = Field(default_factory=list)
    sub_task: list[str] = Field(default_factory=list)
    implicit_factor_source: list[str] = Field(default_factory=list)
    scene_tags: list[str] = Field(default_factory=list)
    time_slot: str | None = None  # e.g. "evening"
    day_type: str | None = None  # "weekday" | "weekend" | "holiday"
    city_tier: str | None = None  # e.g. "new first-tier"
    locality: str | None = None  # "local" | "non_local"
    difficulty: str | None = None  # "L1" | "L2" | ...

    @field_validator("domain", "sub_task", "implicit_factor_source", "scene_tags", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        return _split_labels(v)


class MapSatisfyInstance(BaseModel):
    """One benchmark case."""

    model_config = ConfigDict(extra="allow")

    task_id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    context: Context
    full_intent: str = ""  # shown only to the simulated user
    ground_truth: GroundTruth
    user_profile: UserProfile | None = None
    metadata: InstanceMetadata = Field(default_factory=InstanceMetadata)

    @field_validator("task_id", mode="before")
    @classmethod
    def _id_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) else v

    @field_validator("user_profile", mode="before")
    @classmethod
    def _profile_text(cls, v: Any) -> Any:
        if isinstance(v, str):  # a plain-text profile, as search_user_profile returns it
            return {"summary": v} if v.strip() else None
        return v

    # Shortcuts the metrics, judges and agents read.
    @property
    def tool_truth(self) -> ToolCallsTruth:
        return self.ground_truth.truth_trajectory.tool_calls

    @property
    def expected_tools(self) -> list[str]:
        """Gold tool names, deduplicated in their first order (TS counts names, not calls)."""
        return list(dict.fromkeys(self.tool_truth.expected_tools))

    @property
    def required_parameters(self) -> dict[str, list[str]]:
        return {tool: list(rules.required) for tool, rules in self.tool_truth.parameter_rules.items()}

    @property
    def factual_answer_rubric(self) -> list[str]:
        return list(self.tool_truth.factual_answer_rubric)

    @property
    def max_allowed_clarifications(self) -> int:
        return self.ground_truth.clarification_policy.max_allowed


# ---------------------------------------------------------------------------------------------
# Loading and saving


def _decode_json_cell(value: Any, column: str) -> Any:
    if value is None or isinstance(value, (dict, list)):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"column '{column}' is not valid JSON ({exc.msg} at char {exc.pos})") from None
    return value


def _profile_cell(value: Any) -> Any:
    """A profile cell may be JSON or plain text."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        return decoded
    return value


def _format_validation_error(exc: ValidationError) -> list[str]:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err.get("loc", ())) or "<instance>"
        lines.append(f"{path}: {err.get('msg', 'invalid')}")
    return lines


def parse_instance(record: Mapping[str, Any]) -> MapSatisfyInstance:
    """One instance from a record whose `context`, `ground_truth`, `user_profile` and `metadata`
    are objects or JSON strings (the workbook stores them as strings). Raises ValueError or
    pydantic's ValidationError; the loaders turn those into a `GeoevalError` with the location."""
    data = dict(record)
    for column in ("context", "ground_truth", "metadata"):
        if column in data:
            data[column] = _decode_json_cell(data[column], column)
    if "user_profile" in data:
        data["user_profile"] = _profile_cell(data["user_profile"])
    if data.get("metadata") is None:
        data.pop("metadata", None)
    return MapSatisfyInstance.model_validate(data)


def _parse_all(records: Iterable[tuple[str, Mapping[str, Any]]], source: Path) -> list[MapSatisfyInstance]:
    instances: list[MapSatisfyInstance] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for where, record in records:
        task = record.get("task_id")
        label = f"{where} (task_id {task})" if task not in (None, "") else where
        try:
            inst = parse_instance(record)
        except ValidationError as exc:
            problems.extend(f"{label}: {line}" for line in _format_validation_error(exc))
            continue
        except ValueError as exc:
            problems.append(f"{label}: {exc}")
            continue
        if inst.task_id in seen:
            problems.append(f"{label}: task_id duplicates {seen[inst.task_id]}")
            continue
        seen[inst.task_id] = where
        instances.append(inst)
    if problems:
        shown = problems[:_MAX_REPORTED_ERRORS]
        more = len(problems) - len(shown)
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise GeoevalError(
            f"{source}: {len(problems)} schema problem(s); fix these fields:\n  " + "\n  ".join(shown) + tail
        )
    return instances


def load_demo_bench(path: str | Path) -> list[MapSatisfyInstance]:
    """The authors' workbook (`demo_bench.xlsx`): one sheet, a header row with task_id, query,
    context, full_intent, ground_truth (optionally user_profile, metadata), one instance a row."""
    path = Path(path)
    if not path.is_file():
        raise GeoevalError(f"MapSatisfy instances: no such file {path}")
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - a dependency of geoeval
        raise GeoevalError("reading .xlsx needs openpyxl: pip install 'openpyxl>=3.1'") from None
    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several types for a file that is not a workbook
        raise GeoevalError(f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None
    try:
        sheet = workbook.worksheets[0]
        rows = sheet.iter_rows(values_only=True)
        header_row = next(rows, None)
        if header_row is None:
            raise GeoevalError(f"{path}: the first sheet is empty; expected a header row {list(REQUIRED_COLUMNS)}")
        header = [str(h).strip() if h is not None else "" for h in header_row]
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise GeoevalError(f"{path}: missing column(s) {missing}; the header is {header}")
        wanted = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in header]
        index = {c: header.index(c) for c in wanted}
        records = []
        for row_number, row in enumerate(rows, start=2):
            if row is None or all(cell is None or (isinstance(cell, str) and not cell.strip()) for cell in row):
                continue
            record = {c: (row[i] if i < len(row) else None) for c, i in index.items()}
            records.append((f"row {row_number}", record))
    finally:
        workbook.close()
    return _parse_all(records, path)


def load_instances(path: str | Path) -> list[MapSatisfyInstance]:
    """Instances from `.xlsx` (the authors' workbook), `.json` (a list of records, or one record)
    or `.jsonl` (one record a line). JSON records may hold `context`/`ground_truth` as objects or,
    as in the workbook, as JSON strings."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return load_demo_bench(path)
    if not path.is_file():
        raise GeoevalError(f"MapSatisfy instances: no such file {path}")
    text = path.read_text(encoding="utf-8-sig")
    records: list[tuple[str, Mapping[str, Any]]] = []
    if suffix == ".jsonl":
        for line_number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise GeoevalError(f"{path}: line {line_number} is not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise GeoevalError(f"{path}: line {line_number} must be a JSON object (one instance)")
            records.append((f"line {line_number}", obj))
    elif suffix == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GeoevalError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        items = obj if isinstance(obj, list) else [obj]
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise GeoevalError(f"{path}: item {i} must be a JSON object (one instance)")
            records.append((f"item {i}", item))
    else:
        raise GeoevalError(f"{path}: unsupported instance file type '{suffix}'; use .xlsx, .json or .jsonl")
    return _parse_all(records, path)


def instance_to_record(instance: MapSatisfyInstance) -> dict[str, Any]:
    """The instance as a JSON-ready record with the authors' key names (`paramter`); nested
    objects stay objects (the workbook's JSON-in-a-cell encoding is only read, never written)."""
    record = instance.model_dump(mode="json", by_alias=True)
    if record.get("user_profile") is None:
        record.pop("user_profile", None)
    return record


def save_instances(instances: Iterable[MapSatisfyInstance], path: str | Path) -> Path:
    """Write `.json` (a list) or `.jsonl` (one instance a line), UTF-8, non-ASCII kept."""
    path = Path(path)
    records = [instance_to_record(i) for i in instances]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    elif path.suffix.lower() == ".json":
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    else:
        raise GeoevalError(f"{path}: save instances as .json or .jsonl")
    return path


def expected_tool_counts(instances: Iterable[MapSatisfyInstance]) -> Counter[str]:
    """In how many instances each tool is expected (a tool listed twice in one case counts once)."""
    counts: Counter[str] = Counter()
    for inst in instances:
        counts.update(inst.expected_tools)
    return counts
