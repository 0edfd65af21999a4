"""The MapTab Inspect task: `inspect eval geoeval/maptab --model geoeval/oracle` works without
geoeval's CLI, with the same defaults as `conf/suite/maptab.yaml`."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import generate

from geoeval.core.scoring import geoeval_scorer


def make_task(suite_cfg: Any, env: Any, samples: list[Sample], metric_names: list[str]) -> Task:
    from geoeval.core.registry import get_tool
    from geoeval.suites.maptab.scorers import extract_answer, extract_qa_answer

    tools = [get_tool(name).factory(env) for name in suite_cfg.tools]
    if suite_cfg.solver == "react" or tools:
        from inspect_ai.agent import react

        solver: Any = react(tools=tools, attempts=1)
    else:
        solver = generate()
    return Task(
        name="maptab",
        dataset=MemoryDataset(samples, name="maptab"),
        solver=solver,
        scorer=geoeval_scorer(list(metric_names), extract_qa_answer if suite_cfg.task_family == "qa" else extract_answer),
        message_limit=suite_cfg.message_limit,
        metadata={"suite": "maptab"},
    )


@task
def maptab(
    resolution: float = 1.0,
    setting: str = "all",
    categories: str | list[str] = "map_only,edge_only,map_edge,T",
    n_per_category: int = 4,
    n_maps: int = 3,
    seed: int = 0,
    table_format: str = "csv",
    work_dir: str = "results/work",
) -> Task:
    """MapTab route planning on seeded synthetic Metromaps (appendix B.2 / C.1)."""
    from geoeval.core.config import validate_config
    from geoeval.core.registry import get_suite

    cats = categories.split(",") if isinstance(categories, str) else list(categories)
    spec = validate_config({
        "seed": seed, "work_dir": work_dir,
        "env": {"name": "maptab_synthetic", "n_maps": n_maps},
        "suite": {"name": "maptab", "resolution": resolution, "setting": setting, "categories": cats,
                  "n_per_category": n_per_category, "table_format": table_format},
        "model": {"name": "geoeval/oracle"},
        "judge": {"models": ["rules"]},
        "metrics": {"name": "maptab_rp", "metrics": ["ema", "pma", "ds"], "sum_metrics": ["ds"]},
        "runner": {"name": "local"},
        "tracking": {"enabled": False},
    })
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    return make_task(spec.suite, env, suite.build_samples(spec, env), spec.metrics.metrics)
