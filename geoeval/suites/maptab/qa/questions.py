"""Diagnostic QA (MapTab appendices B.3 and D.2): the 12 question types per scenario, the
capability mapping of Table 1, question generation (parameters, reference answer, style), the
tables each type shows, prompts, answer extraction and Acc. The reference answers are computed in
`answers`, the questions' wording in five styles is in `wording`; answering the questions
from a prompt, as the offline baselines do, is in `baselines`.

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
between `<answer_begin>` and `<answer_end>` (B.3). They are computed from the map by
`answers.compute_answer`, from what the question's setting shows; a table reader that parses the
tables in a prompt can call the same function on the map it rebuilds from them (the table
baseline does, `baselines.table_reader`), which is how geoeval checks that the table-only answers
really follow from the tables.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations
from typing import Any

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import (
    TableFormat,
    edge_table,
    format_table,
    mix_merge_note,
    mix_table,
    mix_values,
    shuffle_rows,
    vertex_table,
)
from geoeval.suites.maptab.generator.difficulty import to_graph
from geoeval.suites.maptab.graph import MetroMap, Scenario
from geoeval.suites.maptab.metrics import tagged_texts
from geoeval.suites.maptab.qa.answers import (
    EDGE_ATTRIBUTES,
    KINDS,
    STATION_KEYS,
    TRAVEL_DISTANCE_LIMIT,
    common_lines,
    compute_answer,
    cycle_spots,
)
from geoeval.suites.maptab.qa.wording import (
    QUESTIONS,
    TASK_RULES,
)
from geoeval.suites.maptab.rp.queries import PROMPTS_DIR

QA_TYPES: tuple[str, ...] = (
    "M-GP",
    "M-LP",
    "M-SR",
    "E-GP",
    "E-LP",
    "E-SR",
    "V-GP",
    "V-LP",
    "V-SR",
    "MM-GP",
    "MM-LP",
    "MM-SR",
)
# Input setting of each type's prefix, with the names the suite's RP settings use.
QA_SETTINGS: dict[str, str] = {"M": "map", "E": "edge_tab", "V": "vertex_tab", "MM": "map_mix_tab"}
STYLE_NAMES = (
    "Direct / Neutral",
    "Simple & Conversational",
    "Slightly Formal",
    "Technical / Academic Style",
    "Concise / Dataset-Friendly",
)
N_STYLES = len(STYLE_NAMES)
ANSWER_BEGIN, ANSWER_END = "<answer_begin>", "<answer_end>"
NUMBER_TOLERANCE = 0.005  # a two-decimal answer is correct when it is a correct rounding
TIME_THRESHOLDS = (30, 60, 90, 120, 150)

CAPABILITIES: tuple[str, ...] = (
    "visual_perception",
    "table_understanding",
    "cross_modal_alignment",
    "graph_topology_reasoning",
    "spatial_localization",
    "numerical_reasoning",
    "path_planning",
    "global_reasoning",
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
CAPABILITY_ABBREVIATIONS = {
    "visual_perception": "VP",
    "table_understanding": "TU",
    "cross_modal_alignment": "CA",
    "graph_topology_reasoning": "GT",
    "spatial_localization": "SL",
    "numerical_reasoning": "NR",
    "path_planning": "PP",
    "global_reasoning": "GR",
}


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
# Question wording (the templates of the five styles are in `wording`)


def question_text(scenario: Scenario, qa_type: str, style: int, params: dict[str, Any]) -> str:
    check_type(qa_type)
    return QUESTIONS[scenario][qa_type][style % N_STYLES].format(**params)


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
    by `row_seed` (`env.tables.shuffle_rows`) when given."""
    setting = setting_of(qa_type)
    if setting == "edge_tab":
        tables = {"Edge Table": edge_table(m)}
    elif setting == "vertex_tab":
        tables = {"Vertex Table": vertex_table(m)}
    elif setting == "map_mix_tab":
        hidden = set(hidden_rows)
        tables = {
            "Vertex Table": [r for r in mix_table(m, drop_line=m.scenario == "metromap") if r["Vertex"] not in hidden]
        }
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
            if common_lines(m, a, b) == [ln.name]:
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
            same = [p for p in pairs if common_lines(m, *p)]
            other = [p for p in pairs if not common_lines(m, *p)]
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
        cyc = cycle_spots(g)
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
        return dict(zip(STATION_KEYS, rng.sample(stations, 4))), ()
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
        n = _pick(
            rng,
            _coin(rng),
            [n for n in TIME_THRESHOLDS[:4] if lowest < n],
            [n for n in TIME_THRESHOLDS[:4] if lowest >= n],
        )
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
            queries.append(
                QAQuery(
                    id=qid,
                    map_name=m.name,
                    scenario=m.scenario,
                    qa_type=qa_type,
                    row_seed=seed_rows,
                    setting=setting_of(qa_type),
                    style=st,
                    params=params,
                    question=question_text(m.scenario, qa_type, st, params),
                    answer=answer.text,
                    kind=answer.kind,
                    value=answer.value,
                    map_difficulty=map_difficulty,
                    hidden_rows=hidden,
                )
            )
    return queries


# --------------------------------------------------------------------------------------------
# Prompts

_MAP_WORDS = {
    "metromap": ("subway map", "stations", "station"),
    "travelmap": ("scenic area planning map", "scenic spots", "scenic spot"),
}


_FORMATS = {
    "binary": ("Return 1 for yes and 0 for no.", "1", "0"),
    "integer": ("Return one integer.", "4", "11"),
    "number": ("Return one number, rounded to two decimal places.", "2.35", "17.08"),
}


@cache
def _template(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


def system_prompt(scenario: Scenario, qa_type: str) -> str:
    """The system prompt of a QA type (template `prompts/qa_system.txt`)."""
    check_type(qa_type)
    map_kind, units, _unit = _MAP_WORDS[scenario]
    task, rules = TASK_RULES[scenario][qa_type]
    setting = setting_of(qa_type)
    inputs = {
        "map": f"the {map_kind} image",
        "edge_tab": "the Edge Table (one row per edge between two adjacent " + units + ")",
        "vertex_tab": "the Vertex Table (one row per " + _unit + ")",
        "map_mix_tab": f"the {map_kind} image and the Vertex Table (one row per {_unit}; {mix_merge_note(scenario)}"
        + ("; it has no Line column" if scenario == "metromap" else "")
        + ")",
    }[setting]
    answer_rule, ex1, ex2 = _FORMATS[KINDS[scenario][qa_type]]
    example_questions = QUESTIONS[scenario][qa_type]
    placeholder = {
        "a": "Station A" if scenario == "metromap" else "Spot A",
        "b": "Station B" if scenario == "metromap" else "Spot B",
        "c": "Spot C",
        "d": "Spot D",
        "line": "Line X",
        "line2": "Line Y",
        "attr": "Time",
        "edge": "A-B",
        "edge2": "C-D",
        "n": 60,
    }
    return (
        _template("qa_system.txt")
        .format(
            planner="Subway Map Analyst" if scenario == "metromap" else "Scenic Area Map Analyst",
            task=task,
            inputs=inputs,
            rules="\n".join(f"- {r}" for r in rules) or "- Count carefully.",
            answer_rule=answer_rule,
            begin=ANSWER_BEGIN,
            end=ANSWER_END,
            example_question_1=example_questions[0].format(**placeholder),
            example_answer_1=ex1,
            example_question_2=example_questions[1].format(**placeholder),
            example_answer_2=ex2,
        )
        .rstrip()
        + "\n"
    )


def text_answer_line() -> str:
    """The user prompt's last line, which asks for the answer between the tags."""
    return f"Answer between {ANSWER_BEGIN} and {ANSWER_END}."


def user_prompt(q: QAQuery, tables: dict[str, str], table_format: TableFormat) -> str:
    blocks = "".join(
        f"\n{title} ({table_format}):\n```{table_format}\n{text.rstrip()}\n```\n" for title, text in tables.items()
    )
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
