"""Keys reach Ray workers without sitting in Ray's runtime env (which Ray's control store keeps
and its dashboard and state API show): they travel with each shard's task call instead."""

from __future__ import annotations

from geoeval.core.run.ray_session import worker_env, worker_runtime_env, worker_secrets


def test_secrets_stay_out_of_the_runtime_env_and_travel_with_the_task(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-1")
    monkeypatch.setenv("LOCAL_API_KEY", "local-secret-value-2")
    monkeypatch.setenv("LOCAL_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("INSPECT_LOG_LEVEL", "warning")
    monkeypatch.setenv("HF_TOKEN", "hf_not_needed_by_workers")
    runtime = worker_runtime_env()
    assert runtime is not None
    shown = runtime["env_vars"]
    assert "OPENAI_API_KEY" not in shown and "LOCAL_API_KEY" not in shown
    assert not any("secret-value" in v for v in shown.values())
    assert shown["LOCAL_BASE_URL"] == "http://127.0.0.1:8000/v1" and shown["INSPECT_LOG_LEVEL"] == "warning"
    secrets = worker_secrets()
    assert secrets["OPENAI_API_KEY"] == "sk-test-secret-value-1"
    assert secrets["LOCAL_API_KEY"] == "local-secret-value-2"  # the README's own example reaches the workers
    assert "HF_TOKEN" not in worker_env()  # only what the providers need travels at all
