"""Entry point for Inspect (`[project.entry-points.inspect_ai]`): registers geoeval's tasks and the
offline agents (`--model geoeval/oracle`).

`inspect eval geoeval/maptab` and `inspect eval geoeval/lifeplanner` are the suites' own typed
tasks; every other registered suite, a plugin's included, is `inspect eval geoeval/<suite>`
(`-T overrides="env.n_maps=1 limit=4"`: Hydra overrides, as for `geoeval meta-eval <suite>`),
composed exactly as `geoeval suite=<suite> <overrides>` composes it, the plugin's own configs included.

In a process that evaluates geoeval's tasks as objects (a run's driver or Ray worker,
`inspect_bridge.evaluating_task_objects`), Inspect never looks them up by name: only the suites
loaded so far are named, and no other suite or plugin is imported for it.
"""

from importlib import import_module

from inspect_ai import Task, task

from geoeval.agents.providers import geoeval_agents  # noqa: F401
from geoeval.core.registry import suite_names
from geoeval.core.run.inspect_bridge import evaluating_task_objects

#: suites whose own module holds a task with typed arguments
TYPED_TASKS = {"maptab": "geoeval.suites.maptab.task", "lifeplanner": "geoeval.suites.lifeplanner.task"}


def suite_task(suite: str, overrides: str | list[str] = "") -> Task:
    """The Inspect task of `suite` for `suite=<suite> <overrides>` (a string of space-separated
    Hydra overrides, or a list), its environment built and its samples made as a run does."""
    from geoeval.core.config.compose import compose_suite_spec
    from geoeval.core.registry import get_suite

    given = overrides.split() if isinstance(overrides, str) else [str(o) for o in overrides]
    spec = compose_suite_spec(suite, given)
    found = get_suite(spec.suite.name)
    env = found.build_env(spec)
    samples = found.build_samples(spec, env)
    return found.build_task(spec, env, samples[: spec.limit] if spec.limit else samples)


def _register_suite_task(name: str) -> None:
    def factory(overrides: str | list[str] = "") -> Task:
        return suite_task(name, overrides)

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"The `{name}` suite (geoeval), composed as `geoeval suite={name} <overrides>`."
    task(name=name)(factory)


for _name in suite_names(loaded_only=evaluating_task_objects()):
    if _name in TYPED_TASKS:
        import_module(TYPED_TASKS[_name])  # its `@task` registers it
    else:
        _register_suite_task(_name)
