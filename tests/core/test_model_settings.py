"""How a run talks to its model: samples in flight follow the model's connections (split among
Ray's workers), and a served model's own deadline is below the client's attempt timeout."""

from __future__ import annotations

import pytest

from geoeval.core.errors import GeoevalError
from tests.conftest import compose_spec


def _compose(tmp_path, *overrides):
    return compose_spec(tmp_path, *overrides)


def test_samples_in_flight_follow_the_model_and_ray_splits_its_connections(tmp_path):
    from geoeval.core.run.models import concurrency_warning, connections_per_worker, samples_in_flight

    api = ("model=openai_api", "model.name=openai-api/local/x")
    assert samples_in_flight(_compose(tmp_path, *api, "model.config.max_connections=32")) == 32
    ray = _compose(tmp_path, *api, "model.config.max_connections=32", "runner=ray", "runner.num_workers=3")
    # the shards split the total exactly: 11 + 11 + 10 = 32, never 3 x 11 or 3 x 32
    assert [connections_per_worker(ray, shard) for shard in range(3)] == [11, 11, 10]
    assert [samples_in_flight(ray, shard) for shard in range(3)] == [11, 11, 10]
    assert samples_in_flight(_compose(tmp_path, *api)) == 10  # Inspect's default per provider
    assert samples_in_flight(_compose(tmp_path, "model=oracle")) == 8  # offline agents
    slow = _compose(tmp_path, *api, "model.config.max_connections=32", "runner.max_samples=8")
    assert samples_in_flight(slow) == 8
    assert "keeps 24 of the model's 32 connections per worker idle" in concurrency_warning(slow)
    assert (
        concurrency_warning(_compose(tmp_path, *api, "model.config.max_connections=4", "runner.max_samples=8")) is None
    )


def test_a_served_models_deadline_must_be_below_the_clients_attempt_timeout(tmp_path):
    _compose(tmp_path, "model=local_llm")  # the shipped settings: 120 s < 150 s
    with pytest.raises(GeoevalError, match=r"model.serve.request_timeout_s: 200 s must be below model.config"):
        _compose(tmp_path, "model=local_llm", "model.serve.request_timeout_s=200")


@pytest.mark.parametrize("total", [1, 2, 3, 5, 7, 32, 33, 100])
@pytest.mark.parametrize("workers", [1, 2, 3, 4, 8])
def test_rays_split_of_the_connections_never_exceeds_the_total(tmp_path, total, workers):
    """Issue 45: C = 5 over 2 workers was 3 + 3 = 6 in flight. Every shard the runner makes holds
    at least one connection, all of them together exactly `model.config.max_connections`."""
    from geoeval.core.run.evaluate import batch_size
    from geoeval.core.run.models import connections_per_worker, shard_count

    spec = _compose(
        tmp_path,
        "model=openai_api",
        "model.name=openai-api/local/x",
        f"model.config.max_connections={total}",
        "runner=ray",
        f"runner.num_workers={workers}",
    )
    shards = shard_count(spec)
    split = [connections_per_worker(spec, shard) for shard in range(shards)]
    assert shards == min(workers, total) and all(n >= 1 for n in split)
    assert sum(split) == total and max(split) - min(split) <= 1
    assert batch_size(spec) == total  # what a budget lets start together is what the shards run at once


def test_a_local_rays_workers_run_at_the_drivers_priority_unless_told(tmp_path):
    """Ray's own default is nice 15 (issue 45: runs starved on a shared machine)."""
    import os

    from geoeval.core.run.ray_session import worker_niceness

    assert worker_niceness(_compose(tmp_path, "runner=ray")) == os.nice(0)
    assert worker_niceness(_compose(tmp_path, "runner=ray", "runner.worker_niceness=10")) == 10
    with pytest.raises(GeoevalError, match="runner.worker_niceness"):
        _compose(tmp_path, "runner=ray", "runner.worker_niceness=25")
