"""Numbers from stored results: aggregation by any dimension, statistics (intervals, paired tests), reports (tables like the papers', plots), provenance and meta-evaluation."""
