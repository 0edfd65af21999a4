"""Caches of deterministic work: the on-disk cache shared by jobs, workers and reruns (`disk`), and in-process memos (`memo`)."""
