"""Shared test fixtures. Tests run offline; each gets its own results/log/mlruns folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PEERS = (REPO / ".." / "shared" / "peers").resolve()


def pytest_configure(config):
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture
def peers() -> Path:
    """The authors' sample files; skipped cleanly where ../shared/peers is absent."""
    if not PEERS.is_dir():
        pytest.skip("../shared/peers is not present (conformance data)")
    return PEERS


def geoeval_cmd(*overrides: str) -> list[str]:
    return [sys.executable, "-m", "geoeval", *overrides]
