"""Meta-evaluation answers of MapTab (`geoeval.core.analysis.meta_eval`): for every sample, answers of known
quality, scored through the public scoring entry point's path (`scorers.score_answers`: the
extractor and the registered metrics the Inspect scorer applies, under the run's
`scoring.protocol`).

Besides the tiers below, the answer families of issue 22 (`Tier.family`; README "Answer
protocol" and "Meta-evaluation"): `surface` (the reference written otherwise: must score as it),
`gaming` (hedges, corrections away, negations, stuffing: no more than the wrong candidate),
`partial` (partly right routes) and `trajectory` (Inspect messages: the final answer counts).

Route planning (RP), per sample:

* level 0 `reference`: the first reference route, as the scorer expects it ("A-B(transfer)-C").
* level 1, the reference with one defect (`Tier.affects` = the metrics it must lower; the others
  may tie):
  - `defect:wrong_station`: one intermediate station replaced by a real station of the map that
    lies on no optimal route: lowers EMA, PMA (the prefix ends there) and DS.
  - `defect:missing_station`: one intermediate station left out: EMA, PMA, DS.
  - `defect:wrong_transfer` (Metromap only; Travelmap routes carry no marks): one intermediate
    station's transfer mark toggled (added where no reference has one, or removed): EMA and DS,
    which apply the paper's transfer rule. Not PMA: the authors' prefix count matches names by
    similarity only, so "X(transfer)" may still count as "X".
  - `defect:longer_route`: a valid route of the map with more stations than the reference
    (a simple path from the origin to the destination, transfer marks as `routing.transfers.annotate`
    places them) that is not optimal: EMA, PMA (it leaves the reference path) and DS. Valid
    routes are what EMA must tell from optimal ones.
* level 2, worthless: `empty` (""), `refusal` (prose with a dash, which the extractor must not
  read as a route) and `invented` (a fluent answer whose route names stations the map does not
  have).

A defect must be a defect under the paper's own name identity (C.1: names within difflib
similarity 0.5 are the same station), else it is not built for that sample: the replacement or
the next station of a dropped one, and the longer route where it leaves the reference, must be
dissimilar (< 0.5) to every reference's station at that position; the invented names are
dissimilar to every station of the map. Choices among the candidates are seeded by the run seed
and the sample id.

QA (`suite.task_family=qa`): `reference` (the reference answer between the tags),
`defect:wrong_value` (a wrong value of the right kind: a binary answer flipped, an integer + 1, a
number + 1; lowers Acc), and the three worthless answers (the invented one names a station that
does not exist between the tags).

Metrics scored: those of `spec.metrics.metrics` that judge an answer (`ANSWER_METRICS`); the token
counts describe the prompt, not the answer, and are left out.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import networkx as nx

from geoeval.core.errors import GeoevalError
from geoeval.core.records import ScoredAnswer, Tier
from geoeval.suites.maptab.generator.difficulty import to_graph
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.metrics import MATCH_THRESHOLD, similarity, split_route
from geoeval.suites.maptab.routing import transfers as routing_transfers

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

RP_METRICS = frozenset({"ema", "pma", "ds"})
ANSWER_METRICS = RP_METRICS | {"acc"}
#: Every MapTab answer metric is deterministic: each must order every known pair (target 1.0).
TARGETS: dict[str, float] = {m: 1.0 for m in sorted(ANSWER_METRICS)}

REFERENCE = Tier("reference", 0)
WRONG_STATION = Tier("defect:wrong_station", 1, frozenset({"ema", "pma", "ds"}))
MISSING_STATION = Tier("defect:missing_station", 1, frozenset({"ema", "pma", "ds"}))
WRONG_TRANSFER = Tier("defect:wrong_transfer", 1, frozenset({"ema", "ds"}))
LONGER_ROUTE = Tier("defect:longer_route", 1, frozenset({"ema", "pma", "ds"}))
WRONG_VALUE = Tier("defect:wrong_value", 1, frozenset({"acc"}))
EMPTY = Tier("empty", 2)
REFUSAL = Tier("refusal", 2)
INVENTED = Tier("invented", 2)

REFUSAL_TEXT = (
    "I'm sorry - I cannot work out a reliable route from this map and these tables, so I would rather not guess."
)
_SYLLABLES = (
    "zor",
    "vath",
    "quen",
    "til",
    "lion",
    "bla",
    "ven",
    "dorp",
    "mir",
    "kesh",
    "ulm",
    "yth",
    "prax",
    "ond",
    "wyr",
    "gha",
    "zel",
    "trup",
)
_SUFFIXES = ("Plaza", "Heights", "Junction", "Market", "Gardens", "Crossing")
MAX_LONGER_PATHS = 200  # simple paths looked at (in length order) for a longer valid route


# --------------------------------------------------------------------------------------------
# Entry point


def meta_eval_answers(spec: RunSpec, env: Any, samples: Sequence[Any]) -> list[ScoredAnswer]:
    """The constructed answers of every sample, scored (module docstring) under the run's
    `scoring.protocol` through the public entry point's path (`scorers.score_answers`)."""
    from geoeval.suites.maptab.env.environment import load_maps

    names = [n for n in spec.metrics.metrics if n in ANSWER_METRICS]
    if not names:
        raise GeoevalError(
            f"meta-eval: none of metrics.metrics {list(spec.metrics.metrics)} judges an answer "
            f"(MapTab's: {sorted(ANSWER_METRICS)})"
        )
    maps: dict[str, MetroMap] = {}
    out: list[ScoredAnswer] = []
    for sample in samples:
        meta = sample.metadata or {}
        rng = random.Random(f"{spec.seed}/{sample.id}")
        if meta.get("task_family") == "qa":
            answers: list[tuple[Tier, Answer]] = [*qa_answers(sample, rng), *qa_family_answers(sample, rng)]
        else:
            if not maps:
                maps = {m.name: m for m in load_maps(env.db_path)}
            m = maps[meta["map"]] if env.source == "authors" else _localized(maps[meta["map"]], spec)
            tiers = rp_answers(sample, m, rng)
            families = rp_family_answers(sample, m, dict(tiers), random.Random(f"{spec.seed}/{sample.id}/families"))
            answers = [*tiers, *families]
        for tier, text in answers:
            out.append(ScoredAnswer(str(sample.id), tier, _shown(text), score(spec, sample, text, names)))
    return out


def _localized(m: MetroMap, spec: RunSpec) -> MetroMap:
    """The map in the run's label language (the references name its stations)."""
    from geoeval.suites.maptab.generator.language import localize_map

    return localize_map(m, spec.suite.language)


#: an answer is its text, or a trajectory (Inspect chat messages as dicts) with no text
Answer = str | list[dict[str, Any]]


def _shown(answer: Answer) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def score(spec: RunSpec, sample: Any, answer: Answer, names: list[str]) -> dict[str, float]:
    """`answer` scored as `geoeval score maptab --answers` and the Inspect scorer score it
    (`scorers.score_answers`), under the run's protocol; a metric that raised is an error here,
    not a low score."""
    from geoeval.core.records import AnswerToScore
    from geoeval.suites.maptab.scorers import score_answers

    item = (
        AnswerToScore(str(sample.id), answer)
        if isinstance(answer, str)
        else AnswerToScore(str(sample.id), "", messages=answer)
    )
    try:
        (scored,) = score_answers(spec, {str(sample.id): sample}, [item], metric_names=names)
    except GeoevalError as exc:
        raise GeoevalError(f"meta-eval {exc}") from None
    return scored.scores


# --------------------------------------------------------------------------------------------
# RP answers


def rp_answers(sample: Any, m: MetroMap, rng: random.Random) -> list[tuple[Tier, str]]:
    """(tier, answer text) of one RP sample; a defect that cannot be built on it is left out."""
    meta = sample.metadata
    refs = [str(r) for r in sample.target]
    ref = refs[0]
    built: list[tuple[Tier, str | None]] = [
        (REFERENCE, ref),
        (WRONG_STATION, wrong_station(ref, refs, m, rng)),
        (MISSING_STATION, missing_station(ref, refs, rng)),
        (LONGER_ROUTE, longer_route(ref, refs, m, (meta.get("weights") or [0.0])[0])),
        (EMPTY, ""),
        (REFUSAL, REFUSAL_TEXT),
        (INVENTED, invented_answer(len(split_route(ref)), m, rng)),
    ]
    if meta.get("scenario", "metromap") == "metromap":
        built.insert(3, (WRONG_TRANSFER, wrong_transfer(ref, refs, rng)))
    return [(tier, text) for tier, text in built if text is not None]


def _name(piece: str) -> str:
    return piece.replace(routing_transfers.TRANSFER_MARK, "").strip()


def _dissimilar(name: str, refs: Iterable[str], position: int) -> bool:
    """Whether `name` differs (similarity < 0.5, the paper's identity) from every reference's
    station at `position` (references shorter than that cannot match it there)."""
    for r in refs:
        pieces = split_route(r)
        if position < len(pieces) and similarity(name, pieces[position]) >= MATCH_THRESHOLD:
            return False
    return True


def wrong_station(ref: str, refs: list[str], m: MetroMap, rng: random.Random) -> str | None:
    """The reference with one intermediate station replaced by a station on no optimal route."""
    pieces = split_route(ref)
    on_routes = {_name(p) for r in refs for p in split_route(r)}
    others = sorted(set(m.stations) - on_routes)
    options = [(k, o) for k in range(1, len(pieces) - 1) for o in others if _dissimilar(o, refs, k)]
    if not options:
        return None
    k, other = rng.choice(options)
    return "-".join(pieces[:k] + [other] + pieces[k + 1 :])


def missing_station(ref: str, refs: list[str], rng: random.Random) -> str | None:
    """The reference without one intermediate station (the next one must not pass for it)."""
    pieces = split_route(ref)
    options = [k for k in range(1, len(pieces) - 1) if _dissimilar(pieces[k + 1], refs, k)]
    if not options:
        return None
    k = rng.choice(options)
    return "-".join(pieces[:k] + pieces[k + 1 :])


def wrong_transfer(ref: str, refs: list[str], rng: random.Random) -> str | None:
    """The reference with one intermediate station's transfer mark toggled, at a position where
    every reference with the same stations agrees on the mark (so no reference has the toggle)."""
    pieces = split_route(ref)
    path = [_name(p) for p in pieces]
    same = [split_route(r) for r in refs if [_name(p) for p in split_route(r)] == path]
    options = [
        k for k in range(1, len(pieces) - 1) if len({routing_transfers.TRANSFER_MARK in r[k] for r in same}) == 1
    ]
    if not options:
        return None
    k = rng.choice(options)
    toggled = path[k] if routing_transfers.TRANSFER_MARK in pieces[k] else f"{path[k]}{routing_transfers.TRANSFER_MARK}"
    return "-".join(pieces[:k] + [toggled] + pieces[k + 1 :])


def longer_route(ref: str, refs: list[str], m: MetroMap, time_weight: float = 0.0) -> str | None:
    """The first (in length, then name order) simple path of the map with more stations than the
    reference, none of whose annotations is a reference, that leaves every reference path at a
    station dissimilar to the reference's there; annotated as `routing.transfers.annotate` marks it."""
    path = [_name(p) for p in split_route(ref)]
    ref_paths = [[_name(p) for p in split_route(r)] for r in refs]
    g = to_graph(m)
    try:
        candidates = nx.shortest_simple_paths(g, path[0], path[-1])
        for i, cand in enumerate(candidates):
            if i >= MAX_LONGER_PATHS:
                break
            if len(cand) <= len(path) or cand in ref_paths or not _leaves_refs(cand, refs, ref_paths):
                continue
            annotated = routing_transfers.annotate(m, cand, time_weight)
            if annotated and not set(annotated) & set(refs):
                return annotated[0]
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return None
    return None


def _leaves_refs(cand: list[str], refs: list[str], ref_paths: list[list[str]]) -> bool:
    for r, rp in zip(refs, ref_paths):
        k = next((i for i, (a, b) in enumerate(zip(cand, rp)) if a != b), min(len(cand), len(rp)))
        if k < len(cand) and not _dissimilar(cand[k], [r], k):
            return False
    return True


def invented_name(rng: random.Random) -> str:
    word = "".join(rng.choice(_SYLLABLES) for _ in range(3))
    return f"{word.capitalize()} {rng.choice(_SUFFIXES)}"


def invented_stations(n: int, m: MetroMap, rng: random.Random) -> list[str]:
    """`n` fluent station names, each dissimilar (< 0.5) to every station of the map."""
    names: list[str] = []
    for _ in range(100 * n):
        if len(names) == n:
            break
        name = invented_name(rng)
        if name not in names and all(similarity(name, s) < MATCH_THRESHOLD for s in m.stations):
            names.append(name)
    if len(names) < n:
        raise GeoevalError(f"meta-eval: could not invent {n} station names unlike those of map {m.name}")
    return names


def invented_answer(n: int, m: MetroMap, rng: random.Random) -> str:
    names = invented_stations(max(n, 2), m, rng)
    return (
        "I studied the map and the tables carefully. The best route is:\n"
        + "-".join(names)
        + "\nIt keeps to one line all the way, so no transfer is needed."
    )


# --------------------------------------------------------------------------------------------
# QA answers


def qa_answers(sample: Any, rng: random.Random) -> list[tuple[Tier, str]]:
    from geoeval.suites.maptab.qa.questions import ANSWER_BEGIN, ANSWER_END

    meta = sample.metadata
    tag = f"{ANSWER_BEGIN}{{}}{ANSWER_END}"
    invented = invented_name(rng)
    return [
        (REFERENCE, tag.format(sample.target[0])),
        (WRONG_VALUE, tag.format(wrong_value(str(sample.target[0]), meta["answer_kind"]))),
        (EMPTY, ""),
        (REFUSAL, REFUSAL_TEXT),
        (INVENTED, f"Looking at the map, the answer is the station {invented}.\n" + tag.format(invented)),
    ]


def wrong_value(reference: str, kind: str) -> str:
    """A wrong answer of the reference's kind: binary flipped, integer + 1, number + 1 (far beyond
    the 0.005 tolerance)."""
    if kind == "binary":
        return "0" if reference.strip() == "1" else "1"
    value = float(reference)
    if kind == "integer":
        return str(int(value) + 1)
    wrong = value + 1.0
    if math.isclose(wrong, value):
        raise GeoevalError(f"meta-eval: no wrong value found for {reference!r}")
    return f"{wrong:.2f}"


# --------------------------------------------------------------------------------------------
# Answer families: what real models write (README "Answer protocol"; issue 22)

_RP = frozenset({"ema", "pma", "ds"})


def _tier(name: str, level: int, family: str, affects: frozenset[str] | None = None) -> Tier:
    return Tier(name, level, affects, family)


def _full_width(text: str) -> str:
    """ASCII letters, digits and marks as their full-width forms (NFKC maps them back)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def _stops(route: str) -> list[tuple[str, bool]]:
    return [(_name(p), routing_transfers.TRANSFER_MARK in p) for p in split_route(route)]


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
        name = _name(pieces[k])
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
        at_k = {_name(split_route(r)[k]) for r in refs if k < len(split_route(r))}
        options += [
            (k, s) for s in sorted(m.stations) if s not in at_k and similarity(s, _name(pieces[k])) >= MATCH_THRESHOLD
        ]
    if not options:
        return None
    k, other = rng.choice(options)
    mark = routing_transfers.TRANSFER_MARK if routing_transfers.TRANSFER_MARK in pieces[k] else ""
    return "-".join(pieces[:k] + [other + mark] + pieces[k + 1 :])


def rp_family_answers(
    sample: Any, m: MetroMap, built: dict[Tier, str], rng: random.Random
) -> list[tuple[Tier, Answer]]:
    """Surface forms of the reference (level 0: must score as it), gaming answers, partly right
    answers and trajectory probes of one RP sample. `alt` is a real, wrong route of the map (the
    wrong-station, longer-route or missing-station defect)."""
    refs = [str(r) for r in sample.target]
    ref = refs[0]
    alt = built.get(WRONG_STATION) or built.get(LONGER_ROUTE) or built.get(MISSING_STATION)
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
            + "\n".join(f"- {r}" for r in dict.fromkeys([*built.values(), *refs]) if "-" in r and "\n" not in r),
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
    return [(tier, text) for tier, text in out if text is not None]


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
    return [(tier, text) for tier, text in out if text is not None]


# fmt: off
_EN_NUMBERS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
)
# fmt: on
