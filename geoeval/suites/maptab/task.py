"""The MapTab Inspect task: `inspect eval geoeval/maptab --model geoeval/oracle` works without
geoeval's CLI, with the shipped config's defaults (it composes `conf/` itself)."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import generate

from geoeval.api import geoeval_scorer


def make_task(
    suite_cfg: Any, env: Any, samples: list[Sample], metric_names: list[str], protocol: str = "robust"
) -> Task:
    """The MapTab task; `protocol` is the run's `scoring.protocol` (README "Answer protocol")."""
    from geoeval.api import get_tool
    from geoeval.suites.maptab.scorers import extract_answer, extract_qa_answer

    tools = [get_tool(name).factory(env) for name in suite_cfg.tools]
    if suite_cfg.answer_channel == "tool":  # the typed submit channel (submit.py)
        from geoeval.api import submit_solver
        from geoeval.suites.maptab.submit import submit_route_tool, submit_value_tool

        submit = submit_value_tool() if suite_cfg.task_family == "qa" else submit_route_tool()
        solver: Any = submit_solver(submit, tools)
    elif suite_cfg.solver == "react" or tools:
        from inspect_ai.agent import react

        solver = react(tools=tools, attempts=1)
    else:
        solver = generate()
    return Task(
        name="maptab",
        dataset=MemoryDataset(samples, name="maptab"),
        solver=solver,
        scorer=geoeval_scorer(
            list(metric_names),
            extract_qa_answer if suite_cfg.task_family == "qa" else extract_answer,
            protocol=protocol,
        ),
        message_limit=suite_cfg.message_limit,
        metadata={"suite": "maptab"},
    )


@task
def maptab(
    resolution: float | None = None,
    setting: str | None = None,
    categories: str | list[str] | None = None,
    n_per_category: int | None = None,
    n_maps: int | None = None,
    seed: int | None = None,
    table_format: str | None = None,
    work_dir: str | None = None,
) -> Task:
    """MapTab route planning on seeded synthetic Metromaps (appendix B.2 / C.1). A parameter left
    out takes the shipped config's value: the task composes `conf/` exactly as `python -m
    geoeval suite=maptab` does, so the defaults live in one place (the YAML)."""
    from hydra import compose, initialize_config_module

    from geoeval.api import get_suite, validate_config

    given = {
        "suite.resolution": resolution,
        "suite.setting": setting,
        "suite.n_per_category": n_per_category,
        "env.n_maps": n_maps,
        "seed": seed,
        "suite.table_format": table_format,
        "work_dir": work_dir,
    }
    overrides = [f"{key}={value}" for key, value in given.items() if value is not None]
    if categories is not None:
        cats = categories.split(",") if isinstance(categories, str) else list(categories)
        overrides.append(f"suite.categories=[{','.join(cats)}]")
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "env=maptab_synthetic",
                "suite=maptab",
                "metrics=maptab_rp",
                "model=oracle",
                "runner=local",
                "tracking=none",
                *overrides,
            ],
        )
    spec = validate_config(cfg)
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    return make_task(spec.suite, env, suite.build_samples(spec, env), spec.metrics.metrics, spec.scoring.protocol)
