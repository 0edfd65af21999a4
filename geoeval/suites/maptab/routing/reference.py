"""Exact reference routes for MapTab route planning (Task Definition, appendices B.2 and E.2).

Routes are simple station paths written "A-B(transfer)-C"; the reference set of a query is either
the fewest-station routes (no criteria) or every route of least cost J (criteria weights). This
module holds the criteria-free search and `reference_routes`, which picks between the two; the
concerns it builds on have their own modules in this folder:

* `transfers`: route strings, transfers and their annotation (what a transfer is).
* `cost`: route totals and the cost J (the cost model the authors' labels reproduce), the
  scenario objectives ("mean" / "sum"), and the checks of a query's arguments.
* `search`: the exact branch-and-bound search for the least-J routes (how optimality is
  guaranteed).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.routing.cost import (
    Objective,
    _check_endpoints,
)
from geoeval.suites.maptab.routing.search import (
    optimal_routes,
)
from geoeval.suites.maptab.routing.transfers import (
    annotate,
)

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


def reference_routes(
    m: MetroMap, s: str, t: str, weights: Sequence[float] | None = None, *, objective: Objective = "mean"
) -> list[str]:
    """The reference set of a query: fewest-station routes (annotated) when `weights` is None,
    else `optimal_routes`."""
    if weights is None:
        return sorted({r for p in fewest_station_routes(m, s, t) for r in annotate(m, p)})
    return optimal_routes(m, s, t, weights, objective=objective)
