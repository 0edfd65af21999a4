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
    assert connections_per_worker(ray) == 11 and samples_in_flight(ray) == 11  # 3 x 11 >= 32, never 3 x 32
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
