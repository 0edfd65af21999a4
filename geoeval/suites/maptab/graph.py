"""The MapTab map model: stations (vertices), edges and lines, with the attributes of
Edge_tab and Vertex_tab (MapTab appendix E.1) and a layout for rendering.

This is the one shape every MapTab component reads: the generator and the authors'-format
loader produce it; the tables, the renderer, the route solver, the difficulty indices and the
offline agents consume it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Scenario = Literal["metromap", "travelmap"]


@dataclass(frozen=True)
class Station:
    """A vertex: a metro station (Metromap) or a scenic spot (Travelmap).

    `x`, `y` are layout coordinates in pixels of the full-size rendering; (0, 0) is top left.
    `lines` is empty for Travelmap. `transfer_time` is 0 unless the station is an interchange.
    """

    name: str
    lines: tuple[str, ...]
    x: float
    y: float
    time: float
    price: float
    comfort: float
    reliability: float
    transfer_time: float = 0.0

    @property
    def is_transfer(self) -> bool:
        return len(self.lines) > 1


@dataclass(frozen=True)
class Edge:
    """An undirected edge between adjacent stations. `lines` lists every line that runs on it
    (the authors' JSON stores `Line` as a list for the same reason)."""

    a: str
    b: str
    lines: tuple[str, ...]
    time: float
    price: float
    comfort: float
    reliability: float

    @property
    def label(self) -> str:
        """The authors' Edge column: `A-B`."""
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class Line:
    """A metro line: its stations in running order. A loop line returns to its first station."""

    name: str
    color: str  # "#rrggbb"
    stations: tuple[str, ...]
    loop: bool = False


@dataclass
class MetroMap:
    """A whole map. `width`/`height` are the full-size rendering's pixel size."""

    name: str
    scenario: Scenario
    stations: dict[str, Station]
    edges: list[Edge]
    lines: dict[str, Line] = field(default_factory=dict)
    width: int = 1600
    height: int = 1200
    country: str = "synthetic"

    def edge_between(self, a: str, b: str) -> Edge | None:
        return self._edge_index().get(frozenset((a, b)))

    def neighbors(self, name: str) -> list[str]:
        return self._adjacency().get(name, [])

    def _edge_index(self) -> dict[frozenset[str], Edge]:
        cached = self.__dict__.get("_edge_index_cache")
        if cached is None:
            cached = {frozenset((e.a, e.b)): e for e in self.edges}
            self.__dict__["_edge_index_cache"] = cached
        return cached

    def _adjacency(self) -> dict[str, list[str]]:
        cached = self.__dict__.get("_adjacency_cache")
        if cached is None:
            cached = {name: [] for name in self.stations}
            for e in self.edges:
                cached.setdefault(e.a, []).append(e.b)
                cached.setdefault(e.b, []).append(e.a)
            self.__dict__["_adjacency_cache"] = cached
        return cached
