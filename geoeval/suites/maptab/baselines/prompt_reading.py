"""Reading a MapTab prompt back: the route-planning user prompt's source, target, weights, criteria
and tables (`parse_prompt`, written by `rp.prompts.user_prompt`), origin and destination of a
question in any "from A to B" wording (`parse_free_question`), and a QA prompt's question and
tables (written by `qa.questions.user_prompt`). Only the offline baselines read prompts; the suite builds
them from its queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import parse_table
from geoeval.suites.maptab.graph import Scenario
from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.rp.prompts import SUM_OBJECTIVE_NOTE, WEIGHTS_LINE
from geoeval.suites.maptab.rp.queries import CRITERIA, CRITERIA_NAMES, parse_question


@dataclass
class ParsedPrompt:
    """What a table-reading agent can recover from a user prompt."""

    source: str
    target: str
    weights: tuple[float, float, float, float] | None
    criteria: tuple[str, ...]
    tables: dict[str, list[dict]]
    category: str | None = None
    question: str = ""
    scenario: Scenario = "metromap"
    objective: routing_cost.Objective = "mean"


# a table block of a user prompt: "<title> (<format>):\n```<format>\n...\n```"
TABLE_BLOCK = re.compile(
    r"(?P<title>[A-Z][A-Za-z_ ]*?Table) \((?P<fmt>csv|json)\):\s*\n```(?:csv|json)?\s*\n(?P<body>.*?)\n?```",
    re.DOTALL,
)
_WEIGHTS = re.compile(
    re.escape(WEIGHTS_LINE) + r"\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)"
)


def parse_prompt(text: str) -> ParsedPrompt:
    """Source, target, weights, criteria and tables (rows, keyed by title: "Edge Table",
    "Vertex Table") of a user prompt written by `user_prompt` (a system prompt may precede it)."""
    tables: dict[str, list[dict]] = {}
    for match in TABLE_BLOCK.finditer(text):
        tables[match.group("title").strip()] = parse_table(match.group("body"), match.group("fmt"))  # type: ignore[arg-type]
    known: set[str] = set()
    for rows in tables.values():
        for r in rows:
            if "Vertex" in r:
                known.add(str(r["Vertex"]))
            if "Edge" in r and isinstance(r["Edge"], str):
                known.update(p.strip() for p in r["Edge"].split("-"))

    question = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "# Question":
            question = next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
            break
    category = style = None
    if question:
        try:
            category, style, source, target = parse_question(question, known)
        except GeoevalError:  # not geoeval's wording (e.g. the authors' own questions)
            source, target = parse_free_question(question, known)
    else:  # no header: try every line
        for line in lines:
            try:
                category, style, source, target = parse_question(line, known)
                question = line.strip()
                break
            except GeoevalError:
                continue
        else:
            raise GeoevalError("no RP question found in the prompt")

    weights: tuple[float, float, float, float] | None = None
    wm = _WEIGHTS.search(text)
    if wm:  # the pattern has four groups
        weights = cast("tuple[float, float, float, float]", tuple(float(x) for x in wm.groups()))
    criteria = CRITERIA[category] if category else ()
    if weights is not None and not criteria:
        criteria = tuple(n for n, w in zip(CRITERIA_NAMES, weights) if w)
    return ParsedPrompt(
        source=source,
        target=target,
        weights=weights,
        criteria=criteria,
        tables=tables,
        category=category,
        question=question,
        # what the prompt says about the map: Travelmap prompts name the "Scenic Area"
        scenario="travelmap" if "Scenic Area" in text else "metromap",
        objective="sum" if SUM_OBJECTIVE_NOTE in text else "mean",
    )


_FREE_OPENERS = {"from": "to", "between": "and"}
_FREE_OPENER = re.compile(r"\b(from|between)\s+", re.IGNORECASE)
_FREE_TRAILER = re.compile(r"[\s?？.。!！]+$")


def parse_free_question(question: str, known: set[str] | None = None) -> tuple[str, str]:
    """(source, target) of a question in any wording of the form "... from A to B?" or
    "... between A and B." (the authors' test-set questions, which geoeval's templates do not
    cover). Every split of that form is a candidate; with `known` station names, the candidates
    naming two known stations win (a name may contain " to " or " and "); among the rest, the last
    opener and its first separator."""
    q = _FREE_TRAILER.sub("", question.strip())
    candidates: list[tuple[str, str]] = []  # last opener first, then its separators in order
    for opener in reversed(list(_FREE_OPENER.finditer(q))):
        sep = re.compile(rf"\s+{_FREE_OPENERS[opener.group(1).lower()]}\s+", re.IGNORECASE)
        rest = q[opener.end() :]
        for m in sep.finditer(rest):
            s_name, t_name = rest[: m.start()].strip(), rest[m.end() :].strip()
            if s_name and t_name:
                candidates.append((s_name, t_name))
    if not candidates:
        raise GeoevalError(f"cannot read origin and destination from the question {question!r}")
    if known:
        good = [c for c in candidates if c[0] in known and c[1] in known]
        if good:
            return good[0]
    return candidates[0]


# --------------------------------------------------------------------------------------------
# QA prompts


def is_qa_system_prompt(text: str) -> bool:
    return ANSWER_BEGIN in text and "Map Analyst" in text


def tables_from_prompt(text: str) -> dict[str, list[dict[str, Any]]]:
    return {
        m.group("title").strip(): parse_table(m.group("body"), m.group("fmt"))  # type: ignore[arg-type]
        for m in TABLE_BLOCK.finditer(text)
    }


def question_from_prompt(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "# Question":
            return next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
    raise GeoevalError("no '# Question' in the prompt")
