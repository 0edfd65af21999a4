"""Entry point for Inspect (`[project.entry-points.inspect_ai]`): registers geoeval's tasks
(`inspect eval geoeval/maptab`, `inspect eval geoeval/lifeplanner`) and the offline agents (`--model geoeval/oracle`)."""

from geoeval.agents.providers import geoeval_agents  # noqa: F401
from geoeval.suites.lifeplanner.task import lifeplanner  # noqa: F401
from geoeval.suites.maptab.task import maptab  # noqa: F401
