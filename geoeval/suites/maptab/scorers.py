"""MapTab RP metrics registered with the core (appendix C.1, as the authors' evaluator computes
them): `ema`, `pma` (means) and `ds` (a total: summed, not averaged)."""

from __future__ import annotations

from typing import Any

from geoeval.core.registry import register_metric
from geoeval.core.scoring import MetricInput, compute_metrics
from geoeval.suites.maptab import metrics as m


def extract_answer(raw: str) -> tuple[str, str]:
    """The route line of a model's answer; a problem note when there is none."""
    route = m.extract_route(raw)
    if not route:
        return "", "no route in the answer (expected 'A-B(transfer)-C')"
    return route, ""


def score_completion(
    raw: str, target: list[str], metadata: dict[str, Any], metric_names: list[str]
) -> tuple[dict[str, float], list[str]]:
    """A completion scored as the Inspect scorer (`core.scoring.geoeval_scorer`) scores it: the
    family's extractor, then `compute_metrics` over the registered metrics. Returns the values and
    the failures (a metric that raised). The meta-evaluation scores its answers through this."""
    extract = extract_qa_answer if metadata.get("task_family") == "qa" else extract_answer
    answer, _problem = extract(raw or "")
    return compute_metrics(
        list(metric_names), MetricInput(answer=answer, raw=raw or "", target=list(target), metadata=dict(metadata))
    )


@register_metric("ema", suites=["maptab"], description="Exact Match Accuracy (appendix C.1)")
def ema_metric(inp: MetricInput) -> float:
    return m.ema(inp.answer, inp.target, inp.metadata.get("scenario", "metromap"))


@register_metric("pma", suites=["maptab"], description="Partial Match Accuracy (appendix C.1)")
def pma_metric(inp: MetricInput) -> float:
    return m.pma(inp.answer, inp.target, inp.metadata.get("scenario", "metromap"))


@register_metric("ds", suites=["maptab"], description="Difficulty-aware Score (appendix C.1); summed over samples")
def ds_metric(inp: MetricInput) -> float:
    e = m.ema(inp.answer, inp.target, inp.metadata.get("scenario", "metromap"))
    return m.ds(e, inp.metadata.get("map_difficulty", "Easy"), inp.metadata.get("query_difficulty", "Easy"))


def extract_qa_answer(raw: str) -> tuple[str, str]:
    """The text between `<answer_begin>` and `<answer_end>` (appendix B.3); a problem note when
    the tags are missing (the sample then scores 0 with that reason)."""
    from geoeval.suites.maptab.qa.questions import extract_answer as extract

    return extract(raw)


@register_metric("acc", suites=["maptab"], description="QA accuracy (appendix B.3): 1 when the tagged answer is right")
def acc_metric(inp: MetricInput) -> float:
    from geoeval.suites.maptab.qa.questions import is_correct

    kind = inp.metadata.get("answer_kind")
    if kind is None:
        raise ValueError("acc scores QA samples (suite.task_family=qa); this sample has no QA answer")
    try:
        return float(is_correct(inp.answer, inp.target[0], kind, inp.metadata.get("answer_value")))
    except ValueError:
        # a malformed answer (a name where 1/0 or a number is asked) is wrong, not a harness
        # failure: it scores 0 like a missing tag (the README's rule)
        return 0.0


@register_metric(
    "prompt_tokens",
    suites=["maptab"],
    description="estimated prompt tokens, text only (tokens.estimate_tokens; appendix G.3)",
)
def prompt_tokens_metric(inp: MetricInput) -> float:
    return float(inp.metadata["prompt_tokens"])


@register_metric(
    "table_tokens",
    suites=["maptab"],
    description="estimated tokens of the tables in the prompt (tokens.estimate_tokens; Table 9)",
)
def table_tokens_metric(inp: MetricInput) -> float:
    return float(inp.metadata["table_tokens"])
