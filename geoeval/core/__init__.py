"""geoeval's core: config schemas, the registry, runners, the score-record schema, aggregation,
the results warehouse, tracking and reports. The core never imports a suite."""
