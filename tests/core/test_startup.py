"""What a run does before its first sample (`core.run.startup`): local checks before any request,
and a rescore (`generation=replay_only`) that needs nothing of the evaluated model (issue 41.1, 43.9)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.core.run.preflight import ROLE_EVALUATED, endpoint_checks
from geoeval.core.run.startup import check_local
from tests.conftest import compose_spec

STARTED: list[dict] = []


@contextmanager
def recording_server(options):
    """A `model.serve` factory that records that it was asked to start a server."""
    STARTED.append(dict(options))
    yield "http://127.0.0.1:1/v1"


def test_a_rescore_probes_and_starts_nothing_for_the_evaluated_model(tmp_path):
    from geoeval.core.run.serving import served_model

    overrides = ("model=local_llm", "suite=mapsatisfy", "env=mapsatisfy_generated", "metrics=mapsatisfy")
    roles = ("suite.user_model=openai-api/local/user", "suite.tool_simulator=openai-api/local/sim")
    judged = "judge.models=[rules,openai-api/local/judge]"
    run = compose_spec(tmp_path, *overrides, *roles, judged)
    rescore = compose_spec(tmp_path, *overrides, *roles, judged, "generation=replay_only")
    assert [c[0] for c in endpoint_checks(run)] == [ROLE_EVALUATED, "judge", "user simulator", "tool simulator"]
    # the judges score anew and are asked; the agent and the simulated roles are replayed
    assert [c[1] for c in endpoint_checks(rescore)] == ["openai-api/local/judge"]

    target = {"_target_": f"{__name__}.recording_server"}
    STARTED.clear()
    with served_model(run.model_copy(update={"model": run.model.model_copy(update={"serve": target})})) as served:
        assert served.model.base_url == "http://127.0.0.1:1/v1"
    assert len(STARTED) == 1
    STARTED.clear()
    spec = rescore.model_copy(update={"model": rescore.model.model_copy(update={"serve": target})})
    with served_model(spec) as served:
        assert served.model.base_url is None
    assert STARTED == []


def test_a_rescores_model_is_built_pointing_nowhere_and_needs_no_key(tmp_path, monkeypatch):
    from geoeval.core.run.models import NO_CALL_BASE_URL, build_model

    monkeypatch.delenv("LOCAL_API_KEY", raising=False)
    monkeypatch.delenv("LOCAL_BASE_URL", raising=False)
    rescore = compose_spec(tmp_path, "model=local_llm", "generation=replay_only")
    model = build_model(rescore)
    assert model.api.base_url == NO_CALL_BASE_URL
    run = compose_spec(tmp_path, "model=local_llm")
    with pytest.raises(Exception, match="LOCAL_API_KEY"):  # a run's model needs its server's key
        build_model(run)


def test_local_checks_name_the_key_and_create_nothing(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for key, value in [
        ("results_db", f"{blocker}/results.duckdb"),
        ("log_dir", f"{blocker}/logs"),
        ("work_dir", f"{blocker}/deeper/work"),
    ]:
        spec = compose_spec(tmp_path, f"{key}={value}")
        with pytest.raises(GeoevalError, match=f"{key}="):
            check_local(spec)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    check_local(
        compose_spec(tmp_path, f"results_db={fresh}/r/x.duckdb", f"log_dir={fresh}/logs", f"work_dir={fresh}/work")
    )
    assert list(fresh.iterdir()) == []  # checked, not built: a run refused later leaves nothing behind
