"""MapSatisfyBench (seed 002): satisfaction-aware map-service agents.

Foundation modules only, for now: the instance schema and loaders (`schema`), the deterministic
replay sandbox of the map-service tools (`sandbox`) and the per-case metrics (`metrics`). The
suite is not registered with the core yet; see README.md for what is left.
"""
