"""The results warehouse, one DuckDB file: the store (`store.Warehouse`), its schema and migrations, rows both ways, and the lock beside the file."""
