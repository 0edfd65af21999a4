"""Each evaluated sample as an MLflow trace: which samples (`selection`), their text and values (`content`), the trace built in memory (`build`) and logged (`writer`)."""
