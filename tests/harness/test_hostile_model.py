"""A misbehaving model behind a real HTTP API, against every suite (issue 8's "Done when").

`python -m geoeval` runs each suite on a small config through Inspect's `openai-api` provider
against `HostileServer` (tests/harness/hostile_server.py), which rotates non-JSON tool arguments,
unknown tools, wrong types, missing arguments, lone surrogates, NUL bytes, 1 MB replies, a 1 MB
tag bomb, JSON nested 5,000 deep, empty replies, HTTP 500, timeouts and a garbage body, with a
well-formed answer between them (MapSatisfy also with its user simulator, tool simulator and a
model judge on that server). What must hold: the run ends (no hang) without a Python traceback,
exit 0, or 1 with a message saying why; Inspect's eval does not fail as a whole; the only errors
are the server's failures to answer (whatever it did answer is scored); every sample the config
builds is in the warehouse, scored or with its error, with clean text; the console, the warehouse
and the job's MLflow run (metrics and one trace per sample) count the same errors. Then the same
command runs again against the server turned well-behaved: exactly the errored samples are run
again, and scored. The cases run at once (marked slow); the fast tests at the end pin each crash
site these runs found in suite code.
"""

from __future__ import annotations

import asyncio
import glob
import json
import math
import os
import re
import signal
import subprocess
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, deadline, geoeval_cmd, scripted_mockllm
from tests.harness.hostile_server import DEFAULT_SCHEDULE, VALID_TEXT, HostileServer, Request

# each attempt gives up after 3 s (the `timeout` mode sleeps longer), one retry, 6 s per request
# at most, so a hostile request costs seconds, not Inspect's default of retrying for ever. One
# sample at a time: the server's rotation then meets the samples in the same order every run.
# Inspect's in-run retry of an errored sample is off, so that errors remain for the rerun to retry.
HOSTILE_MODEL = "openai-api/local/hostile"  # Inspect reads its URL and key from LOCAL_BASE_URL, LOCAL_API_KEY
MODEL = (
    "model=openai_api",
    f"model.name={HOSTILE_MODEL}",
    "++model.config.attempt_timeout=3",
    "++model.config.timeout=6",
    "++model.config.max_retries=1",
    "runner.max_samples=1",
    "retry_on_error=0",
)
RUN_TIMEOUT_S = 300  # a run that sends the server no request for this long is a hang (a wait bound, not a check)

# What an honest error says: the server failed to answer (HTTP 500 or no answer in time, after the
# retries; a body that is not JSON). Anything else is a harness bug: a model that answered, however
# badly, is scored (a crash, a cancelled sample or an eval failed as a whole is not an answer).
TRANSPORT_FAILURE = re.compile(
    r"^the model call failed after its retries: "
    r"(InternalServerError|AttemptTimeoutError|APITimeoutError|APIConnectionError) \("
    r"|^the model endpoint's reply is not JSON: (UnicodeDecodeError\('utf-8', b'<html>502 Bad Gateway|JSONDecodeError\()"
)


@dataclass(frozen=True)
class Case:
    overrides: tuple[str, ...]
    n_samples: int  # what the config builds (checked against the warehouse: none may be missing)


CASES: dict[str, Case] = {
    # 2 categories x 4 queries on one map
    "maptab": Case(("suite.categories=[edge_only,T]", "env.n_maps=1", "suite.n_per_category=4"), 8),
    "maptab_react": Case(
        ("suite.solver=react", "suite.categories=[edge_only,T]", "env.n_maps=1", "suite.n_per_category=4"), 8
    ),
    # 11 cases: one per task x level combination
    "lifeplanner": Case(
        ("+experiment=lifeplanner_offline", "env.n_places=300", "env.n_notes=2000", "suite.n_cases=11"), 11
    ),
    "mapsatisfy": Case(("+experiment=mapsatisfy_generated", "env.n=8", "env.seed=4", "env.embedder=hashing"), 8),
    # the suite's own model calls on the hostile server too: the LLM user simulator, the tool
    # simulator (for calls the replay store has no record of) and a model judge
    "mapsatisfy_llm_roles": Case(
        (
            "+experiment=mapsatisfy_generated",
            "env.n=4",
            "env.seed=4",
            "env.embedder=hashing",
            f"suite.user_model={HOSTILE_MODEL}",
            f"suite.tool_simulator={HOSTILE_MODEL}",
            f"judge.models=[rules,{HOSTILE_MODEL}]",
            "suite.judge_votes=1",
        ),
        4,
    ),
}


@dataclass
class MlflowView:
    """The job's MLflow run as this invocation left it (read before the next invocation)."""

    status: str = ""
    metrics: dict[str, float] = field(default_factory=dict)  # latest values
    n_errors_history: list[float] = field(default_factory=list)
    trace_status: dict[str, str] = field(default_factory=dict)  # sample id -> 'scored' | 'error'
    n_traces: int = 0


@dataclass
class Invocation:
    """One `python -m geoeval` run: its process, the warehouse after it, what the server saw."""

    proc: subprocess.CompletedProcess
    seconds: float
    requests: list[Request] = field(default_factory=list)  # what the server answered during this run
    samples: list[dict] = field(default_factory=list)  # the `samples` rows of this config's run
    scores: dict[str, list[float | None]] = field(default_factory=dict)  # sample_id -> its values
    logs: list[str] = field(default_factory=list)  # the Inspect logs this run wrote
    run_hash: str = ""
    run_status: str = ""
    mlflow_run_id: str | None = None
    mlflow: MlflowView = field(default_factory=MlflowView)

    @property
    def output(self) -> str:
        return self.proc.stdout + self.proc.stderr

    @property
    def modes(self) -> Counter:
        return Counter(r.mode for r in self.requests)

    @property
    def sample_requests(self) -> list[Request]:
        """The requests of samples: each has a system prompt or question and more (geoeval's
        preflight probe, sent once before the run, is a single "ping" message)."""
        return [r for r in self.requests if r.n_messages >= 2]

    @property
    def errors(self) -> dict[str, str]:
        return {r["sample_id"]: r["error"] for r in self.samples if r["error"] is not None}


@dataclass
class HostileRun:
    name: str
    case: Case
    cwd: Path
    hostile: Invocation
    calm: Invocation  # the same command again, the server now answering well


def read_warehouse(cwd: Path, invocation: Invocation) -> None:
    db = cwd / "results" / "geoeval.duckdb"
    if not db.exists():
        return
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT run_hash, status, mlflow_run_id FROM runs ORDER BY updated_at DESC").fetchall()
        if not runs:
            return
        invocation.run_hash, invocation.run_status, invocation.mlflow_run_id = runs[0]
        cursor = con.execute("SELECT * FROM samples WHERE run_hash = ?", [invocation.run_hash])
        columns = [d[0] for d in cursor.description]
        invocation.samples = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
        for sample_id, value in con.execute(
            "SELECT sample_id, value FROM scores WHERE run_hash = ?", [invocation.run_hash]
        ).fetchall():
            invocation.scores.setdefault(sample_id, []).append(value)
    finally:
        con.close()


def tracking_uri(cwd: Path) -> str:
    return f"sqlite:///{cwd / 'mlruns' / 'mlflow.db'}"


def read_mlflow(cwd: Path, run_id: str | None) -> MlflowView:
    if not run_id:
        return MlflowView()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri(cwd))
    run = client.get_run(run_id)
    view = MlflowView(
        status=run.info.status,
        metrics=dict(run.data.metrics),
        n_errors_history=[m.value for m in client.get_metric_history(run_id, "n_errors")],
    )
    token = None
    while True:
        page = client.search_traces(
            locations=[run.info.experiment_id], run_id=run_id, include_spans=False, max_results=500, page_token=token
        )
        for trace in page:
            view.n_traces += 1
            key = trace.info.tags.get("geoeval.sample_key", "")  # <dataset>:<sample id>:<epoch>
            view.trace_status[key.split(":", 1)[-1].rsplit(":", 1)[0]] = trace.info.tags.get("geoeval.status", "")
        token = page.token
        if not token:
            return view


def eval_logs(cwd: Path) -> set[str]:
    return set(glob.glob(str(cwd / "logs" / "**" / "*.eval"), recursive=True))


class Hang(Exception):
    pass


def _communicate_while_it_calls(child: subprocess.Popen, server: HostileServer) -> tuple[str, str]:
    """`child.communicate()`, given up (TimeoutExpired) only once the run has sent the server no
    request for RUN_TIMEOUT_S: on a saturated machine a whole run may take far longer than that,
    and a hang is a run that stopped calling (retrying `communicate` loses no output)."""
    seen, quiet_since = len(server.history), time.monotonic()
    while True:
        try:
            return child.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            if len(server.history) != seen:
                seen, quiet_since = len(server.history), time.monotonic()
            elif time.monotonic() - quiet_since > RUN_TIMEOUT_S:
                raise


def run_geoeval(cwd: Path, server: HostileServer, case: Case) -> Invocation:
    n_before = len(server.history)
    logs_before = eval_logs(cwd)
    started = time.monotonic()
    cmd = geoeval_cmd(
        *MODEL,
        f"model.base_url={server.base_url}",
        *case.overrides,
        "tracking=mlflow",
        f"tracking.tracking_uri={tracking_uri(cwd)}",
    )
    # on a hang, SIGABRT makes Python's faulthandler print every thread's stack: where it hung
    env = {
        **os.environ,
        "LOCAL_API_KEY": "x",
        "LOCAL_BASE_URL": server.base_url,
        "PYTHONPATH": str(REPO),
        "PYTHONFAULTHANDLER": "1",
        "GEOEVAL_EXPERIMENTS_DIR": str(REPO / "experiments"),
    }
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as child:
        try:
            stdout, stderr = _communicate_while_it_calls(child, server)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGABRT)
            try:
                stdout, stderr = child.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                stdout, stderr = child.communicate()
            raise Hang(
                f"geoeval hung (no request for > {RUN_TIMEOUT_S} s) against the hostile server; stderr tail:\n{stderr[-8000:]}"
            ) from None
    proc = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    invocation = Invocation(
        proc=proc,
        seconds=time.monotonic() - started,
        requests=server.history[n_before:],
        logs=sorted(eval_logs(cwd) - logs_before),
    )
    read_warehouse(cwd, invocation)
    invocation.mlflow = read_mlflow(cwd, invocation.mlflow_run_id)
    return invocation


def run_case(name: str, cwd: Path) -> HostileRun:
    """The hostile run, then the same command against the server turned well-behaved."""
    case = CASES[name]
    with HostileServer() as server:
        hostile = run_geoeval(cwd, server, case)
        server.set_schedule(["valid"])
        calm = run_geoeval(cwd, server, case)
    return HostileRun(name, case, cwd, hostile, calm)


@pytest.fixture(scope="module")
def hostile_runs(request, tmp_path_factory) -> dict[str, Future]:
    """Every selected case, all at once (each with its own server, so each keeps its order): the
    runs mostly wait on the hostile timeouts and backoffs, so together they take about as long
    as the slowest one alone."""
    params = [
        getattr(getattr(item, "callspec", None), "params", {})
        for item in request.session.items
        if getattr(item, "module", None) is request.module
    ]
    selected = sorted({p["hostile_run"] for p in params if "hostile_run" in p}) or list(CASES)
    pool = ThreadPoolExecutor(max_workers=len(selected))
    futures = {name: pool.submit(run_case, name, tmp_path_factory.mktemp(f"hostile_{name}")) for name in selected}
    yield futures
    pool.shutdown(wait=True)


# every test of a case is slow: each runs geoeval twice through a real HTTP client (the cases run
# at once, about two minutes in all on two busy cores)
@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.slow) for name in CASES])
def hostile_run(request, hostile_runs) -> HostileRun:
    try:
        return hostile_runs[request.param].result()
    except Hang as exc:
        pytest.fail(str(exc))


def describe(inv: Invocation) -> str:
    return (
        f"exit {inv.proc.returncode} after {inv.seconds:.0f} s\nstdout tail:\n{inv.proc.stdout[-2500:]}\n"
        f"stderr tail:\n{inv.proc.stderr[-5000:]}"
    )


def test_the_server_was_hostile_in_every_mode(hostile_run):
    # the test proves something only if the run met every failure mode
    assert set(hostile_run.hostile.modes) == set(DEFAULT_SCHEDULE), hostile_run.hostile.modes


def test_no_crash_and_a_clear_exit(hostile_run):
    inv = hostile_run.hostile
    assert "Traceback" not in inv.output, describe(inv)
    # 0, or 1 when the errors exceed `fail_on_error`, which says so
    assert inv.proc.returncode in (0, 1), describe(inv)
    if inv.proc.returncode == 1:
        assert "error" in inv.proc.stderr.lower() and "FAILED" in inv.proc.stderr, describe(inv)


def test_inspect_did_not_fail_as_a_whole(hostile_run):
    from inspect_ai.log import read_eval_log

    logs = hostile_run.hostile.logs
    assert logs, describe(hostile_run.hostile)
    statuses = {Path(p).name: read_eval_log(p, header_only=True).status for p in logs}
    assert set(statuses.values()) == {"success"}, statuses


def test_only_transport_failures_are_errors(hostile_run):
    not_transport = {sid: e for sid, e in hostile_run.hostile.errors.items() if not TRANSPORT_FAILURE.search(e)}
    assert not not_transport, not_transport


def test_every_sample_is_stored_scored_or_with_its_error(hostile_run):
    inv = hostile_run.hostile
    ids = [r["sample_id"] for r in inv.samples]
    assert len(ids) == len(set(ids)) == hostile_run.case.n_samples, (len(ids), describe(inv))
    assert not inv.run_status.startswith("incomplete"), inv.run_status
    for row in inv.samples:
        if row["error"] is None:  # scored: at least one metric has a value
            values = inv.scores.get(row["sample_id"], [])
            assert any(v is not None and not math.isnan(v) for v in values), row
        else:
            assert row["error"].strip(), row
    # the hostile text was stored clean: no lone surrogate or NUL reached the warehouse
    for row in inv.samples:
        for column in ("answer", "explanation", "error"):
            text = row[column] or ""
            assert "\x00" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text), (column, row["sample_id"])


def test_the_calm_rerun_ends_cleanly(hostile_run):
    inv = hostile_run.calm
    assert "Traceback" not in inv.output, describe(inv)
    assert inv.proc.returncode == 0, describe(inv)
    assert len(inv.samples) == hostile_run.case.n_samples


def test_errors_are_counted_in_the_warehouse_and_the_console(hostile_run):
    inv = hostile_run.hostile
    # without Inspect's in-run retry, the garbage body and the exhausted 500s leave errors behind
    assert inv.errors, "the hostile run left no error, so nothing below is tested"
    assert Counter(r["status"] for r in inv.samples) == Counter(
        {"error": len(inv.errors), "scored": hostile_run.case.n_samples - len(inv.errors)}
    )
    assert all((r["status"] == "error") == (r["error"] is not None) for r in inv.samples)
    # an errored sample has NaN metrics, never 0
    for sample_id in inv.errors:
        assert all(v is None or math.isnan(v) for v in inv.scores.get(sample_id, [])), sample_id
    assert f"**{len(inv.errors)} errors**" in inv.proc.stdout, describe(inv)


def test_a_rerun_retries_the_errors(hostile_run):
    hostile, calm = hostile_run.hostile, hostile_run.calm
    assert calm.run_hash == hostile.run_hash  # the same run, resumed
    # only the errored samples are asked again (the scored ones are resumed) and, the server now
    # answering well, each of them is scored
    assert calm.sample_requests, calm.requests
    assert f"{len(hostile.errors)} to run" in calm.proc.stderr, describe(calm)
    assert calm.errors == {}, calm.errors
    assert all(r["status"] == "scored" for r in calm.samples)
    before = {r["sample_id"]: r["completed_at"] for r in hostile.samples}
    after = {r["sample_id"]: r["completed_at"] for r in calm.samples}
    assert {s for s in after if after[s] != before[s]} == set(hostile.errors)


def test_errors_are_counted_in_mlflow(hostile_run):
    inv = hostile_run.hostile
    n, n_errors = hostile_run.case.n_samples, len(inv.errors)
    assert inv.mlflow_run_id, "the warehouse stores the job's MLflow run id"
    view = inv.mlflow
    assert view.status == ("FAILED" if inv.proc.returncode == 1 else "FINISHED"), view.status
    counts = (view.metrics["n_samples"], view.metrics["n_scored"], view.metrics["n_errors"])
    assert counts == (n, n - n_errors, n_errors), view.metrics
    # one trace per sample, errored where the warehouse has an error
    assert view.n_traces == n, view.trace_status
    assert {sid for sid, status in view.trace_status.items() if status == "error"} == set(inv.errors)


def test_the_rerun_shows_the_errors_retried_in_mlflow(hostile_run):
    hostile, calm = hostile_run.hostile, hostile_run.calm
    n = hostile_run.case.n_samples
    view = calm.mlflow
    assert view.status == "FINISHED", view.status
    assert (view.metrics["n_samples"], view.metrics["n_scored"], view.metrics["n_errors"]) == (n, n, 0)
    # the rerun goes on in the job's MLflow run (failed, or finished with errors under
    # `fail_on_error`): its n_errors drops to 0, and each retried sample's trace replaces the
    # errored one (still one per sample, all scored now)
    assert calm.mlflow_run_id == hostile.mlflow_run_id
    assert view.n_errors_history[-1] == 0 and max(view.n_errors_history) == len(hostile.errors)
    assert view.n_traces == n and set(view.trace_status.values()) == {"scored"}, view.trace_status


# ---------------------------------------------------------------------------------------------
# The crash sites the runs above found in suite code, each pinned by a fast test of its own


def failing_model():
    from inspect_ai.model import get_model

    def outputs():
        raise RuntimeError("provider down")
        yield  # a generator: raises on the first request

    return get_model("mockllm/model", custom_outputs=outputs(), memoize=False)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


@pytest.mark.parametrize(
    "text",
    [
        "<route_begin>A-B<route_end>",
        "x <ROUTE_BEGIN> A-B(transfer)-C </route_end> y <route_begin>D<route_end>",
        "<route_begin>a<route_begin>b<route_end>",
        "<route_begin>open only",
        "<route_end><route_begin>c<route_end>",
        "",
        "no tags",
        "<route_begin><route_end>",
    ],
)
def test_tagged_texts_finds_what_the_lazy_regex_finds(text):
    from geoeval.suites.maptab.metrics import tagged_texts

    lazy = re.findall(r"<route_begin>(.*?)<route_end>", text, re.IGNORECASE | re.DOTALL)
    assert tagged_texts(text, "<route_begin>", "<route_end>") == lazy


@pytest.mark.parametrize(
    "text",
    [
        "<route_begin> <answer_begin>\n  " * 35_000,  # the server's tag_bomb: ~1 MB of unclosed tags
        "<route_begin>" + " " * 1_000_000 + "x",
        "<answer_begin>" + " " * 1_000_000 + "x",
    ],
)
def test_maptab_answer_extraction_is_linear_on_a_tag_bomb(text):
    # the regexes these replaced (`<route_begin>\s*(.*?)\s*<route_end>`, and the QA tags) ran for
    # hours on such a reply, inside the scorer, which stalls the whole eval
    from geoeval.suites.maptab.scorers import extract_answer, extract_qa_answer

    with deadline(20):  # a hang guard; bench/fail_fast.py compares the time with a plain reply's
        route, route_note = extract_answer(text)
        qa_answer, qa_note = extract_qa_answer(text)
    assert qa_answer == "" and "no <answer_begin>" in qa_note
    assert route_note or route  # an untagged reply falls back to its last line with a "-"


def test_lifeplanner_deep_json_answer_is_scored_as_a_schema_failure():
    from geoeval.suites.lifeplanner.scoring.answers import AnswerSchemaError, load_answer, parse_answer

    beyond_the_parser = "[" * 5000 + "]" * 5000  # json.loads raises RecursionError on this
    assert load_answer(beyond_the_parser) == beyond_the_parser  # kept as text, as any non-JSON
    with pytest.raises(AnswerSchemaError, match="a route answer must be an object"):
        parse_answer("routing", "l1", beyond_the_parser)
    too_deep: list = []
    for _ in range(150):  # parseable, but deeper than any schema
        too_deep = [too_deep]
    with pytest.raises(AnswerSchemaError, match="nests more than 100 levels deep"):
        parse_answer("nearby", "l1", {"answer": too_deep})
    with pytest.raises(AnswerSchemaError, match="nests more than 100 levels deep"):
        parse_answer("place", "l0", json.dumps(too_deep))


def test_mapsatisfy_llm_user_reply_is_clean_text():
    from geoeval.suites.mapsatisfy.user.simulator import FINISH, LLMUser

    user = LLMUser(scripted_mockllm("fine \ud800 thanks\x00", "   "), "system prompt")
    assert asyncio.run(user.reply([("user", "q"), ("assistant", "a")])) == "fine \ufffd thanks\ufffd"
    assert asyncio.run(user.reply([("user", "q"), ("assistant", "a")])) == FINISH  # blank: the user is done


def test_mapsatisfy_simulated_tool_response_is_clean_and_can_be_recorded(tmp_path):
    from geoeval.suites.mapsatisfy.replay.embedders import HashingEmbedder
    from geoeval.suites.mapsatisfy.replay.sandbox import ReplaySandbox
    from geoeval.suites.mapsatisfy.replay.store import RecordStore

    store = RecordStore()
    store.add("get_weather", {"location": "唐山", "date": "2026-05-26"}, '{"live": {"weather": "晴"}}', trace_id="t0")
    sandbox = ReplaySandbox(
        store, embedder=HashingEmbedder(), tool_simulator=scripted_mockllm('{"w": "\ud800\x00"}'), record=True
    )
    response = asyncio.run(sandbox.call("get_weather", {"location": "拉萨", "date": "2026-05-27"}))
    assert (response.match_type, response.content) == ("simulated", '{"w": "\ufffd\ufffd"}')
    sandbox.store.save_csv(tmp_path)  # the recording is written as UTF-8
    assert "\ufffd" in (tmp_path / "get_weather.csv").read_text(encoding="utf-8-sig")


def test_mapsatisfy_model_judge_keeps_a_clean_capped_raw_reply():
    from geoeval.suites.mapsatisfy.judging.model_judge import RAW_REPLY_CHARS, model_item_verdict

    reply = "\ud800" + "x" * 50_000 + " VERDICT: YES"
    verdict, replies = asyncio.run(model_item_verdict(scripted_mockllm(reply), "prompt", votes=1))
    assert verdict == 1.0  # read from the whole reply
    [kept] = replies
    assert is_utf8(kept) and kept.startswith("\ufffd") and len(kept) < RAW_REPLY_CHARS + 100 and "cut" in kept


def test_lifeplanner_phrasing_is_clean_and_a_failing_model_is_one_clear_error(tmp_path):
    from geoeval.core.errors import GeoevalError
    from geoeval.suites.lifeplanner.phrasing import rephrase_questions

    question = "Which cafe near Main Street opens at 8?"
    rewrite = "Hey \ud800, which cafe near Main Street opens at 8?"  # keeps every protected token
    [phrased] = rephrase_questions([question], scripted_mockllm(rewrite), cache=tmp_path)
    assert phrased == "Hey \ufffd, which cafe near Main Street opens at 8?"
    assert json.loads(next(tmp_path.glob("phrased-*.json")).read_text(encoding="utf-8")) == [phrased]
    with pytest.raises(GeoevalError, match="rephrasing the case queries failed: RuntimeError: provider down"):
        rephrase_questions(["Another question at 9?"], failing_model(), cache=tmp_path)


def test_the_hostile_server_answers_each_mode_and_stops_without_hanging():
    import http.client
    import urllib.error
    import urllib.request

    from tests.harness.hostile_server import MODES

    body = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "submit",
                        "parameters": {
                            "type": "object",
                            "properties": {"answer": {"type": "string"}},
                            "required": ["answer"],
                        },
                    },
                }
            ],
        }
    ).encode()
    raw: dict[str, tuple[int, bytes]] = {}
    schedule = [m for m in MODES if m != "timeout"] + ["timeout"]  # the sleeping handler last
    server = HostileServer(schedule).start()
    try:
        for mode in schedule:
            request = urllib.request.Request(
                f"{server.base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=1) as reply:
                    raw[mode] = (reply.status, reply.read())
            except urllib.error.HTTPError as exc:
                raw[mode] = (exc.code, exc.read())
            except TimeoutError:
                raw[mode] = (0, b"")  # the client gave up: what `timeout` is for
            except http.client.IncompleteRead as exc:  # `partial_body`: less than its length said
                raw[mode] = (-1, exc.partial)
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as reply:
            assert json.loads(reply.read())["data"][0]["id"] == "hostile"
    finally:
        server.stop()  # the `timeout` handler is still asleep: stopping wakes it
    assert raw["http_500"][0] == 500 and raw["timeout"] == (0, b"") and raw["partial_body"][0] == -1
    assert b"\\ud800" in raw["surrogate_content"][1] and b"\\\\ud800" in raw["surrogate_submit"][1]
    assert b"\\u0000" in raw["nul"][1] and len(raw["huge"][1]) > 1_000_000
    with pytest.raises(ValueError):
        json.loads(raw["garbage"][1])

    def call(mode: str) -> dict:
        return json.loads(raw[mode][1])["choices"][0]["message"]["tool_calls"][0]["function"]

    assert call("unknown_tool")["name"] == "no_such_tool_xyz"
    assert json.loads(call("wrong_types")["arguments"]) == {"answer": 12345}
    assert json.loads(call("missing_args")["arguments"]) == {}
    with pytest.raises(ValueError):
        json.loads(call("bad_json_args")["arguments"])
    with pytest.raises(RecursionError):
        json.loads(call("deep_args")["arguments"])
    assert json.loads(call("valid")["arguments"]) == {"answer": VALID_TEXT}
    assert server.counts == Counter(MODES)
