"""Route-planning (RP) queries: categories, sampling, reference labels, question wording (and its
inverse, `parse_question`) and the tables each category shows. The prompts are in `prompts`;
reading a prompt back, as the offline baselines do, is in `baselines.prompt_reading`.

Categories (key -> the authors' test-set suffix, input setting, criteria):
    map_only  only_map                        map                        -
    edge_only only_tab                        edge_tab                   -
    map_edge  map_and_tab                     map+edge_tab               -
    T / P / C / R   ..._with_constraint_1/2/3/4   map+edge_tab+vertex_tab  one criterion
    TPR / TCR / PCR / TPCR  ..._1_2_4 / _1_3_4 / _2_3_4 / _1_2_3_4      several criteria
    mix       ..._1_2_3_4_only_vertex2        map+mix_tab                all four (Mix_tab values)

Sampling (B.2): `build_rp_queries` draws origin-destination pairs whose fewest-station route has
at least 3 stations (SPLI >= 2), without replacement, with `random.Random(seed)` from the sorted
list of all such ordered pairs; like the paper ("each pair generates 3 criteria-free and 9
criteria-based queries") every category is asked on the same pairs. Query difficulty is the 1:1:1
split (generator.difficulty.tercile_levels) of the pairs' SPLI (Travelmap: SPCI) within the map.

Weights: only the category's criteria are non-zero. Each is an integer drawn from
`WEIGHT_CHOICES` = {1, 2, 3, 4, 5} (a private Random seeded by (seed, category, pair index)),
normalised to sum 1 and rounded to 6 decimals, the last non-zero weight taking 1 minus the others
so that the rounded weights still sum to 1. Single-criterion weights are exactly 1. The references
are optimal under the rounded weights the model is shown, with `routing.cost`'s cost model and the
scenario's objective (`routing.cost.SCENARIO_OBJECTIVE`: Metromap "mean", the paper's Eq. 1; Travelmap
"sum", the additive variant the authors' Travelmap prompts state and labels follow). Tied routes:
every route within the tie tolerance is a reference; when tied routes have different totals (equal
J, say a faster but dearer route), `totals` are those of the first reference in sorted order (the
authors' items too carry one route's totals), and the T/P/C/R understanding analysis
(`analysis.understanding`) accepts the totals of any tied reference.

Table rows (the paper: "The rows are independently shuffled for each sample to prevent
order-based topology leakage"): `prompt_tables(..., row_seed=...)` permutes every table's rows
with `random.Random(f"{row_seed}/{title}")`; the suite passes "<run seed>/<sample id>"
(`row_seed`), or None with `suite.row_order=fixed` (map order: Edge_tab line by line).

Questions: five instruction styles (D.1: Direct Optimization, Graph-theoretic,
Instruction-seeking, User-oriented, Constraint-explicit), cycled by pair index (style = i % 5).
Style 0 uses D.1's wording; D.1 lists only style 0 beyond Map-only, so styles 1-4 of the other
categories are geoeval's paraphrases in the same five registers. The table mentions follow what
the model is actually given, as in the authors' test sets: Edge_tab-only says "According to the
Edge Table" (D.1 writes "Edge Table and Vertex Table" although no Vertex Table is given), and
Map+Edge_tab "According to the Subway Map and the Edge Table". Travelmap says "Scenic Area Planning
Map" instead of "Subway Map" and "scenic spots" instead of "stations".

Tables shown (the authors' column masking, `maptab_infer/data.py`): criteria-free Edge_tab keeps
Edge and Line (Line is needed to know where transfers happen); criteria categories keep Edge, Line
and the criteria's columns, and Vertex, Line, the criteria's columns plus Transfer Time when Time is
a criterion; Map+Mix_tab shows the Mix_tab without its Line column (the strict cross-modal
setting), titled "Vertex Table" as in the authors' prompts. In Travelmap, a category with Price
but not Time still shows the Time columns, as the authors' masking does: a spot's Time says
whether it is a transport hub (Time 0), whose Price counts only at the destination.

Prompts (`prompts`): `system_prompt` (role, objective with the cost rules and scaling, output
format) and `user_prompt` (question, weights, tables in fenced blocks) are filled from the
templates in `prompts/` (`PROMPTS_DIR`, shared with the QA prompts).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import cast

import networkx as nx

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import (
    TableFormat,
    edge_table,
    format_table,
    mix_map,
    mix_table,
    shuffle_rows,
    vertex_table,
)
from geoeval.suites.maptab.generator.difficulty import spci, tercile_levels, to_graph
from geoeval.suites.maptab.graph import MetroMap, Scenario
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.routing import reference as routing
from geoeval.suites.maptab.routing import search as routing_search
from geoeval.suites.maptab.routing import transfers as routing_transfers

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"

CATEGORIES: tuple[str, ...] = (
    "map_only",
    "edge_only",
    "map_edge",
    "T",
    "P",
    "C",
    "R",
    "TPR",
    "TCR",
    "PCR",
    "TPCR",
    "mix",
)
CRITERIA_FREE = ("map_only", "edge_only", "map_edge")
SETTINGS: dict[str, str] = {
    "map_only": "map",
    "edge_only": "edge_tab",
    "map_edge": "map+edge_tab",
    **{c: "map+edge_tab+vertex_tab" for c in ("T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR")},
    "mix": "map+mix_tab",
}
CRITERIA_NAMES = ("Time", "Price", "Comfort Level", "Reliability")
_LETTER = {"T": "Time", "P": "Price", "C": "Comfort Level", "R": "Reliability"}
CRITERIA: dict[str, tuple[str, ...]] = {
    **{c: () for c in CRITERIA_FREE},
    **{c: tuple(_LETTER[x] for x in c) for c in ("T", "P", "C", "R", "TPR", "TCR", "PCR", "TPCR")},
    "mix": CRITERIA_NAMES,
}
WEIGHT_CHOICES = (1, 2, 3, 4, 5)
N_STYLES = 5
STYLE_NAMES = (
    "Direct Optimization",
    "Graph-theoretic",
    "Instruction-seeking",
    "User-oriented Optimization",
    "Constraint-explicit Optimization",
)
USER_PROFILE = {
    "TPR": "a young traveller",
    "TCR": "a middle-aged traveller",
    "PCR": "an older traveller",
    "TPCR": "a family trip",
    "mix": "a family trip",
}


@dataclass
class RPQuery:
    """One route-planning query with its reference labels."""

    id: str
    map_name: str
    scenario: Scenario
    category: str
    setting: str
    source: str
    target: str
    weights: tuple[float, float, float, float] | None
    style: int
    question: str
    routes: list[str]
    totals: dict | None
    map_difficulty: str
    query_difficulty: str
    spli: int
    transfer_vertex_numbers: list[int] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Question wording

_FREE_STYLES = (
    "{p}, what is the path with the fewest {units} from {s} to {t}?",
    "{p}, what is the shortest path from {s} to {t}?",
    "{p}, how can I reach {t} from {s} via the shortest path?",
    "{p}, how can I travel from {s} to {t} with the fewest number of {units}?",
    "{p}, what is the shortest route in terms of {unit} count from {s} to {t}?",
)
_CRITERIA_STYLES: dict[str, tuple[str, ...]] = {
    "T": (
        "{p}, what is the fastest route from {s} to {t}?",
        "{p}, what is the minimum-time path from {s} to {t}?",
        "{p}, how can I get from {s} to {t} in the least total time?",
        "{p}, how can I travel from {s} to {t} as quickly as possible?",
        "{p}, what is the route with the smallest total time, counting travel, dwell and transfer time, from {s} to {t}?",
    ),
    "P": (
        "{p}, what is the cheapest route from {s} to {t}?",
        "{p}, what is the minimum-cost path from {s} to {t}?",
        "{p}, how can I get from {s} to {t} while spending the least money?",
        "{p}, how can I travel from {s} to {t} as cheaply as possible?",
        "{p}, what is the route with the lowest total price from {s} to {t}?",
    ),
    "C": (
        "{p}, what is the smoothest ride between {s} and {t}?",
        "{p}, what is the path with the highest average comfort from {s} to {t}?",
        "{p}, how can I get from {s} to {t} most comfortably?",
        "{p}, how can I travel from {s} to {t} in the greatest comfort?",
        "{p}, what is the route with the highest average Comfort Level from {s} to {t}?",
    ),
    "R": (
        "{p}, what is the most stable {vehicle}route from {s} to {t}?",
        "{p}, what is the path with the highest average reliability from {s} to {t}?",
        "{p}, how can I get from {s} to {t} most reliably?",
        "{p}, how can I travel from {s} to {t} with the least risk of disruption?",
        "{p}, what is the route with the highest average Reliability from {s} to {t}?",
    ),
    "TPR": (
        "{p}, what is the optimal route considering time, price, and reliability from {s} to {t}?",
        "{p}, what is the minimum weighted-cost path over time, price, and reliability from {s} to {t}?",
        "{p}, how can I get from {s} to {t} balancing time, price, and reliability?",
        "{p}, how can I travel from {s} to {t} quickly, cheaply, and reliably?",
        "{p}, what is the route with the lowest weighted cost of time, price, and reliability from {s} to {t}?",
    ),
    "TCR": (
        "{p}, what is the fastest, most comfortable, and reliable route from {s} to {t}?",
        "{p}, what is the minimum weighted-cost path over time, comfort, and reliability from {s} to {t}?",
        "{p}, how can I get from {s} to {t} balancing time, comfort, and reliability?",
        "{p}, how can I travel from {s} to {t} quickly, comfortably, and reliably?",
        "{p}, what is the route with the lowest weighted cost of time, comfort, and reliability from {s} to {t}?",
    ),
    "PCR": (
        "{p}, what is the best route optimizing price, comfort, and reliability from {s} to {t}?",
        "{p}, what is the minimum weighted-cost path over price, comfort, and reliability from {s} to {t}?",
        "{p}, how can I get from {s} to {t} balancing price, comfort, and reliability?",
        "{p}, how can I travel from {s} to {t} cheaply, comfortably, and reliably?",
        "{p}, what is the route with the lowest weighted cost of price, comfort, and reliability from {s} to {t}?",
    ),
    "TPCR": (
        "{p}, what is the optimal route considering time, price, comfort, and reliability from {s} to {t}?",
        "{p}, what is the minimum weighted-cost path over time, price, comfort, and reliability from {s} to {t}?",
        "{p}, how can I get from {s} to {t} balancing time, price, comfort, and reliability?",
        "{p}, how can I travel from {s} to {t} quickly, cheaply, comfortably, and reliably?",
        "{p}, what is the route with the lowest weighted cost of time, price, comfort, and reliability from {s} to {t}?",
    ),
}
_CRITERIA_STYLES["mix"] = _CRITERIA_STYLES["TPCR"]


def map_words(scenario: Scenario) -> dict[str, str]:
    if scenario == "metromap":
        return {"map": "Subway Map", "unit": "station", "units": "stations", "vehicle": "subway "}
    return {"map": "Scenic Area Planning Map", "unit": "scenic spot", "units": "scenic spots", "vehicle": ""}


def _prefix(category: str, scenario: Scenario) -> str:
    mp = map_words(scenario)["map"]
    return {
        "map_only": f"According to the {mp}",
        "edge_only": "According to the Edge Table",
        "map_edge": f"According to the {mp} and the Edge Table",
        "mix": f"According to the {mp} and the Vertex Table",
    }.get(category, f"According to the {mp}, Edge Table and Vertex Table")


def _templates(category: str) -> tuple[str, ...]:
    return _FREE_STYLES if category in CRITERIA_FREE else _CRITERIA_STYLES[category]


def question_text(category: str, scenario: Scenario, style: int, source: str, target: str) -> str:
    """The question of a query in instruction style `style` (0-4)."""
    check_category(category)
    template = _templates(category)[style % N_STYLES]
    return template.format(p=_prefix(category, scenario), s=source, t=target, **map_words(scenario))


@cache
def _question_patterns(scenario: Scenario) -> tuple[tuple[str, int, re.Pattern, re.Pattern], ...]:
    out = []
    for category in CATEGORIES:
        for style, template in enumerate(_templates(category)):
            text = template.format(p=_prefix(category, scenario), s="\x00S\x00", t="\x00T\x00", **map_words(scenario))
            body = re.escape(text)
            lazy = body.replace("\x00S\x00", "(?P<s>.+?)").replace("\x00T\x00", "(?P<t>.+?)")
            greedy = body.replace("\x00S\x00", "(?P<s>.+)").replace("\x00T\x00", "(?P<t>.+)")
            out.append((category, style, re.compile(f"^{lazy}$"), re.compile(f"^{greedy}$")))
    return tuple(out)


def parse_question(question: str, known: set[str] | None = None) -> tuple[str, int, str, str]:
    """(category, style, source, target) of a question written by `question_text`.

    Several templates can match one question (one template's tail may end another's, and a station
    name may contain template words such as " to "). Among all matches, those whose two names are
    `known` stations win; then the match that explains the most text by template words (the
    shortest names)."""
    q = question.strip()
    matches: list[tuple[str, int, str, str]] = []
    for scenario in ("metromap", "travelmap"):
        for category, style, lazy, greedy in _question_patterns(scenario):
            for pattern in (lazy, greedy):
                match = pattern.match(q)
                if match:
                    matches.append((category, style, match.group("s").strip(), match.group("t").strip()))
    if not matches:
        raise GeoevalError(f"cannot read origin and destination from the question {question!r}")
    if known:
        good = [x for x in matches if x[2] in known and x[3] in known]
        if good:
            matches = good
    return min(matches, key=lambda x: len(x[2]) + len(x[3]))


# --------------------------------------------------------------------------------------------
# Weights and queries


def check_category(category: str) -> None:
    if category not in SETTINGS:
        raise GeoevalError(f"unknown RP category {category!r}; choose from {list(CATEGORIES)}")


def sample_weights(category: str, rng: random.Random) -> tuple[float, float, float, float] | None:
    """The category's weight vector (None for criteria-free), see the module docstring."""
    crit = CRITERIA[category]
    if not crit:
        return None
    raw = [rng.choice(WEIGHT_CHOICES) for _ in crit]
    total = sum(raw)
    values = [round(r / total, 6) for r in raw[:-1]]
    values.append(round(1 - sum(values), 6))
    w = [0.0, 0.0, 0.0, 0.0]
    for name, value in zip(crit, values):
        w[CRITERIA_NAMES.index(name)] = value
    return tuple(w)  # type: ignore[return-value]


def build_rp_queries(
    m: MetroMap,
    categories: Sequence[str],
    n_per_category: int,
    seed: int,
    map_difficulty: str = "Easy",
    *,
    objective: routing_cost.Objective | None = None,
    style: int | None = None,
) -> list[RPQuery]:
    """RP queries of map `m`: `n_per_category` origin-destination pairs (fewer if the map has
    fewer), each asked in every category of `categories` (see the module docstring). `style`
    fixes one instruction style for every query instead of cycling them."""
    for c in categories:
        check_category(c)
    objective = objective or routing_cost.objective_for(m.scenario)
    g = to_graph(m)
    names = sorted(m.stations)
    lengths = {s: dict(nx.single_source_shortest_path_length(g, s)) for s in names}
    pairs = [(s, t) for s in names for t in names if s != t and lengths[s].get(t, 0) >= 2]
    rng = random.Random(seed)
    chosen = rng.sample(pairs, min(n_per_category, len(pairs)))
    spli_values = [lengths[s][t] for s, t in chosen]
    if m.scenario == "metromap":
        levels = tercile_levels(spli_values)
    else:
        levels = tercile_levels([spci(g, s, t) for s, t in chosen])
    mixed = mix_map(m) if "mix" in categories else None

    queries: list[RPQuery] = []
    for category in categories:
        for i, (s, t) in enumerate(chosen):
            weights = sample_weights(category, random.Random(f"{seed}/{category}/{i}"))
            plan_on = cast(MetroMap, mixed) if category == "mix" else m  # built when "mix" is asked
            if weights is None:
                routes = routing.reference_routes(m, s, t, None)
                totals = None
            else:
                routes = routing_search.optimal_routes(plan_on, s, t, weights, objective=objective)
                # tied optima may differ in their totals: the first in sorted order is recorded
                # (module docstring); analyses accept any tied route's totals
                path, transfers = routing_transfers.parse_route(routes[0])
                totals = routing_cost.route_totals(plan_on, path, transfers)
            style_i = i % N_STYLES if style is None else style
            queries.append(
                RPQuery(
                    id=f"{m.name}-{category}-{i:03d}",
                    map_name=m.name,
                    scenario=m.scenario,
                    category=category,
                    setting=SETTINGS[category],
                    source=s,
                    target=t,
                    weights=weights,
                    style=style_i,
                    question=question_text(category, m.scenario, style_i, s, t),
                    routes=routes,
                    totals=totals,
                    map_difficulty=map_difficulty,
                    query_difficulty=levels[i],
                    spli=spli_values[i],
                    transfer_vertex_numbers=[r.count(routing_transfers.TRANSFER_MARK) for r in routes],
                )
            )
    return queries


# --------------------------------------------------------------------------------------------
# Tables shown to the model


def table_columns(category: str, scenario: Scenario = "metromap") -> dict[str, list[str]]:
    """The columns of each table a category shows: {"Edge Table": [...], "Vertex Table": [...]}
    (empty for Map-only). For Map+Mix_tab, "Vertex Table" is the Mix_tab without Line."""
    check_category(category)
    line = ["Line"] if scenario == "metromap" else []
    crit = list(CRITERIA[category])
    if category == "map_only":
        return {}
    if category in ("edge_only", "map_edge"):
        return {"Edge Table": ["Edge", *line]}
    if category == "mix":
        cols = ["Vertex", *CRITERIA_NAMES] + (["Transfer Time"] if scenario == "metromap" else [])
        return {"Vertex Table": cols}
    shown = list(crit)
    if scenario == "travelmap" and "Price" in crit and "Time" not in crit:
        shown.insert(0, "Time")  # the hub rule needs it (module docstring)
    vertex = ["Vertex", *line, *shown]
    if "Time" in crit and scenario == "metromap":
        vertex.append("Transfer Time")
    return {"Edge Table": ["Edge", *line, *shown], "Vertex Table": vertex}


def row_seed(run_seed: int, sample_id: str, row_order: str = "shuffled") -> str | None:
    """The row-shuffling seed of one sample: "<run seed>/<sample id>", None for `fixed` order."""
    if row_order not in ("shuffled", "fixed"):
        raise GeoevalError(f"row_order must be 'shuffled' or 'fixed', got {row_order!r}")
    return None if row_order == "fixed" else f"{run_seed}/{sample_id}"


def prompt_tables(
    m: MetroMap, category: str, table_format: TableFormat, *, row_seed: str | None = None
) -> dict[str, str]:
    """The serialised tables of a category ({title: text}), ready for `user_prompt`; rows
    shuffled per sample when `row_seed` is given (module docstring)."""
    out = {}
    for title, cols in table_columns(category, m.scenario).items():
        if title == "Edge Table":
            rows = edge_table(m, cols)
        elif category == "mix":
            rows = [{c: r[c] for c in cols} for r in mix_table(m, drop_line=True)]
        else:
            rows = vertex_table(m, cols)
        out[title] = format_table(shuffle_rows(rows, row_seed, title), table_format)
    return out
