"""Route-planning analyses of the paper, per sample and per run (written by `after_run`).

* **Route repetition, FR / PR / NR** (Table 4, "Ablation Study for Multi-Criteria"). For a
  criteria query (T ... TPCR, mix), compare its criteria-optimal paths O (the references, transfer
  marks dropped) with the fewest-station paths S between the same endpoints (the "original shortest
  paths", the criteria-free references):
  - FR (Fully Repeat): S is one path and it is optimal ("the criteria-optimal path is the shortest
    path");
  - PR (Partially Repeat): S holds several paths and one of them is optimal ("it matches one of
    multiple shortest paths");
  - NR (Not Repeat): no shortest path is optimal ("it differs from all shortest paths").
  Where several routes are optimal, one optimal route in S is enough (a model answering it scores
  EMA 1). Criteria-free queries have no class.
* **T / P / C / R understanding** (Table 4, columns T, P, C, R). The paper asks the model to
  report the four totals; geoeval's prompts ask for the route only, so understanding is measured
  on the route: criterion X is understood when the answered route, recomputed on the map
  (`routing.cost.route_totals`, on the Mix_tab map for `mix`; transfers: a reference's own when the
  path is a reference path, else the assignment with the least transfer time), has the same X total as the reference (the optimum's Total_Time, Total_Price,
  Average_Comfort Level, Average_Reliability; within 0.005 for sums, 1e-4 for means), or as any
  tied optimal route (tied routes share J but may differ in a total: the recorded totals are the
  first route's, so answering another optimal route is not a misunderstanding). A route that
  cannot be read on the map (unknown station, non-adjacent consecutive stations, wrong endpoints)
  understands nothing. As in Table 4, all four are scored for every criteria query. The accuracy
  is the share of criteria queries where X is understood.
* **Difficulty** (Table 2 layout per map and per query difficulty, and the G.2 matrix): EMA, PMA
  and DS by category x level, and EMA by map level x query level.

* **Error taxonomy** (Table 5 / 12), for every wrong answer (EMA 0), computed from the graph;
  labels can combine, as in the paper:
  - Output Format: no route line in the answer, or an empty station name ("A--B");
  - Perception: a name that matches no station of the map, or the wrong origin or destination;
  - Topology Extraction: two consecutive stations with no edge between them and no common line
    (a connection that does not exist);
  - Path Search: two consecutive stations on a common line with no edge between them (stations of
    a valid line skipped); also a valid but not fewest-station path in a criteria-free category
    (the search stopped at a worse path);
  - Transfer Indeterminate: the station sequence of a reference route with other transfer marks;
  - Table Lookup: a valid path that is not optimal in a criteria category (the criteria were
    misread or misweighed).

Answered stations are matched to the map's stations as the scorer matches them to a reference:
exact name first, else the most similar name with a difflib ratio >= 0.5.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.metrics import MATCH_THRESHOLD, extract_route, similarity, split_route
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.routing import reference as routing
from geoeval.suites.maptab.routing import transfers as routing_transfers

if TYPE_CHECKING:
    from geoeval.api import SampleResult

TOTAL_KEYS = {"T": "Total_Time", "P": "Total_Price", "C": "Average_Comfort Level", "R": "Average_Reliability"}
TOLERANCE = {"T": 0.005, "P": 0.005, "C": 1e-4, "R": 1e-4}
CRITERIA_CATEGORIES = ("T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR", "mix")
ERROR_TYPES = (
    "Perception",
    "Transfer Indeterminate",
    "Path Search",
    "Topology Extraction",
    "Output Format",
    "Table Lookup",
)
REPEAT_CLASSES = ("FR", "PR", "NR")


@dataclass
class RPAnalysis:
    """What the analyses need of one scored RP sample."""

    sample_id: str
    scenario: str
    category: str
    map_level: str
    query_level: str
    ema: float
    pma: float
    ds: float
    repeat: str | None = None  # FR / PR / NR for criteria queries
    understood: dict[str, bool] = field(default_factory=dict)  # T/P/C/R for criteria queries
    errors: tuple[str, ...] = ()  # error types of a wrong answer (Table 5)


def repeat_class(m: MetroMap, source: str, target: str, routes: Iterable[str]) -> str:
    """FR, PR or NR of a criteria query (module docstring)."""
    shortest = {tuple(p) for p in routing.fewest_station_routes(m, source, target)}
    optimal = {tuple(routing_transfers.parse_route(r)[0]) for r in routes}
    if not shortest & optimal:
        return "NR"
    return "FR" if len(shortest) == 1 else "PR"


def _station_of(name: str, stations: list[str]) -> str | None:
    name = name.replace(routing_transfers.TRANSFER_MARK, "").strip()
    if name in stations:
        return name
    best = max(stations, key=lambda s: similarity(name, s), default=None)
    return best if best is not None and similarity(name, best) >= MATCH_THRESHOLD else None


def answered_path(m: MetroMap, answer: str, source: str, target: str) -> list[str] | None:
    """The answered route as a path of `m` from `source` to `target`, or None when it is not one."""
    route = extract_route(answer)
    if not route:
        return None
    stations = list(m.stations)
    parts = [_station_of(part, stations) for part in split_route(route)]
    if any(p is None for p in parts) or parts[0] != source or parts[-1] != target:
        return None
    path = cast("list[str]", parts)  # every part matched a station
    if len(set(path)) != len(path) or any(m.edge_between(a, b) is None for a, b in zip(path, path[1:])):
        return None
    return path


def understanding(
    plan_on: MetroMap, answer: str, source: str, target: str, reference: dict[str, float], routes: Iterable[str] = ()
) -> dict[str, bool]:
    """Per criterion letter, whether the answered route's total equals the reference's or that
    of any tied optimal route in `routes` (tied routes share J, not necessarily each total: the
    recorded `reference` is the first route's, queries' module docstring)."""
    routes = list(routes)
    path = answered_path(plan_on, answer, source, target)
    if path is None:
        return {k: False for k in TOTAL_KEYS}
    # Transfers add their time to Total_Time: a reference's own path keeps the reference's
    # transfers (the totals then agree by construction); another path takes the assignment with
    # the least transfer time, the one a route's Total_Time is meant to be counted with.
    same = [t for p, t in map(routing_transfers.parse_route, routes) if p == path]
    transfers = same[0] if same else routing_transfers.transfer_sets(plan_on, path, time_weight=1.0)[0]
    totals = routing_cost.route_totals(plan_on, path, transfers)
    accepted = [reference, *(_tied_totals(plan_on, routes))]
    return {
        k: any(math.isclose(totals[key], ref[key], rel_tol=0.0, abs_tol=TOLERANCE[k]) for ref in accepted)
        for k, key in TOTAL_KEYS.items()
    }


def _tied_totals(plan_on: MetroMap, routes: list[str]) -> list[dict[str, float]]:
    """The totals of each reference route that is a path of `plan_on` (an authors' route that is
    not is skipped: their recorded totals still count)."""
    out = []
    for r in routes:
        path, transfers = routing_transfers.parse_route(r)
        if all(v in plan_on.stations for v in path) and all(
            plan_on.edge_between(a, b) is not None for a, b in itertools.pairwise(path)
        ):
            out.append(routing_cost.route_totals(plan_on, path, transfers))
    return out


def error_types(
    m: MetroMap, answer: str, source: str, target: str, routes: Iterable[str], criteria: bool
) -> tuple[str, ...]:
    """The error types of a wrong answer (module docstring), in ERROR_TYPES order."""
    route = extract_route(answer)
    if not route:
        return ("Output Format",)
    parts = split_route(route)
    found: set[str] = set()
    if any(not p.replace(routing_transfers.TRANSFER_MARK, "").strip() for p in parts):
        found.add("Output Format")
    stations = list(m.stations)
    path = [_station_of(p, stations) for p in parts if p.replace(routing_transfers.TRANSFER_MARK, "").strip()]
    if any(p is None for p in path) or not path or path[0] != source or path[-1] != target:
        found.add("Perception")
    known = [p for p in path if p is not None]
    for a, b in zip(path, path[1:]):
        # a pair with an unreadable name says nothing about the topology
        if a is None or b is None or a == b or m.edge_between(a, b) is not None:
            continue
        shared = set(m.stations[a].lines) & set(m.stations[b].lines)
        found.add("Path Search" if shared else "Topology Extraction")
    if not found:
        refs = [routing_transfers.parse_route(r)[0] for r in routes]
        if known in refs:
            found.add("Transfer Indeterminate")
        elif criteria:
            found.add("Table Lookup")
        else:
            found.add("Path Search")
    return tuple(t for t in ERROR_TYPES if t in found)


def analyse(results: Iterable[SampleResult], queries: dict[str, tuple[MetroMap, Any]]) -> list[RPAnalysis]:
    """One `RPAnalysis` per RP result whose query is in `queries` ({sample id: (map, RPQuery)})."""
    from geoeval.suites.maptab.env.tables import mix_map

    mixed: dict[str, MetroMap] = {}
    out = []
    for r in results:
        if r.dims.task_family != "rp" or r.sample_id not in queries or "ema" not in r.scores:
            continue
        m, q = queries[r.sample_id]
        a = RPAnalysis(
            sample_id=r.sample_id,
            scenario=q.scenario,
            category=q.category,
            map_level=q.map_difficulty,
            query_level=q.query_difficulty,
            ema=r.scores.get("ema", 0.0),
            pma=r.scores.get("pma", 0.0),
            ds=r.scores.get("ds", 0.0),
        )
        if q.weights is not None and q.totals:
            a.repeat = repeat_class(m, q.source, q.target, q.routes)
            plan_on = m
            if q.category == "mix":
                plan_on = mixed.setdefault(m.name, mix_map(m))
            a.understood = understanding(plan_on, r.answer, q.source, q.target, q.totals, q.routes)
        if a.ema < 1.0:
            a.errors = error_types(m, r.answer, q.source, q.target, q.routes, q.weights is not None)
        out.append(a)
    return out


# ------------------------------------------------------------------------------ tables

CATEGORY_LABELS = {
    "map_only": "Map-only",
    "edge_only": "Edge_tab-only",
    "map_edge": "Map+Edge_tab",
    "T": "Time-Only",
    "P": "Price-Only",
    "C": "Comfort_Level-Only",
    "R": "Reliability-Only",
    "TPR": "Time+Price+Reliability",
    "TCR": "Time+Comfort_Level+Reliability",
    "PCR": "Price+Comfort_Level+Reliability",
    "TPCR": "Time+Price+Comfort_Level+Reliability",
    "mix": "Map+Mix_tab (all four)",
}
LEVELS = ("Easy", "Medium", "Hard")
SCENARIO_NAMES = {"metromap": "Metromap", "travelmap": "Travelmap"}


def _pct(values: list[float]) -> float | None:
    return round(100.0 * sum(values) / len(values), 2) if values else None


def _cells(rows: list[RPAnalysis], prefix: str = "") -> dict[str, Any]:
    return {
        f"{prefix}EMA": _pct([a.ema for a in rows]),
        f"{prefix}PMA": _pct([a.pma for a in rows]),
        f"{prefix}DS": round(sum(a.ds for a in rows), 2) if rows else None,
    }


def _ordered_categories(analyses: list[RPAnalysis]) -> list[str]:
    return [c for c in CATEGORY_LABELS if any(a.category == c for a in analyses)]


def category_table(analyses: list[RPAnalysis], scenario: str) -> list[dict[str, Any]]:
    """Table 2 / 7 layout: one row per category, EMA and PMA (%) and DS (total)."""
    mine = [a for a in analyses if a.scenario == scenario]
    rows = []
    for c in _ordered_categories(mine):
        sel = [a for a in mine if a.category == c]
        rows.append({"category": CATEGORY_LABELS[c], **_cells(sel), "n": len(sel)})
    if rows:
        rows.append({"category": "All", **_cells(mine), "n": len(mine)})
    return rows


def level_table(analyses: list[RPAnalysis], scenario: str, attribute: str) -> list[dict[str, Any]]:
    """EMA / PMA / DS per category x difficulty level (`attribute`: map_level or query_level)."""
    mine = [a for a in analyses if a.scenario == scenario]
    rows = []
    for c in [*_ordered_categories(mine), None]:
        sel = [a for a in mine if c is None or a.category == c]
        row: dict[str, Any] = {"category": "All" if c is None else CATEGORY_LABELS[c]}
        for level in LEVELS:
            row.update(_cells([a for a in sel if getattr(a, attribute) == level], f"{level} "))
        rows.append(row)
    return rows if len(rows) > 1 else []


def difficulty_matrix(analyses: list[RPAnalysis], scenario: str) -> list[dict[str, Any]]:
    """G.2: EMA (%) per map level (rows) x query level (columns), with the sample counts."""
    mine = [a for a in analyses if a.scenario == scenario]
    if not mine:
        return []
    rows = []
    for ml in LEVELS:
        row: dict[str, Any] = {"map \\ query": ml}
        for ql in LEVELS:
            sel = [a for a in mine if a.map_level == ml and a.query_level == ql]
            row[ql] = _pct([a.ema for a in sel])
            row[f"n {ql}"] = len(sel)
        rows.append(row)
    return rows


def repetition_table(analyses: list[RPAnalysis], scenario: str) -> list[dict[str, Any]]:
    """Table 4 layout: per criteria category, EMA / PMA (%) of FR, PR, NR and all, the class
    counts, and the T / P / C / R understanding accuracy (%)."""
    mine = [a for a in analyses if a.scenario == scenario and a.repeat is not None]
    rows = []
    for c in [*[c for c in CRITERIA_CATEGORIES if any(a.category == c for a in mine)], None]:
        sel = [a for a in mine if c is None or a.category == c]
        if not sel:
            continue
        row: dict[str, Any] = {"criteria": "Average" if c is None else CATEGORY_LABELS[c]}
        for k in REPEAT_CLASSES:
            part = [a for a in sel if a.repeat == k]
            row[f"{k} EMA"] = _pct([a.ema for a in part])
            row[f"{k} PMA"] = _pct([a.pma for a in part])
        row["All EMA"] = _pct([a.ema for a in sel])
        row["All PMA"] = _pct([a.pma for a in sel])
        for letter in TOTAL_KEYS:
            row[letter] = _pct([float(a.understood.get(letter, False)) for a in sel])
        row["n FR/PR/NR"] = "/".join(str(sum(a.repeat == k for a in sel)) for k in REPEAT_CLASSES)
        rows.append(row)
    return rows if len(rows) > 1 else []


def error_table(analyses: list[RPAnalysis], scenario: str) -> list[dict[str, Any]]:
    """Table 5 layout: per error type, the count, the share of wrong answers and of all queries (%);
    an answer can carry several types."""
    mine = [a for a in analyses if a.scenario == scenario]
    wrong = [a for a in mine if a.ema < 1.0]
    if not wrong:
        return []
    return [
        {
            "error type": t,
            "count": sum(t in a.errors for a in wrong),
            "error (%)": _pct([float(t in a.errors) for a in wrong]),
            "overall (%)": _pct([float(t in a.errors) for a in mine]),
        }
        for t in ERROR_TYPES
    ]
