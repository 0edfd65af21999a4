"""Built-in suites. Each registers itself (with its metrics, tools and agent policies) with
`geoeval.core.registry` when its `suite` module is imported, which `load_plugins` does through the
suite's own `geoeval.plugins` entry point in pyproject.toml, exactly as for a plugin suite."""
