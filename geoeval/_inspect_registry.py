"""Entry point for Inspect (`[project.entry-points.inspect_ai]`): registers geoeval's tasks and the
offline agents (`--model geoeval/oracle`).

`inspect eval geoeval/maptab` and `inspect eval geoeval/lifeplanner` are the suites' own typed
tasks; every other registered suite, a plugin's included, is `inspect eval geoeval/<suite>`
(`-T overrides="env.n_maps=1 limit=4"`: Hydra overrides, as for `geoeval meta-eval <suite>`),
composed exactly as `geoeval suite=<suite>` composes it, the plugin's own configs included.
"""

from inspect_ai import Task, task

from geoeval.agents.providers import geoeval_agents  # noqa: F401
from geoeval.core.registry import suite_names
from geoeval.suites.lifeplanner.task import lifeplanner  # noqa: F401
from geoeval.suites.maptab.task import maptab  # noqa: F401

#: suites whose task above has its own typed arguments
TYPED_TASKS = frozenset({"maptab", "lifeplanner"})


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


for _name in suite_names():
    if _name not in TYPED_TASKS:
        _register_suite_task(_name)
