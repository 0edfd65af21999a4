"""Shared test fixtures. Tests run offline; each gets its own results/log/mlruns folders."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# one test's trouble stays in that test: an exception outside its own code is its failure, and a
# timer or signal handler it leaves is put back (and fails it)
pytest_plugins = ["tests.pytest_guards"]

REPO = Path(__file__).resolve().parents[1]
PEERS = (REPO / ".." / "shared" / "peers").resolve()


def pytest_configure(config):
    if os.environ.get("GEOEVAL_ALL_TESTS") and config.option.markexpr == "not slow":
        config.option.markexpr = ""  # every tier (.ci/run); an explicit -m still wins
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # a warm server the developer left running would start the tests' runs (`geoeval warm`):
    # each test runs cold unless it starts a server of its own (tests/harness/test_warm_server.py)
    os.environ["GEOEVAL_WARM"] = "0"
    # the offline agents' disk cache (perception readings) of this test session only, so that
    # tests never read or fill the user's ~/.cache/geoeval
    if "GEOEVAL_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["GEOEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="geoeval-test-cache-")


@pytest.fixture(autouse=True)
def _own_inspect_cache(monkeypatch, tmp_path_factory) -> None:
    """Each test its own Inspect model-call cache (judges cache by default): a scripted reply of
    one test is never read back by another, nor from the user's ~/.cache/inspect_ai."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path_factory.mktemp("inspect-cache")))


@pytest.fixture
def peers() -> Path:
    """The authors' sample files; skipped cleanly where ../shared/peers is absent."""
    if not PEERS.is_dir():
        pytest.skip("../shared/peers is not present (conformance data)")
    return PEERS


def geoeval_cmd(*overrides: str) -> list[str]:
    return [sys.executable, "-m", "geoeval", *overrides]


def compose_spec(tmp_path: Path, *overrides: str):
    """A validated RunSpec from the shipped configs, writing only under `tmp_path`, tracking off."""
    from hydra import compose, initialize_config_module

    from geoeval.core.config.validate import validate_config
    from geoeval.core.registry import load_plugins

    load_plugins()
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "tracking=none",
                f"results_db={tmp_path / 'results.duckdb'}",
                f"work_dir={tmp_path / 'work'}",
                f"log_dir={tmp_path / 'logs'}",
                *overrides,
            ],
        )
    return validate_config(cfg)


def scripted_mockllm(*replies: str):
    """Inspect's mockllm answering `replies` in turn, each with its usage set (mockllm otherwise
    counts tokens itself, with an encoding tiktoken downloads)."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outputs = []
    for reply in replies:
        out = ModelOutput.from_content("mockllm/model", reply)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        outputs.append(out)
    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


@contextmanager
def deadline(cpu_seconds: int) -> Iterator[None]:
    """A hang guard: fail (not hang) once this process has spent `cpu_seconds` of CPU time inside
    the block. CPU time, not the clock: a machine at load 30 makes the clock run slow for the work
    (a 4 s extraction took 18 s of wall time there) but not the CPU it needs, so a guard that
    passes on an idle machine passes on a saturated one. SIGVTALRM interrupts even a regex
    running in C; once the block has left, a signal still on its way raises nothing."""
    active = [True]

    def expire(signum, frame):
        if active:
            raise TimeoutError(f"still running after {cpu_seconds} s of CPU time")

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, cpu_seconds)
    try:
        yield
    finally:
        active.clear()
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
