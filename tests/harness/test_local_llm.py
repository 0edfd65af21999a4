"""A real language model, offline (issue 8, item 6): `model=local_llm` runs SmolLM2-135M-Instruct
behind llama-cpp-python's OpenAI-compatible server, which geoeval starts and stops itself.

Every suite runs end to end on two samples through Inspect's `openai-api` provider. The model is
far too small to score well; what must hold is that its real output flows through every stage:
geoeval starts the server and stops it after the run, the server is asked, the model's tool calls
reach the suite's tools, tokens are counted, every sample is stored scored or with its error, and
nothing crashes. Skipped (with the reason) where the `local-llm` extra is not installed.
"""

from __future__ import annotations

import glob
import math
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from geoeval.agents import local_llm
from geoeval.core.errors import GeoevalError
from tests.conftest import REPO, geoeval_cmd


def local_llm_missing() -> str | None:
    """Why the local LLM cannot run here (None: it can)."""
    try:
        local_llm.check_server_installed()
        local_llm.smollm2_gguf_path()
    except GeoevalError as exc:
        return str(exc)
    return None


requires_local_llm = pytest.mark.skipif(local_llm_missing() is not None, reason=str(local_llm_missing()))

# small answers and one sample at a time: the server decodes one request at a time, and a sample's
# turns then share the server's prompt cache (interleaved samples would evict each other's prefix)
COMMON = ("model=local_llm", "model.config.max_tokens=64", "runner=local", "runner.max_samples=1", "tracking=none")
RUN_TIMEOUT_S = 420


@dataclass(frozen=True)
class Case:
    overrides: tuple[str, ...]
    n_samples: int
    uses_tools: bool  # the solver offers tools: the model's tool calls must reach them


CASES: dict[str, Case] = {
    # text-only input settings (the map image of other settings overflows a text model's context)
    "maptab": Case(("suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=2"), 2, False),
    "lifeplanner": Case(
        (
            "+experiment=lifeplanner_offline",
            "env.n_places=300",
            "env.n_notes=2000",
            "suite.n_cases=11",
            "limit=2",
            "suite.tool_budget=1",
        ),
        2,
        True,
    ),
    # three map tools instead of the 22-tool catalogue: a 2k-token prompt instead of 5.5k
    "mapsatisfy": Case(
        (
            "+experiment=mapsatisfy_generated",
            "env.n=4",
            "env.embedder=hashing",
            "limit=2",
            "suite.max_turns=1",
            "suite.max_tool_calls=1",
            "suite.map_tools=[search_poi,search_around_poi,get_navigation]",
        ),
        2,
        True,
    ),
}


@dataclass
class LocalRun:
    name: str
    case: Case
    proc: subprocess.CompletedProcess
    seconds: float
    server_log: str
    samples: list[dict] = field(default_factory=list)
    scores: dict[str, list[float | None]] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{self.name}: exit {self.proc.returncode} after {self.seconds:.0f} s\n"
            f"stdout tail:\n{self.proc.stdout[-2000:]}\nstderr tail:\n{self.proc.stderr[-4000:]}\n"
            f"server log tail:\n{self.server_log[-1500:]}"
        )


def read_samples(cwd: Path, run: LocalRun) -> None:
    db = cwd / "results" / "geoeval.duckdb"
    if not db.exists():
        return
    con = duckdb.connect(str(db), read_only=True)
    try:
        cursor = con.execute("SELECT * FROM samples")
        columns = [d[0] for d in cursor.description]
        run.samples = [dict(zip(columns, row)) for row in cursor.fetchall()]
        for sample_id, value in con.execute("SELECT sample_id, value FROM scores").fetchall():
            run.scores.setdefault(sample_id, []).append(value)
    finally:
        con.close()


@pytest.fixture(scope="module", params=list(CASES))
def local_run(request, tmp_path_factory) -> LocalRun:
    case = CASES[request.param]
    cwd = tmp_path_factory.mktemp(f"local_llm_{request.param}")
    server_log = cwd / "server.log"
    # no LOCAL_API_KEY: the serve step sets a dummy one for Inspect's provider
    env = {k: v for k, v in os.environ.items() if k != local_llm.API_KEY_ENV}
    env.update(PYTHONPATH=str(REPO), GEOEVAL_EXPERIMENTS_DIR=str(REPO / "experiments"))
    started = time.monotonic()
    try:
        proc = subprocess.run(
            geoeval_cmd(*COMMON, f"++model.serve.log_path={server_log}", *case.overrides),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{request.param}: geoeval with the local LLM ran past {RUN_TIMEOUT_S} s; stderr tail:\n"
            f"{(exc.stderr or b'')[-3000:]!r}"
        )
    run = LocalRun(
        request.param,
        case,
        proc,
        time.monotonic() - started,
        server_log.read_text(errors="replace") if server_log.exists() else "",
        logs=sorted(glob.glob(str(cwd / "logs" / "**" / "*.eval"), recursive=True)),
    )
    read_samples(cwd, run)
    return run


def chat_requests(server_log: str) -> list[int]:
    """HTTP status of every chat completion the server answered (uvicorn's access log)."""
    return [int(s) for s in re.findall(r'"POST /v1/chat/completions HTTP/1.1" (\d{3})', server_log)]


@requires_local_llm
@pytest.mark.slow
def test_runs_without_a_crash_and_exits_clearly(local_run):
    assert "Traceback" not in local_run.proc.stdout + local_run.proc.stderr, local_run.describe()
    # 0, or 1 when errored samples exceed `fail_on_error`, which the run then says
    assert local_run.proc.returncode in (0, 1), local_run.describe()
    if local_run.proc.returncode == 1:
        assert "FAILED" in local_run.proc.stderr, local_run.describe()


@requires_local_llm
@pytest.mark.slow
def test_geoeval_started_the_server_asked_it_and_stopped_it(local_run):
    log = local_run.server_log
    pid = re.search(r"Started server process \[(\d+)\]", log)
    port = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", log)
    assert pid and port, local_run.describe()
    statuses = chat_requests(log)
    # at least one model turn per sample (and the preflight probe), every one answered
    assert len(statuses) >= local_run.case.n_samples, local_run.describe()
    assert set(statuses) == {200}, statuses
    # stopped when the run ended: the process is gone and the port is closed
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid.group(1)), 0)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", int(port.group(1)))) != 0


@requires_local_llm
@pytest.mark.slow
def test_every_sample_is_stored_with_its_tokens(local_run):
    samples = local_run.samples
    assert len({r["sample_id"] for r in samples}) == len(samples) == local_run.case.n_samples, local_run.describe()
    assert {r["model"] for r in samples} == {"openai-api/local/smollm2"}
    for row in samples:
        assert row["status"] in ("scored", "error"), row
        values = local_run.scores.get(row["sample_id"], [])
        if row["status"] == "scored":
            # the model really answered: tokens were counted, and the scores have values
            assert row["input_tokens"] > 0 and row["output_tokens"] > 0, row
            assert any(v is not None and not math.isnan(v) for v in values), row
        else:  # an error has its message and no metric value (NaN, never 0)
            assert row["error"], row
            assert all(v is None or math.isnan(v) for v in values), row


@requires_local_llm
@pytest.mark.slow
def test_the_models_tool_calls_reach_the_tools(local_run):
    from inspect_ai.log import read_eval_log

    assert local_run.logs, local_run.describe()
    events = [e for p in local_run.logs for s in (read_eval_log(p).samples or []) for e in s.events]
    replies = [e.output.message for e in events if e.event == "model" and e.output.choices]
    calls = [c for m in replies for c in (m.tool_calls or [])]
    tools_run = [e for e in events if e.event == "tool"]
    if local_run.case.uses_tools:
        # Inspect sends tool_choice "auto"; llama-cpp's chatml-function-calling then lets the model
        # choose between a call and a message, and SmolLM2 calls a tool, which the suite runs
        assert calls and tools_run, local_run.describe()
        assert {c.function for c in calls} & {e.function for e in tools_run}
    else:
        assert not calls
        assert any(m.text.strip() for m in replies), local_run.describe()  # it answered in text


# --- the serve step itself -------------------------------------------------------------------


def test_a_missing_install_names_the_extra(monkeypatch):
    from importlib import metadata

    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local_llm.metadata, "distribution", not_installed)
    with pytest.raises(GeoevalError, match=re.escape('pip install -e ".[local-llm]"')):
        local_llm.smollm2_gguf_path()


def test_a_given_base_url_starts_nothing(monkeypatch):
    monkeypatch.delenv(local_llm.API_KEY_ENV, raising=False)
    started = []
    monkeypatch.setattr(local_llm.subprocess, "Popen", lambda *a, **k: started.append(a))
    with local_llm.serve_local_llm({"_target_": "x", "base_url": "http://10.0.0.5:8000/v1/"}) as url:
        assert url == "http://10.0.0.5:8000/v1"
        assert os.environ[local_llm.API_KEY_ENV] == local_llm.DUMMY_API_KEY
    assert not started
    assert local_llm.API_KEY_ENV not in os.environ  # the dummy key does not outlive the run


def test_an_unknown_serve_key_is_a_config_error():
    with pytest.raises(GeoevalError, match=r"model\.serve\.n_thread: unknown key"):
        local_llm.parse_serve_settings({"n_thread": 1})


@requires_local_llm
def test_a_server_that_cannot_start_reports_its_log(tmp_path):
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_bytes(b"not a gguf file")
    with (
        pytest.raises(GeoevalError, match=r"exited \(.+\) before it answered") as err,
        local_llm.serve_local_llm({"model_path": str(not_a_model), "startup_timeout_s": 60}),
    ):
        pytest.fail("the server must not come up on a broken model file")
    assert "broken.gguf" in str(err.value)  # the tail of the server's own log says what it tried


@pytest.mark.slow
@requires_local_llm
def test_a_server_that_dies_during_the_run_is_reported(tmp_path):
    log = tmp_path / "server.log"
    with (
        pytest.raises(GeoevalError, match="died during the run"),
        local_llm.serve_local_llm({"log_path": str(log), "interrupt_on_crash": False}) as url,
    ):
        assert local_llm.answers_models(url)
        pid = int(re.search(r"Started server process \[(\d+)\]", log.read_text()).group(1))
        os.kill(pid, 9)
        time.sleep(1.5)
