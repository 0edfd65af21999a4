"""MLflow tracking: runs of jobs and sweeps (`runs`), the store and its schema (`store`), run owners, names and values; each sample as a trace (`traces/`)."""
