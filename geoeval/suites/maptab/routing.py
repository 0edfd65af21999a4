"""Exact reference routes for MapTab route planning (Task Definition, appendices B.2 and E.2).

Routes and transfers
--------------------
A route is a simple path of stations s = v0, ..., vk = t. A *line assignment* picks for each edge
one of the lines running on it; a transfer happens at an intermediate station where consecutive
edges get different lines (never at s or t). The route string marks transfer stations:
"A-B(transfer)-C". Travelmap has no lines and therefore no transfers.

For a station path the annotation comes from the best assignments: first those minimising the cost
the query puts on transfers (the transfer times, when the Time weight is non-zero), then among them
those with the fewest transfers. When several such assignments put transfers at different
stations, every distinct annotated string is a valid reference.

Cost model (what the authors' labels reproduce, see SPEC.md "Facts read off ...")
------------------------------------------------------------------------------
Included stations: Metromap every station except the destination; Travelmap every station,
destination included.
* Total_Time  = sum of edge Time + Time of included stations + Transfer Time of transfer stations.
* Total_Price = sum of edge Price + Price of included stations, except that in Travelmap a
  transport hub (a spot with Time 0: airport, railway station) is priced only as the destination
  (appendix E.1: "transportation station costs are counted only at the final destination, while
  prices at intermediate stations are set to 0"; the authors' prompts: "When a spot is not the
  destination and its Time = 0, set its Price to 0"), so a hub at the source counts 0 too.
* Average_Comfort Level / Average_Reliability = mean of the NON-ZERO values among the route's edges
  and included stations (0 when there is none).
* J = w1*T/T_scale + w2*P/P_scale + w3*(1 - C/C_scale) + w4*(1 - R), with Metromap scales
  (3, 1.5, 1) -- transfer time is scaled by the same /3 as all time -- and Travelmap (180, 200, 5).
The optimal set is every annotated route whose J is within `TIE_TOLERANCE` (1e-9) of the minimum.
Labels round Total_Time / Total_Price to 2 decimals and the averages to 6.

`objective="mean"` (default) is the paper's Eq. (1) as written. `objective="sum"` replaces
(1 - C) and (1 - R) by the SUMS of (1 - x/scale) over the route's non-zero values, which makes J
additive. Why both: the public Travelmap sample's Comfort-only and Reliability-only references
(Angkor Wat, 巴方寺 -> 比粒寺) are optimal only under "sum" -- under "mean" an 11-spot detour has
a higher average comfort (rank of the reference: 11th of 12 simple paths) -- so the authors' label
generator appears to have run an additive (Dijkstra) cost. Every other sample item (all of
Cleveland, and the other Travelmap items) is reproduced by both objectives.

How optimality is guaranteed
----------------------------
J is not additive (C and R are means), so a plain Dijkstra can miss the optimum. `optimal_routes`
runs an exhaustive depth-first enumeration of simple s-t paths with branch-and-bound:
1. Only stations that lie on some simple s-t path are searched (the blocks of the block-cut tree
   between s and t); no simple s-t path can use any other station, so nothing is lost.
2. Along the current prefix the search keeps, per line of the last edge, the least transfer cost
   of any assignment (a DP over (station, line) states), so the prefix cost is exact.
3. Lower bound of any completion of a prefix ending at u: (additive cost so far) + (least transfer
   cost so far) + h(u) + w3*(1 - C_ub/C_scale) + w4*(1 - R_ub), where h(u) is the reverse-Dijkstra
   distance from u to t over the additive edge+station costs (walks are a superset of simple paths
   and all costs are >= 0, so h never overestimates; future transfer costs are >= 0), and
   C_ub = max(current non-zero mean, largest comfort value in the searched subgraph) bounds the final
   mean from above because the mean of a union never exceeds the larger of the two parts' means
   (same for R). Under objective="sum" the comfort / reliability terms are part of the additive
   costs (and of h) instead. A branch is cut only when its bound exceeds the best J found so far
   by more than the tie tolerance, so every optimal (and tied) path is reached.
4. Every complete path gets its exact J (exact best assignment); the minimum set is returned.
For pure mean objectives (Comfort-only / Reliability-only) the bound is weak and the search is
close to a full enumeration, which is still fast on MapTab-sized metro maps (a few thousand simple
paths); `max_expansions` guards against pathological inputs by raising instead of returning a
possibly wrong answer.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Iterable, Literal, Sequence

import networkx as nx

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.graph import MetroMap

TRANSFER_MARK = "(transfer)"
TIE_TOLERANCE = 1e-9
DEFAULT_MAX_EXPANSIONS = 5_000_000

# (time scale, price scale, comfort scale): J uses T/ts, P/ps, (1 - C/cs), (1 - R)
SCALES = {"metromap": (3.0, 1.5, 1.0), "travelmap": (180.0, 200.0, 5.0)}

Weights = tuple[float, float, float, float]
Objective = Literal["mean", "sum"]

#: The one objective per scenario that references are labelled with, on synthetic, real and the
#: authors' maps alike. Metromap: the paper's Eq. (1) as written (mean comfort / reliability),
#: which every Metromap label of the authors' sample satisfies (both objectives do there).
#: Travelmap: the additive "sum": the authors' Travelmap prompts state it ("final route score =
#: sum(edge Comfort Level) + sum(vertex Comfort Level)") and their labels follow it (9 of 9
#: criteria items of the public sample optimal under "sum", 7 of 9 under "mean": Angkor Wat C and
#: R fail), so a model reading their prompts and one reading geoeval's are judged alike.
SCENARIO_OBJECTIVE: dict[str, Objective] = {"metromap": "mean", "travelmap": "sum"}


def objective_for(scenario: str) -> Objective:
    """The objective references of `scenario` are optimal under (`SCENARIO_OBJECTIVE`)."""
    if scenario not in SCENARIO_OBJECTIVE:
        raise GeoevalError(f"unknown scenario {scenario!r}; expected one of {sorted(SCENARIO_OBJECTIVE)}")
    return SCENARIO_OBJECTIVE[scenario]


# --------------------------------------------------------------------------------------------
# Route strings


def format_route(names: Sequence[str]) -> str:
    """"A-B(transfer)-C" from already annotated station names."""
    return "-".join(names)


def parse_route(route: str) -> tuple[list[str], frozenset[str]]:
    """(station path, transfer stations) from "A-B(transfer)-C"."""
    path, transfers = [], set()
    for part in route.split("-"):
        name = part.strip()
        if name.endswith(TRANSFER_MARK):
            name = name[: -len(TRANSFER_MARK)].strip()
            transfers.add(name)
        path.append(name)
    return path, frozenset(transfers)


def annotated_names(path: Sequence[str], transfers: Iterable[str]) -> list[str]:
    tr = set(transfers)
    return [f"{v}{TRANSFER_MARK}" if v in tr and 0 < i < len(path) - 1 else v for i, v in enumerate(path)]


# --------------------------------------------------------------------------------------------
# Criteria-free


def fewest_station_routes(m: MetroMap, s: str, t: str) -> list[list[str]]:
    """Every path from s to t with the fewest stations (all optima, sorted)."""
    _check_endpoints(m, s, t)
    if s == t:
        return [[s]]
    dist = {s: 0}
    queue = deque([s])
    while queue:
        u = queue.popleft()
        for v in m.neighbors(u):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    if t not in dist:
        return []
    out: list[list[str]] = []

    def back(v: str, suffix: list[str]) -> None:  # walk predecessors one level closer to s
        if v == s:
            out.append([s, *suffix])
            return
        for u in m.neighbors(v):
            if dist.get(u) == dist[v] - 1:
                back(u, [v, *suffix])

    back(t, [])
    return sorted(out)


# --------------------------------------------------------------------------------------------
# Transfers


def _edge_lines(m: MetroMap, a: str, b: str) -> tuple[str, ...]:
    e = m.edge_between(a, b)
    if e is None:
        raise GeoevalError(f"{a!r} and {b!r} are not adjacent")
    return e.lines or ("",)


def transfer_sets(m: MetroMap, path: Sequence[str], time_weight: float = 0.0) -> list[frozenset[str]]:
    """The transfer-station sets of the best line assignments of a station path: least total
    transfer time first when `time_weight` > 0, then fewest transfers. Sorted, distinct."""
    if len(path) < 3 or m.scenario != "metromap":
        return [frozenset()]
    # state per line of the current edge: best (cost, count) and the transfer sets achieving it
    first = _edge_lines(m, path[0], path[1])
    states: dict[str, tuple[tuple[float, int], set[frozenset[str]]]] = {
        ln: ((0.0, 0), {frozenset()}) for ln in first
    }
    for i in range(1, len(path) - 1):
        v = path[i]
        tt = m.stations[v].transfer_time if time_weight > 0 else 0.0
        nxt: dict[str, tuple[tuple[float, int], set[frozenset[str]]]] = {}
        for ln in _edge_lines(m, v, path[i + 1]):
            best_key, best_sets = None, set()
            for prev_ln, (key, sets) in states.items():
                if prev_ln == ln:
                    cand_key, cand_sets = key, sets
                else:
                    cand_key = (key[0] + tt, key[1] + 1)
                    cand_sets = {s | {v} for s in sets}
                if best_key is None or _less(cand_key, best_key):
                    best_key, best_sets = cand_key, set(cand_sets)
                elif _same(cand_key, best_key):
                    best_sets |= cand_sets
            nxt[ln] = (best_key, best_sets)
        states = nxt
    best_key = min((k for k, _ in states.values()), key=lambda k: (round(k[0], 9), k[1]))
    result: set[frozenset[str]] = set()
    for key, sets in states.values():
        if _same(key, best_key):
            result |= sets
    return sorted(result, key=lambda s: (len(s), sorted(s)))


def _less(a: tuple[float, int], b: tuple[float, int]) -> bool:
    if abs(a[0] - b[0]) > TIE_TOLERANCE:
        return a[0] < b[0]
    return a[1] < b[1]


def _same(a: tuple[float, int], b: tuple[float, int]) -> bool:
    return abs(a[0] - b[0]) <= TIE_TOLERANCE and a[1] == b[1]


def annotate(m: MetroMap, path: Sequence[str], time_weight: float = 0.0) -> list[str]:
    """Every annotated route string of a station path (fewest transfers; with `time_weight` > 0,
    least transfer time first). Source and destination are never annotated."""
    return sorted({format_route(annotated_names(path, tr)) for tr in transfer_sets(m, path, time_weight)})


# --------------------------------------------------------------------------------------------
# Totals and cost


def _included(m: MetroMap, path: Sequence[str]) -> Sequence[str]:
    return path if m.scenario == "travelmap" else path[:-1]


def _station_price(m: MetroMap, v: str, is_destination: bool) -> float:
    """The Price a station adds to a route (the Travelmap hub rule, module docstring)."""
    st = m.stations[v]
    if m.scenario == "travelmap" and st.time == 0 and not is_destination:
        return 0.0
    return st.price


def _raw_totals(m: MetroMap, path: Sequence[str], transfers: Iterable[str]) -> tuple[float, float, float, float]:
    time = price = 0.0
    comfort: list[float] = []
    reliability: list[float] = []
    for a, b in zip(path, path[1:]):
        e = m.edge_between(a, b)
        if e is None:
            raise GeoevalError(f"{a!r} and {b!r} are not adjacent")
        time += e.time
        price += e.price
        comfort.append(e.comfort)
        reliability.append(e.reliability)
    for i, v in enumerate(_included(m, path)):
        st = m.stations[v]
        time += st.time
        price += _station_price(m, v, i == len(path) - 1)
        comfort.append(st.comfort)
        reliability.append(st.reliability)
    inner = set(path[1:-1])
    for v in set(transfers):
        if v in inner:
            time += m.stations[v].transfer_time
    return time, price, _nonzero_mean(comfort), _nonzero_mean(reliability)


def _nonzero_mean(values: Iterable[float]) -> float:
    vals = [v for v in values if v != 0]
    return sum(vals) / len(vals) if vals else 0.0


def route_totals(m: MetroMap, path: Sequence[str], transfers: Iterable[str] = ()) -> dict[str, float]:
    """The label totals of a route: Total_Time, Total_Price (2 decimals), Average_Comfort Level,
    Average_Reliability (6 decimals), computed as the authors do (module docstring)."""
    time, price, comfort, reliability = _raw_totals(m, path, transfers)
    return {
        "Total_Time": round(time, 2),
        "Total_Price": round(price, 2),
        "Average_Comfort Level": round(comfort, 6),
        "Average_Reliability": round(reliability, 6),
    }


def route_cost(
    m: MetroMap,
    path: Sequence[str],
    transfers: Iterable[str],
    weights: Sequence[float],
    objective: Objective = "mean",
) -> float:
    """J of a route (unrounded totals, normalised by the scenario's ranges). With
    `objective="sum"` the comfort / reliability terms are sums of (1 - x) over the non-zero values
    instead of (1 - mean) (see the module docstring)."""
    w1, w2, w3, w4 = _weights(weights)
    _check_objective(objective)
    ts, ps, cs = SCALES[m.scenario]
    time, price, comfort, reliability = _raw_totals(m, path, transfers)
    if objective == "sum":
        cvals, rvals = _values(m, path)
        return (
            w1 * time / ts
            + w2 * price / ps
            + w3 * sum(1 - c / cs for c in cvals if c != 0)
            + w4 * sum(1 - r for r in rvals if r != 0)
        )
    return w1 * time / ts + w2 * price / ps + w3 * (1 - comfort / cs) + w4 * (1 - reliability)


def _values(m: MetroMap, path: Sequence[str]) -> tuple[list[float], list[float]]:
    """Comfort and reliability values of the route's edges and included stations."""
    elements = [m.edge_between(a, b) for a, b in zip(path, path[1:])]
    elements += [m.stations[v] for v in _included(m, path)]
    return [x.comfort for x in elements], [x.reliability for x in elements]


def _check_objective(objective: str) -> None:
    if objective not in ("mean", "sum"):
        raise GeoevalError(f"objective must be 'mean' or 'sum', got {objective!r}")


def _weights(weights: Sequence[float]) -> Weights:
    if len(weights) != 4:
        raise GeoevalError(f"weights must be (time, price, comfort, reliability), got {weights!r}")
    w = tuple(float(x) for x in weights)
    if any(x < 0 for x in w):
        raise GeoevalError(f"weights must be non-negative, got {weights!r}")
    return w  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Exact criteria-based search


def relevant_stations(m: MetroMap, s: str, t: str) -> set[str]:
    """Stations lying on at least one simple s-t path: the union of the biconnected blocks on the
    block-cut-tree path between s and t."""
    g = nx.Graph()
    g.add_nodes_from(m.stations)
    g.add_edges_from((e.a, e.b) for e in m.edges)
    if s == t:
        return {s}
    if not nx.has_path(g, s, t):
        return set()
    blocks = [frozenset(b) for b in nx.biconnected_components(g)]
    tree = nx.Graph()
    for i, b in enumerate(blocks):
        tree.add_node(("B", i))
        for v in b:
            tree.add_edge(("B", i), ("V", v))
    route = nx.shortest_path(tree, ("V", s), ("V", t))
    out: set[str] = set()
    for kind, ident in route:
        if kind == "B":
            out |= blocks[ident]
    return out


def optimal_routes(
    m: MetroMap,
    s: str,
    t: str,
    weights: Sequence[float],
    *,
    objective: Objective = "mean",
    max_expansions: int = DEFAULT_MAX_EXPANSIONS,
) -> list[str]:
    """Every annotated route string with the minimum J (within 1e-9), sorted. Exact (see the
    module docstring). All-zero weights make every route optimal and are refused."""
    return [r for r, _ in _optimal(m, s, t, weights, objective, max_expansions)]


def optimal_routes_with_cost(
    m: MetroMap,
    s: str,
    t: str,
    weights: Sequence[float],
    *,
    objective: Objective = "mean",
    max_expansions: int = DEFAULT_MAX_EXPANSIONS,
) -> list[tuple[str, float]]:
    """Like `optimal_routes`, with each route's J."""
    return _optimal(m, s, t, weights, objective, max_expansions)


def _optimal(
    m: MetroMap, s: str, t: str, weights: Sequence[float], objective: str, max_expansions: int
) -> list[tuple[str, float]]:
    _check_endpoints(m, s, t)
    _check_objective(objective)
    w1, w2, w3, w4 = _weights(weights)
    if w1 == w2 == w3 == w4 == 0:
        raise GeoevalError("all weights are 0: every route is optimal; use fewest_station_routes")
    if s == t:
        return [(s, route_cost(m, [s], (), weights, objective))]
    nodes = relevant_stations(m, s, t)
    if not nodes:
        return []
    ts, ps, cs = SCALES[m.scenario]
    include_dest = m.scenario == "travelmap"
    metro = m.scenario == "metromap"

    additive = objective == "sum"
    # In the "sum" objective the comfort / reliability terms are additive too: fold them into the
    # per-element cost and switch the mean terms off.
    wc, wr = (w3, w4) if additive else (0.0, 0.0)
    if additive:
        w3 = w4 = 0.0

    def element_cost(time: float, price: float, comfort: float, reliability: float) -> float:
        cost = w1 * time / ts + w2 * price / ps
        if comfort != 0:
            cost += wc * (1 - comfort / cs)
        if reliability != 0:
            cost += wr * (1 - reliability)
        return cost

    def station_cost(v: str, is_destination: bool = False) -> float:
        st = m.stations[v]
        return element_cost(st.time, _station_price(m, v, is_destination), st.comfort, st.reliability)

    adj: dict[str, list[tuple[str, float, tuple[str, ...], float, float]]] = {v: [] for v in nodes}
    for e in m.edges:
        if e.a in nodes and e.b in nodes:
            cost = element_cost(e.time, e.price, e.comfort, e.reliability)
            lines = (e.lines or ("",)) if metro else ("",)
            adj[e.a].append((e.b, cost, lines, e.comfort, e.reliability))
            adj[e.b].append((e.a, cost, lines, e.comfort, e.reliability))
    for v in adj:
        adj[v].sort()

    # h(u): least additive cost of going from u to t (u's own station cost included when u != t).
    h = {v: math.inf for v in nodes}
    h[t] = station_cost(t, True) if include_dest else 0.0
    heap = [(h[t], t)]
    while heap:
        d, v = heapq.heappop(heap)
        if d > h[v]:
            continue
        for u, cost, *_ in adj[v]:
            nd = d + cost + station_cost(u)
            if nd < h[u]:
                h[u] = nd
                heapq.heappush(heap, (nd, u))

    # Upper bounds on any future value entering the comfort / reliability means.
    c_max = max([m.stations[v].comfort for v in nodes] + [c for v in nodes for *_, c, _ in adj[v]] + [0.0])
    r_max = max([m.stations[v].reliability for v in nodes] + [r for v in nodes for *_, r in adj[v]] + [0.0])
    transfer_cost = {v: w1 * m.stations[v].transfer_time / ts for v in nodes}

    best = math.inf
    found: list[tuple[float, list[str]]] = []
    path = [s]
    on_path = {s}
    expansions = 0

    def mean_term(csum: float, ccnt: int, vmax: float, scale: float) -> float:
        cur = csum / ccnt if ccnt else 0.0
        return 1 - max(cur, vmax) / scale

    def dfs(u: str, add: float, dp: dict[str, float], csum: float, ccnt: int, rsum: float, rcnt: int) -> None:
        nonlocal best, expansions
        expansions += 1
        if expansions > max_expansions:
            raise GeoevalError(
                f"route search from {s!r} to {t!r} exceeded {max_expansions} expansions; "
                "the map has too many simple paths for an exact answer"
            )
        # u is included (u != t here): its station cost and values enter now
        st = m.stations[u]
        add_u = add + station_cost(u)
        if st.comfort != 0:
            csum, ccnt = csum + st.comfort, ccnt + 1
        if st.reliability != 0:
            rsum, rcnt = rsum + st.reliability, rcnt + 1
        for v, ecost, lines, ec, er in adj[u]:
            if v in on_path:
                continue
            # transfer DP over the line of the edge u-v
            if u == s:
                ndp = {ln: 0.0 for ln in lines}
            else:
                base = min(dp.values()) + transfer_cost[u]
                ndp = {ln: min(dp.get(ln, math.inf), base) for ln in lines}
            least_transfer = min(ndp.values())
            nadd = add_u + ecost
            ncs, ncc = (csum + ec, ccnt + 1) if ec != 0 else (csum, ccnt)
            nrs, nrc = (rsum + er, rcnt + 1) if er != 0 else (rsum, rcnt)
            if v == t:
                if include_dest:
                    dst = m.stations[t]
                    nadd += station_cost(t, True)
                    if dst.comfort != 0:
                        ncs, ncc = ncs + dst.comfort, ncc + 1
                    if dst.reliability != 0:
                        nrs, nrc = nrs + dst.reliability, nrc + 1
                cmean = ncs / ncc if ncc else 0.0
                rmean = nrs / nrc if nrc else 0.0
                j = nadd + least_transfer + w3 * (1 - cmean / cs) + w4 * (1 - rmean)
                if j <= best + TIE_TOLERANCE:
                    found.append((j, path + [t]))
                    best = min(best, j)
                continue
            bound = (
                nadd
                + least_transfer
                + h[v]
                + (w3 * mean_term(ncs, ncc, c_max, cs) if w3 else 0.0)
                + (w4 * mean_term(nrs, nrc, r_max, 1.0) if w4 else 0.0)
            )
            if bound > best + TIE_TOLERANCE:
                continue
            path.append(v)
            on_path.add(v)
            dfs(v, nadd, ndp, ncs, ncc, nrs, nrc)
            path.pop()
            on_path.discard(v)

    dfs(s, 0.0, {}, 0.0, 0, 0.0, 0)

    results: dict[str, float] = {}
    for j, p in found:
        if j > best + TIE_TOLERANCE:
            continue
        for tr in transfer_sets(m, p, w1):
            route = format_route(annotated_names(p, tr))
            exact = route_cost(m, p, tr, weights, objective)
            results[route] = exact
    if not results:
        return []
    low = min(results.values())
    return sorted((r, j) for r, j in results.items() if j <= low + TIE_TOLERANCE)


def reference_routes(
    m: MetroMap, s: str, t: str, weights: Sequence[float] | None = None, *, objective: Objective = "mean"
) -> list[str]:
    """The reference set of a query: fewest-station routes (annotated) when `weights` is None,
    else `optimal_routes`."""
    if weights is None:
        return sorted({r for p in fewest_station_routes(m, s, t) for r in annotate(m, p)})
    return optimal_routes(m, s, t, weights, objective=objective)


def _check_endpoints(m: MetroMap, s: str, t: str) -> None:
    for v in (s, t):
        if v not in m.stations:
            raise GeoevalError(f"unknown station {v!r}")
