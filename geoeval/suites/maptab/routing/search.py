"""The exact criteria-based reference search of MapTab route planning (`optimal_routes`).

Routes and transfers are defined in `transfers`, the cost J in `cost`.

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
from collections.abc import Sequence

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.routing.cost import (
    SCALES,
    Objective,
    _check_endpoints,
    _check_objective,
    _station_price,
    _weights,
    route_cost,
)
from geoeval.suites.maptab.routing.transfers import (
    TIE_TOLERANCE,
    annotated_names,
    format_route,
    transfer_sets,
)

DEFAULT_MAX_EXPANSIONS = 5_000_000


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
    m: MetroMap, s: str, t: str, weights: Sequence[float], objective: Objective, max_expansions: int
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
