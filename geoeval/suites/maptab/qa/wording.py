"""The wording of the diagnostic QA questions (MapTab appendix D.2): each type's question in the
five instruction styles per scenario (style 0 is D.2's Direct / Neutral wording, styles 1-4
geoeval's paraphrases in the same registers), the task and rules each type's system prompt states,
and `parse_question`, the way back from a question's text to its type, style and blanks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from geoeval.api import GeoevalError
from geoeval.suites.maptab.graph import Scenario
from geoeval.suites.maptab.qa.answers import (
    EDGE_ATTRIBUTES,
    STATION_KEYS,
    TRAVEL_DISTANCE_LIMIT,
)

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

# What the system prompt of each type asks: the task, then its rules (one bullet each).
TASK_RULES: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "metromap": {
        "M-GP": (
            "count the metro lines drawn on the map.",
            ("A line is one coloured route with a name in the legend; count each name once.",),
        ),
        "M-LP": (
            "count the stations that lie strictly between two stations of one line.",
            (
                "The two stations are on the same line; follow that line from one to the other.",
                "Do not count the two named stations themselves.",
            ),
        ),
        "M-SR": (
            "decide whether a station belongs to a given line.",
            ("A station belongs to a line when that line's route passes through its marker.",),
        ),
        "E-GP": (
            "find how many stations the longest line has, from the Edge Table.",
            (
                "Each Edge value `A-B` names two stations; group the rows by Line and count each line's distinct stations.",
                "Answer with the largest of these counts.",
            ),
        ),
        "E-LP": (
            "read one attribute of one edge from the Edge Table.",
            ("Find the row whose Edge value is the edge asked about and read the requested column.",),
        ),
        "E-SR": (
            "count the edges that lie strictly between two given edges in the network.",
            (
                "Join an end of one edge to an end of the other by a path with the fewest edges and count that path's edges.",
                "Do not count the two given edges themselves; edges that share a station have 0 edges between them.",
            ),
        ),
        "V-GP": (
            "count the transfer stations in the Vertex Table.",
            ("A vertex is a transfer station when its Line column names two or more lines.",),
        ),
        "V-LP": (
            "count the transfer stations on one line, from the Vertex Table.",
            (
                "A vertex is a transfer station when its Line column names two or more lines; count those whose lines include the given one.",
            ),
        ),
        "V-SR": (
            "decide whether two stations share a line, from the Vertex Table.",
            ("They share a line when their Line columns have at least one line in common.",),
        ),
        "MM-GP": (
            "find the largest total stop time of a line: the sum of the Time values of all its stations.",
            (
                "Which stations belong to which line is shown only on the map.",
                "A station's stop time is its Time value in the Vertex Table.",
                "Round the answer to two decimal places.",
            ),
        ),
        "MM-LP": (
            "average the Reliability of the stations from one station to another along their line.",
            (
                "Which stations lie between them on the line is shown only on the map.",
                "Include both named stations; take each station's Reliability from the Vertex Table.",
                "Round the answer to two decimal places.",
            ),
        ),
        "MM-SR": (
            "find the shortest transfer time between two lines.",
            (
                "The lines' common stations are read from the map; each station's Transfer Time is in the Vertex Table.",
                "Answer the smallest Transfer Time among their common stations, 0 when they have none, and 1 when the map has only one line.",
            ),
        ),
    },
    "travelmap": {
        "M-GP": ("count the scenic spots on the map.", ("Every marked and named spot counts once.",)),
        "M-LP": (
            "decide whether a scenic spot lies on a circular route.",
            ("A circular route is a closed loop of paths that returns to where it started without reusing a path.",),
        ),
        "M-SR": ("count the scenic spots directly connected to a given spot by one path.", ()),
        "E-GP": (
            "find how often the most frequent scenic spot occurs in the Edge Table.",
            ("Each Edge value `A-B` names two spots; count every spot's occurrences over all rows.",),
        ),
        "E-LP": (
            "read one attribute of one path from the Edge Table.",
            ("Find the row whose Edge value is the path asked about and read the requested column.",),
        ),
        "E-SR": (
            f"decide whether two scenic spots are fewer than {TRAVEL_DISTANCE_LIMIT} edges apart.",
            ("The distance is the number of edges (rows of the Edge Table) on a path with the fewest edges.",),
        ),
        "V-GP": ("count the scenic spots whose Time value is below a threshold, from the Vertex Table.", ()),
        "V-LP": ("find the lowest Price among the given scenic spots, from the Vertex Table.", ()),
        "V-SR": (
            "decide whether one scenic spot's row comes before another's in the Vertex Table.",
            ("Above means an earlier row in the table as given.",),
        ),
        "MM-GP": (
            "decide whether the table lists as many scenic spots as the map shows.",
            ("Count the spots on the map and the rows of the Vertex Table.",),
        ),
        "MM-LP": (
            "decide whether a spot with a small Time value lies on the shortest paths between two spots.",
            (
                "The shortest paths are those with the fewest edges on the map; consider all of them, both endpoints included.",
                "A spot's Time value is in the Vertex Table.",
            ),
        ),
        "MM-SR": (
            "find the lowest Price among the scenic spots adjacent to a given spot.",
            ("Adjacency is read from the map; each spot's Price is in the Vertex Table.",),
        ),
    },
}


# --------------------------------------------------------------------------------------------
# From a question's text back to its type, style and blanks


@cache
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
            names = [p.params[k] for k in STATION_KEYS if k in p.params]
            names += [part.strip() for k in ("edge", "edge2") if k in p.params for part in p.params[k].split("-")]
            return all(name in known for name in names)

        good = [p for p in matches if names_known(p)]
        if good:
            matches = good
    # the template that explains the most text by its own words (the shortest blanks)
    return min(matches, key=lambda p: sum(len(str(v)) for v in p.params.values()))
