"""Route planning (RP): queries and their references (`queries`), the prompts, the paper's per-sample analyses and the RP report."""
