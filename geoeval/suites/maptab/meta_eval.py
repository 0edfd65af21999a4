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

import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from geoeval.api import GeoevalError, ScoredAnswer, Tier
from geoeval.suites.maptab import answer_families as maptab_families
from geoeval.suites.maptab.answer_families import Answer
from geoeval.suites.maptab.graph import MetroMap
from geoeval.suites.maptab.metrics import split_route
from geoeval.suites.maptab.wrong_answers import (
    invented_answer,
    invented_name,
    longer_route,
    missing_station,
    wrong_station,
    wrong_transfer,
    wrong_value,
)

if TYPE_CHECKING:
    from geoeval.api import RunSpec
    from geoeval.suites.maptab.config import MapTabSuiteConfig

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


# --------------------------------------------------------------------------------------------
# Entry point


def meta_eval_answers(spec: RunSpec[MapTabSuiteConfig], env: Any, samples: Sequence[Any]) -> list[ScoredAnswer]:
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
            answers: list[tuple[Tier, Answer]] = [
                *qa_answers(sample, rng),
                *maptab_families.qa_family_answers(sample, rng),
            ]
        else:
            if not maps:
                maps = {m.name: m for m in load_maps(env.db_path)}
            m = maps[meta["map"]] if env.source == "authors" else _localized(maps[meta["map"]], spec)
            tiers = rp_answers(sample, m, rng)
            built = dict(tiers)
            alt = built.get(WRONG_STATION) or built.get(LONGER_ROUTE) or built.get(MISSING_STATION)
            families = maptab_families.rp_family_answers(
                sample, m, alt, list(built.values()), random.Random(f"{spec.seed}/{sample.id}/families")
            )
            answers = [*tiers, *families]
        for tier, text in answers:
            out.append(ScoredAnswer(str(sample.id), tier, _shown(text), score(spec, sample, text, names)))
    return out


def _localized(m: MetroMap, spec: RunSpec[MapTabSuiteConfig]) -> MetroMap:
    """The map in the run's label language (the references name its stations)."""
    from geoeval.suites.maptab.generator.language import localize_map

    return localize_map(m, spec.suite.language)


def _shown(answer: Answer) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def score(spec: RunSpec, sample: Any, answer: Answer, names: list[str]) -> dict[str, float]:
    """`answer` scored as `geoeval score maptab --answers` and the Inspect scorer score it
    (`scorers.score_answers`), under the run's protocol; a metric that raised is an error here,
    not a low score."""
    from geoeval.api import AnswerToScore
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
