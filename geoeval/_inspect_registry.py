"""Entry point for Inspect (`[project.entry-points.inspect_ai]`): registers geoeval's tasks
(`inspect eval geoeval/maptab`) and the offline agents (`--model geoeval/oracle`)."""

from geoeval.agents.providers import geoeval_agents  # noqa: F401
from geoeval.suites.maptab.task import maptab  # noqa: F401
