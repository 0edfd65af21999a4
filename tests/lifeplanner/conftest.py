"""One small synthetic city shared by the LifePlanner tests (built once per session, < 1 s)."""

from __future__ import annotations

import duckdb
import pytest

from geoeval.suites.lifeplanner.city.environment import build_synthetic_city

SEED = 11
N_PLACES = 200
N_NOTES = 1000


@pytest.fixture(scope="session")
def city_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("lifeplanner") / "city.duckdb"
    build_synthetic_city(path, seed=SEED, n_places=N_PLACES, n_notes=N_NOTES)
    return path


@pytest.fixture(scope="session")
def city(city_path):
    from geoeval.suites.lifeplanner.tools.city import open_city

    return open_city(city_path)


@pytest.fixture(scope="session")
def db(city_path):
    """A separate read-only connection for computing expectations independently of the tools."""
    con = duckdb.connect(str(city_path), read_only=True)
    yield con
    con.close()


N_CASES = 66  # every task x level combination, at least 3 each (Table 4 proportions)


@pytest.fixture(scope="session")
def cases(city_path):
    from geoeval.suites.lifeplanner.cases.engine import generate_cases

    return generate_cases(str(city_path), n_cases=N_CASES, seed=0)
