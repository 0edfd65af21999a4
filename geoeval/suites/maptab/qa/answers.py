"""Reference answers of the diagnostic QA questions (MapTab appendix D.2): what each of the 12
question types asks of a map, computed from the map and the tables as shown, with the kind of each
answer (binary, integer, or a number given to two decimals). `questions` states the reading of each type
where the paper is silent; the table baseline applies the same `compute_answer` to the map it
rebuilds from the tables in a prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import mix_values, round_half_up
from geoeval.suites.maptab.generator.difficulty import to_graph
from geoeval.suites.maptab.graph import MetroMap, Scenario

TRAVEL_DISTANCE_LIMIT = 5  # D.2: "Is the shortest distance between A and B less than 5?"

KINDS: dict[str, dict[str, str]] = {
    "metromap": {
        "M-GP": "integer",
        "M-LP": "integer",
        "M-SR": "binary",
        "E-GP": "integer",
        "E-LP": "number",
        "E-SR": "integer",
        "V-GP": "integer",
        "V-LP": "integer",
        "V-SR": "binary",
        "MM-GP": "number",
        "MM-LP": "number",
        "MM-SR": "integer",
    },
    "travelmap": {
        "M-GP": "integer",
        "M-LP": "binary",
        "M-SR": "integer",
        "E-GP": "integer",
        "E-LP": "number",
        "E-SR": "binary",
        "V-GP": "integer",
        "V-LP": "number",
        "V-SR": "binary",
        "MM-GP": "binary",
        "MM-LP": "binary",
        "MM-SR": "number",
    },
}
EDGE_ATTRIBUTES = {"metromap": ("Time", "Price", "Comfort Level"), "travelmap": ("Time", "Price")}
# the blanks of a question that name stations or spots
STATION_KEYS = ("a", "b", "c", "d")


@dataclass(frozen=True)
class Answer:
    value: float
    kind: str  # "binary" | "integer" | "number"

    @property
    def text(self) -> str:
        if self.kind == "number":
            return f"{round_half_up(self.value, 2):.2f}"
        return str(int(round(self.value)))


def common_lines(m: MetroMap, a: str, b: str) -> list[str]:
    return [ln for ln in m.stations[a].lines if ln in m.stations[b].lines]


def _line_segment(m: MetroMap, a: str, b: str) -> list[str]:
    """The stations from a to b along their one shared open line, both included."""
    lines = common_lines(m, a, b)
    if len(lines) != 1 or lines[0] not in m.lines or m.lines[lines[0]].loop:
        raise GeoevalError(f"{a!r} and {b!r} do not share exactly one open line")
    seq = list(m.lines[lines[0]].stations)
    i, j = sorted((seq.index(a), seq.index(b)))
    return seq[i : j + 1]


def edges_between(m: MetroMap, first: str, second: str) -> int:
    """Metromap E-SR: the edges strictly between two edges, the fewest edges on a path from an end
    of `first` to an end of `second` (0 when they share a station)."""
    ends = []
    for label in (first, second):
        e = next((e for e in m.edges if e.label == label), None)
        if e is None:
            raise GeoevalError(f"edge {label!r} is not in the Edge Table")
        ends.append((e.a, e.b))
    g = to_graph(m)
    lengths = [nx.shortest_path_length(g, u, v) for u in ends[0] for v in ends[1] if nx.has_path(g, u, v)]
    if not lengths:
        raise GeoevalError(f"edges {first!r} and {second!r} are not connected")
    return min(lengths)


def _vertex_row_index(rows: list[dict[str, Any]], name: str) -> int:
    for i, r in enumerate(rows):
        if r["Vertex"] == name:
            return i
    raise GeoevalError(f"{name!r} is not in the Vertex Table")


def _line_stations_from_edges(m: MetroMap) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in m.edges:
        for ln in e.lines:
            out.setdefault(ln, set()).update((e.a, e.b))
    return out


def cycle_spots(g: nx.Graph) -> set[str]:
    bridges = {frozenset(e) for e in nx.bridges(g)}
    return {v for a, b in g.edges() if frozenset((a, b)) not in bridges for v in (a, b)}


def _edge_attr(m: MetroMap, label: str, attr: str) -> float:
    for e in m.edges:
        if e.label == label:
            return {"Time": e.time, "Price": e.price, "Comfort Level": e.comfort, "Reliability": e.reliability}[attr]
    raise GeoevalError(f"edge {label!r} is not in the Edge Table")


def compute_answer(
    scenario: Scenario,
    qa_type: str,
    params: dict[str, Any],
    m: MetroMap,
    tables: dict[str, list[dict[str, Any]]] | None = None,
) -> Answer:
    """The answer of a question from map `m` and the tables as shown ({title: rows}; needed by
    the row-order questions Travelmap V-SR / MM-GP)."""
    kind = KINDS[scenario][qa_type]
    tables = tables or {}
    p = params
    if scenario == "metromap":
        value = _metro_answer(qa_type, p, m, tables)
    else:
        value = _travel_answer(qa_type, p, m, tables)
    return Answer(float(value), kind)


def _metro_answer(qa_type: str, p: dict[str, Any], m: MetroMap, tables: dict[str, list[dict]]) -> float:
    if qa_type == "M-GP":
        return len(m.lines)
    if qa_type == "M-LP":
        return len(_line_segment(m, p["a"], p["b"])) - 2
    if qa_type == "M-SR":
        return int(p["a"] in m.lines[p["line"]].stations) if p["line"] in m.lines else 0
    if qa_type == "E-GP":
        return max((len(s) for s in _line_stations_from_edges(m).values()), default=0)
    if qa_type == "E-LP":
        return _edge_attr(m, p["edge"], p["attr"])
    if qa_type == "E-SR":
        return edges_between(m, p["edge"], p["edge2"])
    if qa_type == "V-GP":
        return sum(1 for s in m.stations.values() if len(set(s.lines)) >= 2)
    if qa_type == "V-LP":
        return sum(1 for s in m.stations.values() if len(set(s.lines)) >= 2 and p["line"] in s.lines)
    if qa_type == "V-SR":
        return int(bool(common_lines(m, p["a"], p["b"])))
    mix = mix_values(m)
    if qa_type == "MM-GP":
        return max((sum(mix[s]["Time"] for s in ln.stations) for ln in m.lines.values()), default=0.0)
    if qa_type == "MM-LP":
        seg = _line_segment(m, p["a"], p["b"])
        return sum(mix[s]["Reliability"] for s in seg) / len(seg)
    if qa_type == "MM-SR":
        if len(m.lines) < 2:
            return 1
        shared = set(m.lines[p["line"]].stations) & set(m.lines[p["line2"]].stations)
        return min((mix[s]["Transfer Time"] for s in shared), default=0)
    raise GeoevalError(f"unknown QA type {qa_type!r}")


def _travel_answer(qa_type: str, p: dict[str, Any], m: MetroMap, tables: dict[str, list[dict]]) -> float:
    g = to_graph(m)
    if qa_type == "M-GP":
        return len(m.stations)
    if qa_type == "M-LP":
        return int(p["a"] in cycle_spots(g))
    if qa_type == "M-SR":
        return g.degree(p["a"])
    if qa_type == "E-GP":
        counts: dict[str, int] = {}
        for e in m.edges:
            for v in (e.a, e.b):
                counts[v] = counts.get(v, 0) + 1
        return max(counts.values(), default=0)
    if qa_type == "E-LP":
        return _edge_attr(m, p["edge"], p["attr"])
    if qa_type == "E-SR":
        return int(nx.shortest_path_length(g, p["a"], p["b"]) < TRAVEL_DISTANCE_LIMIT)
    if qa_type == "V-GP":
        return sum(1 for s in m.stations.values() if s.time < p["n"])
    if qa_type == "V-LP":
        return min(m.stations[p[k]].price for k in STATION_KEYS)
    if qa_type == "V-SR":
        rows = tables["Vertex Table"]
        return int(_vertex_row_index(rows, p["a"]) < _vertex_row_index(rows, p["b"]))
    mix = mix_values(m)
    if qa_type == "MM-GP":
        return int(len(tables["Vertex Table"]) == len(m.stations))
    if qa_type == "MM-LP":
        on_paths = {v for path in nx.all_shortest_paths(g, p["a"], p["b"]) for v in path}
        return int(any(mix[v]["Time"] < p["n"] for v in on_paths))
    if qa_type == "MM-SR":
        return min(mix[v]["Price"] for v in g.neighbors(p["a"]))
    raise GeoevalError(f"unknown QA type {qa_type!r}")


# --------------------------------------------------------------------------------------------
# Queries
