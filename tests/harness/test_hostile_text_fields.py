"""A lone surrogate anywhere in a reply (the called tool's name, an argument's name, the
reasoning beside the text) is cleaned before Inspect logs it: every sample is scored, none is
voided by a reply that could not be serialised, for the evaluated model and for the suite's own
model roles (MapSatisfy's user and tool simulators and model judge) alike."""

from __future__ import annotations

import os
import subprocess

import duckdb
import pytest

from tests.conftest import geoeval_cmd
from tests.harness.hostile_server import HostileServer

pytestmark = pytest.mark.slow  # whole runs against a local server

HOSTILE = "openai-api/local/hostile"
SCHEDULE = ["surrogate_tool_name", "surrogate_arg_name", "surrogate_reasoning", "surrogate_call_id", "valid"]
CASES = {
    "maptab_react": ("suite.solver=react", "suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=3"),
    "mapsatisfy_llm_roles": (
        "+experiment=mapsatisfy_generated",
        "env.n=4",
        "env.seed=4",
        "env.embedder=hashing",
        f"suite.user_model={HOSTILE}",
        f"suite.tool_simulator={HOSTILE}",
        f"judge.models=[rules,{HOSTILE}]",
        "suite.judge_votes=1",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_surrogates_in_names_and_reasoning_void_no_sample(tmp_path, case):
    server = HostileServer(schedule=SCHEDULE).start()
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                f"model.name={HOSTILE}",
                f"model.base_url={server.base_url}",
                *CASES[case],
                "tracking=none",
                "runner=local",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "LOCAL_API_KEY": "x", "LOCAL_BASE_URL": server.base_url},
        )
        modes = set(server.counts)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {"surrogate_tool_name", "surrogate_arg_name", "surrogate_reasoning", "surrogate_call_id"} <= modes
    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        statuses = con.execute("SELECT status, count(*) FROM samples GROUP BY 1").fetchall()
    assert dict(statuses) == {"scored": dict(statuses).get("scored", 0)} and dict(statuses)["scored"] >= 3


def test_a_reply_without_choices_is_an_error_that_says_so(tmp_path):
    server = HostileServer(schedule=["no_choices", "valid", "valid"]).start()
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                f"model.name={HOSTILE}",
                f"model.base_url={server.base_url}",
                *CASES["maptab_react"],
                "tracking=none",
                "runner=local",
                "fail_on_error=false",
                "retry_on_error=0",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "LOCAL_API_KEY": "x"},
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        errors = [e for (e,) in con.execute("SELECT error FROM samples WHERE status = 'error'").fetchall()]
    assert errors and all("has no choices" in e and "IndexError" not in e for e in errors), errors


def test_clean_model_output_refuses_an_empty_choice_list():
    from inspect_ai.model import ModelOutput

    from geoeval.core.run.models import ModelReplyError, clean_model_output

    with pytest.raises(ModelReplyError, match="no choices"):
        clean_model_output(ModelOutput(model="m", choices=[]))
    assert clean_model_output(ModelOutput.from_content("m", "fine")).completion == "fine"


def test_a_stored_error_says_what_happened_in_one_line():
    from geoeval.core.run.inspect_bridge import readable_error

    retried = "RetryError(<Future at 0x7f2aae2e3650 state=finished raised InternalServerError>)"
    assert readable_error(retried) == (
        "the model call failed after its retries: InternalServerError (the endpoint answered HTTP 5xx)"
    )
    assert readable_error("RetryError[<Future at 0x7f00 state=finished raised APIConnectionError>]").endswith(
        "APIConnectionError (the connection failed or was closed)"
    )
    assert readable_error("UnicodeDecodeError('utf-8', b'<html>', 0, 1, 'invalid start byte')").startswith(
        "the model endpoint's reply is not JSON: UnicodeDecodeError("
    )
    assert readable_error("a tool crashed: boom") == "a tool crashed: boom"  # anything else as it is


def test_a_failing_model_call_makes_at_most_max_retries_plus_one_requests(tmp_path):
    """Only Inspect retries (`model.config.max_retries`): the OpenAI SDK's own two retries per
    request are off, so a dead endpoint costs what was configured, not three times as much."""
    server = HostileServer(schedule=["http_500"]).start()
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                f"model.name={HOSTILE}",
                f"model.base_url={server.base_url}",
                "++model.config.max_retries=2",
                "preflight=false",
                "retry_on_error=0",
                "fail_on_error=false",
                "suite.categories=[edge_only]",
                "env.n_maps=1",
                "suite.n_per_category=1",
                "tracking=none",
                "runner=local",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "LOCAL_API_KEY": "x"},
        )
        requests = server.counts["http_500"]
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert requests == 3  # one sample, one model call: the first request and two retries
    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        [(error,)] = con.execute("SELECT error FROM samples").fetchall()
    assert error.startswith("the model call failed after its retries: InternalServerError")


def test_models_beside_the_evaluated_one_have_the_sdk_retries_off_too(monkeypatch):
    """A model judge, a simulated user or tool: built by `build_role_model`, whose OpenAI SDK
    client makes one request per attempt (Inspect's retries are the only ones)."""
    from inspect_ai.model import GenerateConfig

    from geoeval.core.run.models import build_role_model

    monkeypatch.setenv("LOCAL_API_KEY", "x")
    monkeypatch.setenv("LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
    judge = build_role_model("openai-api/local/judge", GenerateConfig(max_retries=2))
    assert judge.api.client.max_retries == 0
    assert getattr(judge.api, "_geoeval_clean_replies", False)  # and its replies cleaned
    offline = build_role_model("mockllm/model", GenerateConfig())  # not an OpenAI SDK provider: as it is
    assert getattr(offline.api, "_geoeval_clean_replies", False)
