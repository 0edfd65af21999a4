"""A metric plugin: how long the answered route is relative to the closest reference
(1.0 = same number of stations; 0.0 = no route)."""

from __future__ import annotations

from geoeval.api import MetricInput, register_metric


@register_metric("route_length_ratio", suites=["maptab"], description="answered / reference station count")
def route_length_ratio(inp: MetricInput) -> float:
    answered = [s for s in inp.answer.split("-") if s.strip()]
    if not answered or not inp.target:
        return 0.0
    ref = min((len(r.split("-")) for r in inp.target), key=lambda n: abs(n - len(answered)))
    return len(answered) / ref
