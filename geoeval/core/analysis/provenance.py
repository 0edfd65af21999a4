"""What produced a run's numbers, said where the numbers are shown (summary tables, the console,
MLflow tags and the run description), so that nobody takes an offline stand-in's score for a
paper's number.

geoeval's offline agents (`geoeval/<name>`: the oracle and the baselines, which script their
answers or tool calls) and Inspect's `mockllm` are not language models; the `rules` judge is a
deterministic rule-based stand-in for the papers' LLM judges. A run that uses either checks the
harness and orders agents, but its scores are not comparable with the numbers in the papers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.registry import SuiteSpec

#: Inspect providers whose "models" are scripted offline agents, not language models
OFFLINE_PROVIDERS = ("geoeval", "mockllm")
#: the judge entry that names the suite's rule-based offline judge
RULES_JUDGE = "rules"


def offline_model(spec: RunSpec) -> bool:
    return spec.model.name.split("/", 1)[0] in OFFLINE_PROVIDERS


def offline_judges(spec: RunSpec, suite: SuiteSpec) -> list[str]:
    """The offline judges this run's scores depend on (none where the suite uses no judge)."""
    if not suite.uses_judges:
        return []
    return [m for m in spec.judge.models if m == RULES_JUDGE or m.split("/", 1)[0] in OFFLINE_PROVIDERS]


def provenance(spec: RunSpec, suite: SuiteSpec) -> dict[str, Any]:
    """{"offline_model": bool, "offline_judges": [...], "comparable_with_papers": bool, "note": str}."""
    model = offline_model(spec)
    judges = offline_judges(spec, suite)
    parts = []
    if model:
        parts.append(f"the model {spec.model.name} is an offline scripted agent, not a language model")
    if judges:
        parts.append(
            f"the judge{'s' if len(judges) > 1 else ''} {', '.join(judges)} "
            f"{'are' if len(judges) > 1 else 'is a'} rule-based offline stand-in"
            f"{'s' if len(judges) > 1 else ''} for the paper's LLM judges"
        )
    note = (
        (
            "Offline stand-ins: " + "; ".join(parts) + ". These scores check the harness and order agents; "
            "they are not comparable with the paper's numbers."
        )
        if parts
        else ""
    )
    return {"offline_model": model, "offline_judges": judges, "comparable_with_papers": not parts, "note": note}


def mlflow_tags(spec: RunSpec, suite: SuiteSpec) -> dict[str, str]:
    """The run's provenance as MLflow tags; the note becomes the run's description."""
    p = provenance(spec, suite)
    tags = {
        "geoeval.offline_model": str(p["offline_model"]).lower(),
        "geoeval.offline_judges": ",".join(p["offline_judges"]) or "none",
        "geoeval.comparable_with_papers": str(p["comparable_with_papers"]).lower(),
    }
    if p["note"]:
        tags["mlflow.note.content"] = p["note"]
    return tags
