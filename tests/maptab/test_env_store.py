"""A MapTab environment's maps go into its DuckDB file and come back exactly: every station,
edge and line with its attributes, in order, and each map's difficulty level (both scenarios)."""

from __future__ import annotations

import pytest

from geoeval.suites.maptab.env.environment import load_maps, map_levels, save_maps
from geoeval.suites.maptab.suite import _env_seed, generate_env_maps, maps_difficulty
from tests.conftest import compose_spec


@pytest.mark.parametrize("scenario", ["metromap", "travelmap"])
def test_saved_maps_load_back_exactly(tmp_path, scenario):
    spec = compose_spec(tmp_path, "env.n_maps=3")
    maps = generate_env_maps(spec.env, _env_seed(spec), scenario)
    difficulty = maps_difficulty(maps, scenario)
    db = tmp_path / "env" / "env.duckdb"
    save_maps(db, maps, difficulty, {"seed": "1"})
    loaded = load_maps(db)
    assert [m.name for m in loaded] == sorted(m.name for m in maps)
    by_name = {m.name: m for m in maps}
    for got in loaded:
        want = by_name[got.name]
        assert (got.scenario, got.width, got.height, got.country) == (
            want.scenario,
            want.width,
            want.height,
            want.country,
        )
        assert list(got.stations.items()) == list(want.stations.items())  # attributes and order
        assert got.edges == want.edges
        assert list(got.lines.items()) == list(want.lines.items())
    assert map_levels(db) == {name: d["level"] for name, d in difficulty.items()}
