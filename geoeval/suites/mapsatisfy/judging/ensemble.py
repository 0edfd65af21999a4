"""The judge ensemble of one dialogue: the judges the `judge` group names (`judge=`), each asked
for its `Verdicts` and the verdicts combined.

`rules` is the offline judge (rules_judge.py), which decides from the final answer's content
checked against the tool outputs; any other name is an Inspect model judge (model_judge.py).
Several judges are averaged over those that gave a verdict; an item no judge could decide is
None, which makes only the metrics that depend on it None (as the authors' calculator does), and
a case where no judge decided any item is an error (counted in n_errors).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from geoeval.api import PROTOCOLS
from geoeval.suites.mapsatisfy.judging.model_judge import EVIDENCE_CHARS, model_verdicts
from geoeval.suites.mapsatisfy.judging.rules_judge import rules_verdicts
from geoeval.suites.mapsatisfy.judging.verdicts import Trajectory, Verdicts
from geoeval.suites.mapsatisfy.metrics import FactCheck, row_faithful

if TYPE_CHECKING:
    from geoeval.api import RunSpec
    from geoeval.suites.mapsatisfy.config import MapSatisfySuiteConfig


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean over the judges that gave a verdict (a failed judge is left out and its reply
    kept, as in the shared ensemble); None only when none did."""
    given = [v for v in values if v is not None]
    return sum(given) / len(given) if given else None


def combine(verdicts: Sequence[Verdicts]) -> Verdicts:
    """Several judges: each item is the mean of the verdicts the judges gave (None when none
    did); a row is faithful when the mean of the judges' row verdicts is at least 1/2."""
    if len(verdicts) == 1:
        return verdicts[0]
    first = verdicts[0]
    explicit = [_mean([v.explicit_met[i] for v in verdicts]) for i in range(len(first.explicit_met))]
    implicit = [_mean([v.implicit_satisfied[i] for v in verdicts]) for i in range(len(first.implicit_satisfied))]
    rows: list[list[FactCheck] | None] = []
    for i in range(len(first.fact_rows)):
        per_judge = [None if (row := v.fact_rows[i]) is None else row_faithful(row) for v in verdicts]
        score = _mean([None if p is None else float(p) for p in per_judge])
        rows.append(None if score is None else [FactCheck(True, score >= 0.5)])
    raw: dict[str, Any] = {}
    for v in verdicts:
        raw.update(v.raw)  # "evidence" (the same tool outputs for every model judge) and "rules" are shared keys
    return Verdicts(explicit, implicit, rows, raw)


async def judge_dialogue(
    instance: Any,
    trajectory: Trajectory,
    judges: Sequence[str],
    votes: int,
    temperature: float = 1.0,
    model_factory: Any = None,
    evidence_chars: int = EVIDENCE_CHARS,
    protocol: str = "robust",
    cache: bool | str = False,
) -> Verdicts:
    """Every judge's verdicts on one dialogue under the answer protocol `protocol`, combined."""
    both = await judge_protocols(
        instance,
        trajectory,
        judges,
        votes,
        temperature,
        model_factory,
        evidence_chars,
        protocols=(protocol,),
        cache=cache,
    )
    return both[protocol]


async def judge_protocols(
    instance: Any,
    trajectory: Trajectory,
    judges: Sequence[str],
    votes: int,
    temperature: float = 1.0,
    model_factory: Any = None,
    evidence_chars: int = EVIDENCE_CHARS,
    protocols: Sequence[str] = PROTOCOLS,
    cache: bool | str = False,
) -> dict[str, Verdicts]:
    """Every judge's verdicts on one dialogue, combined, under each answer protocol. Only the
    `rules` judge's reading depends on the protocol (judging/reading.py), so it judges once per
    protocol; a model judge reads the answer itself and is asked once, its verdicts shared by
    every protocol (the same answer and evidence either way)."""
    from inspect_ai.model import GenerateConfig

    from geoeval.api import RETRY_DEFAULTS, build_role_model

    # a model judge built here: cleaned replies, the SDK's own retries off (a test's factory: as it is)
    factory = model_factory or (lambda name, config: build_role_model(name, config))
    results: dict[str, list[Verdicts]] = {p: [] for p in protocols}
    for name in judges:
        if name == "rules":
            for p in protocols:
                results[p].append(rules_verdicts(instance, trajectory, protocol=p))
            continue
        model = factory(name, config=GenerateConfig(temperature=temperature, **RETRY_DEFAULTS))
        try:
            verdicts = await model_verdicts(model, name, instance, trajectory, votes, evidence_chars, cache)
        except Exception as exc:  # noqa: BLE001 - failed after its retries: left out and named, never a 0
            verdicts = failed_verdicts(instance, name, exc)
        for p in protocols:
            results[p].append(verdicts)
    return {p: combine(v) for p, v in results.items()}


def failed_verdicts(instance: Any, name: str, exc: BaseException) -> Verdicts:
    """A judge that gave no verdict at all (its calls failed after their retries): every item
    None, so the other judges decide; when it was the only judge the case is an error
    (`Verdicts.all_failed`). The failure is kept in `raw` under `<name>:error`."""
    from geoeval.api import clean_text

    gt = instance.ground_truth
    return Verdicts(
        [None] * len(gt.explicit_intent),
        [None] * len(gt.implicit_intent),
        [None] * len(instance.factual_answer_rubric),
        {f"{name}:error": clean_text(f"{type(exc).__name__}: {exc}", max_chars=500)},
    )


def judge_settings(spec: RunSpec[MapSatisfySuiteConfig]) -> dict[str, Any]:
    """The judges' settings of a run, as `judge_dialogue` takes them: the judge group's
    models, the suite's votes, temperature (the group's when the suite's is null) and evidence budget."""
    temperature = spec.suite.judge_temperature
    return {
        "judges": list(spec.judge.models),
        "votes": spec.suite.judge_votes,
        "temperature": spec.judge.temperature if temperature is None else temperature,
        "evidence_chars": spec.suite.judge_evidence_chars,
        "cache": spec.judge.cache,  # Inspect's cache of judge calls: a rerun or rescore asks the same question
    }
