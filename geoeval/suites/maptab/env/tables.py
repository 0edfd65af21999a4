"""The authors' tables (Edge_tab, Vertex_tab, Mix_tab) built from a `MetroMap`, their CSV / JSON
serialisation, and the way back (rows -> `MetroMap`).

Rows are plain dicts keyed by the authors' column names. In rows, `Line` is always a list of line
names (possibly empty), numbers are floats, and `Transfer Time` is an int.

Serialisation, as in the authors' files (`peers/maptab/*/tabulars/`):
* JSON: a list of objects, `indent=2`, `ensure_ascii=False`; `Line` is a list; every attribute is a
  float except `Transfer Time` (an int).
* CSV: header row, "\n" line ends, no index; a column whose values are all whole numbers is written
  as integers ("0", "14"), any other column with Python's float repr ("2.76", "5.0"), which is what
  pandas produces from the authors' data frames. The files on disk carry a UTF-8 BOM
  (`authors.format` writes them with `utf-8-sig`); `format_table` returns text without it.
* Multi-line stations/edges in CSV: the sample (Cleveland) has one line only, so the authors' form is
  undeterminable; geoeval joins the line names with ", " ("Red Line, Blue Line") and splits on
  "," when reading (line names therefore must not contain commas).

Mix_tab (appendix E.2): Vertex_tab with the edge attributes merged in as the mean over each
station's adjacent edges. Which attributes are merged is read off the authors' `only_vertex2`
labels (see SPEC.md): only attributes that Vertex_tab does not define are merged -- for Metromap
that is Price (stations carry Price 0), giving e.g. Triskett (0.20 + 0.64) / 2 = 0.42; Time, Comfort
Level, Reliability and Transfer Time keep their Vertex_tab values (Total_Time 4.4 is dwell only,
Comfort 0.6375 is the station mean). For Travelmap every attribute is defined on spots, so Mix_tab
equals Vertex_tab (the labels are the spot values 342 / 250 / 2.585714 / 0.676712). Merged means are
rounded to 2 decimals, half up on the decimal value (0.745 -> 0.75, reproducing 0.75 for West
65th_Lorain).
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import Edge, Line, MetroMap, Scenario, Station

TableFormat = Literal["csv", "json"]

METRO_EDGE_COLUMNS = ("Edge", "Line", "Time", "Price", "Comfort Level", "Reliability")
METRO_VERTEX_COLUMNS = ("Vertex", "Line", "Time", "Price", "Comfort Level", "Reliability", "Transfer Time")
TRAVEL_EDGE_COLUMNS = ("Edge", "Time", "Price", "Comfort Level", "Reliability")
TRAVEL_VERTEX_COLUMNS = ("Vertex", "Time", "Price", "Comfort Level", "Reliability")
ATTRIBUTE_COLUMNS = ("Time", "Price", "Comfort Level", "Reliability")
INT_COLUMNS = ("Transfer Time",)
TEXT_COLUMNS = ("Edge", "Vertex")
LIST_COLUMNS = ("Line",)
CSV_LINE_SEPARATOR = ", "

# Attributes of Mix_tab that come from the adjacent edges (the rest keep the Vertex_tab value).
MIX_MERGED_COLUMNS: dict[str, tuple[str, ...]] = {"metromap": ("Price",), "travelmap": ()}

_EDGE_ATTR = {"Time": "time", "Price": "price", "Comfort Level": "comfort", "Reliability": "reliability"}


def round_half_up(value: float, digits: int = 2) -> float:
    """Round on the decimal representation, halves away from zero (0.745 -> 0.75)."""
    q = Decimal(1).scaleb(-digits)
    return float(Decimal(repr(value)).quantize(q, rounding=ROUND_HALF_UP))


def edge_columns(scenario: Scenario) -> tuple[str, ...]:
    return METRO_EDGE_COLUMNS if scenario == "metromap" else TRAVEL_EDGE_COLUMNS


def vertex_columns(scenario: Scenario) -> tuple[str, ...]:
    return METRO_VERTEX_COLUMNS if scenario == "metromap" else TRAVEL_VERTEX_COLUMNS


def _select(row: dict[str, Any], columns: Iterable[str] | None, allowed: tuple[str, ...]) -> dict[str, Any]:
    if columns is None:
        return {c: row[c] for c in allowed}
    out = {}
    for c in columns:
        if c not in row:
            raise GeoevalError(f"unknown column {c!r}; this table has {list(allowed)}")
        out[c] = row[c]
    return out


def edge_table(m: MetroMap, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Edge_tab rows in map order: Edge ("A-B"), Line (list), Time, Price, Comfort Level,
    Reliability. `columns` picks (and orders) a subset; default all of the scenario's columns."""
    allowed = edge_columns(m.scenario)
    rows = []
    for e in m.edges:
        full = {
            "Edge": e.label,
            "Line": list(e.lines),
            "Time": float(e.time),
            "Price": float(e.price),
            "Comfort Level": float(e.comfort),
            "Reliability": float(e.reliability),
        }
        rows.append(_select(full, columns, allowed))
    return rows


def _vertex_row(st: Station) -> dict[str, Any]:
    return {
        "Vertex": st.name,
        "Line": list(st.lines),
        "Time": float(st.time),
        "Price": float(st.price),
        "Comfort Level": float(st.comfort),
        "Reliability": float(st.reliability),
        "Transfer Time": int(round(st.transfer_time)),
    }


def vertex_table(m: MetroMap, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Vertex_tab rows in map order: Vertex, Line (list), Time (dwell), Price, Comfort Level,
    Reliability, Transfer Time. `columns` picks (and orders) a subset."""
    allowed = vertex_columns(m.scenario)
    return [_select(_vertex_row(st), columns, allowed) for st in m.stations.values()]


def mix_values(m: MetroMap) -> dict[str, dict[str, float]]:
    """Per station, the Mix_tab attribute values {"Time", "Price", "Comfort Level", "Reliability",
    "Transfer Time"} (see the module docstring for which are merged from the edges)."""
    merged = MIX_MERGED_COLUMNS[m.scenario]
    adjacent: dict[str, list[Edge]] = {name: [] for name in m.stations}
    for e in m.edges:
        adjacent.setdefault(e.a, []).append(e)
        adjacent.setdefault(e.b, []).append(e)
    out = {}
    for name, st in m.stations.items():
        row = _vertex_row(st)
        values = {c: row[c] for c in (*ATTRIBUTE_COLUMNS, "Transfer Time")}
        for c in merged:
            edges = adjacent.get(name, [])
            mean = sum(getattr(e, _EDGE_ATTR[c]) for e in edges) / len(edges) if edges else 0.0
            values[c] = round_half_up(mean, 2)
        out[name] = values
    return out


def mix_merge_note(scenario: Scenario) -> str:
    """What the Mix_tab's columns hold, column by column (`tables.MIX_MERGED_COLUMNS`): Metromap
    Price is the mean Price of the station's adjacent edges, every other column the station's own
    value; Travelmap merges nothing."""
    merged = MIX_MERGED_COLUMNS[scenario]
    own = [
        c
        for c in (*ATTRIBUTE_COLUMNS, "Transfer Time")
        if c not in merged and (scenario == "metromap" or c != "Transfer Time")
    ]
    unit = "station" if scenario == "metromap" else "scenic spot"
    parts = [f"{c} is the mean {c} of the edges adjacent to the {unit}" for c in merged]
    parts.append(", ".join(own[:-1]) + f" and {own[-1]} are the {unit}'s own values")
    return "; ".join(parts) + " (no edge attributes are given separately)"


def shuffle_rows(rows: list[dict[str, Any]], seed: str | None, title: str) -> list[dict[str, Any]]:
    """`rows` permuted by `random.Random(f"{seed}/{title}")` (each table of a sample on its own
    stream); unchanged when `seed` is None."""
    if seed is None:
        return rows
    out = list(rows)
    random.Random(f"{seed}/{title}").shuffle(out)
    return out


def mix_table(m: MetroMap, drop_line: bool = False) -> list[dict[str, Any]]:
    """Mix_tab rows: the Vertex_tab columns with edge attributes merged in (appendix E.2).
    `drop_line=True` removes the Line column (the authors' Map+Mix_tab setting does)."""
    values = mix_values(m)
    rows = []
    for row in vertex_table(m):
        row = {**row, **{c: values[row["Vertex"]][c] for c in values[row["Vertex"]] if c in row}}
        if drop_line:
            row.pop("Line", None)
        rows.append(row)
    return rows


def mix_map(m: MetroMap) -> MetroMap:
    """The map a Map+Mix_tab reader plans on: stations carry the Mix_tab values and edges carry no
    attributes (all 0, so they add nothing to sums and are dropped from the non-zero means).
    `routing.cost.route_totals` on this map gives the authors' `only_vertex2` totals."""
    values = mix_values(m)
    stations = {
        name: Station(
            name=st.name,
            lines=st.lines,
            x=st.x,
            y=st.y,
            time=values[name]["Time"],
            price=values[name]["Price"],
            comfort=values[name]["Comfort Level"],
            reliability=values[name]["Reliability"],
            transfer_time=float(values[name]["Transfer Time"]),
        )
        for name, st in m.stations.items()
    }
    edges = [Edge(e.a, e.b, e.lines, 0.0, 0.0, 0.0, 0.0) for e in m.edges]
    return MetroMap(
        name=m.name,
        scenario=m.scenario,
        stations=stations,
        edges=edges,
        lines=dict(m.lines),
        width=m.width,
        height=m.height,
        country=m.country,
    )


# --------------------------------------------------------------------------------------------
# Serialisation


def _number_text(value: Any, integral_column: bool) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, (int, float)):
        if integral_column:
            return str(int(round(value)))
        return repr(float(value))
    return str(value)


def _is_whole(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()


def format_table(rows: list[dict[str, Any]], fmt: TableFormat) -> str:
    """Rows as the authors' CSV or JSON text (see the module docstring)."""
    if fmt == "json":
        out = []
        for row in rows:
            item: dict[str, Any] = {}
            for k, v in row.items():
                if k in LIST_COLUMNS:
                    item[k] = list(v) if isinstance(v, (list, tuple)) else _split_lines(str(v))
                elif k in INT_COLUMNS:
                    item[k] = int(round(float(v)))
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    item[k] = float(v)
                else:
                    item[k] = v
            out.append(item)
        return json.dumps(out, ensure_ascii=False, indent=2)
    if fmt != "csv":
        raise GeoevalError(f"table format must be 'csv' or 'json', got {fmt!r}")
    if not rows:
        return ""
    columns = list(rows[0].keys())
    integral = {
        c: c in INT_COLUMNS
        or all(_is_whole(r.get(c)) for r in rows)
        and all(isinstance(r.get(c), (int, float)) for r in rows)
        for c in columns
    }
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            if c in LIST_COLUMNS and isinstance(v, (list, tuple)):
                cells.append(CSV_LINE_SEPARATOR.join(v))
            else:
                cells.append(_number_text(v, integral[c]))
        writer.writerow(cells)
    return buf.getvalue()


def _split_lines(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _coerce(column: str, value: Any) -> Any:
    if column in LIST_COLUMNS:
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
        return _split_lines("" if value is None else str(value))
    if column in TEXT_COLUMNS:
        return "" if value is None else str(value)
    if column in INT_COLUMNS:
        return int(round(float(value))) if value not in (None, "") else 0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def parse_table(text: str, fmt: TableFormat) -> list[dict[str, Any]]:
    """The inverse of `format_table`; also reads the authors' files (UTF-8 BOM tolerated)."""
    text = text.lstrip("\ufeff")
    if fmt == "json":
        data = json.loads(text) if text.strip() else []
        if isinstance(data, dict):
            data = [data]
        return [{str(k).strip(): _coerce(str(k).strip(), v) for k, v in item.items()} for item in data]
    if fmt != "csv":
        raise GeoevalError(f"table format must be 'csv' or 'json', got {fmt!r}")
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for raw in reader:
        rows.append({k.strip(): _coerce(k.strip(), v) for k, v in raw.items() if k is not None})
    return rows


# --------------------------------------------------------------------------------------------
# Rows -> MetroMap


def split_edge_label(label: str, known: set[str] | None = None) -> tuple[str, str]:
    """("A", "B") from the authors' "A-B". A name may itself contain "-": with `known` station
    names the split that yields two known names wins; otherwise the label must have one "-"."""
    parts = label.split("-")
    if len(parts) == 2:
        return parts[0].strip(), parts[1].strip()
    if len(parts) > 2:
        candidates = [("-".join(parts[:i]).strip(), "-".join(parts[i:]).strip()) for i in range(1, len(parts))]
        if known:
            good = [c for c in candidates if c[0] in known and c[1] in known]
            if len(good) == 1:
                return good[0]
        raise GeoevalError(f"cannot split edge {label!r} into two station names")
    raise GeoevalError(f"edge {label!r} is not of the form 'A-B'")


def map_from_rows(
    edge_rows: list[dict[str, Any]],
    vertex_rows: list[dict[str, Any]] | None = None,
    mix_rows: list[dict[str, Any]] | None = None,
    scenario: Scenario = "metromap",
    *,
    name: str = "tables",
    country: str = "",
) -> MetroMap:
    """A `MetroMap` (layout coordinates 0) from table rows.

    Stations come from the vertex (or mix) rows plus every edge endpoint; station lines from the
    vertex Line column when present, else from the lines of their edges. Missing attribute columns
    read as 0. With `mix_rows` the stations take the Mix_tab values and the edges carry no attributes
    (the Map+Mix_tab cost model, see `tables.mix_map`). The same station pair listed on several rows
    (one per line) becomes one edge running on all those lines. Lines are ordered by walking their
    edges; a line whose edges form one cycle is a loop line.
    """
    if vertex_rows is not None and mix_rows is not None:
        raise GeoevalError("give either a Vertex table or a Mix table, not both")
    station_rows = mix_rows if mix_rows is not None else (vertex_rows or [])
    known = {str(r.get("Vertex", "")).strip() for r in station_rows}
    edge_lines: dict[frozenset[str], list[str]] = {}
    edge_first: dict[frozenset[str], tuple[str, str, dict[str, Any]]] = {}
    order: list[frozenset[str]] = []
    for r in edge_rows:
        a, b = split_edge_label(str(r["Edge"]), known or None)
        key = frozenset((a, b))
        lines = _coerce("Line", r.get("Line", []))
        if key not in edge_first:
            edge_first[key] = (a, b, r)
            edge_lines[key] = []
            order.append(key)
        for ln in lines:
            if ln not in edge_lines[key]:
                edge_lines[key].append(ln)

    use_edge_attrs = mix_rows is None
    edges = []
    for key in order:
        a, b, r = edge_first[key]
        attrs = [float(_coerce(c, r.get(c, 0.0)) or 0.0) if use_edge_attrs else 0.0 for c in ATTRIBUTE_COLUMNS]
        edges.append(Edge(a, b, tuple(edge_lines[key]) if scenario == "metromap" else (), *attrs))

    lines_of_station: dict[str, list[str]] = {}
    for e in edges:
        for end in (e.a, e.b):
            lst = lines_of_station.setdefault(end, [])
            lst.extend(ln for ln in e.lines if ln not in lst)

    stations: dict[str, Station] = {}
    for r in station_rows:
        st_name = str(r["Vertex"]).strip()
        vals = {c: float(_coerce(c, r.get(c, 0.0)) or 0.0) for c in ATTRIBUTE_COLUMNS}
        if scenario == "metromap" and "Line" in r:
            st_lines = tuple(_coerce("Line", r["Line"]))
        else:
            st_lines = tuple(lines_of_station.get(st_name, ()))
        stations[st_name] = Station(
            name=st_name,
            lines=st_lines if scenario == "metromap" else (),
            x=0.0,
            y=0.0,
            time=vals["Time"],
            price=vals["Price"],
            comfort=vals["Comfort Level"],
            reliability=vals["Reliability"],
            transfer_time=float(_coerce("Transfer Time", r.get("Transfer Time", 0))),
        )
    for e in edges:
        for end in (e.a, e.b):
            if end not in stations:
                stations[end] = Station(
                    name=end,
                    lines=tuple(lines_of_station.get(end, ())) if scenario == "metromap" else (),
                    x=0.0,
                    y=0.0,
                    time=0.0,
                    price=0.0,
                    comfort=0.0,
                    reliability=0.0,
                )

    lines = _lines_from_edges(edges) if scenario == "metromap" else {}
    return MetroMap(name=name, scenario=scenario, stations=stations, edges=edges, lines=lines, country=country)


def _lines_from_edges(edges: list[Edge]) -> dict[str, Line]:
    """Each line's stations in running order, recovered by walking its edges from a terminus."""
    per_line: dict[str, list[tuple[str, str]]] = {}
    for e in edges:
        for ln in e.lines:
            per_line.setdefault(ln, []).append((e.a, e.b))
    out: dict[str, Line] = {}
    for ln, pairs in per_line.items():
        adj: dict[str, list[str]] = {}
        for a, b in pairs:
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        ends = [s for s, nb in adj.items() if len(nb) == 1]
        is_loop = not ends and all(len(nb) == 2 for nb in adj.values())
        start = ends[0] if ends else pairs[0][0]
        seq, seen, cur = [start], {start}, start
        while True:
            nxt = [s for s in adj[cur] if s not in seen]
            if not nxt:
                break
            cur = nxt[0]
            seq.append(cur)
            seen.add(cur)
        if len(seen) != len(adj):  # a branched line: keep every station, walk order first
            seq += [s for s in adj if s not in seen]
        out[ln] = Line(name=ln, color="", stations=tuple(seq), loop=is_loop)
    return out
