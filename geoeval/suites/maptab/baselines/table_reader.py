"""The table baseline's reading of the tables in a prompt: the routable map they describe
(`graph_from_tables`) and a pure table reader's QA answer (`answer_from_tables`), which applies
the reference answers' `compute_answer` to the map rebuilt from the tables alone; that the
Edge_tab-only and Vertex_tab-only answers come out right checks they follow from the tables.
"""

from __future__ import annotations

from typing import Any

from geoeval.api import GeoevalError
from geoeval.suites.maptab.baselines.prompt_reading import (
    question_from_prompt,
    tables_from_prompt,
)
from geoeval.suites.maptab.env.tables import map_from_rows
from geoeval.suites.maptab.graph import MetroMap, Scenario
from geoeval.suites.maptab.qa.answers import compute_answer
from geoeval.suites.maptab.qa.questions import setting_of
from geoeval.suites.maptab.qa.wording import parse_question


def graph_from_tables(
    edge_rows: list[dict[str, Any]] | None,
    vertex_rows: list[dict[str, Any]] | None = None,
    mix_rows: list[dict[str, Any]] | None = None,
    scenario: Scenario = "metromap",
) -> MetroMap:
    """A routable `MetroMap` (coordinates 0) from what a model is shown: the Edge Table (needed
    for the topology) plus the Vertex Table, or the Mix Table (then stations carry the Mix values
    and edges no attributes). Missing columns read as 0, which leaves the criteria shown intact."""
    if not edge_rows:
        raise GeoevalError("an Edge Table is needed to recover the network")
    return map_from_rows(edge_rows, vertex_rows, mix_rows, scenario)


def answer_from_tables(system: str, user: str) -> str | None:
    """What a pure table reader answers (the text between the tags), or None when the question
    needs the map: it parses the question and the tables in the prompt and applies
    `compute_answer` to the map it rebuilds from those tables alone."""
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
