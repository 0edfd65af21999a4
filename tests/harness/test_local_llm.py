"""A real language model, offline: `model=local_llm` runs SmolLM2-135M-Instruct behind
llama-cpp-python's OpenAI-compatible server, which geoeval starts and stops itself.

Every suite runs end to end on two samples through Inspect's `openai-api` provider, with the
suites' default tool budgets. The model is far too small to score well; what must hold is that its
real output flows through every stage: geoeval starts the server and stops it after the run, the
server is asked, the model's tool calls reach the suite's tools and their results reach the model
(read back from the server's prompt log), the scorer reads its final reply, tokens are counted,
every sample is stored scored or with its error, and nothing crashes; a request past its timeout is
that sample's error and frees the server. Skipped (with the reason) where the `local-llm` extra is
not installed.
"""

from __future__ import annotations

import asyncio
import glob
import json
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
# 128 tokens: a tool call's JSON fits (its grammar stops it at the closing tag, a cut call is text)
COMMON = ("model=local_llm", "model.config.max_tokens=128", "runner=local", "runner.max_samples=1", "tracking=none")
RUN_TIMEOUT_S = 420


@dataclass(frozen=True)
class Case:
    overrides: tuple[str, ...]
    n_samples: int
    uses_tools: bool  # the solver offers tools: the model's tool calls must reach them


CASES: dict[str, Case] = {
    # text-only input settings (a request holding the map image is refused: the model reads text only)
    "maptab": Case(("suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=2"), 2, False),
    # the default tool budget (30 calls); a small city keeps the environment build short
    "lifeplanner": Case(
        ("+experiment=lifeplanner_offline", "env.n_places=300", "env.n_notes=2000", "suite.n_cases=11", "limit=2"),
        2,
        True,
    ),
    # the default dialogue limits (8 turns, 40 tool calls); three map tools instead of the 22-tool
    # catalogue, whose description alone is ~5k prompt tokens (~80 s a first turn on a busy core)
    "mapsatisfy": Case(
        (
            "+experiment=mapsatisfy_generated",
            "env.n=4",
            "env.embedder=hashing",
            "limit=2",
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
    prompts: list[dict] = field(default_factory=list)  # the server's prompt log: prompt as rendered, raw reply
    cwd: Path | None = None  # where it ran (its warehouse is there)

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


def run_geoeval(name: str, case: Case, cwd: Path) -> LocalRun:
    server_log, prompt_log = cwd / "server.log", cwd / "prompts.jsonl"
    # no LOCAL_API_KEY: the serve step sets a dummy one for Inspect's provider
    env = {k: v for k, v in os.environ.items() if k != local_llm.API_KEY_ENV}
    env.update(PYTHONPATH=str(REPO), GEOEVAL_EXPERIMENTS_DIR=str(REPO / "experiments"))
    serve_logs = (f"++model.serve.log_path={server_log}", f"++model.serve.prompt_log_path={prompt_log}")
    started = time.monotonic()
    try:
        proc = subprocess.run(
            geoeval_cmd(*COMMON, *serve_logs, *case.overrides),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{name}: geoeval with the local LLM ran past {RUN_TIMEOUT_S} s; stderr tail:\n{(exc.stderr or b'')[-3000:]!r}"
        )
    run = LocalRun(
        name,
        case,
        proc,
        time.monotonic() - started,
        server_log.read_text(errors="replace") if server_log.exists() else "",
        logs=sorted(glob.glob(str(cwd / "logs" / "**" / "*.eval"), recursive=True)),
        cwd=cwd,
    )
    if prompt_log.exists():
        run.prompts = [json.loads(line) for line in prompt_log.read_text().splitlines()]
    read_samples(cwd, run)
    return run


@pytest.fixture(scope="module", params=list(CASES))
def local_run(request, tmp_path_factory) -> LocalRun:
    return run_geoeval(request.param, CASES[request.param], tmp_path_factory.mktemp(f"local_llm_{request.param}"))


def eval_samples(run: LocalRun) -> list:
    from inspect_ai.log import read_eval_log

    return [s for p in run.logs for s in (read_eval_log(p).samples or [])]


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
    # priced $0 by the default table: the cost line says it is a local model, not "$0.0000" (issue 41.5)
    assert "cost: local model (compute, not dollars;" in local_run.proc.stdout, local_run.describe()
    assert "local (priced $0, run here): openai-api/local/smollm2" in local_run.proc.stdout


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


def local_env() -> dict[str, str]:
    """This process's environment without LOCAL_API_KEY (the serve step sets a dummy one; a rescore needs none)."""
    env = {k: v for k, v in os.environ.items() if k != local_llm.API_KEY_ENV}
    env.update(PYTHONPATH=str(REPO), GEOEVAL_EXPERIMENTS_DIR=str(REPO / "experiments"))
    return env


@requires_local_llm
@pytest.mark.slow
def test_a_rescore_replays_the_run_without_its_prompt_log_and_starts_no_server(local_run):
    """The run wrote the server's prompt log, an observability setting: a rescore without it has
    the same generation identity and replays every stored call (issue 41.2), and starts no
    server (its server log, which a started server writes first, never appears; issue 41.1)."""
    assert local_run.cwd is not None, local_run.describe()
    rescore_log = local_run.cwd / "rescore_server.log"
    proc = subprocess.run(
        geoeval_cmd(
            "rescore",
            *COMMON,
            f"++model.serve.log_path={rescore_log}",
            *local_run.case.overrides,
            "scoring.protocol=paper",
        ),
        cwd=local_run.cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=local_env(),
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not rescore_log.exists()
    generated = {r["sample_id"] for r in local_run.samples if r["status"] == "scored"}
    assert generated, local_run.describe()
    con = duckdb.connect(str(local_run.cwd / "results" / "geoeval.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT s.sample_id, s.status, s.replayed_calls, s.cost_usd FROM samples s JOIN runs r USING (run_hash) "
            "WHERE json_extract_string(r.config_json, '$.scoring.protocol') = 'paper'"
        ).fetchall()
    finally:
        con.close()
    rescored = {sid: (status, replayed) for sid, status, replayed, _ in rows}
    for sample_id in generated:  # every sample the model answered is scored again from its stored calls
        assert rescored.get(sample_id, ("missing", 0))[0] == "scored", (sample_id, rescored, proc.stderr[-3000:])
        assert rescored[sample_id][1] > 0
    if len(generated) == len(local_run.samples):
        assert proc.returncode == 0, proc.stderr[-3000:]


@requires_local_llm
@pytest.mark.slow
def test_estimate_pilot_runs_the_local_model(tmp_path):
    """`geoeval estimate --pilot` starts the local server as a run does (issue 41.3): the pilot's
    samples are measured, the estimate has numbers, and no traceback (it was: no LOCAL_API_KEY)."""
    case = CASES["maptab"]
    proc = subprocess.run(
        geoeval_cmd("estimate", *COMMON, *case.overrides, "--pilot", "1"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=local_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| run"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # job | model | samples | stored | replayable | to generate | tokens | cost | measured on
    assert cells[1] == "openai-api/local/smollm2" and cells[2] == str(case.n_samples)
    assert cells[6] != "unknown" and cells[8].startswith("1 sample(s)"), proc.stdout


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
    assert local_run.logs, local_run.describe()
    events = [e for s in eval_samples(local_run) for e in s.events]
    replies = [e.output.message for e in events if e.event == "model" and e.output.choices]
    calls = [c for m in replies for c in (m.tool_calls or [])]
    tools_run = [e for e in events if e.event == "tool"]
    if local_run.case.uses_tools:
        # Inspect sends tool_choice "auto"; geoeval's chat format has the first reply call a tool
        # (`tools_first`), which the suite runs
        assert calls and tools_run, local_run.describe()
        assert {c.function for c in calls} & {e.function for e in tools_run}
    else:
        assert not calls
        assert any(m.text.strip() for m in replies), local_run.describe()  # it answered in text


@requires_local_llm
@pytest.mark.slow
def test_the_model_sees_its_prompt_and_tool_results_verbatim(local_run):
    """What the server rendered (its prompt log) holds each sample's system prompt as written and,
    where tools ran, their results as Inspect sent them, in a later turn of the same sample."""
    from inspect_ai.model import ChatMessageSystem, ChatMessageTool
    from inspect_ai.model._openai import openai_chat_message

    prompts = [r["prompt"] for r in local_run.prompts]
    assert prompts, local_run.describe()
    for prompt in prompts:
        for escaped in ("&lt;", "&gt;", "&#39;", "&#34;", "&amp;", "[{'type'"):
            assert escaped not in prompt, (escaped, prompt[:2000])
    seen_results = []
    for sample in eval_samples(local_run):
        system = [m.text for m in sample.messages if isinstance(m, ChatMessageSystem)]
        assert all(any(text in p for p in prompts) for text in system), (sample.id, system)
        turns = sum(e.event == "model" for e in sample.events)
        results = [
            asyncio.run(openai_chat_message(m))["content"] for m in sample.messages if isinstance(m, ChatMessageTool)
        ]
        if turns < 2 or not results:
            continue  # no reply came after a tool result (say, a LifePlanner agent that submitted at once)
        rendered = [f"<|im_start|>tool\n<tool_response>\n{text}\n</tool_response><|im_end|>" for text in results]
        # a reply after a tool ran: the result, as Inspect sent it, was in the prompt of that reply
        assert any(r in p for r in rendered for p in prompts), (sample.id, results)
        seen_results.append(sample.id)
    if local_run.case.uses_tools:
        # the dialogue went on after a tool call: the model saw a result and replied to it
        assert seen_results, local_run.describe()


@requires_local_llm
@pytest.mark.slow
def test_the_scorer_reads_the_models_final_reply(local_run):
    samples = eval_samples(local_run)
    assert len(samples) == local_run.case.n_samples, local_run.describe()
    for sample in samples:
        assert not sample.error, (sample.id, sample.error)
        final = sample.output.completion.strip()
        assert final, sample.id  # the dialogue ended with a reply, whatever its quality
        (score,) = sample.scores.values()
        if local_run.name == "lifeplanner":  # the scorer's answer is the reply (or the submitted answer)
            assert score.answer == sample.output.completion, sample.id
        else:  # what the scorer read from the reply, or why it read nothing
            assert score.answer or score.explanation, sample.id
        values = score.value.values() if isinstance(score.value, dict) else [score.value]
        assert any(isinstance(v, int | float) and not math.isnan(v) for v in values), (sample.id, score.value)


@requires_local_llm
@pytest.mark.slow
def test_a_request_past_its_timeout_is_the_samples_error(tmp_path):
    """A one-second request timeout against a 600-token prompt: the server stops the request after its
    first prompt batch, the sample is stored as an error naming the timeout, and the run ends."""
    case = Case(
        (
            "suite.categories=[edge_only]",
            "env.n_maps=1",
            "suite.n_per_category=1",
            "model.serve.request_timeout_s=1",
            "model.config.max_retries=0",
            "preflight=false",
        ),
        1,
        False,
    )
    run = run_geoeval("timeout", case, tmp_path)
    assert run.proc.returncode in (0, 1), run.describe()
    (row,) = run.samples
    assert row["status"] == "error" and row["error"], row
    assert all(v is None or math.isnan(v) for v in run.scores.get(row["sample_id"], [])), run.scores
    # every request the server stopped at its deadline (Inspect keeps only `RetryError(InternalServerError)`)
    assert "ran past model.serve.request_timeout_s (1 s)" in run.server_log, run.describe()
    assert set(chat_requests(run.server_log)) == {500}, run.describe()


@requires_local_llm
@pytest.mark.slow
def test_the_server_is_free_again_right_after_a_timeout(tmp_path):
    """A request whose prompt takes minutes to evaluate is stopped at its timeout between prompt
    batches (`tests/harness/test_local_chat_format.py` counts the batches), and the server then
    answers the next request. How soon is a speed target: `bench/`, not here."""
    log = tmp_path / "server.log"
    long_prompt = "The quick brown fox jumps over the lazy dog. " * 400  # ~4,000 tokens
    with local_llm.serve_local_llm({"log_path": str(log), "request_timeout_s": 2}) as url:
        status, body = post_chat(url, long_prompt, timeout_s=300)
        assert status == 500 and "ran past model.serve.request_timeout_s" in body, (status, body)
        status, body = post_chat(url, "Hi", timeout_s=300)
    assert status == 200, body


def post_chat(base_url: str, text: str, timeout_s: float) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    body = {"messages": [{"role": "user", "content": text}], "max_tokens": 4, "temperature": 0}
    request = urllib.request.Request(
        f"{base_url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


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
