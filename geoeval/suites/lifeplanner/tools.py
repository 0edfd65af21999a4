"""LifePlanner tools (appendix A.2): the standard agent toolset (Table 7) and the data-engine toolset
(Table 8), over one city DuckDB file.

Two layers:

1. Pure functions `fn(city, ...) -> ToolResult(payload, failure_class)`, where `city` is an
   `open_city(db_path)` handle. `payload` is exactly what the agent reads (serialised by
   `ToolResult.text()`), `failure_class` is Figure 6's split of the call: `ok`, `parameter_error`
   (the call could not run as given: missing or ill-typed argument, unknown id, malformed keyword
   logic), `truncated` (more matches than the tool returns: too broad) or `empty` (nothing matched,
   or no route: too narrow).
2. Inspect tools: `agent_tools(db_path)` and `data_engine_tools(db_path, seed=...)` return
   `Tool`s with the paper's names, descriptions and parameter descriptions. A parameter error
   raises `ToolError` with the same message (the agent sees it as a tool error); every call's
   failure class is appended to the sample store under `TOOL_LOG_KEY`.

Access separation (Table 9): the standard tools never return `long_mem`/`short_mem` and cannot
filter on them either (a filter on hidden memory would leak it one bit at a time); only the
data-engine tools can. No tool returns coordinates or the ground-truth tables.

Every value an agent supplies reaches SQL as a bound parameter. SQL text is assembled only from
constant fragments, whose number depends on list lengths, never on their content.

Hostile input (issue 8): an agent may send any JSON, and a tool answers with a result or a
parameter error, never an exception. Before a tool reads its arguments, `_tool` rejects values
nested deeper than `MAX_ARGUMENT_DEPTH` and cleans every string (`geoeval.core.text.clean_value`:
lone surrogates, NUL and other control characters become U+FFFD, which DuckDB and JSON can carry
and which matches nothing); long text, long lists and wrong types are parameter errors; a value
quoted in an error message is cut short and kept on one line (`_quote`, `_brief`).
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import json
import math
import os
import re
import reprlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from geoeval.core.text import clean_text, clean_value, nesting_depth
from geoeval.suites.lifeplanner.environment import ACCESS_SPEED, VEHICLES

FAILURE_CLASSES = ("ok", "parameter_error", "truncated", "empty")
MODES = ("time", "distance")
TOOL_LOG_KEY = "lifeplanner_tool_calls"

# How many rows a list tool returns before it truncates (and says so).
STANDARD_LIMITS = {"place_search": 20, "nearby_search": 20, "search_notes": 20}
DATA_ENGINE_LIMITS = {"place_search": 50, "nearby_search": 50, "search_notes": 20}
MAX_RADIUS_M = 5000.0
MAX_LIST_ITEMS = 20
MAX_TEXT = 200
MAX_COMMENTS = 10
MAX_STOPS = 8
MAX_PERMUTATIONS = 5040
MAX_SAMPLES = 50
MAX_AVOID = 200
# Inspect's own bound on tool-call arguments (MAX_TOOL_CALL_ARGUMENTS_DEPTH); no parameter needs more than 2.
MAX_ARGUMENT_DEPTH = 100
MAX_CENTER_CHARS = 2000  # a route object as JSON text is < 200 characters
MAX_RAW_LIST_ITEMS = 1000  # keyword lists before de-duplication
MAX_LOGGED_TEXT = 1000  # characters of one argument string kept in the tool log


@dataclass(frozen=True)
class ToolResult:
    """What one tool call returns: the agent-visible payload and the call's failure class."""

    payload: Any
    failure_class: str

    def text(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)

    @property
    def error(self) -> str | None:
        if self.failure_class == "parameter_error" and isinstance(self.payload, dict):
            return self.payload.get("error")
        return None


class ToolParameterError(Exception):
    """Raised inside a tool for a call that cannot run as given; becomes a `parameter_error`."""


def _error(message: str) -> ToolResult:
    return ToolResult({"error": message}, "parameter_error")


def _tool(fn: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """Check and clean the agent's arguments (see the module docstring), then run `fn`; a
    `ToolParameterError` becomes a parameter_error result; other exceptions are bugs."""
    signature = inspect.signature(fn)

    def wrapper(*args: Any, **kwargs: Any) -> ToolResult:
        bound = signature.bind(*args, **kwargs)  # a TypeError here is the caller's bug, not the agent's
        try:
            for name, value in list(bound.arguments.items())[1:]:  # [0] is the city
                if nesting_depth(value, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
                    raise ToolParameterError(f"{name} is nested more than {MAX_ARGUMENT_DEPTH} levels deep.")
                bound.arguments[name] = clean_value(value)
            return fn(*bound.args, **bound.kwargs)
        except ToolParameterError as exc:
            return _error(str(exc))

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


# --------------------------------------------------------------------------------------------
# Argument checking (what an agent may send: anything JSON can carry)
# --------------------------------------------------------------------------------------------


# Characters that end a line (str.splitlines) other than those clean_text already replaces.
_LINE_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")
_BRIEF = reprlib.Repr()
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlevel = 40, 40, 2


def _quote(text: str, limit: int = 40) -> str:
    """`text` as quoted in an error message: cleaned, at most `limit` characters, on one line."""
    return _LINE_BREAKS.sub(" ", clean_text(text[:limit]))


def _brief(value: Any) -> str:
    """A short one-line repr of any value (strings, lists, dicts of any size or depth)."""
    return _LINE_BREAKS.sub(" ", clean_text(_BRIEF.repr(value)))


def _text(name: str, value: Any, *, required: bool = False) -> str:
    if value is None:
        if required:
            raise ToolParameterError(f"{name} is required.")
        return ""
    if not isinstance(value, str):
        raise ToolParameterError(f"{name} must be a string, got {type(value).__name__}.")
    value = value.strip()
    if required and not value:
        raise ToolParameterError(f"{name} is required and must not be empty.")
    if len(value) > MAX_TEXT:
        raise ToolParameterError(f"{name} is too long ({len(value)} characters, at most {MAX_TEXT}).")
    return value


def _number(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ToolParameterError(f"{name} must be a number, got a boolean.")
    if isinstance(value, str):  # models often quote numbers; accept what parses
        try:
            value = float(value.strip())
        except ValueError:
            raise ToolParameterError(f"{name} must be a number, got '{_quote(value)}'.") from None
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ToolParameterError(f"{name} must be a finite number, got {_brief(value)}.")
    value = float(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ToolParameterError(f"{name} must be between {lo:g} and {hi:g}, got {value:g}.")
    return value


def _text_list(name: str, value: Any) -> list[str]:
    """A list of keywords; a comma-separated string is accepted too (Table 8 documents it)."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ToolParameterError(f"{name} must be a list of strings, got {type(value).__name__}.")
    if len(items) > MAX_RAW_LIST_ITEMS:
        raise ToolParameterError(f"{name}: too many keywords ({len(items)}, at most {MAX_LIST_ITEMS}).")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ToolParameterError(f"{name} must contain only strings, got {type(item).__name__}.")
        item = item.strip()
        if len(item) > 100:
            raise ToolParameterError(f"{name}: keyword too long ({len(item)} characters, at most 100).")
        if item and item.lower() not in out:
            out.append(item.lower())
            if len(out) > MAX_LIST_ITEMS:  # stop here: the membership test above is linear in len(out)
                raise ToolParameterError(f"{name}: too many keywords (more than {MAX_LIST_ITEMS}).")
    return out


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        allowed = ", ".join(f"'{c}'" for c in choices)
        raise ToolParameterError(f"{name} must be one of {allowed}, got {_brief(value)}.")
    return value.strip().lower()


def _range(lo_name: str, lo: float | None, hi_name: str, hi: float | None) -> None:
    if lo is not None and hi is not None and lo > hi:
        raise ToolParameterError(f"{lo_name} ({lo:g}) is greater than {hi_name} ({hi:g}).")


# --------------------------------------------------------------------------------------------
# The city handle: a read-only DuckDB connection plus the in-memory road graph
# --------------------------------------------------------------------------------------------


@dataclass
class _Route:
    start: int  # place index
    end: int
    vehicle: str
    mode: str
    distance: float
    duration: float
    edges: list[tuple[int, int, int]]  # (gid, from node, to node)


@dataclass
class City:
    """An opened city. Cheap to share: tools only read it."""

    db_path: str
    con: duckdb.DuckDBPyConnection
    place_ids: list[str]
    place_index: dict[str, int]
    place_names: list[str]
    place_xy: np.ndarray
    place_lonlat: np.ndarray
    place_node: np.ndarray
    place_access: np.ndarray
    node_xy: np.ndarray
    node_lonlat: np.ndarray
    way_name: dict[int, str]
    # adjacency per vehicle: node -> [(neighbour, gid, length_m, speed_mps)]
    adjacency: dict[str, list[list[tuple[int, int, float, float]]]]
    _routes: dict[tuple, _Route | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.con.cursor()  # one cursor per call: safe across threads


_CITIES: dict[tuple[str, int], City] = {}
_CITIES_LOCK = threading.Lock()


def open_city(db_path: str | Path) -> City:
    """Open (once per process and file version) a city built by `build_synthetic_city`."""
    path = str(Path(db_path).resolve())
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except FileNotFoundError:
        raise FileNotFoundError(f"no LifePlanner city database at {path}") from None
    with _CITIES_LOCK:
        city = _CITIES.get(key)
        if city is None:
            for old in [k for k in _CITIES if k[0] == path]:
                _CITIES.pop(old).con.close()
            city = _load_city(path)
            _CITIES[key] = city
    return city


def _load_city(path: str) -> City:
    con = duckdb.connect(path, read_only=True)
    places = con.execute("SELECT id, name, x_m, y_m, lon, lat, node_id, access_m FROM places ORDER BY id").fetchall()
    nodes = con.execute("SELECT node_id, x_m, y_m, lon, lat FROM nodes ORDER BY node_id").fetchall()
    ways = con.execute("SELECT gid, name, source, target, length_m, speed_walking, speed_cycling, speed_driving "
                       "FROM ways ORDER BY gid").fetchall()
    n_nodes = (max(r[0] for r in nodes) + 1) if nodes else 0
    node_xy = np.zeros((n_nodes, 2))
    node_lonlat = np.zeros((n_nodes, 2))
    for nid, x, y, lon, lat in nodes:
        node_xy[nid] = (x, y)
        node_lonlat[nid] = (lon, lat)
    adjacency: dict[str, list[list[tuple[int, int, float, float]]]] = {v: [[] for _ in range(n_nodes)] for v in VEHICLES}
    way_name: dict[int, str] = {}
    for gid, name, a, b, length, sw, sc, sd in ways:
        way_name[gid] = name
        for vehicle, speed in zip(VEHICLES, (sw, sc, sd)):
            if speed:
                adjacency[vehicle][a].append((b, gid, length, speed))
                adjacency[vehicle][b].append((a, gid, length, speed))
    ids = [r[0] for r in places]
    return City(
        db_path=path, con=con, place_ids=ids, place_index={pid: i for i, pid in enumerate(ids)},
        place_names=[r[1] for r in places], place_xy=np.array([(r[2], r[3]) for r in places], dtype=float),
        place_lonlat=np.array([(r[4], r[5]) for r in places], dtype=float),
        place_node=np.array([r[6] for r in places], dtype=np.int64),
        place_access=np.array([r[7] for r in places], dtype=float),
        node_xy=node_xy, node_lonlat=node_lonlat, way_name=way_name, adjacency=adjacency,
    )


def _place(city: City, name: str, value: Any) -> int:
    pid = _text(name, value, required=True)
    idx = city.place_index.get(pid)
    if idx is None:
        raise ToolParameterError(
            f"{name} '{_quote(pid)}' was not found. Use a place_id returned by place_search or nearby_search.")
    return idx


# --------------------------------------------------------------------------------------------
# Records: the light and full shapes of Table 9 / Table 10
# --------------------------------------------------------------------------------------------

PLACE_LIGHT = ("place_id", "name", "place_type", "rating", "cost")
PLACE_DETAIL = PLACE_LIGHT[:3] + ("address", "opentime_week", "rating", "cost", "tag", "alias")
PLACE_FULL = PLACE_DETAIL + ("long_mem", "short_mem")
NOTE_LIGHT = ("note_id", "title", "time", "liked_count", "collected_count", "comment_count")
NOTE_FULL = ("note_id", "title", "desc", "time", "liked_count", "collected_count", "comment_count", "share_count",
             "tag_list")
COMMENT_FIELDS = ("comment_id", "time", "content", "like_count")

# SQL select lists for those shapes (constants; `id` is exposed as place_id)
_SQL_COLS = {
    "place_id": "id", "name": "name", "place_type": "place_type", "address": "address",
    "opentime_week": "opentime_week", "rating": "rating", "cost": "cost", "tag": "tag", "alias": "alias",
    "long_mem": "long_mem", "short_mem": "short_mem",
}


def _select(fields: tuple[str, ...]) -> str:
    return ", ".join(_SQL_COLS[f] for f in fields)


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else round(value, 2)
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value


def _record(fields: tuple[str, ...], row: tuple) -> dict[str, Any]:
    return {f: _clean(v) for f, v in zip(fields, row)}


def _list_payload(results: list[dict[str, Any]], total: int, limit: int, what: str, hint: str) -> ToolResult:
    payload: dict[str, Any] = {"total_matched": total, "returned": len(results), "results": results}
    if total == 0:
        payload["message"] = f"No {what} matched. {hint}"
        return ToolResult(payload, "empty")
    if total > limit:
        payload["message"] = (f"Showing the first {limit} of {total} {what}. The search is too broad: "
                              f"add filters or use more specific keywords to see the rest.")
        return ToolResult(payload, "truncated")
    return ToolResult(payload, "ok")


# --------------------------------------------------------------------------------------------
# Place filters shared by place_search and nearby_search
# --------------------------------------------------------------------------------------------


@dataclass
class _Filters:
    sql: list[str]
    params: list[Any]


def _place_filters(place_types: Any, min_rating: Any, max_rating: Any, min_cost: Any, max_cost: Any,
                   geo_tag: Any, social_mem: Any, toolset: str) -> _Filters:
    if toolset not in ("standard", "data_engine"):
        raise ValueError(f"unknown toolset {toolset!r}")
    if social_mem is not None and toolset == "standard":
        raise ToolParameterError("social_mem is not a parameter of this tool.")
    types = _text_list("place_types", place_types)
    tags = _text_list("geo_tag", geo_tag)
    mems = _text_list("social_mem", social_mem)
    rmin, rmax = _number("min_rating", min_rating, 1, 5), _number("max_rating", max_rating, 1, 5)
    cmin, cmax = _number("min_cost", min_cost, 0, 100000), _number("max_cost", max_cost, 0, 100000)
    _range("min_rating", rmin, "max_rating", rmax)
    _range("min_cost", cmin, "max_cost", cmax)
    sql: list[str] = []
    params: list[Any] = []
    if types:  # ANY type: "Food & Beverages" matches every sub-type, "Coffee House" one
        sql.append("(" + " OR ".join(["contains(lower(place_type), ?)"] * len(types)) + ")")
        params += types
    if tags:  # ANY keyword hits the tag or the name (Table 7)
        sql.append("(" + " OR ".join(["(contains(lower(tag), ?) OR contains(lower(name), ?))"] * len(tags)) + ")")
        params += [t for t in tags for _ in (0, 1)]
    if mems:  # data engine only: ANY keyword hits long_mem or short_mem
        sql.append("(" + " OR ".join(["(contains(lower(long_mem), ?) OR contains(lower(short_mem), ?))"] * len(mems))
                   + ")")
        params += [m for m in mems for _ in (0, 1)]
    for col, op, v in (("rating", ">=", rmin), ("rating", "<=", rmax), ("cost", ">=", cmin), ("cost", "<=", cmax)):
        if v is not None:
            sql.append(f"{col} {op} ?")  # col and op are constants of this loop
            params.append(v)
    return _Filters(sql, params)


def _where(clauses: list[str]) -> str:
    return ("WHERE " + " AND ".join(clauses)) if clauses else ""


# --------------------------------------------------------------------------------------------
# place_search / place_detail / sample_place
# --------------------------------------------------------------------------------------------


@_tool
def place_search(city: City, query_name: Any, place_types: Any = None, min_rating: Any = None,
                 max_rating: Any = None, min_cost: Any = None, max_cost: Any = None, geo_tag: Any = None,
                 social_mem: Any = None, *, toolset: str = "standard") -> ToolResult:
    """Places whose name or alias contains every word of `query_name` (case-insensitive), filtered.
    Exact names first, then names starting with the query, then by rating. An empty `query_name`
    is accepted only together with a filter (the data engine searches by criteria)."""
    filters = _place_filters(place_types, min_rating, max_rating, min_cost, max_cost, geo_tag, social_mem, toolset)
    q = _text("query_name", query_name, required=not filters.sql)
    words = q.lower().split()
    sql = [*(["contains(lower(name || ' ' || coalesce(alias, '')), ?)"] * len(words)), *filters.sql]
    params: list[Any] = [*words, *filters.params]
    fields = PLACE_LIGHT if toolset == "standard" else PLACE_FULL
    limit = (STANDARD_LIMITS if toolset == "standard" else DATA_ENGINE_LIMITS)["place_search"]
    rows = city.cursor().execute(
        f"SELECT {_select(fields)}, COUNT(*) OVER () FROM places {_where(sql)} "
        "ORDER BY (lower(name) = ?) DESC, starts_with(lower(name), ?) DESC, rating DESC NULLS LAST, id LIMIT ?",
        [*params, q.lower(), q.lower(), limit],
    ).fetchall()
    total = rows[0][-1] if rows else 0
    return _list_payload([_record(fields, r[:-1]) for r in rows], total, limit, "places",
                         "Try a shorter or different name, fewer filters, or geo_tag keywords.")


@_tool
def place_detail(city: City, place_id: Any) -> ToolResult:
    """The full agent-visible record of one place (never its memory fields)."""
    idx = _place(city, "place_id", place_id)
    row = city.cursor().execute(f"SELECT {_select(PLACE_DETAIL)} FROM places WHERE id = ?",
                                [city.place_ids[idx]]).fetchone()
    return ToolResult(_record(PLACE_DETAIL, row), "ok")


@_tool
def sample_place(city: City, num_samples: Any = 10, *, seed: int = 0) -> ToolResult:
    """`num_samples` random places, full records with memory (data engine only). Deterministic for
    `seed`."""
    n = _number("num_samples", num_samples, 1, MAX_SAMPLES)
    if n is None or not float(n).is_integer():
        raise ToolParameterError(f"num_samples must be a whole number between 1 and {MAX_SAMPLES}.")
    picks = np.random.default_rng(seed).choice(len(city.place_ids), size=min(int(n), len(city.place_ids)),
                                               replace=False)
    ids = [city.place_ids[i] for i in picks]
    rows = city.cursor().execute(f"SELECT {_select(PLACE_FULL)} FROM places WHERE list_contains(?, id)",
                                 [ids]).fetchall()
    by_id = {r[0]: r for r in rows}
    return ToolResult({"pois": [_record(PLACE_FULL, by_id[i]) for i in ids]}, "ok")


# --------------------------------------------------------------------------------------------
# Routing on the road graph
# --------------------------------------------------------------------------------------------


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _dijkstra(city: City, source: int, targets: set[int], vehicle: str, mode: str,
              avoid: frozenset[int]) -> dict[int, tuple[float, float, int, int]]:
    """Labels of settled nodes: node -> (distance, duration, predecessor node, gid). Stops when all
    targets are settled. Ties break on node id through the heap, so results are deterministic and
    a label does not depend on which other targets were asked for."""
    adj = city.adjacency[vehicle]
    by_time = mode == "time"
    best = {source: 0.0}
    label: dict[int, tuple[float, float, int, int]] = {}
    pending = {source: (0.0, 0.0, -1, -1)}
    heap = [(0.0, source)]
    remaining = set(targets)
    while heap and remaining:
        cost, u = heapq.heappop(heap)
        if u in label or cost > best.get(u, math.inf):
            continue
        label[u] = pending[u]
        remaining.discard(u)
        d_u, t_u = label[u][0], label[u][1]
        for v, gid, length, speed in adj[u]:
            if gid in avoid or v in label:
                continue
            t = length / speed
            c = cost + (t if by_time else length)
            if c < best.get(v, math.inf):
                best[v] = c
                pending[v] = (d_u + length, t_u + t, u, gid)
                heapq.heappush(heap, (c, v))
    return label


def _route_from_labels(city: City, a: int, b: int, labels: dict, vehicle: str, mode: str) -> _Route | None:
    na, nb = int(city.place_node[a]), int(city.place_node[b])
    if nb not in labels:
        return None
    edges = []
    node = nb
    while node != na:
        _, _, prev, gid = labels[node]
        edges.append((gid, prev, node))
        node = prev
    edges.reverse()
    access = float(city.place_access[a] + city.place_access[b])
    d, t = labels[nb][0], labels[nb][1]
    return _Route(a, b, vehicle, mode, d + access, t + access / ACCESS_SPEED[vehicle], edges)


def _route(city: City, a: int, b: int, vehicle: str, mode: str, avoid: frozenset[int] = frozenset()) -> _Route | None:
    key = (a, b, vehicle, mode, avoid)
    with city._lock:
        if key in city._routes:
            return city._routes[key]
    labels = _dijkstra(city, int(city.place_node[a]), {int(city.place_node[b])}, vehicle, mode, avoid)
    route = _route_from_labels(city, a, b, labels, vehicle, mode)
    with city._lock:
        if len(city._routes) > 20000:
            city._routes.clear()
        city._routes[key] = route
    return route


def _bearing(city: City, u: int, v: int) -> float:
    dx, dy = city.node_xy[v] - city.node_xy[u]
    return math.degrees(math.atan2(dx, dy)) % 360.0


def _cardinal(deg: float) -> str:
    return ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")[int((deg + 22.5) // 45) % 8]


def _turn(prev: float, new: float) -> str:
    delta = (new - prev + 540.0) % 360.0 - 180.0
    if abs(delta) < 30:
        return "Continue onto"
    if abs(delta) > 150:
        return "Make a U-turn onto"
    return "Turn right onto" if delta > 0 else "Turn left onto"


def _route_steps(city: City, r: _Route, speeds: dict[int, tuple[float, float]]) -> list[dict[str, Any]]:
    access_speed = ACCESS_SPEED[r.vehicle]
    start_access, end_access = float(city.place_access[r.start]), float(city.place_access[r.end])
    steps = [{"instruction": f"Depart from {city.place_names[r.start]}", "road_name": "", "way_ids": [],
              "distance_m": _half_up(start_access), "duration_s": _half_up(start_access / access_speed)}]
    groups: list[list[tuple[int, int, int]]] = []
    for e in r.edges:
        if groups and city.way_name[groups[-1][-1][0]] == city.way_name[e[0]]:
            groups[-1].append(e)
        else:
            groups.append([e])
    prev_bearing = None
    for g in groups:
        road = city.way_name[g[0][0]]
        first = _bearing(city, g[0][1], g[0][2])
        verb = f"Head {_cardinal(first)} on" if prev_bearing is None else _turn(prev_bearing, first)
        length = 0.0
        seconds = 0.0
        for gid, _, _ in g:
            length += speeds[gid][0]
            seconds += speeds[gid][0] / speeds[gid][1]
        steps.append({"instruction": f"{verb} {road}", "road_name": road, "way_ids": [e[0] for e in g],
                      "distance_m": _half_up(length), "duration_s": _half_up(seconds)})
        prev_bearing = _bearing(city, g[-1][1], g[-1][2])
    steps.append({"instruction": f"Arrive at {city.place_names[r.end]}", "road_name": "", "way_ids": [],
                  "distance_m": _half_up(end_access), "duration_s": _half_up(end_access / access_speed)})
    return steps


def _edge_speeds(city: City, vehicle: str, edges: list[tuple[int, int, int]]) -> dict[int, tuple[float, float]]:
    out = {}
    for gid, u, v in edges:
        for w, g, length, speed in city.adjacency[vehicle][u]:
            if g == gid and w == v:
                out[gid] = (length, speed)
                break
    return out


def _avoid_ids(city: City, value: Any) -> frozenset[int]:
    if value is None:
        return frozenset()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ToolParameterError(f"avoid_way_ids must be a list of way ids (ways.gid), got {type(value).__name__}.")
    if len(items) > MAX_AVOID:
        raise ToolParameterError(f"avoid_way_ids: too many ids ({len(items)}, at most {MAX_AVOID}).")
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip().lstrip("-").isdigit():
            item = int(item.strip())
        if isinstance(item, bool) or not isinstance(item, int) and not (isinstance(item, float) and item.is_integer()):
            raise ToolParameterError(f"avoid_way_ids must contain integer way ids, got {_brief(item)}.")
        out.add(int(item))
    unknown = sorted(g for g in out if g not in city.way_name)
    if unknown:
        raise ToolParameterError(f"avoid_way_ids: unknown way id(s) {unknown[:10]}; use way_ids from routing steps.")
    return frozenset(out)


def _route_payload(city: City, r: _Route, avoid: frozenset[int]) -> dict[str, Any]:
    speeds = _edge_speeds(city, r.vehicle, r.edges)
    nodes = [r.edges[0][1]] + [e[2] for e in r.edges] if r.edges else [int(city.place_node[r.start])]
    geometry = ([city.place_lonlat[r.start].tolist()] + [city.node_lonlat[n].tolist() for n in nodes]
                + [city.place_lonlat[r.end].tolist()])
    return {
        "start": {"place_id": city.place_ids[r.start], "name": city.place_names[r.start]},
        "end": {"place_id": city.place_ids[r.end], "name": city.place_names[r.end]},
        "vehicle": r.vehicle, "mode": r.mode,
        "total_distance_m": _half_up(r.distance), "total_time_s": _half_up(r.duration),
        "avoided_way_ids": sorted(avoid),
        "steps": _route_steps(city, r, speeds),
        "geometry": [[round(lon, 6), round(lat, 6)] for lon, lat in geometry],
    }


@_tool
def routing(city: City, start_place_id: Any, end_place_id: Any, avoid_way_ids: Any = None, mode: Any = "time",
            vehicle: Any = "driving") -> ToolResult:
    """The optimal route between two places (Dijkstra on the road graph): shortest time or
    distance for the vehicle, never using an avoided way. Totals are whole metres and seconds;
    the legs of `multi_stop_routing` are these same numbers."""
    a = _place(city, "start_place_id", start_place_id)
    b = _place(city, "end_place_id", end_place_id)
    if a == b:
        raise ToolParameterError("start_place_id and end_place_id are the same place.")
    mode = _choice("mode", mode, MODES)
    vehicle = _choice("vehicle", vehicle, VEHICLES)
    avoid = _avoid_ids(city, avoid_way_ids)
    r = _route(city, a, b, vehicle, mode, avoid)
    if r is None:
        return ToolResult({"error": f"No {vehicle} route from {city.place_names[a]} to {city.place_names[b]}"
                                    f"{' avoiding the given ways' if avoid else ''}.",
                           "total_distance_m": None, "total_time_s": None}, "empty")
    return ToolResult(_route_payload(city, r, avoid), "ok")


@_tool
def multi_stop_routing(city: City, stop_ids: Any, start_id: Any = None, end_id: Any = None, vehicle: Any = "driving",
                       mode: Any = "time") -> ToolResult:
    """Every visiting order of `stop_ids` (open trip, or with a fixed start and/or end among them),
    scored with the legs `routing` returns, best first by `mode` then by the other total; ties
    break on the order of `stop_ids`. Data engine only."""
    if not isinstance(stop_ids, (list, tuple)):
        raise ToolParameterError("stop_ids must be a list of place_ids.")
    if len(stop_ids) > MAX_STOPS:  # before resolving them: a list may be very long
        raise ToolParameterError(f"stop_ids must list between 2 and {MAX_STOPS} places, got {len(stop_ids)}.")
    idx = [_place(city, "stop_ids", s) for s in stop_ids]
    if len(set(idx)) != len(idx):
        raise ToolParameterError("stop_ids contains the same place more than once.")
    if not 2 <= len(idx) <= MAX_STOPS:
        raise ToolParameterError(f"stop_ids must list between 2 and {MAX_STOPS} places, got {len(idx)}.")
    vehicle = _choice("vehicle", vehicle, VEHICLES)
    mode = _choice("mode", mode, MODES)
    fixed = {}
    for name, value in (("start_id", start_id), ("end_id", end_id)):
        if value is not None and value != "":
            i = _place(city, name, value)
            if i not in idx:
                raise ToolParameterError(f"{name} must be one of stop_ids.")
            fixed[name] = i
    if "start_id" in fixed and fixed.get("start_id") == fixed.get("end_id"):
        raise ToolParameterError("start_id and end_id must be different places (round trips are not supported).")
    middle = [i for i in idx if i not in fixed.values()]
    n_perm = math.factorial(len(middle))
    if n_perm > MAX_PERMUTATIONS:
        raise ToolParameterError(f"{n_perm} orders to enumerate (at most {MAX_PERMUTATIONS}); fix a start/end or "
                                 "use fewer stops.")
    legs: dict[tuple[int, int], tuple[int, int]] = {}
    for a in idx:
        labels = _dijkstra(city, int(city.place_node[a]), {int(city.place_node[b]) for b in idx if b != a},
                           vehicle, mode, frozenset())
        for b in idx:
            if b == a:
                continue
            key = (a, b, vehicle, mode, frozenset())
            with city._lock:
                r = city._routes.get(key)
            if r is None:
                r = _route_from_labels(city, a, b, labels, vehicle, mode)
                with city._lock:
                    city._routes[key] = r
            if r is None:
                return ToolResult({"error": f"No {vehicle} route from {city.place_names[a]} to "
                                            f"{city.place_names[b]}."}, "empty")
            legs[(a, b)] = (_half_up(r.distance), _half_up(r.duration))
    position = {i: k for k, i in enumerate(idx)}
    routes = []
    for perm in itertools.permutations(middle):
        order = ([fixed["start_id"]] if "start_id" in fixed else []) + list(perm) + (
            [fixed["end_id"]] if "end_id" in fixed else [])
        dist = sum(legs[(u, v)][0] for u, v in zip(order, order[1:]))
        secs = sum(legs[(u, v)][1] for u, v in zip(order, order[1:]))
        primary, secondary = (secs, dist) if mode == "time" else (dist, secs)
        routes.append((primary, secondary, tuple(position[i] for i in order), order, dist, secs))
    routes.sort(key=lambda x: x[:3])
    return ToolResult({
        "vehicle": vehicle, "mode": mode, "n_stops": len(idx), "n_permutations": len(routes),
        "start_id": city.place_ids[fixed["start_id"]] if "start_id" in fixed else None,
        "end_id": city.place_ids[fixed["end_id"]] if "end_id" in fixed else None,
        "stops": [{"place_id": city.place_ids[i], "name": city.place_names[i]} for i in idx],
        "legs": [{"from": city.place_ids[a], "to": city.place_ids[b], "distance_m": d, "time_s": t}
                 for (a, b), (d, t) in legs.items()],
        "routes": [{"rank": k + 1, "order": [city.place_ids[i] for i in r[3]], "total_distance_m": r[4],
                    "total_time_s": r[5]} for k, r in enumerate(routes)],
    }, "ok")


# --------------------------------------------------------------------------------------------
# nearby_search
# --------------------------------------------------------------------------------------------


def _point_polyline_distance(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Distance (same units) of each point to a polyline, vectorised over points and segments."""
    if len(line) == 1:
        return np.hypot(points[:, 0] - line[0, 0], points[:, 1] - line[0, 1])
    a, b = line[:-1], line[1:]
    ab = b - a
    denom = np.maximum((ab ** 2).sum(axis=1), 1e-12)
    ap = points[:, None, :] - a[None, :, :]
    t = np.clip((ap * ab[None, :, :]).sum(axis=2) / denom[None, :], 0.0, 1.0)
    closest = a[None, :, :] + t[:, :, None] * ab[None, :, :]
    return np.sqrt(((points[:, None, :] - closest) ** 2).sum(axis=2)).min(axis=1)


def _center(city: City, center: Any) -> tuple[str, Any]:
    """('place', index) or ('route', (a, b, vehicle, mode))."""
    if isinstance(center, str) and center.strip().startswith("{"):
        if len(center) > MAX_CENTER_CHARS:
            raise ToolParameterError(f"center is too long ({len(center)} characters, at most {MAX_CENTER_CHARS}).")
        try:
            center = json.loads(center)
        except (ValueError, RecursionError):  # RecursionError: "{" nested past Python's stack
            raise ToolParameterError("center looks like a route object but is not valid JSON.") from None
        if nesting_depth(center, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
            raise ToolParameterError(f"center is nested more than {MAX_ARGUMENT_DEPTH} levels deep.")
        center = clean_value(center)
    if isinstance(center, str):
        return "place", _place(city, "center", center)
    if isinstance(center, dict):
        extra = sorted(set(center) - {"start", "end", "vehicle", "mode"})
        if extra:
            raise ToolParameterError(f"center route object has unknown keys {_brief(extra)}; expected 'start', "
                                     "'end', 'vehicle', 'mode'.")
        a = _place(city, "center.start", center.get("start"))
        b = _place(city, "center.end", center.get("end"))
        if a == b:
            raise ToolParameterError("center.start and center.end are the same place.")
        vehicle = _choice("center.vehicle", center.get("vehicle", "driving"), VEHICLES)
        mode = _choice("center.mode", center.get("mode", "time"), MODES)
        return "route", (a, b, vehicle, mode)
    raise ToolParameterError("center must be a place_id string or a route object "
                             "{'start': 'ID', 'end': 'ID', 'vehicle': 'driving', 'mode': 'time'}.")


def _route_line(city: City, r: _Route) -> np.ndarray:
    """The polyline (metres) a route buffer is measured from: start place, road nodes, end place."""
    nodes = [int(city.place_node[r.start])] + [e[2] for e in r.edges]
    return np.vstack([city.place_xy[[r.start]], city.node_xy[nodes], city.place_xy[[r.end]]])


def route_buffer_distances(city: City, start_id: str, end_id: str, vehicle: str, mode: str,
                           place_ids: list[str]) -> list[float] | None:
    """Distance (m) of each place to the route from `start_id` to `end_id`, measured as
    `nearby_search` measures a route buffer; None when there is no route."""
    r = _route(city, city.place_index[start_id], city.place_index[end_id], vehicle, mode)
    if r is None:
        return None
    idx = np.array([city.place_index[p] for p in place_ids], dtype=np.int64)
    if not len(idx):
        return []
    return [float(d) for d in _point_polyline_distance(city.place_xy[idx], _route_line(city, r))]


@_tool
def nearby_search(city: City, center: Any, radius_meters: Any = 100, place_types: Any = None, min_rating: Any = None,
                  max_rating: Any = None, min_cost: Any = None, max_cost: Any = None, geo_tag: Any = None,
                  social_mem: Any = None, *, toolset: str = "standard") -> ToolResult:
    """Places within `radius_meters` of a place (straight line) or of a route (its buffer), nearest
    first. The centre place, or the route's endpoints, are not listed."""
    kind, c = _center(city, center)
    radius = _number("radius_meters", 100 if radius_meters is None else radius_meters, 1, MAX_RADIUS_M)
    filters = _place_filters(place_types, min_rating, max_rating, min_cost, max_cost, geo_tag, social_mem, toolset)
    if kind == "place":
        exclude = {c}
        line = city.place_xy[[c]]
        route_info = None
    else:
        a, b, vehicle, mode = c
        r = _route(city, a, b, vehicle, mode)
        if r is None:
            return ToolResult({"error": f"No {vehicle} route between the two places.", "results": []}, "empty")
        exclude = {a, b}
        line = _route_line(city, r)
        route_info = {"start": city.place_ids[a], "end": city.place_ids[b], "vehicle": vehicle, "mode": mode,
                      "total_distance_m": _half_up(r.distance), "total_time_s": _half_up(r.duration)}
    # candidates: a bounding box around the centre/route, then the attribute filters in SQL
    lo, hi = line.min(axis=0) - radius, line.max(axis=0) + radius
    sql = ["x_m BETWEEN ? AND ?", "y_m BETWEEN ? AND ?", *filters.sql]
    params = [float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1]), *filters.params]
    cand = city.cursor().execute(f"SELECT id FROM places {_where(sql)}", params).fetchall()
    cand_idx = np.array([city.place_index[r[0]] for r in cand if city.place_index[r[0]] not in exclude], dtype=np.int64)
    dist = _point_polyline_distance(city.place_xy[cand_idx], line) if len(cand_idx) else np.zeros(0)
    keep = dist <= radius
    cand_idx, dist = cand_idx[keep], dist[keep]
    order = sorted(range(len(cand_idx)), key=lambda k: (round(float(dist[k]), 6), city.place_ids[cand_idx[k]]))
    fields = PLACE_LIGHT if toolset == "standard" else PLACE_FULL
    limit = (STANDARD_LIMITS if toolset == "standard" else DATA_ENGINE_LIMITS)["nearby_search"]
    shown = [int(cand_idx[k]) for k in order[:limit]]
    rows = {}
    if shown:
        ids = [city.place_ids[i] for i in shown]
        rows = {r[0]: r for r in city.cursor().execute(
            f"SELECT {_select(fields)} FROM places WHERE list_contains(?, id)", [ids]).fetchall()}
    results = []
    for k in order[:limit]:
        rec = _record(fields, rows[city.place_ids[int(cand_idx[k])]])
        rec["distance_m"] = _half_up(float(dist[k]))
        results.append(rec)
    out = _list_payload(results, len(order), limit, "places",
                        "Try a larger radius_meters, fewer filters, or other geo_tag keywords.")
    if route_info is not None:
        out.payload["route"] = route_info
    return out


# --------------------------------------------------------------------------------------------
# search_notes: keyword logic parsed into an AST, compiled to parameterised SQL
# --------------------------------------------------------------------------------------------


class KeywordSyntaxError(ValueError):
    """A keyword expression that cannot be parsed."""


@dataclass(frozen=True)
class Term:
    text: str  # lower-cased phrase, matched as a substring


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class And:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Any, ...]


_OPERATORS = ("AND", "OR", "NOT")
_TOKEN_RE = re.compile(r'\s*(?:(\()|(\))|"([^"]*)"|([^\s()"]+))')
MAX_KEYWORD_LEN = 300
MAX_TERMS = 12
MAX_DEPTH = 8


def _tokenize(s: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN_RE.match(s, pos)
        if not m or m.end() == pos:
            if s[pos:].lstrip().startswith('"'):
                raise KeywordSyntaxError("unbalanced double quote")
            raise KeywordSyntaxError(f"cannot read '{s[pos:pos + 20]}'")
        if m.group(1):
            tokens.append(("(", "("))
        elif m.group(2):
            tokens.append((")", ")"))
        elif m.group(3) is not None:
            tokens.append(("word", m.group(3)))
        else:
            w = m.group(4)
            tokens.append(("op", w) if w in _OPERATORS else ("word", w))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.i, self.depth, self.terms = tokens, 0, 0, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def is_op(self, op: str) -> bool:
        t = self.peek()
        return t is not None and t == ("op", op)

    def parse(self) -> Any:
        if not self.tokens:
            raise KeywordSyntaxError("empty keyword")
        node = self.parse_or()
        if self.peek() is not None:
            raise KeywordSyntaxError(f"unexpected '{self.peek()[1]}'")
        return node

    def parse_or(self) -> Any:
        items = [self.parse_and()]
        while self.is_op("OR"):
            self.i += 1
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def parse_and(self) -> Any:
        items = [self.parse_unary()]
        while True:
            if self.is_op("AND"):
                self.i += 1
                items.append(self.parse_unary())
            elif self.is_op("NOT"):  # "a NOT b" reads as "a AND NOT b"
                self.i += 1
                items.append(Not(self.parse_unary()))
            else:
                break
        return items[0] if len(items) == 1 else And(tuple(items))

    def parse_unary(self) -> Any:
        if self.is_op("NOT"):
            self.i += 1
            return Not(self.parse_unary())
        return self.parse_primary()

    def parse_primary(self) -> Any:
        t = self.peek()
        if t is None:
            raise KeywordSyntaxError("a keyword is missing after an operator")
        if t[0] == "(":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise KeywordSyntaxError(f"parentheses nested deeper than {MAX_DEPTH}")
            self.i += 1
            node = self.parse_or()
            if self.peek() != (")", ")"):
                raise KeywordSyntaxError("missing ')'")
            self.i += 1
            self.depth -= 1
            return node
        if t[0] != "word":
            raise KeywordSyntaxError(f"unexpected '{t[1]}'")
        words = []
        while self.peek() is not None and self.peek()[0] == "word":  # adjacent words form one phrase
            words.append(self.peek()[1])
            self.i += 1
        phrase = " ".join(" ".join(words).lower().split())
        if not phrase:
            raise KeywordSyntaxError("empty phrase")
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise KeywordSyntaxError(f"more than {MAX_TERMS} keywords")
        return Term(phrase)


def parse_keyword_logic(keyword: str) -> Any:
    """Parse `coffee AND (quiet OR "reading sofa") NOT crowded` into an AST of Term/And/Or/Not.

    Operators are the upper-case words AND, OR, NOT (lower-case words are ordinary words); NOT may
    be unary or binary ("a NOT b" = a AND NOT b); adjacent words without an operator form one
    phrase; double quotes keep operators inside a phrase. Terms match case-insensitively as
    substrings of a note's title, description and tags."""
    if len(keyword) > MAX_KEYWORD_LEN:
        raise KeywordSyntaxError(f"keyword longer than {MAX_KEYWORD_LEN} characters")
    return _Parser(_tokenize(keyword)).parse()


def keyword_sql(node: Any, column: str = "search_text") -> tuple[str, list[str]]:
    """SQL predicate and parameters for an AST. `column` must be a trusted identifier; only
    constant fragments and `?` placeholders enter the SQL text."""
    if not re.fullmatch(r"[a-z_]+", column):
        raise ValueError("column must be a plain identifier")
    if isinstance(node, Term):
        return f"contains({column}, ?)", [node.text]
    if isinstance(node, Not):
        sql, params = keyword_sql(node.operand, column)
        return f"(NOT {sql})", params
    if isinstance(node, (And, Or)):
        parts = [keyword_sql(x, column) for x in node.items]
        joiner = " AND " if isinstance(node, And) else " OR "
        return "(" + joiner.join(p[0] for p in parts) + ")", [v for p in parts for v in p[1]]
    raise TypeError(f"not a keyword AST node: {node!r}")


def keyword_matches(node: Any, text: str) -> bool:
    """The same predicate evaluated in Python (the reference the SQL is tested against)."""
    text = text.lower()
    if isinstance(node, Term):
        return node.text in text
    if isinstance(node, Not):
        return not keyword_matches(node.operand, text)
    if isinstance(node, And):
        return all(keyword_matches(x, text) for x in node.items)
    if isinstance(node, Or):
        return any(keyword_matches(x, text) for x in node.items)
    raise TypeError(f"not a keyword AST node: {node!r}")


def _comments(city: City, note_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    rows = city.cursor().execute(
        "SELECT note_id, comment_id, time, content, like_count FROM ("
        " SELECT *, row_number() OVER (PARTITION BY note_id ORDER BY like_count DESC, time, comment_id) AS k"
        " FROM comments WHERE list_contains(?, note_id)) WHERE k <= ? ORDER BY note_id, k",
        [note_ids, MAX_COMMENTS]).fetchall()
    out: dict[str, list[dict[str, Any]]] = {n: [] for n in note_ids}
    for r in rows:
        out[r[0]].append(_record(COMMENT_FIELDS, r[1:]))
    return out


_NOTE_SQL = {f: ('"desc"' if f == "desc" else f) for f in NOTE_FULL}


@_tool
def search_notes(city: City, keyword: Any, *, toolset: str = "standard") -> ToolResult:
    """Notes matching the keyword logic, most liked first. Standard: light list; data engine: full
    posts with their comments."""
    if not isinstance(keyword, str):
        raise ToolParameterError(f"keyword must be a string, got {type(keyword).__name__}.")
    text = keyword.strip()
    if not text:
        raise ToolParameterError("keyword is required and must not be empty.")
    try:
        ast = parse_keyword_logic(text)
    except KeywordSyntaxError as exc:
        raise ToolParameterError(
            f"Invalid keyword logic: {exc}. Separate keywords with AND / OR / NOT, e.g. "
            "'coffee AND quiet NOT crowded'.") from None
    pred, params = keyword_sql(ast)
    fields = NOTE_LIGHT if toolset == "standard" else NOTE_FULL
    limit = (STANDARD_LIMITS if toolset == "standard" else DATA_ENGINE_LIMITS)["search_notes"]
    cols = ", ".join(_NOTE_SQL[f] for f in fields)
    rows = city.cursor().execute(
        f"SELECT {cols}, COUNT(*) OVER () FROM notes WHERE {pred} ORDER BY liked_count DESC, note_id LIMIT ?",
        [*params, limit]).fetchall()
    total = rows[0][-1] if rows else 0
    results = [_record(fields, r[:-1]) for r in rows]
    if toolset != "standard" and results:
        comments = _comments(city, [r["note_id"] for r in results])
        for r in results:
            r["comments"] = comments[r["note_id"]]
    return _list_payload(results, total, limit, "notes",
                         "Try fewer or shorter keywords, OR instead of AND, or a synonym.")


@_tool
def note_detail(city: City, note_id: Any) -> ToolResult:
    """One note with its description and up to 10 comments (most liked first)."""
    nid = _text("note_id", note_id, required=True)
    cols = ", ".join(_NOTE_SQL[f] for f in NOTE_FULL)
    row = city.cursor().execute(f"SELECT {cols} FROM notes WHERE note_id = ?", [nid]).fetchone()
    if row is None:
        raise ToolParameterError(f"note_id '{_quote(nid)}' was not found. Use a note_id returned by search_notes.")
    rec = _record(NOTE_FULL, row)
    rec["comments"] = _comments(city, [nid])[nid]
    return ToolResult(rec, "ok")


# --------------------------------------------------------------------------------------------
# Inspect tools
# --------------------------------------------------------------------------------------------

# Table 7 (standard) and Table 8 (data engine): the descriptions injected into the prompt.
# Table 7 documents the route object's start, end and vehicle; its route also depends on the mode
# (fastest and shortest routes differ), which reference paths use, so the description names it too.
_CENTER_DESC = ("Center: POI place_id (str) OR Route object {'start': 'ID', 'end': 'ID', 'vehicle': 'driving', "
                "'mode': 'time'} (vehicle: 'walking', 'cycling' or 'driving', default 'driving'; mode: 'time' for "
                "the fastest route or 'distance' for the shortest, default 'time')")
STANDARD_SCHEMA: dict[str, tuple[str, dict[str, str]]] = {
    "place_search": (
        "Search places by name with lightweight POI output (place_id, name, type, rating, cost). Supports type, "
        "rating, cost, and geo-tag filtering.",
        {"query_name": "REQUIRED: Place name in local language", "place_types": "POI types list",
         "min_rating": "Min rating (1-5)", "max_rating": "Max rating (1-5)",
         "min_cost": "Min cost per capita (CNY)", "max_cost": "Max cost per capita (CNY)",
         "geo_tag": "Filter by tag/name keywords list in local language, matches if ANY keyword hits"}),
    "place_detail": (
        "Get full POI information for one place, including name, type, address, hours, rating, cost, tags, and "
        "alias.",
        {"place_id": "POI place_id (from place_search or nearby_search)"}),
    "nearby_search": (
        "Search nearby places around a POI or along a route buffer. Standard agent version returns a lightweight "
        "POI list with distance.",
        {"center": _CENTER_DESC, "radius_meters": "Search radius/buffer in meters (default 100)",
         "place_types": "POI types list", "min_rating": "Min rating (1-5)", "max_rating": "Max rating (1-5)",
         "min_cost": "Min cost per capita (CNY)", "max_cost": "Max cost per capita (CNY)",
         "geo_tag": "Filter by tag/name keywords list in local language, matches if ANY keyword hits"}),
    "routing": (
        "Calculate an optimal route between two POIs and return total distance/time, geometry, and turn "
        "instructions.",
        {"start_place_id": "Start POI place_id", "end_place_id": "End POI place_id",
         "avoid_way_ids": "Way IDs to avoid (ways.gid)",
         "mode": "Route mode: 'time' (shortest time) or 'distance' (shortest distance)",
         "vehicle": "Travel mode: 'walking', 'cycling', or 'driving'"}),
    "search_notes": (
        "Search social media posts by keyword logic and return a lightweight post list (note_id, title, time, "
        "counts).",
        {"keyword": "Search keyword; multiple keywords must be separated by 'AND'/'OR'/'NOT' logic"}),
    "note_detail": (
        "Get full post details for one social media note, including description and comments.",
        {"note_id": "Post ID (from search_notes result)"}),
}
DATA_ENGINE_SCHEMA: dict[str, tuple[str, dict[str, str]]] = {
    "place_search": (
        "Search places by name with enhanced filters and return full POI records. Data Engine version can filter "
        "by both static geo tags and social-memory keywords.",
        {"query_name": "REQUIRED: Place name in local language",
         "place_types": "POI types list, separated by commas (,)", "min_rating": "Min rating (1-5)",
         "max_rating": "Max rating (1-5)", "min_cost": "Min cost per capita", "max_cost": "Max cost per capita",
         "geo_tag": "Filter by tag/name keywords list", "social_mem": "Filter by social insights in local language"}),
    "place_detail": STANDARD_SCHEMA["place_detail"],
    "nearby_search": (
        "Search nearby places around a POI or along a route buffer and return full POI records, including "
        "address, opentime_week, tag, alias, long_mem, and short_mem.",
        {"center": _CENTER_DESC, "radius_meters": "Search radius/buffer in meters",
         "place_types": "POI types list, separated by commas", "min_rating": "Min rating (1-5)",
         "max_rating": "Max rating (1-5)", "min_cost": "Min cost per capita", "max_cost": "Max cost per capita",
         "geo_tag": "Filter by tag/name keywords list",
         "social_mem": "Filter by long_mem/short_mem keywords (social media insights) in local language"}),
    "routing": (
        STANDARD_SCHEMA["routing"][0],
        {"start_place_id": "Start POI place_id", "end_place_id": "End POI place_id",
         "avoid_way_ids": "Way IDs to avoid (ways.gid)", "mode": "Route mode: 'time' or 'distance'",
         "vehicle": "Travel mode: 'walking', 'cycling', 'driving'"}),
    "sample_place": (
        "Randomly sample POIs from the map database for prompt initialization. Returns full POI information "
        "including memory fields.",
        {"num_samples": "Number of random POIs to sample (typically 1-50)"}),
    "multi_stop_routing": (
        "Enumerate and score route permutations for multi-stop trip planning. Supports open trips and fixed "
        "start/end settings.",
        {"stop_ids": "List of POI place_ids to visit (typically 2-6 stops)",
         "start_id": "Fixed start place_id (must be in stop_ids)",
         "end_id": "Fixed end place_id (must be in stop_ids)",
         "vehicle": "Travel mode: 'walking', 'cycling', 'driving'", "mode": "Optimize: 'time' or 'distance'"}),
    "search_notes": (
        "Search social media posts and return full post information with comments. Required when generated data "
        "cites social-memory evidence.",
        {"keyword": "Search keyword; multiple keywords must be separated by 'AND'/'OR'/'NOT' logic"}),
    "note_detail": STANDARD_SCHEMA["note_detail"],
}


def loggable(value: Any, depth: int = 0) -> Any:
    """`value` as the tool log keeps it: strings cleaned and cut at `MAX_LOGGED_TEXT` characters,
    lists cut at 50 items and nesting at 8 levels (marked), so that any argument can be stored."""
    if isinstance(value, str):
        return clean_text(value, max_chars=MAX_LOGGED_TEXT)
    if not isinstance(value, (dict, list, tuple)):
        return value
    if depth >= 8:
        return "…[nested deeper than 8 levels]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {loggable(str(k), depth + 1): loggable(v, depth + 1) for k, v in items[:50]}
        if len(items) > 50:
            out["…"] = f"[{len(items) - 50} more keys cut]"
        return out
    out_list = [loggable(v, depth + 1) for v in value[:50]]
    if len(value) > 50:
        out_list.append(f"…[{len(value) - 50} more items cut]")
    return out_list


def record_call(tool: str, arguments: dict[str, Any], result: ToolResult) -> None:
    """Append the call and its failure class to the sample store (for Figure 6)."""
    try:
        from inspect_ai.util import store

        s = store()
        log = list(s.get(TOOL_LOG_KEY, []))
        log.append({"tool": tool, "arguments": {k: loggable(v) for k, v in arguments.items() if v is not None},
                    "failure_class": result.failure_class})
        s.set(TOOL_LOG_KEY, log)
    except Exception:  # no sample context (direct use): nothing to record into
        pass


def _run(db_path: str, tool: str, arguments: dict[str, Any], call: Callable[[City], ToolResult]) -> str:
    from inspect_ai.tool import ToolError

    result = call(open_city(db_path))
    record_call(tool, arguments, result)
    if result.failure_class == "parameter_error":
        raise ToolError(" ".join(result.payload["error"].splitlines()))  # messages are one line already
    return result.text()


def _as_tool(fn: Callable[..., Any], name: str, schema: dict[str, tuple[str, dict[str, str]]],
             max_output: int | None = None) -> Any:
    from inspect_ai.tool import ToolDef

    description, params = schema[name]
    return ToolDef(fn, name=name, description=description, parameters=params, max_output=max_output).as_tool()


def agent_tools(db_path: str | Path) -> list[Any]:
    """The standard agent toolset (Table 7) as Inspect tools over the city at `db_path`
    (submit_answer belongs to the solver)."""
    path = str(Path(db_path).resolve())
    s = "standard"

    async def place_search_tool(query_name: str, place_types: list[str] | None = None, min_rating: float | None = None,
                                max_rating: float | None = None, min_cost: float | None = None,
                                max_cost: float | None = None, geo_tag: list[str] | None = None) -> str:
        args = dict(query_name=query_name, place_types=place_types, min_rating=min_rating, max_rating=max_rating,
                    min_cost=min_cost, max_cost=max_cost, geo_tag=geo_tag)
        return _run(path, "place_search", args, lambda c: place_search(c, **args, toolset=s))

    async def place_detail_tool(place_id: str) -> str:
        return _run(path, "place_detail", {"place_id": place_id}, lambda c: place_detail(c, place_id))

    async def nearby_search_tool(center: str | dict[str, str], radius_meters: float = 100,
                                 place_types: list[str] | None = None, min_rating: float | None = None,
                                 max_rating: float | None = None, min_cost: float | None = None,
                                 max_cost: float | None = None, geo_tag: list[str] | None = None) -> str:
        args = dict(center=center, radius_meters=radius_meters, place_types=place_types, min_rating=min_rating,
                    max_rating=max_rating, min_cost=min_cost, max_cost=max_cost, geo_tag=geo_tag)
        return _run(path, "nearby_search", args, lambda c: nearby_search(c, **args, toolset=s))

    async def routing_tool(start_place_id: str, end_place_id: str, avoid_way_ids: list[int] | None = None,
                           mode: str = "time", vehicle: str = "driving") -> str:
        args = dict(start_place_id=start_place_id, end_place_id=end_place_id, avoid_way_ids=avoid_way_ids,
                    mode=mode, vehicle=vehicle)
        return _run(path, "routing", args, lambda c: routing(c, **args))

    async def search_notes_tool(keyword: str) -> str:
        return _run(path, "search_notes", {"keyword": keyword}, lambda c: search_notes(c, keyword, toolset=s))

    async def note_detail_tool(note_id: str) -> str:
        return _run(path, "note_detail", {"note_id": note_id}, lambda c: note_detail(c, note_id))

    fns = {"place_search": place_search_tool, "place_detail": place_detail_tool, "nearby_search": nearby_search_tool,
           "routing": routing_tool, "search_notes": search_notes_tool, "note_detail": note_detail_tool}
    return [_as_tool(fn, name, STANDARD_SCHEMA) for name, fn in fns.items()]


def data_engine_tools(db_path: str | Path, *, seed: int = 0) -> list[Any]:
    """The data-engine toolset (Table 8) as Inspect tools: full records with memory, social_mem
    filters, sample_place (seeded: the k-th call uses seed + k) and multi_stop_routing."""
    path = str(Path(db_path).resolve())
    s = "data_engine"
    calls = itertools.count()

    async def place_search_tool(query_name: str, place_types: list[str] | str | None = None,
                                min_rating: float | None = None, max_rating: float | None = None,
                                min_cost: float | None = None, max_cost: float | None = None,
                                geo_tag: list[str] | None = None, social_mem: list[str] | str | None = None) -> str:
        args = dict(query_name=query_name, place_types=place_types, min_rating=min_rating, max_rating=max_rating,
                    min_cost=min_cost, max_cost=max_cost, geo_tag=geo_tag, social_mem=social_mem)
        return _run(path, "place_search", args, lambda c: place_search(c, **args, toolset=s))

    async def place_detail_tool(place_id: str) -> str:
        return _run(path, "place_detail", {"place_id": place_id}, lambda c: place_detail(c, place_id))

    async def nearby_search_tool(center: str | dict[str, str], radius_meters: float = 100,
                                 place_types: list[str] | str | None = None, min_rating: float | None = None,
                                 max_rating: float | None = None, min_cost: float | None = None,
                                 max_cost: float | None = None, geo_tag: list[str] | None = None,
                                 social_mem: list[str] | str | None = None) -> str:
        args = dict(center=center, radius_meters=radius_meters, place_types=place_types, min_rating=min_rating,
                    max_rating=max_rating, min_cost=min_cost, max_cost=max_cost, geo_tag=geo_tag,
                    social_mem=social_mem)
        return _run(path, "nearby_search", args, lambda c: nearby_search(c, **args, toolset=s))

    async def routing_tool(start_place_id: str, end_place_id: str, avoid_way_ids: list[int] | None = None,
                           mode: str = "time", vehicle: str = "driving") -> str:
        args = dict(start_place_id=start_place_id, end_place_id=end_place_id, avoid_way_ids=avoid_way_ids,
                    mode=mode, vehicle=vehicle)
        return _run(path, "routing", args, lambda c: routing(c, **args))

    async def sample_place_tool(num_samples: int = 10) -> str:
        k = next(calls)
        return _run(path, "sample_place", {"num_samples": num_samples},
                    lambda c: sample_place(c, num_samples, seed=seed + k))

    async def multi_stop_routing_tool(stop_ids: list[str], start_id: str | None = None, end_id: str | None = None,
                                      vehicle: str = "driving", mode: str = "time") -> str:
        args = dict(stop_ids=stop_ids, start_id=start_id, end_id=end_id, vehicle=vehicle, mode=mode)
        return _run(path, "multi_stop_routing", args, lambda c: multi_stop_routing(c, **args))

    async def search_notes_tool(keyword: str) -> str:
        return _run(path, "search_notes", {"keyword": keyword}, lambda c: search_notes(c, keyword, toolset=s))

    async def note_detail_tool(note_id: str) -> str:
        return _run(path, "note_detail", {"note_id": note_id}, lambda c: note_detail(c, note_id))

    fns = {"place_search": place_search_tool, "place_detail": place_detail_tool, "nearby_search": nearby_search_tool,
           "routing": routing_tool, "sample_place": sample_place_tool, "multi_stop_routing": multi_stop_routing_tool,
           "search_notes": search_notes_tool, "note_detail": note_detail_tool}
    # full records and every permutation are long: the data engine gets them whole
    return [_as_tool(fn, name, DATA_ENGINE_SCHEMA, max_output=0) for name, fn in fns.items()]
