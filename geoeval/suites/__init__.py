"""Built-in suites. Importing this package registers them (and their metrics, tools and agent
policies) with `geoeval.core.registry`."""

from geoeval.suites.lifeplanner import suite as _lifeplanner_suite  # noqa: F401
from geoeval.suites.mapsatisfy import suite as _mapsatisfy_suite  # noqa: F401
from geoeval.suites.maptab import suite as _maptab_suite  # noqa: F401
