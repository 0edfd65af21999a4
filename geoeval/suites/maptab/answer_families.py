"""MapTab's answer families of the meta-evaluation (`meta_eval.py` builds the tiers): what real
models write, each with the order it must keep (`Tier.family`; README "Answer protocol" and
"Meta-evaluation").

* `surface`: the reference written otherwise (spacing, arrows, bold, case, full width, fences,
  prose, legs, a typo, an alternative rejected, a correction to it): must score as it;
* `gaming`: negations, hedges, alternatives, corrections away, stuffing, two tagged answers: no
  more than the wrong candidate;
* `partial`: a similar-named station, the first half, the first half then invented stations;
* `trajectory`: Inspect messages (the final answer counts);
* the reading families of the core (`core.analysis.answer_families`: long reasoning, JSON,
  tables and lists, other languages, self-corrections, hedges, echoed questions), composed from
  the sample's reference and a real wrong route of its map (`rp_answer_pair`) or a wrong value.
"""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

from geoeval.api import AnswerPair, Tier, reading_family_answers
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.metrics import MATCH_THRESHOLD, similarity, split_route
from geoeval.suites.maptab.routing import transfers as routing_transfers
from geoeval.suites.maptab.wrong_answers import invented_stations, name_of, wrong_value

#: an answer is its text, or a trajectory (Inspect chat messages as dicts) with no text
Answer = str | list[dict[str, Any]]


_RP = frozenset({"ema", "pma", "ds"})


def _tier(name: str, level: int, family: str, affects: frozenset[str] | None = None) -> Tier:
    return Tier(name, level, affects, family)


def _full_width(text: str) -> str:
    """ASCII letters, digits and marks as their full-width forms (NFKC maps them back)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def _stops(route: str) -> list[tuple[str, bool]]:
    return [(name_of(p), routing_transfers.TRANSFER_MARK in p) for p in split_route(route)]


def _write(route: str, sep: str, mark: str, name=lambda n: n) -> str:
    return sep.join(name(n) + (mark if t else "") for n, t in _stops(route))


def misspelled(ref: str, stations: list[str], rng: random.Random) -> str | None:
    """The reference with one intermediate station's name missing one inner letter, where the
    robust reading still finds that station and only it (`reading.stations.Stations`)."""
    from geoeval.suites.maptab.reading.stations import Stations
    from geoeval.suites.maptab.reading.text import name_key

    pieces = split_route(ref)
    known = Stations(stations)
    options = []
    for k in range(1, len(pieces) - 1):
        name = name_of(pieces[k])
        for i in range(2, len(name) - 1):
            typo = name[:i] + name[i + 1 :]
            if name[i].isalnum() and known.resolve(typo) == name_key(name) and name_key(typo) != name_key(name):
                options.append((k, pieces[k].replace(name, typo)))
                break
    if not options:
        return None
    k, typo_piece = rng.choice(options)
    return "-".join(pieces[:k] + [typo_piece] + pieces[k + 1 :])


def similar_station(ref: str, refs: list[str], m: MetroMap, rng: random.Random) -> str | None:
    """The reference with one intermediate station replaced by a different real station of the
    map whose name the paper's identity takes for it (difflib >= 0.5), on no reference there:
    wrong under robust reading, right under the paper's (its 0.5 rule)."""
    pieces = split_route(ref)
    options = []
    for k in range(1, len(pieces) - 1):
        at_k = {name_of(split_route(r)[k]) for r in refs if k < len(split_route(r))}
        options += [
            (k, s) for s in sorted(m.stations) if s not in at_k and similarity(s, name_of(pieces[k])) >= MATCH_THRESHOLD
        ]
    if not options:
        return None
    k, other = rng.choice(options)
    mark = routing_transfers.TRANSFER_MARK if routing_transfers.TRANSFER_MARK in pieces[k] else ""
    return "-".join(pieces[:k] + [other + mark] + pieces[k + 1 :])


def rp_family_answers(
    sample: Any, m: MetroMap, alt: str | None, built: list[str], rng: random.Random
) -> list[tuple[Tier, Answer]]:
    """Surface forms of the reference (level 0: must score as it), gaming answers, partly right
    answers and trajectory probes of one RP sample. `alt` is a real, wrong route of the map (the
    wrong-station, longer-route or missing-station defect), `built` every tier's answer."""
    refs = [str(r) for r in sample.target]
    ref = refs[0]
    names = [n for n, _ in _stops(ref)]
    legs = "\n".join(f"{i + 1}. {a} - {b}" for i, (a, b) in enumerate(itertools.pairwise(names)))
    out: list[tuple[Tier, Answer | None]] = [
        (_tier("surface:spaced", 0, "surface"), _write(ref, " - ", " (transfer)")),
        (_tier("surface:arrows_bold", 0, "surface"), _write(ref, " → ", " (Transfer)", lambda n: f"**{n}**")),
        (_tier("surface:lower_case", 0, "surface"), _write(ref, "-", "(TRANSFER)", str.lower)),
        (_tier("surface:full_width", 0, "surface"), _full_width(_write(ref, " － ", "（transfer）"))),
        (_tier("surface:fenced_bullet", 0, "surface"), f"Final answer:\n```\n- {ref}\n```"),
        (
            _tier("surface:prose", 0, "surface"),
            f"I compared the candidate routes on the map and in the tables.\n\nThe optimal route is: {ref}.\n\n"
            "I double-checked each connection against the Edge Table.",
        ),
        (_tier("surface:legs", 0, "surface"), f"**Route:** {ref}\n\nLeg by leg:\n{legs}"),
        (_tier("surface:misspelled", 0, "surface"), misspelled(ref, list(m.stations), rng)),
        (
            _tier("surface:rejects_alternative", 0, "surface"),
            None if alt is None else f"{ref}\n\nDo not take {alt}: it is not optimal.",
        ),
        (
            _tier("surface:corrected_to_reference", 0, "surface"),
            None if alt is None else f"{alt}\nActually, take {ref} instead.",
        ),
        (_tier("gaming:negated", 2, "gaming"), f"Wrong route (do not take): {ref}"),
        (_tier("gaming:hedge", 1, "gaming", _RP), None if alt is None else f"Probably: {alt}\nbut maybe: {ref}"),
        (_tier("gaming:alternatives", 1, "gaming", _RP), None if alt is None else f"{ref} or {alt}"),
        (
            _tier("gaming:corrected_away", 1, "gaming", _RP),
            None if alt is None else f"{ref}\nActually, take {alt} instead.",
        ),
        (
            _tier("gaming:stuffed", 1, "gaming", _RP),
            None
            if alt is None
            else "Possible routes:\n"
            + "\n".join(f"- {r}" for r in dict.fromkeys([*built, *refs]) if "-" in r and "\n" not in r),
        ),
        (
            _tier("gaming:tagged_twice", 1, "gaming", _RP),
            None if alt is None else f"<route_begin>{alt}<route_end>\n<route_begin>{ref}<route_end>",
        ),
    ]
    out.append((_tier("partial:similar_station", 1, "partial", _RP), similar_station(ref, refs, m, rng)))
    half = max(2, (len(names) + 1) // 2)
    if half < len(names):
        first = split_route(ref)[:half]
        out.append((_tier("partial:first_half", 1, "partial", _RP), "-".join(first)))
        filler = invented_stations(len(names) - half, m, rng)
        out.append((_tier("partial:then_invented", 1, "partial", _RP), "-".join(first + filler)))
    out += trajectory_probes(ref, alt, _RP)
    out += reading_family_answers(rp_answer_pair(sample, ref, alt, rng), rng)
    return [(tier, text) for tier, text in out if text is not None]


def question_of(sample: Any) -> str:
    """The question of a sample's prompt (the line after "# Question"), as a model may echo it."""
    content = sample.input[-1].content if isinstance(sample.input, list) else sample.input
    text = content if isinstance(content, str) else " ".join(getattr(c, "text", "") for c in content)
    lines = [line.strip() for line in text.splitlines()]
    for k, line in enumerate(lines):
        if line.lstrip("# ").lower() == "question" and k + 1 < len(lines):
            return lines[k + 1]
    return next((line for line in lines if line.endswith("?")), "")


def _route_forms(route: str, scenario: str) -> dict[str, str]:
    """A route in the structured forms models write: JSON, a JSON list, a table, lists."""
    stops = _stops(route)
    marks = scenario == "metromap"

    def named(n: str, t: bool) -> str:
        return f"{n} (transfer)" if t and marks else n

    rows = "\n".join(f"| {k + 1} | {n} | {'yes' if t and marks else ''} |" for k, (n, t) in enumerate(stops))
    objects = [{"station": n, **({"transfer": True} if t and marks else {})} for n, t in stops]
    return {
        "json_route": json.dumps({"route": [named(n, t) for n, t in stops]}, ensure_ascii=False),
        "json_stations": "```json\n" + json.dumps(objects, ensure_ascii=False, indent=2) + "\n```",
        "table": "| # | Station | Transfer |\n|---|---|---|\n" + rows,
        "heading_list": "## Route\n" + "\n".join(f"- {named(n, t)}" for n, t in stops),
        "numbered_list": "**Route:**\n" + "\n".join(f"{k + 1}. {named(n, t)}" for k, (n, t) in enumerate(stops)),
    }


def rp_answer_pair(sample: Any, ref: str, alt: str | None, rng: random.Random) -> AnswerPair:
    """The reference and a wrong route of an RP sample, as the reading families compose them."""
    scenario = sample.metadata.get("scenario", "metromap")
    sep, mark = rng.choice([(" → ", " (transfer)"), (" - ", " (transfer)"), ("-", "(transfer)"), (" -> ", " (change)")])
    return AnswerPair(
        right=_write(ref, sep, mark),
        wrong=None if alt is None else _write(alt, sep, mark),
        affects=_RP,
        question=question_of(sample),
        forms=_route_forms(ref, scenario),
        wrong_forms={} if alt is None else _route_forms(alt, scenario),
    )


def trajectory_probes(right: str, wrong: str | None, affects: frozenset[str]) -> list[tuple[Tier, Answer | None]]:
    """Trajectories (Inspect messages) with no separate answer. MapTab's paper gives the model no
    tools and scores the answer alone, so the final answer is what counts: no tools and the right
    answer scores as the reference (level 0), a submit call with it too, and calling tools earns
    nothing when the final answer is wrong."""
    user: dict[str, Any] = {"role": "user", "content": "Plan the route."}
    call = {"id": "c1", "function": "station_neighbors", "arguments": {"station": "X"}, "type": "function"}
    tool_turns: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "[]", "tool_call_id": "c1", "function": "station_neighbors"},
    ]
    submit = {"id": "s1", "function": "submit", "arguments": {"answer": right}, "type": "function"}
    return [
        (
            _tier("trajectory:no_tools_right_answer", 0, "trajectory"),
            [user, {"role": "assistant", "content": right}],
        ),
        (
            _tier("trajectory:submitted_right_answer", 0, "trajectory"),
            [user, *tool_turns, {"role": "assistant", "content": "", "tool_calls": [submit]}],
        ),
        (
            _tier("trajectory:tools_wrong_answer", 1, "trajectory", affects),
            None if wrong is None else [user, *tool_turns, {"role": "assistant", "content": wrong}],
        ),
    ]


def qa_family_answers(sample: Any, rng: random.Random) -> list[tuple[Tier, Answer]]:
    """Surface forms, gaming answers and trajectory probes of one QA sample (no partial family:
    a QA answer is right or wrong)."""
    from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END

    kind = sample.metadata["answer_kind"]
    ref = str(sample.target[0])
    wrong = wrong_value(ref, kind)

    def tag(x: str) -> str:
        return f"{ANSWER_BEGIN}{x}{ANSWER_END}"

    acc = frozenset({"acc"})
    if kind == "binary":
        word, wrong_word = ("Yes", "No") if ref.strip() == "1" else ("No", "Yes")
        forms = {"surface:word": f"{word}.", "surface:bold_word": f"**{word.lower()}**"}
        negated: str | None = None
        stuffed = f"{word} / {wrong_word}"
    else:
        value = float(ref)
        number = str(int(value)) if kind == "integer" else ref
        unit = "stations" if kind == "integer" else "units"
        forms = {"surface:bold": f"**{number}**", "surface:unit": f"{number} {unit}"}
        if kind == "integer" and 0 <= value <= 20:
            forms["surface:words"] = _EN_NUMBERS[int(value)]
        negated = f"not {number}"
        stuffed = " ".join(str(v) for v in sorted({int(value) - 1, int(value), int(value) + 1, int(value) + 2}))
    out: list[tuple[Tier, Answer | None]] = [
        (_tier(name, 0, "surface"), f"Let me check the map.\n{tag(text)}\nThat is my answer.")
        for name, text in forms.items()
    ]
    out += [
        (_tier("gaming:two_tags", 1, "gaming", acc), f"{tag(wrong)}\nor perhaps\n{tag(ref)}"),
        (_tier("gaming:hedge", 1, "gaming", acc), tag(f"{ref} or {wrong}")),
        (_tier("gaming:stuffed", 2, "gaming"), tag(stuffed)),
        (_tier("gaming:negated", 2, "gaming"), None if negated is None else tag(negated)),
    ]
    out += trajectory_probes(tag(ref), tag(wrong), acc)
    forms = {"bold": tag(f"**{ref}**"), "json": tag(json.dumps({"answer": _qa_json(ref, kind)}))}
    wrong_forms = {"bold": tag(f"**{wrong}**"), "json": tag(json.dumps({"answer": _qa_json(wrong, kind)}))}
    pair = AnswerPair(tag(ref), tag(wrong), acc, question_of(sample), forms, wrong_forms)
    out += reading_family_answers(pair, rng)
    return [(tier, text) for tier, text in out if text is not None]


def _qa_json(value: str, kind: str) -> Any:
    """A QA value as a model puts it in JSON: a boolean, an integer or a number."""
    if kind == "binary":
        return value.strip() == "1"
    return int(float(value)) if kind == "integer" else float(value)


# fmt: off
_EN_NUMBERS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
)
# fmt: on
