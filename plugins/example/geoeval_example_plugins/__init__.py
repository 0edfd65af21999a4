"""Example geoeval plugins, written only against geoeval's public plugin interface:

- a tool: `station_neighbors` (MapTab) — `tools.py`
- a metric: `route_length_ratio` (MapTab) — `metrics.py`
- a whole suite: `station_lines` — `suite.py`

Installed with `pip install -e plugins/example`, they are found through the `geoeval.plugins`
entry point; without installing, `GEOEVAL_PLUGINS=geoeval_example_plugins` (with the folder on
PYTHONPATH) loads them by dotted path.
"""

from geoeval_example_plugins import metrics, suite, tools  # noqa: F401
