"""Route-planning (RP) prompts: `system_prompt` (role, objective with the cost rules and scaling,
output format) and `user_prompt` (question, weights, tables in fenced blocks
"Edge Table (csv):\\n```csv ...```"), filled from the templates in `prompts/`. The cost rules state
the scenario's objective (`routing.cost`): "mean" is the paper's Eq. 1, "sum" the additive comfort /
reliability costs of the authors' Travelmap prompts, marked by `SUM_OBJECTIVE_NOTE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from geoeval.api import GeoevalError
from geoeval.suites.maptab.env.tables import TableFormat, mix_merge_note
from geoeval.suites.maptab.graph import Scenario
from geoeval.suites.maptab.routing import cost as routing_cost
from geoeval.suites.maptab.rp.queries import (
    CRITERIA,
    CRITERIA_FREE,
    CRITERIA_NAMES,
    PROMPTS_DIR,
    SETTINGS,
    USER_PROFILE,
    RPQuery,
    check_category,
    map_words,
    table_columns,
)


@cache
def _template(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


_EXAMPLES = {
    "metromap": ("Marlow Park", "Kensett Square", "Dunthorpe", "Ashby Vale", "Quillon"),
    "travelmap": ("North Gate", "Lotus Pond", "Sunset Terrace", "Old Temple", "Bamboo Garden"),
}


def _common_fields(category: str, scenario: Scenario) -> dict[str, str]:
    setting = SETTINGS[category]
    w = map_words(scenario)
    mp = "the provided subway map image" if scenario == "metromap" else "the provided scenic area planning map image"
    inputs = {
        "map": mp,
        "edge_tab": "the Edge Table",
        "map+edge_tab": f"{mp} and the Edge Table",
        "map+edge_tab+vertex_tab": f"{mp} and two tables (an Edge Table and a Vertex Table)",
        "map+mix_tab": f"{mp} and the Vertex Table",
    }[setting]
    described = []
    if "map" in setting.split("+"):
        described.append(
            f"- The map image shows the {w['units']}"
            + (" and the lines connecting them." if scenario == "metromap" else " and the paths between them.")
        )
    cols = table_columns(category, scenario)
    for title, columns in cols.items():
        kind = (
            "each row is an edge between two adjacent " + w["units"]
            if title == "Edge Table"
            else f"each row is a {w['unit']}"
        )
        if category == "mix":
            kind += "; " + mix_merge_note(scenario)
        described.append(f"- The {title}: {kind}; columns {', '.join(columns)}.")
    if scenario == "metromap":
        marking_title, marking_rule = (
            "Transfer Marking",
            "If and only if a line transfer occurs at a station, append `(transfer)` immediately "
            "after its name. The origin and the destination are never marked.",
        )
        a, b, c, d, e = _EXAMPLES["metromap"]
        ex1 = f"{a}-{c}-{b}(transfer)-{d}"
        ex2 = f"{e}-{d}(transfer)-{b}"
    else:
        marking_title, marking_rule = ("Names", "Write each scenic spot exactly as named; add no annotations.")
        a, b, c, d, e = _EXAMPLES["travelmap"]
        ex1 = f"{a}-{c}-{b}-{d}"
        ex2 = f"{e}-{d}-{b}"
    material = {
        "map": "map image",
        "edge_tab": "Edge Table",
        "map+edge_tab": "map image and Edge Table",
        "map+edge_tab+vertex_tab": "map image and tables",
        "map+mix_tab": "map image and Vertex Table",
    }[setting]
    return {
        "planner": "Subway Pathfinding Algorithm" if scenario == "metromap" else "Scenic Area Route Planner",
        "inputs": inputs,
        "unit": w["unit"],
        "units": w["units"],
        "input_description": "\n".join(described) if described else "- Only the map image.",
        "marking_title": marking_title,
        "marking_rule": marking_rule,
        "material": material,
        "example_a": a,
        "example_b": b,
        "example_d": d,
        "example_e": e,
        "example_route_1": ex1,
        "example_route_2": ex2,
    }


def _fmt_weight(w: float) -> str:
    return f"{w:g}" if abs(w) >= 1e-4 or w == 0 else f"{w:.6f}"


def _hub_rule(scenario: Scenario) -> str:
    """Travelmap's transport-hub price rule (routing's module docstring), as prompt text."""
    if scenario != "travelmap":
        return ""
    return "; a scenic spot whose Time is 0 (an airport or a station) adds its Price only when it is the destination"


def _cost_rules(category: str, scenario: Scenario, objective: routing_cost.Objective = "mean") -> str:
    crit = CRITERIA[category]
    metro = scenario == "metromap"
    stations = (
        "every station of the route except the destination"
        if metro
        else "every scenic spot of the route, the destination included"
    )
    if objective == "sum":
        return _sum_cost_rules(category, scenario, stations)
    rules = []
    if category == "mix":
        if "Time" in crit:
            rules.append(
                f"- Total Time = sum of the Time of {stations}"
                + (" + the Transfer Time of each station where a line transfer occurs." if metro else ".")
            )
        rules.append(f"- Total Price = sum of the Price of {stations}{_hub_rule(scenario)}.")
        rules.append(f"- Average Comfort Level = mean of the non-zero Comfort Level values of {stations}.")
        rules.append(f"- Average Reliability = mean of the non-zero Reliability values of {stations}.")
        return "\n".join(rules)
    if "Time" in crit:
        rules.append(
            f"- Total Time = sum of edge Time + sum of the Time of {stations}"
            + (
                " + the Transfer Time of each station where a line transfer occurs (stations passed without changing lines add no Transfer Time)."
                if metro
                else "."
            )
        )
    if "Price" in crit:
        rules.append(f"- Total Price = sum of edge Price + sum of the Price of {stations}{_hub_rule(scenario)}.")
    if "Comfort Level" in crit:
        rules.append(
            f"- Average Comfort Level = mean of the non-zero Comfort Level values of the route's edges and of {stations}."
        )
    if "Reliability" in crit:
        rules.append(
            f"- Average Reliability = mean of the non-zero Reliability values of the route's edges and of {stations}."
        )
    return "\n".join(rules)


def _sum_cost_rules(category: str, scenario: Scenario, stations: str) -> str:
    """Cost rules of the additive objective (`routing.cost`'s objective="sum"): comfort and reliability
    enter as sums of (1 - value) over the route, as the authors' Travelmap prompts state
    ("final route score = sum(edge Comfort Level) + sum(vertex Comfort Level)")."""
    crit = CRITERIA[category]
    metro = scenario == "metromap"
    _ts, _ps, cs = routing_cost.SCALES[scenario]
    where = f"of {stations}" if category == "mix" else f"of the route's edges and of {stations}"
    c_value = "Comfort Level" if cs == 1 else f"Comfort Level / {cs:g}"
    rules = []
    if "Time" in crit:
        edge = "" if category == "mix" else "sum of edge Time + "
        rules.append(
            f"- Total Time = {edge}sum of the Time of {stations}"
            + (" + the Transfer Time of each station where a line transfer occurs." if metro else ".")
        )
    if "Price" in crit:
        edge = "" if category == "mix" else "sum of edge Price + "
        rules.append(f"- Total Price = {edge}sum of the Price of {stations}{_hub_rule(scenario)}.")
    if "Comfort Level" in crit:
        rules.append(f"- Comfort Cost = sum of (1 - {c_value}) over the non-zero Comfort Level values {where}.")
    if "Reliability" in crit:
        rules.append(f"- Reliability Cost = sum of (1 - Reliability) over the non-zero Reliability values {where}.")
    return "\n".join(rules)


# Says, in a system prompt, that J uses the additive comfort / reliability costs; the offline
# baselines read it to plan with routing's objective="sum".
SUM_OBJECTIVE_NOTE = "Comfort Level and Reliability are summed along the route, not averaged."


def _scaling_rules(
    category: str, scenario: Scenario, weights: Sequence[float], objective: routing_cost.Objective = "mean"
) -> str:
    """The scaling rules and the route score J for a criteria category. Time and Price are the same
    under both objectives; comfort and reliability are one minus their mean (the paper's Eq. 1) or,
    under "sum", summed costs along the route."""
    crit = CRITERIA[category]
    ts, ps, cs = routing_cost.SCALES[scenario]
    terms, lines = [], []
    if "Time" in crit:
        terms.append(f"{_fmt_weight(weights[0])} * (Total Time / {ts:g})")
        lines.append(
            f"- Time is scaled from 0-{ts:g} to 0-1 (divide by {ts:g})"
            + (
                "; Transfer Time (5-15) uses the same division by 3, so a transfer carries a large penalty."
                if scenario == "metromap"
                else "."
            )
        )
    if "Price" in crit:
        terms.append(f"{_fmt_weight(weights[1])} * (Total Price / {ps:g})")
        lines.append(f"- Price is scaled from 0-{ps:g} to 0-1 (divide by {ps:g}).")
    if objective == "sum":
        if "Comfort Level" in crit:
            terms.append(f"{_fmt_weight(weights[2])} * Comfort Cost")
            lines.append(
                f"- Comfort Level is scaled from 0-{cs:g} to 0-1 and counts as one minus its value; zero values are left out."
            )
        if "Reliability" in crit:
            terms.append(f"{_fmt_weight(weights[3])} * Reliability Cost")
            lines.append("- Reliability counts as one minus its value; zero values are left out.")
        if "Comfort Level" in crit or "Reliability" in crit:
            lines.append(f"- {SUM_OBJECTIVE_NOTE}")
    else:
        if "Comfort Level" in crit:
            c_term = "Average Comfort Level" if cs == 1 else f"Average Comfort Level / {cs:g}"
            terms.append(f"{_fmt_weight(weights[2])} * (1 - {c_term})")
            lines.append(
                "- Comfort Level counts as one minus its (scaled) value; zero values are left out of the mean."
            )
        if "Reliability" in crit:
            terms.append(f"{_fmt_weight(weights[3])} * (1 - Average Reliability)")
            lines.append("- Reliability counts as one minus its value; zero values are left out of the mean.")
    lines.append("- Route score J = " + " + ".join(terms) + ". Lower is better; return a route with the lowest J.")
    return "\n".join(lines)


def _objective(
    category: str, scenario: Scenario, weights: Sequence[float], objective: routing_cost.Objective = "mean"
) -> tuple[str, str]:
    crit = CRITERIA[category]
    single = {
        "Time": ("the fastest route", "the one with the minimum Total Time"),
        "Price": ("the cheapest route", "the one with the minimum Total Price"),
        "Comfort Level": ("the route with the highest comfort level", "the one with the highest Average Comfort Level"),
        "Reliability": ("the route with the highest reliability", "the one with the highest Average Reliability"),
    }
    if objective == "sum":
        single["Comfort Level"] = ("the route with the highest comfort level", "the one with the lowest Comfort Cost")
        single["Reliability"] = ("the route with the highest reliability", "the one with the lowest Reliability Cost")
    if len(crit) == 1:
        goal, which = single[crit[0]]
        return goal, f"Considering {crit[0]} as the only factor, return only one final route: {which}."
    parts = ", ".join(f"{name} {_fmt_weight(weights[CRITERIA_NAMES.index(name)])}" for name in crit)
    who = USER_PROFILE.get(category)
    lead = f"The route should be planned for {who}. " if who else ""
    goal = "the best overall route based on weighted " + ", ".join(crit[:-1]) + f" and {crit[-1]}"
    return goal, (
        f"{lead}{', '.join(crit[:-1])} and {crit[-1]} must be considered together with the weight "
        f"proportions {parts}. Return only one final route: the one with the best (lowest) weighted score "
        f"defined below."
    )


def system_prompt(
    category: str,
    scenario: Scenario = "metromap",
    weights: Sequence[float] | None = None,
    objective: routing_cost.Objective = "mean",
) -> str:
    """The system prompt of an RP category (templates in `prompts/`). `objective` is the cost model
    the references are optimal under (`routing.cost`): "mean" states the paper's Eq. 1, "sum" the
    additive comfort / reliability costs (the authors' Travelmap labels and prompts)."""
    check_category(category)
    fields = _common_fields(category, scenario)
    if category in CRITERIA_FREE:
        return _template("rp_system_criteria_free.txt").format(**fields).rstrip() + "\n"
    if weights is None:
        raise GeoevalError(f"category {category!r} needs weights (time, price, comfort, reliability)")
    if objective not in ("mean", "sum"):
        raise GeoevalError(f"objective must be 'mean' or 'sum', got {objective!r}")
    goal, objective_text = _objective(category, scenario, weights, objective)
    return (
        _template("rp_system_criteria.txt")
        .format(
            **fields,
            goal=goal,
            objective=objective_text,
            cost_rules=_cost_rules(category, scenario, objective),
            scaling_rules=_scaling_rules(category, scenario, weights, objective),
        )
        .rstrip()
        + "\n"
    )


#: the user prompt's last line, which asks for the route as text (rp_user.txt)
TEXT_ROUTE_LINE = "Answer with the route only, stations separated by `-`."
# the user prompt's line of weights; `baselines.prompt_reading` reads it back
WEIGHTS_LINE = "Weights (Time, Price, Comfort Level, Reliability):"


def user_prompt(query: RPQuery, tables: dict[str, str], table_format: TableFormat) -> str:
    """The user prompt: the question, the weights (criteria categories) and each table in a fenced
    block "<title> (<format>):\\n```<format>\\n...\\n```"."""
    weights_block = ""
    if query.weights is not None:
        weights_block = f"\n{WEIGHTS_LINE} " + ", ".join(_fmt_weight(w) for w in query.weights) + "\n"
    blocks = []
    for title, text in tables.items():
        blocks.append(f"\n{title} ({table_format}):\n```{table_format}\n{text.rstrip()}\n```\n")
    return _template("rp_user.txt").format(
        question=query.question, weights_block=weights_block, tables_block="".join(blocks)
    )
