"""MapTab RP metrics registered with the core (appendix C.1, as the authors' evaluator computes
them): `ema`, `pma` (means) and `ds` (a total: summed, not averaged)."""

from __future__ import annotations

from geoeval.core.registry import register_metric
from geoeval.core.scoring import MetricInput
from geoeval.suites.maptab import metrics as m


def extract_answer(raw: str) -> tuple[str, str]:
    """The route line of a model's answer; a problem note when there is none."""
    route = m.extract_route(raw)
    if not route:
        return "", "no route in the answer (expected 'A-B(transfer)-C')"
    return route, ""


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
