"""The MapTab environment (`environment`): synthetic, real-network and GTFS maps, stored in DuckDB, with the authors' tables (Edge_tab, Vertex_tab, Mix_tab)."""
