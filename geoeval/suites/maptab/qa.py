"""Diagnostic QA (MapTab appendices B.3 and D.2): the 12 question types per scenario, their
deterministic answers, the capability mapping of Table 1, the five instruction styles, prompts,
answer extraction and Acc.

Types are named as in Table 1: `<setting>-<category>`, the setting M (Map-only), E (Edge_tab-only),
V (Vertex_tab-only) or MM (Map+Mix_tab), the category GP (Global Perception-based Reasoning),
LP (Local Perception-based Reasoning) or SR (Spatial Relationship Judgment). What each asks (D.2):

    Metromap                                             Travelmap
    M-GP   number of lines                               number of scenic spots
    M-LP   stations strictly between A and B on a line   is A on a circular route (1/0)
    M-SR   is A on line X (1/0)                          number of spots adjacent to A
    E-GP   stations on the longest line                  most occurrences of one spot in Edge
    E-LP   Time/Price/Comfort Level of edge A-B          Time/Price of edge A-B
    E-SR   edges strictly between edges A-B and C-D      is the hop distance A..B below 5 (1/0)
           in the network (graph distance)
    V-GP   transfer stations in the table                spots with Time below n
    V-LP   transfer stations on line X                   lowest Price among A, B, C, D
    V-SR   do A and B share a line (1/0)                 is A's row above B's row (1/0)
    MM-GP  total stop time of the line with the most     does the table list as many spots as the
           (sum of its stations' Time)                   map shows (1/0)
    MM-LP  mean Reliability of the stations from A to B  is there a spot with Time below n on the
           on their line, both included                  shortest paths from A to B (1/0)
    MM-SR  shortest Transfer Time between lines X and Y  lowest Price among the spots adjacent to A
           (0 if they share no station; 1 if the map
           has only one line)

Answers are "1"/"0" (binary), an integer, or a number given to two decimals ("number"), and come
between `<answer_begin>` and `<answer_end>` (B.3). They are computed from the map by the functions
below (`compute_answer`), from what the question's setting shows; a table reader that parses the
tables in a prompt can call the same functions on the map it rebuilds from them (the table
baseline does), which is how geoeval checks that the table-only answers really follow from the
tables.

Choices where the paper is silent (documented in the suite README too):
* A "number" answer is correct within 0.005 of the exact value (any correct rounding to two
  decimals); the reference text is the value rounded half up to two decimals.
* Metromap M-LP / MM-LP ask only about two stations that share exactly one line, an open one (on
  a loop line "between" has two answers). E-SR is read as graph topology (Table 1 files it under
  Graph Topology Reasoning): the number of edges on a fewest-edge path joining an end of A-B to an
  end of C-D, 0 for edges that share a station (it would be a row count of the Edge Table only if
  the rows kept one order, but they are shuffled per sample). Travelmap V-SR's "above" is the
  earlier row of the Vertex Table as shown (the table the sample shows, shuffled rows included).
* Travelmap "circular route" (M-LP) is any cycle of the path network: a spot is on one when one of
  its paths is not a bridge. E-SR's "distance" is the number of edges of a fewest-edge path.
* Travelmap V-GP and MM-LP ask with a threshold n drawn from `TIME_THRESHOLDS` (D.2 prints 30;
  with E.1's spot Times of 30..180 a fixed 30 would only count the transport hubs). MM-LP asks
  about the union of all fewest-edge paths from A to B, endpoints included.
* Travelmap MM-GP needs a "no" case: for half of the questions (a seeded draw) the table shown
  leaves out one or two spots (`QAQuery.hidden_rows`).
* Binary questions draw their intended answer (1 or 0) first, with a seeded coin, then parameters
  that give it, so the two answers are about equally frequent; when a map admits only one answer
  (say every station is on the one line), that answer is asked.
* Styles: D.2 gives the five styles of Metromap M-GP; the other types' styles 1-4 are geoeval's
  paraphrases in the same registers (style 0 is D.2's Direct / Neutral wording).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Any, Sequence

import networkx as nx

from geoeval.core.errors import GeoevalError
from geoeval.suites.maptab.difficulty import to_graph
from geoeval.suites.maptab.graph import MetroMap, Scenario
from geoeval.suites.maptab.metrics import tagged_texts
from geoeval.suites.maptab.tables import (
    TableFormat,
    edge_table,
    format_table,
    mix_merge_note,
    mix_table,
    mix_values,
    round_half_up,
    shuffle_rows,
    vertex_table,
)

QA_TYPES: tuple[str, ...] = (
    "M-GP", "M-LP", "M-SR", "E-GP", "E-LP", "E-SR", "V-GP", "V-LP", "V-SR", "MM-GP", "MM-LP", "MM-SR",
)
# Input setting of each type's prefix, with the names the suite's RP settings use.
QA_SETTINGS: dict[str, str] = {"M": "map", "E": "edge_tab", "V": "vertex_tab", "MM": "map_mix_tab"}
STYLE_NAMES = (
    "Direct / Neutral", "Simple & Conversational", "Slightly Formal", "Technical / Academic Style",
    "Concise / Dataset-Friendly",
)
N_STYLES = len(STYLE_NAMES)
ANSWER_BEGIN, ANSWER_END = "<answer_begin>", "<answer_end>"
NUMBER_TOLERANCE = 0.005  # a two-decimal answer is correct when it is a correct rounding
TIME_THRESHOLDS = (30, 60, 90, 120, 150)
TRAVEL_DISTANCE_LIMIT = 5  # D.2: "Is the shortest distance between A and B less than 5?"

CAPABILITIES: tuple[str, ...] = (
    "visual_perception", "table_understanding", "cross_modal_alignment", "graph_topology_reasoning",
    "spatial_localization", "numerical_reasoning", "path_planning", "global_reasoning",
)
# Table 1 of the paper, transcribed: capability -> the problem types that exercise it, per scenario.
CAPABILITY_TABLE: dict[str, dict[str, tuple[str, ...]]] = {
    "metromap": {
        "visual_perception": ("M-GP", "M-LP", "M-SR"),
        "table_understanding": ("E-GP", "E-LP", "E-SR", "V-GP", "V-LP", "V-SR"),
        "cross_modal_alignment": ("MM-GP", "MM-LP", "MM-SR"),
        "graph_topology_reasoning": ("M-LP", "E-SR", "MM-SR"),
        "spatial_localization": ("M-SR", "V-LP", "V-SR"),
        "numerical_reasoning": ("M-GP", "M-LP", "E-GP", "E-SR", "V-GP", "V-LP", "MM-GP", "MM-LP"),
        "path_planning": ("MM-LP", "MM-SR"),
        "global_reasoning": ("MM-GP", "MM-SR"),
    },
    "travelmap": {
        "visual_perception": ("M-GP", "M-LP", "M-SR"),
        "table_understanding": ("E-GP", "E-LP", "E-SR", "V-GP", "V-LP", "V-SR"),
        "cross_modal_alignment": ("MM-GP", "MM-LP", "MM-SR"),
        "graph_topology_reasoning": ("M-SR", "E-SR"),
        "spatial_localization": ("M-LP", "V-SR"),
        "numerical_reasoning": ("M-GP", "E-GP", "V-GP", "V-LP", "MM-SR"),
        "path_planning": ("E-SR", "MM-LP", "MM-SR"),
        "global_reasoning": ("MM-GP", "MM-LP"),
    },
}
CAPABILITY_ABBREVIATIONS = {"visual_perception": "VP", "table_understanding": "TU", "cross_modal_alignment": "CA",
                            "graph_topology_reasoning": "GT", "spatial_localization": "SL",
                            "numerical_reasoning": "NR", "path_planning": "PP", "global_reasoning": "GR"}

KINDS: dict[str, dict[str, str]] = {
    "metromap": {"M-GP": "integer", "M-LP": "integer", "M-SR": "binary", "E-GP": "integer", "E-LP": "number",
                 "E-SR": "integer", "V-GP": "integer", "V-LP": "integer", "V-SR": "binary", "MM-GP": "number",
                 "MM-LP": "number", "MM-SR": "integer"},
    "travelmap": {"M-GP": "integer", "M-LP": "binary", "M-SR": "integer", "E-GP": "integer", "E-LP": "number",
                  "E-SR": "binary", "V-GP": "integer", "V-LP": "number", "V-SR": "binary", "MM-GP": "binary",
                  "MM-LP": "binary", "MM-SR": "number"},
}
EDGE_ATTRIBUTES = {"metromap": ("Time", "Price", "Comfort Level"), "travelmap": ("Time", "Price")}


def setting_of(qa_type: str) -> str:
    check_type(qa_type)
    return QA_SETTINGS[qa_type.split("-")[0]]


def check_type(qa_type: str) -> None:
    if qa_type not in QA_TYPES:
        raise GeoevalError(f"unknown QA type {qa_type!r}; choose from {list(QA_TYPES)}")


def capabilities_of(scenario: str, qa_type: str) -> tuple[str, ...]:
    """The capabilities Table 1 maps a problem type to, in `CAPABILITIES` order."""
    check_type(qa_type)
    table = CAPABILITY_TABLE[scenario]
    return tuple(c for c in CAPABILITIES if qa_type in table[c])


# --------------------------------------------------------------------------------------------
# Question wording: five styles per (scenario, type)

QUESTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "metromap": {
        "M-GP": (
            "How many metro lines are there in total on the Subway Map?",
            "How many subway lines are shown on the metro map?",
            "What is the total number of rail lines in the Subway Map?",
            "How many distinct transit lines does the metro map contain?",
            "What is the total count of metro lines in the map?",
        ),
        "M-LP": (
            "How many stations are there between {a} and {b} on the same line?",
            "How many stops are there between {a} and {b} if I stay on the same line?",
            "Please state the number of stations located between {a} and {b} on their shared line.",
            "On the line that serves both {a} and {b}, how many intermediate stations lie strictly between them?",
            "Count of stations between {a} and {b} on the same line?",
        ),
        "M-SR": (
            "Is {a} on {line}?",
            "Does {line} stop at {a}?",
            "Could you confirm whether {a} is a station of {line}?",
            "Does the station set of {line} include {a}?",
            "Station {a} belongs to {line}?",
        ),
        "E-GP": (
            "What is the number of stations on the longest subway line?",
            "How many stations does the longest subway line have?",
            "Please give the number of stations on the subway line with the most stations.",
            "What is the maximum number of distinct stations served by a single line in the Edge Table?",
            "Station count of the longest line?",
        ),
        "E-LP": (
            "What is the {attr} value for the edge {edge}?",
            "What's the {attr} of the edge {edge}?",
            "Please report the {attr} value recorded for the edge {edge}.",
            "Which {attr} value does the Edge Table assign to the edge {edge}?",
            "{attr} of edge {edge}?",
        ),
        "E-SR": (
            "How many edges are there between the edge {edge} and the edge {edge2}?",
            "How many edges sit between the edge {edge} and the edge {edge2} in the network?",
            "Please state the number of edges separating the edge {edge} from the edge {edge2}.",
            "On a fewest-edge connection between the edge {edge} and the edge {edge2}, how many edges lie strictly between them?",
            "Edges between {edge} and {edge2}?",
        ),
        "V-GP": (
            "How many transfer stations are there in the entire table?",
            "How many transfer stations does the table list?",
            "Please give the total number of transfer stations in the Vertex Table.",
            "How many vertices in the Vertex Table belong to two or more lines?",
            "Total transfer stations in the table?",
        ),
        "V-LP": (
            "How many transfer stations are there on {line}?",
            "How many transfer stations does {line} have?",
            "Please state the number of transfer stations located on {line}.",
            "How many vertices on {line} are also served by at least one other line?",
            "Transfer station count on {line}?",
        ),
        "V-SR": (
            "Are {a} and {b} on the same line?",
            "Can I ride from {a} to {b} without leaving one line?",
            "Please confirm whether {a} and {b} share a line.",
            "Do {a} and {b} have at least one line in common?",
            "{a} and {b} share a line?",
        ),
        "MM-GP": (
            "What is the total stop time of the subway line with the longest stop time?",
            "How long is the total stop time of the line whose stops add up to the most time?",
            "Please give the total stop time of the subway line with the largest total stop time.",
            "What is the maximum, over all lines, of the summed station stop times?",
            "Longest total line stop time?",
        ),
        "MM-LP": (
            "What is the average reliability from {a} to {b} on the same line?",
            "What's the average reliability of the stations from {a} to {b} along one line?",
            "Please compute the average reliability of the stations between {a} and {b} on their shared line.",
            "What is the mean Reliability over the stations of the shared line from {a} to {b}, both included?",
            "Average reliability {a} to {b} on the same line?",
        ),
        "MM-SR": (
            "Please check whether there are transfer stations between {line} and {line2}. If so, return the "
            "shortest transfer time; otherwise, return 0. If there is only one subway line, return 1.",
            "Do {line} and {line2} share any transfer station? If they do, give the shortest transfer time; if "
            "not, give 0. If there is only one subway line, give 1.",
            "Please determine whether {line} and {line2} meet at a transfer station. If they do, report the "
            "shortest transfer time; otherwise report 0. If there is only one subway line, report 1.",
            "What is the minimum Transfer Time over the interchange stations shared by {line} and {line2} (0 when "
            "they share none, 1 when the map has a single line)?",
            "Shortest transfer time between {line} and {line2} (0 if none, 1 if one line only)?",
        ),
    },
    "travelmap": {
        "M-GP": (
            "How many tourist attractions are there in total?",
            "How many scenic spots are shown on the map?",
            "Please state the total number of scenic spots on the Scenic Area Planning Map.",
            "What is the number of distinct attractions (vertices) depicted in the map?",
            "Total scenic spot count?",
        ),
        "M-LP": (
            "Is scenic spot {a} on the circular route?",
            "Does a loop path pass through {a}?",
            "Please confirm whether the scenic spot {a} lies on a circular route.",
            "Does {a} belong to a cycle of the scenic path network?",
            "{a} on a loop route?",
        ),
        "M-SR": (
            "How many scenic spots are adjacent to {a}?",
            "How many spots can I reach directly from {a}?",
            "Please state the number of scenic spots directly connected to {a}.",
            "What is the degree of {a} in the path network, counted in adjacent scenic spots?",
            "Adjacent spot count of {a}?",
        ),
        "E-GP": (
            "How many times does the most frequently appearing scenic spot occur in the table?",
            "What's the highest number of times one scenic spot shows up in the table?",
            "Please give the number of occurrences of the scenic spot that appears most often in the Edge Table.",
            "What is the maximum occurrence count of any single scenic spot across the Edge column?",
            "Max occurrences of one spot in the table?",
        ),
        "E-LP": (
            "What is the {attr} value for {edge}?",
            "What's the {attr} of the path {edge}?",
            "Please report the {attr} value recorded for {edge}.",
            "Which {attr} value does the Edge Table list for the path {edge}?",
            "{attr} of {edge}?",
        ),
        "E-SR": (
            "Is the shortest distance between {a} and {b} less than 5?",
            "Are {a} and {b} fewer than 5 edges apart?",
            "Please confirm whether the shortest distance from {a} to {b} is below 5.",
            "Is the hop distance of the shortest path between {a} and {b} smaller than 5?",
            "Shortest distance {a} to {b} under 5?",
        ),
        "V-GP": (
            "How many scenic spots in the table have a Time value below {n}?",
            "How many spots in the table take less than {n} in Time?",
            "Please count the scenic spots whose Time value is below {n}.",
            "What is the number of vertices in the Vertex Table with Time < {n}?",
            "Spots with Time below {n}?",
        ),
        "V-LP": (
            "Given {a}, {b}, {c}, and {d}, what is the price of the cheapest one?",
            "Out of {a}, {b}, {c}, and {d}, how much does the cheapest one cost?",
            "Please give the lowest Price among {a}, {b}, {c}, and {d}.",
            "What is the minimum Price value over the scenic spots {a}, {b}, {c}, and {d}?",
            "Cheapest price among {a}, {b}, {c}, {d}?",
        ),
        "V-SR": (
            "Is {a} located above {b} in the table?",
            "Does {a} come before {b} in the table?",
            "Please confirm whether {a} is listed above {b} in the Vertex Table.",
            "Does the row of {a} precede the row of {b} in the Vertex Table?",
            "{a} above {b} in the table?",
        ),
        "MM-GP": (
            "Is the number of scenic spots in the table the same as the actual number of scenic spots in the map?",
            "Does the table list as many scenic spots as the map shows?",
            "Please confirm whether the table contains the same number of scenic spots as the map.",
            "Is the row count of the Vertex Table equal to the number of scenic spots depicted in the map?",
            "Table spot count equals map spot count?",
        ),
        "MM-LP": (
            "Are there any locations with Time < {n} along all shortest paths from {a} to {b}?",
            "On the shortest ways from {a} to {b}, is there any spot with Time under {n}?",
            "Please check whether any location with Time below {n} lies on the shortest paths from {a} to {b}.",
            "Does the union of all shortest paths from {a} to {b} contain a vertex with Time < {n}?",
            "Any Time < {n} spot on the shortest paths {a} to {b}?",
        ),
        "MM-SR": (
            "What is the cost of the lowest-priced location adjacent to {a}?",
            "How much is the cheapest spot right next to {a}?",
            "Please give the Price of the least expensive scenic spot adjacent to {a}.",
            "What is the minimum Price over the neighbours of {a} in the path network?",
            "Lowest price adjacent to {a}?",
        ),
    },
}

_STATION_KEYS = ("a", "b", "c", "d")


def question_text(scenario: Scenario, qa_type: str, style: int, params: dict[str, Any]) -> str:
    check_type(qa_type)
    return QUESTIONS[scenario][qa_type][style % N_STYLES].format(**params)


@lru_cache(maxsize=None)
def _question_patterns() -> tuple[tuple[str, str, int, re.Pattern], ...]:
    out = []
    for scenario, by_type in QUESTIONS.items():
        for qa_type, templates in by_type.items():
            for style, template in enumerate(templates):
                parts = re.split(r"(\{[a-z0-9]+\})", template)
                body = ""
                for part in parts:
                    if part.startswith("{") and part.endswith("}"):
                        key = part[1:-1]
                        body += r"(?P<n>\d+)" if key == "n" else f"(?P<{key}>.+?)"
                    else:
                        body += re.escape(part)
                out.append((scenario, qa_type, style, re.compile(f"^{body}$", re.DOTALL)))
    return tuple(out)


@dataclass(frozen=True)
class ParsedQuestion:
    scenario: Scenario
    qa_type: str
    style: int
    params: dict[str, Any]


def parse_question(question: str, scenario: Scenario | None = None, known: set[str] | None = None) -> ParsedQuestion:
    """(scenario, type, style, blanks) of a question written by `question_text`. With `scenario`,
    only that scenario's templates; with `known` names, matches whose station blanks are all known
    win (a name may contain template words)."""
    q = question.strip()
    matches: list[ParsedQuestion] = []
    for sc, qa_type, style, pattern in _question_patterns():
        if scenario is not None and sc != scenario:
            continue
        m = pattern.match(q)
        if m:
            params: dict[str, Any] = {k: (int(v) if k == "n" else v.strip()) for k, v in m.groupdict().items()}
            matches.append(ParsedQuestion(sc, qa_type, style, params))  # type: ignore[arg-type]
    matches = [p for p in matches if p.params.get("attr", "Time") in EDGE_ATTRIBUTES[p.scenario]]
    if not matches:
        raise GeoevalError(f"not a MapTab QA question: {question!r}")
    if known:
        def names_known(p: ParsedQuestion) -> bool:
            names = [p.params[k] for k in _STATION_KEYS if k in p.params]
            names += [part.strip() for k in ("edge", "edge2") if k in p.params for part in p.params[k].split("-")]
            return all(name in known for name in names)

        good = [p for p in matches if names_known(p)]
        if good:
            matches = good
    # the template that explains the most text by its own words (the shortest blanks)
    return min(matches, key=lambda p: sum(len(str(v)) for v in p.params.values()))


# --------------------------------------------------------------------------------------------
# Answers


@dataclass(frozen=True)
class Answer:
    value: float
    kind: str  # "binary" | "integer" | "number"

    @property
    def text(self) -> str:
        if self.kind == "number":
            return f"{round_half_up(self.value, 2):.2f}"
        return str(int(round(self.value)))


def _common_lines(m: MetroMap, a: str, b: str) -> list[str]:
    return [ln for ln in m.stations[a].lines if ln in m.stations[b].lines]


def _line_segment(m: MetroMap, a: str, b: str) -> list[str]:
    """The stations from a to b along their one shared open line, both included."""
    lines = _common_lines(m, a, b)
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


def _cycle_spots(g: nx.Graph) -> set[str]:
    bridges = {frozenset(e) for e in nx.bridges(g)}
    return {v for a, b in g.edges() if frozenset((a, b)) not in bridges for v in (a, b)}


def _edge_attr(m: MetroMap, label: str, attr: str) -> float:
    for e in m.edges:
        if e.label == label:
            return {"Time": e.time, "Price": e.price, "Comfort Level": e.comfort, "Reliability": e.reliability}[attr]
    raise GeoevalError(f"edge {label!r} is not in the Edge Table")


def compute_answer(
    scenario: Scenario, qa_type: str, params: dict[str, Any], m: MetroMap,
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
        return int(bool(_common_lines(m, p["a"], p["b"])))
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
        return int(p["a"] in _cycle_spots(g))
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
        return min(m.stations[p[k]].price for k in _STATION_KEYS)
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


@dataclass
class QAQuery:
    """One diagnostic question with its reference answer."""

    id: str
    map_name: str
    scenario: Scenario
    qa_type: str
    setting: str
    style: int
    params: dict[str, Any]
    question: str
    answer: str
    kind: str
    value: float
    map_difficulty: str = "Easy"
    hidden_rows: tuple[str, ...] = field(default_factory=tuple)
    row_seed: str | None = None  # the rows' per-sample shuffle (None: map order)


def qa_table_rows(
    m: MetroMap, qa_type: str, hidden_rows: Sequence[str] = (), row_seed: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The tables a type shows ({title: rows}), all columns: Edge_tab (E), Vertex_tab (V), or the
    Mix_tab titled "Vertex Table" as in the authors' Map+Mix_tab prompts, without its Line column
    in Metromap (MM; B.3's strict cross-modal setting) and without `hidden_rows`; rows shuffled
    by `row_seed` (`tables.shuffle_rows`) when given."""
    setting = setting_of(qa_type)
    if setting == "edge_tab":
        tables = {"Edge Table": edge_table(m)}
    elif setting == "vertex_tab":
        tables = {"Vertex Table": vertex_table(m)}
    elif setting == "map_mix_tab":
        hidden = set(hidden_rows)
        tables = {"Vertex Table": [r for r in mix_table(m, drop_line=m.scenario == "metromap") if r["Vertex"] not in hidden]}
    else:
        tables = {}
    return {title: shuffle_rows(rows, row_seed, title) for title, rows in tables.items()}


def qa_tables(m: MetroMap, q: QAQuery, table_format: TableFormat) -> dict[str, str]:
    rows = qa_table_rows(m, q.qa_type, q.hidden_rows, q.row_seed)
    return {title: format_table(r, table_format) for title, r in rows.items()}


def _coin(rng: random.Random) -> int:
    return int(rng.random() < 0.5)


def _pick(rng: random.Random, want: int, yes: list, no: list):
    """A candidate giving answer `want` when there is one, else one giving the other answer."""
    first, second = (yes, no) if want else (no, yes)
    pool = first or second
    return rng.choice(pool) if pool else None


def _open_line_pairs(m: MetroMap) -> list[tuple[str, str]]:
    pairs = []
    for ln in m.lines.values():
        if ln.loop:
            continue
        for a, b in combinations(ln.stations, 2):
            if _common_lines(m, a, b) == [ln.name]:
                pairs.append((a, b))
    return pairs


def draw_params(m: MetroMap, qa_type: str, rng: random.Random) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """The blanks of one question of `qa_type` on map `m` (and the rows hidden from its table), or
    None when the map cannot pose it (e.g. no open line for M-LP)."""
    stations = list(m.stations)
    lines = list(m.lines)
    if m.scenario == "metromap":
        if qa_type in ("M-GP", "E-GP", "V-GP", "MM-GP"):
            return {}, ()
        if qa_type in ("M-LP", "MM-LP"):
            pairs = _open_line_pairs(m)
            if not pairs:
                return None
            a, b = rng.choice(pairs)
            return ({"a": a, "b": b} if rng.random() < 0.5 else {"a": b, "b": a}), ()
        if qa_type == "M-SR":
            if not lines:
                return None
            line = rng.choice(lines)
            on = list(m.lines[line].stations)
            off = [s for s in stations if s not in on]
            return {"a": _pick(rng, _coin(rng), on, off), "line": line}, ()
        if qa_type == "E-LP":
            e = rng.choice(m.edges)
            return {"attr": rng.choice(EDGE_ATTRIBUTES["metromap"]), "edge": e.label}, ()
        if qa_type == "E-SR":
            if len(m.edges) < 2:
                return None
            i, j = rng.sample(range(len(m.edges)), 2)
            if not nx.has_path(to_graph(m), m.edges[i].a, m.edges[j].a):
                return None  # E-SR asks a graph distance: the two edges must be connected
            return {"edge": m.edges[i].label, "edge2": m.edges[j].label}, ()
        if qa_type == "V-LP":
            return ({"line": rng.choice(lines)}, ()) if lines else None
        if qa_type == "V-SR":
            pairs = list(combinations(stations, 2))
            same = [p for p in pairs if _common_lines(m, *p)]
            other = [p for p in pairs if not _common_lines(m, *p)]
            a, b = _pick(rng, _coin(rng), same, other)
            return {"a": a, "b": b}, ()
        if qa_type == "MM-SR":
            if not lines:
                return None
            if len(lines) < 2:
                return {"line": lines[0], "line2": lines[0]}, ()
            x, y = rng.sample(lines, 2)
            return {"line": x, "line2": y}, ()
        raise GeoevalError(f"unknown QA type {qa_type!r}")
    g = to_graph(m)
    if qa_type in ("M-GP", "E-GP"):
        return {}, ()
    if qa_type == "M-LP":
        cyc = _cycle_spots(g)
        return {"a": _pick(rng, _coin(rng), sorted(cyc), [s for s in stations if s not in cyc])}, ()
    if qa_type in ("M-SR", "MM-SR"):
        return {"a": rng.choice(stations)}, ()
    if qa_type == "E-LP":
        e = rng.choice(m.edges)
        return {"attr": rng.choice(EDGE_ATTRIBUTES["travelmap"]), "edge": e.label}, ()
    if qa_type == "E-SR":
        dist = dict(nx.all_pairs_shortest_path_length(g))
        pairs = list(combinations(stations, 2))
        near = [p for p in pairs if dist[p[0]][p[1]] < TRAVEL_DISTANCE_LIMIT]
        far = [p for p in pairs if dist[p[0]][p[1]] >= TRAVEL_DISTANCE_LIMIT]
        a, b = _pick(rng, _coin(rng), near, far)
        return {"a": a, "b": b}, ()
    if qa_type == "V-GP":
        return {"n": rng.choice(TIME_THRESHOLDS)}, ()
    if qa_type == "V-LP":
        if len(stations) < 4:
            return None
        return dict(zip(_STATION_KEYS, rng.sample(stations, 4))), ()
    if qa_type == "V-SR":
        a, b = rng.sample(stations, 2)
        return {"a": a, "b": b}, ()
    if qa_type == "MM-GP":
        if _coin(rng) and len(stations) > 3:
            return {}, tuple(rng.sample(stations, rng.randint(1, 2)))
        return {}, ()
    if qa_type == "MM-LP":
        a, b = rng.sample(stations, 2)
        mix = mix_values(m)
        lowest = min(mix[v]["Time"] for path in nx.all_shortest_paths(g, a, b) for v in path)
        # the threshold decides the answer (yes iff lowest < n): draw it to give the coin's answer
        n = _pick(rng, _coin(rng), [n for n in TIME_THRESHOLDS[:4] if lowest < n],
                  [n for n in TIME_THRESHOLDS[:4] if lowest >= n])
        return {"a": a, "b": b, "n": n}, ()
    raise GeoevalError(f"unknown QA type {qa_type!r}")


def build_qa_queries(
    m: MetroMap,
    qa_types: Sequence[str],
    n_per_type: int,
    seed: int,
    map_difficulty: str = "Easy",
    *,
    style: int | None = None,
    style_offset: int = 0,
    shuffle_seed: int | None = None,
) -> list[QAQuery]:
    """`n_per_type` questions of each type in `qa_types` on map `m` (fewer when the map cannot
    pose a type). Styles are cycled (B.3): question j of the k-th type gets style
    (style_offset + k + j) % 5, unless `style` fixes one. With `shuffle_seed`, each question's
    tables have their rows shuffled by "<shuffle_seed>/<question id>" (the paper's per-sample
    shuffling), and the row-order answers (Travelmap V-SR) are computed on that order."""
    queries: list[QAQuery] = []
    for k, qa_type in enumerate(qa_types):
        check_type(qa_type)
        for j in range(n_per_type):
            rng = random.Random(f"{seed}/{m.name}/{qa_type}/{j}")
            drawn = draw_params(m, qa_type, rng)
            if drawn is None:
                continue
            params, hidden = drawn
            qid = f"{m.name}-qa-{qa_type}-{j:03d}"
            seed_rows = None if shuffle_seed is None else f"{shuffle_seed}/{qid}"
            tables = qa_table_rows(m, qa_type, hidden, seed_rows)
            answer = compute_answer(m.scenario, qa_type, params, m, tables)
            st = style if style is not None else (style_offset + k + j) % N_STYLES
            queries.append(QAQuery(
                id=qid, map_name=m.name, scenario=m.scenario, qa_type=qa_type, row_seed=seed_rows,
                setting=setting_of(qa_type), style=st, params=params,
                question=question_text(m.scenario, qa_type, st, params), answer=answer.text, kind=answer.kind,
                value=answer.value, map_difficulty=map_difficulty, hidden_rows=hidden,
            ))
    return queries


# --------------------------------------------------------------------------------------------
# Prompts

_MAP_WORDS = {"metromap": ("subway map", "stations", "station"), "travelmap": ("scenic area planning map", "scenic spots", "scenic spot")}

_TASKS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "metromap": {
        "M-GP": ("count the metro lines drawn on the map.",
                 ("A line is one coloured route with a name in the legend; count each name once.",)),
        "M-LP": ("count the stations that lie strictly between two stations of one line.",
                 ("The two stations are on the same line; follow that line from one to the other.",
                  "Do not count the two named stations themselves.")),
        "M-SR": ("decide whether a station belongs to a given line.",
                 ("A station belongs to a line when that line's route passes through its marker.",)),
        "E-GP": ("find how many stations the longest line has, from the Edge Table.",
                 ("Each Edge value `A-B` names two stations; group the rows by Line and count each line's distinct stations.",
                  "Answer with the largest of these counts.")),
        "E-LP": ("read one attribute of one edge from the Edge Table.",
                 ("Find the row whose Edge value is the edge asked about and read the requested column.",)),
        "E-SR": ("count the edges that lie strictly between two given edges in the network.",
                 ("Join an end of one edge to an end of the other by a path with the fewest edges and count that path's edges.",
                  "Do not count the two given edges themselves; edges that share a station have 0 edges between them.")),
        "V-GP": ("count the transfer stations in the Vertex Table.",
                 ("A vertex is a transfer station when its Line column names two or more lines.",)),
        "V-LP": ("count the transfer stations on one line, from the Vertex Table.",
                 ("A vertex is a transfer station when its Line column names two or more lines; count those whose lines include the given one.",)),
        "V-SR": ("decide whether two stations share a line, from the Vertex Table.",
                 ("They share a line when their Line columns have at least one line in common.",)),
        "MM-GP": ("find the largest total stop time of a line: the sum of the Time values of all its stations.",
                  ("Which stations belong to which line is shown only on the map.",
                   "A station's stop time is its Time value in the Vertex Table.",
                   "Round the answer to two decimal places.")),
        "MM-LP": ("average the Reliability of the stations from one station to another along their line.",
                  ("Which stations lie between them on the line is shown only on the map.",
                   "Include both named stations; take each station's Reliability from the Vertex Table.",
                   "Round the answer to two decimal places.")),
        "MM-SR": ("find the shortest transfer time between two lines.",
                  ("The lines' common stations are read from the map; each station's Transfer Time is in the Vertex Table.",
                   "Answer the smallest Transfer Time among their common stations, 0 when they have none, and 1 when the map has only one line.")),
    },
    "travelmap": {
        "M-GP": ("count the scenic spots on the map.", ("Every marked and named spot counts once.",)),
        "M-LP": ("decide whether a scenic spot lies on a circular route.",
                 ("A circular route is a closed loop of paths that returns to where it started without reusing a path.",)),
        "M-SR": ("count the scenic spots directly connected to a given spot by one path.", ()),
        "E-GP": ("find how often the most frequent scenic spot occurs in the Edge Table.",
                 ("Each Edge value `A-B` names two spots; count every spot's occurrences over all rows.",)),
        "E-LP": ("read one attribute of one path from the Edge Table.",
                 ("Find the row whose Edge value is the path asked about and read the requested column.",)),
        "E-SR": (f"decide whether two scenic spots are fewer than {TRAVEL_DISTANCE_LIMIT} edges apart.",
                 ("The distance is the number of edges (rows of the Edge Table) on a path with the fewest edges.",)),
        "V-GP": ("count the scenic spots whose Time value is below a threshold, from the Vertex Table.", ()),
        "V-LP": ("find the lowest Price among the given scenic spots, from the Vertex Table.", ()),
        "V-SR": ("decide whether one scenic spot's row comes before another's in the Vertex Table.",
                 ("Above means an earlier row in the table as given.",)),
        "MM-GP": ("decide whether the table lists as many scenic spots as the map shows.",
                  ("Count the spots on the map and the rows of the Vertex Table.",)),
        "MM-LP": ("decide whether a spot with a small Time value lies on the shortest paths between two spots.",
                  ("The shortest paths are those with the fewest edges on the map; consider all of them, both endpoints included.",
                   "A spot's Time value is in the Vertex Table.")),
        "MM-SR": ("find the lowest Price among the scenic spots adjacent to a given spot.",
                  ("Adjacency is read from the map; each spot's Price is in the Vertex Table.",)),
    },
}

_FORMATS = {
    "binary": ("Return 1 for yes and 0 for no.", "1", "0"),
    "integer": ("Return one integer.", "4", "11"),
    "number": ("Return one number, rounded to two decimal places.", "2.35", "17.08"),
}


@lru_cache(maxsize=None)
def _template(name: str) -> str:
    from geoeval.suites.maptab.queries import PROMPTS_DIR

    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


def system_prompt(scenario: Scenario, qa_type: str) -> str:
    """The system prompt of a QA type (template `prompts/qa_system.txt`)."""
    check_type(qa_type)
    map_kind, units, _unit = _MAP_WORDS[scenario]
    task, rules = _TASKS[scenario][qa_type]
    setting = setting_of(qa_type)
    inputs = {
        "map": f"the {map_kind} image",
        "edge_tab": "the Edge Table (one row per edge between two adjacent " + units + ")",
        "vertex_tab": "the Vertex Table (one row per " + _unit + ")",
        "map_mix_tab": f"the {map_kind} image and the Vertex Table (one row per {_unit}; {mix_merge_note(scenario)}"
                       + ("; it has no Line column" if scenario == "metromap" else "") + ")",
    }[setting]
    answer_rule, ex1, ex2 = _FORMATS[KINDS[scenario][qa_type]]
    example_questions = QUESTIONS[scenario][qa_type]
    placeholder = {"a": "Station A" if scenario == "metromap" else "Spot A", "b": "Station B" if scenario == "metromap" else "Spot B",
                   "c": "Spot C", "d": "Spot D", "line": "Line X", "line2": "Line Y", "attr": "Time",
                   "edge": "A-B", "edge2": "C-D", "n": 60}
    return _template("qa_system.txt").format(
        planner="Subway Map Analyst" if scenario == "metromap" else "Scenic Area Map Analyst",
        task=task, inputs=inputs,
        rules="\n".join(f"- {r}" for r in rules) or "- Count carefully.",
        answer_rule=answer_rule, begin=ANSWER_BEGIN, end=ANSWER_END,
        example_question_1=example_questions[0].format(**placeholder), example_answer_1=ex1,
        example_question_2=example_questions[1].format(**placeholder), example_answer_2=ex2,
    ).rstrip() + "\n"


def user_prompt(q: QAQuery, tables: dict[str, str], table_format: TableFormat) -> str:
    blocks = "".join(f"\n{title} ({table_format}):\n```{table_format}\n{text.rstrip()}\n```\n" for title, text in tables.items())
    return _template("qa_user.txt").format(question=q.question, tables_block=blocks, begin=ANSWER_BEGIN, end=ANSWER_END)


# --------------------------------------------------------------------------------------------
# Answer extraction and Acc

_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)$")
_YES = {"1", "yes", "true"}
_NO = {"0", "no", "false"}


def extract_answer(raw: str) -> tuple[str, str]:
    """The text between the last `<answer_begin>` and `<answer_end>` (B.3), stripped; a problem
    note when there is none."""
    found = tagged_texts(raw or "", ANSWER_BEGIN, ANSWER_END)
    if not found:
        return "", f"no {ANSWER_BEGIN}...{ANSWER_END} in the answer"
    return found[-1].strip().strip("`").strip(), ""


def parse_number(text: str) -> float:
    t = text.strip().rstrip(".").replace(",", "")
    if not _NUMBER.match(t):
        raise ValueError(f"answer {text!r} is not a number")
    return float(t)


def is_correct(answer: str, reference: str, kind: str, value: float | None = None) -> bool:
    """Whether an extracted answer is right. Binary: 1/0 (yes/no, true/false accepted); integer:
    the same integer; number: within `NUMBER_TOLERANCE` of the exact `value` (or equal to the
    reference text's value). A malformed answer is a ValueError naming it (the scorer records it)."""
    if not answer:
        return False
    if kind == "binary":
        low = answer.strip().strip(".").lower()
        if low not in _YES | _NO:
            raise ValueError(f"answer {answer!r} is not 1 or 0")
        return (low in _YES) == (reference.strip() == "1")
    got = parse_number(answer)
    if kind == "integer":
        return got == float(int(reference))
    exact = float(reference) if value is None else value
    return abs(got - exact) <= NUMBER_TOLERANCE + 1e-9 or abs(got - float(reference)) <= 1e-9


def is_qa_system_prompt(text: str) -> bool:
    return ANSWER_BEGIN in text and "Map Analyst" in text


def tables_from_prompt(text: str) -> dict[str, list[dict[str, Any]]]:
    from geoeval.suites.maptab.queries import _TABLE_BLOCK
    from geoeval.suites.maptab.tables import parse_table

    return {m.group("title").strip(): parse_table(m.group("body"), m.group("fmt"))  # type: ignore[arg-type]
            for m in _TABLE_BLOCK.finditer(text)}


def question_from_prompt(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "# Question":
            return next((x.strip() for x in lines[i + 1:] if x.strip()), "")
    raise GeoevalError("no '# Question' in the prompt")


def answer_from_tables(system: str, user: str) -> str | None:
    """What a pure table reader answers (the text between the tags), or None when the question
    needs the map: it parses the question and the tables in the prompt and applies
    `compute_answer` to the map it rebuilds from those tables alone."""
    from geoeval.suites.maptab.tables import map_from_rows

    scenario: Scenario = "travelmap" if "Scenic Area" in system else "metromap"
    tables = tables_from_prompt(user)
    known = {str(r.get("Vertex")) for rows in tables.values() for r in rows if "Vertex" in r}
    for rows in tables.values():
        for r in rows:
            if "Edge" in r:
                known.update(part.strip() for part in str(r["Edge"]).split("-"))
    parsed = parse_question(question_from_prompt(user), scenario, known)
    if setting_of(parsed.qa_type) not in ("edge_tab", "vertex_tab"):
        return None  # the map is needed and a table reader has none
    m = map_from_rows(tables.get("Edge Table", []), tables.get("Vertex Table"), None, scenario)
    return compute_answer(scenario, parsed.qa_type, parsed.params, m, tables).text
