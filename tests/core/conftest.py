"""Fixtures of the core tests: a fresh MLflow store per test, cheaply (the schema is migrated
once per module, which takes seconds, and copied for each test), used by the tracking and trace
tests, which import `spec_for` from here."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

from geoeval.core.tracking import store as tracking_store


def spec_for(store: Path) -> SimpleNamespace:
    return SimpleNamespace(
        tracking_uri=f"sqlite:///{store / 'mlflow.db'}", artifact_location=None, experiment_name=None
    )


@pytest.fixture(scope="module")
def schema_db(tmp_path_factory) -> Path:
    """An empty, fully migrated MLflow database, made once per module."""
    store = tmp_path_factory.mktemp("schema") / "mlruns"
    tracking_store.client_for(spec_for(store))
    return store / "mlflow.db"


@pytest.fixture
def store(tmp_path, schema_db) -> Path:
    """A store of this test's own (a copy of the migrated schema, no experiment yet)."""
    path = tmp_path / "mlruns"
    path.mkdir()
    # the backup API, not a file copy: the schema may still sit in the WAL file
    with sqlite3.connect(schema_db) as source, sqlite3.connect(path / "mlflow.db") as copy:
        source.backup(copy)
    return path
