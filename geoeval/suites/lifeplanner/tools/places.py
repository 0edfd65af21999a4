"""place_search, place_detail and sample_place, and the place filters they share with
nearby_search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from geoeval.suites.lifeplanner.tools.arguments import (
    DATA_ENGINE_LIMITS,
    MAX_SAMPLES,
    STANDARD_LIMITS,
    ToolParameterError,
    ToolResult,
    _number,
    _range,
    _text,
    _text_list,
    _tool,
)
from geoeval.suites.lifeplanner.tools.city import (
    PLACE_DETAIL,
    PLACE_FULL,
    PLACE_LIGHT,
    City,
    _list_payload,
    _place,
    _record,
    _select,
)

# --------------------------------------------------------------------------------------------
# Place filters shared by place_search and nearby_search
# --------------------------------------------------------------------------------------------


@dataclass
class _Filters:
    sql: list[str]
    params: list[Any]


def _place_filters(
    place_types: Any,
    min_rating: Any,
    max_rating: Any,
    min_cost: Any,
    max_cost: Any,
    geo_tag: Any,
    social_mem: Any,
    toolset: str,
) -> _Filters:
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
        sql.append(
            "(" + " OR ".join(["(contains(lower(long_mem), ?) OR contains(lower(short_mem), ?))"] * len(mems)) + ")"
        )
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
def place_search(
    city: City,
    query_name: Any,
    place_types: Any = None,
    min_rating: Any = None,
    max_rating: Any = None,
    min_cost: Any = None,
    max_cost: Any = None,
    geo_tag: Any = None,
    social_mem: Any = None,
    *,
    toolset: str = "standard",
) -> ToolResult:
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
    rows = (
        city.cursor()
        .execute(
            f"SELECT {_select(fields)}, COUNT(*) OVER () FROM places {_where(sql)} "
            "ORDER BY (lower(name) = ?) DESC, starts_with(lower(name), ?) DESC, rating DESC NULLS LAST, id LIMIT ?",
            [*params, q.lower(), q.lower(), limit],
        )
        .fetchall()
    )
    total = rows[0][-1] if rows else 0
    return _list_payload(
        [_record(fields, r[:-1]) for r in rows],
        total,
        limit,
        "places",
        "Try a shorter or different name, fewer filters, or geo_tag keywords.",
    )


@_tool
def place_detail(city: City, place_id: Any) -> ToolResult:
    """The full agent-visible record of one place (never its memory fields)."""
    idx = _place(city, "place_id", place_id)
    row = (
        city.cursor()
        .execute(f"SELECT {_select(PLACE_DETAIL)} FROM places WHERE id = ?", [city.place_ids[idx]])
        .fetchone()
    )
    return ToolResult(_record(PLACE_DETAIL, cast(tuple, row)), "ok")  # a row: `_place` found the id


@_tool
def sample_place(city: City, num_samples: Any = 10, *, seed: int = 0) -> ToolResult:
    """`num_samples` random places, full records with memory (data engine only). Deterministic for
    `seed`."""
    n = _number("num_samples", num_samples, 1, MAX_SAMPLES)
    if n is None or not float(n).is_integer():
        raise ToolParameterError(f"num_samples must be a whole number between 1 and {MAX_SAMPLES}.")
    picks = np.random.default_rng(seed).choice(
        len(city.place_ids), size=min(int(n), len(city.place_ids)), replace=False
    )
    ids = [city.place_ids[i] for i in picks]
    rows = (
        city.cursor().execute(f"SELECT {_select(PLACE_FULL)} FROM places WHERE list_contains(?, id)", [ids]).fetchall()
    )
    by_id = {r[0]: r for r in rows}
    return ToolResult({"pois": [_record(PLACE_FULL, by_id[i]) for i in ids]}, "ok")
