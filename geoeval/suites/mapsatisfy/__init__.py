"""MapSatisfyBench (seed 002): satisfaction-aware map-service agents.

The instance schema and loaders (`schema`), the replay sandbox (`sandbox`), the per-case metrics
(`metrics`), the simulated user (`user_sim`), the dialogue solver (`solver`), the judges
(`judges`), the offline agents (`agents`) and the suite registration (`suite`, imported by
`geoeval.suites`). See README.md.
"""
