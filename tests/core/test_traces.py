"""Per-sample MLflow traces (geoeval.core.tracking.traces.writer) from a real Inspect eval log: an agent with a
tool, run on Inspect's mockllm, scored by a dict-valued scorer; one sample errors."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking.traces import content as trace_content
from geoeval.core.tracking.traces import selection as trace_selection
from geoeval.core.tracking.traces import writer as traces
from tests.core.conftest import spec_for

N_SAMPLES = 50
ERRORED = "s1"  # its model call raises
NAN_LENGTH = "s2"  # scored, but one metric does not apply (NaN)


def _eval_log(log_dir: Path) -> str:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def add():
        async def execute(x: int, y: int):
            """Add two numbers.

            Args:
                x: the first number
                y: the second number
            """
            return x + y

        return execute

    def reply(messages, tools, tool_choice, config):
        last = messages[-1]
        if last.role == "user" and "explode" in last.text:
            raise RuntimeError("model exploded")
        if last.role == "user":  # first turn: call the tool
            out = ModelOutput.for_tool_call("mockllm/model", "add", {"x": 2, "y": 3})
        else:  # second turn: answer with the tool's result
            out = ModelOutput.from_content("mockllm/model", f"The answer is {last.text}")
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # no tokenizer download
        return out

    @scorer(metrics=[mean()])
    def geoeval_like():
        async def score(state, target):
            answer = state.output.completion
            length = math.nan if state.sample_id == NAN_LENGTH else float(len(answer))
            return Score(
                value={"correct": float(target.text in answer), "length": length},
                answer=answer,
                explanation="target found in the answer",
            )

        return score

    samples = [
        Sample(
            id=f"s{i}",
            input=f"add 2 and 3 ({i})" + (" explode" if f"s{i}" == ERRORED else ""),
            target="5",
            metadata={"dims": {"suite": "toy", "level": i % 3}},
        )
        for i in range(N_SAMPLES)
    ]
    task = Task(dataset=samples, solver=[use_tools(add()), generate()], scorer=geoeval_like(), name="toy")
    model = get_model("mockllm/model", custom_outputs=reply, memoize=False)
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none", fail_on_error=False)
    return log.location


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory) -> str:
    return _eval_log(tmp_path_factory.mktemp("inspect_logs"))


def open_run(store: Path, run_hash: str = "h1") -> tracking.JobRun:
    return tracking.JobRun.start(spec_for(store), "exp", run_hash=run_hash, run_name="job", params={"a": "1"})


def run_traces(store: Path, run: tracking.JobRun) -> dict[str, object]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=spec_for(store).tracking_uri)
    found = client.search_traces(locations=[run.experiment_id], run_id=run.run_id, max_results=1000)
    return {t.info.tags["geoeval.sample_id"]: t for t in found}


@pytest.mark.slow
def test_one_trace_per_sample_with_spans_assessments_and_run_link(store, eval_log):
    run = open_run(store)
    counts = traces.log_sample_traces(
        spec_for(store), "exp", run.run_id, [eval_log], mode="all", cap=None, dataset_name="toy", model="mockllm/model"
    )
    assert (counts.logged, counts.skipped, counts.failed, counts.warnings) == (N_SAMPLES, 0, 0, ())
    found = run_traces(store, run)
    assert sorted(found) == sorted(f"s{i}" for i in range(N_SAMPLES))

    trace = found["s0"]
    assert trace.info.state.value == "OK"
    assert trace.info.trace_metadata["mlflow.sourceRun"] == run.run_id
    assert trace.info.client_request_id == "toy:s0:1"  # lines the sample up across runs
    assert trace.info.tags["geoeval.status"] == "scored"
    assert trace.info.tags["geoeval.dims.level"] == "0"
    spans = sorted(trace.data.spans, key=lambda s: s.start_time_ns)
    assert [(s.name, s.span_type) for s in spans] == [
        ("sample s0", "AGENT"),
        ("turn 1", "LLM"),
        ("add", "TOOL"),
        ("turn 2", "LLM"),
    ]
    root, turn1, tool_call, turn2 = spans
    assert all(s.parent_id == root.span_id for s in (turn1, tool_call, turn2))
    assert root.inputs == {"prompt": "add 2 and 3 (0)"}
    assert root.outputs == {"completion": "The answer is 5"}
    assert turn1.inputs["n_messages"] == 1
    assert turn1.outputs["tool_calls"] == [{"function": "add", "arguments": {"x": 2, "y": 3}}]
    assert turn1.get_attribute("mlflow.chat.tokenUsage") == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert turn2.inputs["n_messages"] == 3 and turn2.outputs["text"] == "The answer is 5"
    assert tool_call.inputs == {"x": 2, "y": 3} and tool_call.outputs == {"result": "5"}
    # the events' own times, not the time of logging
    assert (
        root.start_time_ns <= turn1.start_time_ns <= tool_call.start_time_ns <= turn2.start_time_ns <= root.end_time_ns
    )
    assert root.end_time_ns < time.time_ns() - 1e6

    by_name = {a.name: a for a in trace.info.assessments}
    assert set(by_name) == {"correct", "length", "expected_response"}
    assert by_name["correct"].feedback.value == 1.0
    assert by_name["length"].feedback.value == float(len("The answer is 5"))
    assert by_name["correct"].source.source_type == "CODE" and by_name["correct"].source.source_id == "geoeval"
    assert by_name["correct"].rationale == "target found in the answer"
    assert by_name["correct"].run_id == run.run_id
    assert by_name["expected_response"].expectation.value == "5"

    from mlflow import MlflowClient

    tags = MlflowClient(tracking_uri=spec_for(store).tracking_uri).get_run(run.run_id).data
    assert tags.tags["mlflow.runType"] == "genai_evaluate"
    assert tags.metrics["traces_logged"] == N_SAMPLES and tags.metrics["traces_skipped"] == 0


def test_errored_sample_and_nan_metric_are_visible(store, eval_log):
    run = open_run(store)
    traces.log_sample_traces(spec_for(store), "exp", run.run_id, [eval_log], mode="all", cap=None, dataset_name="toy")
    found = run_traces(store, run)
    errored = found[ERRORED]
    assert errored.info.state.value == "ERROR"
    assert errored.info.tags["geoeval.status"] == "error"
    assert "model exploded" in errored.info.tags["geoeval.error"]
    root = next(s for s in errored.data.spans if s.parent_id is None)
    assert root.status.status_code.value == "ERROR" and "model exploded" in root.status.description
    turn = next(s for s in errored.data.spans if s.span_type == "LLM")
    assert turn.status.status_code.value == "ERROR"
    assert [a.name for a in errored.info.assessments] == ["expected_response"]  # no score, no feedback

    nan = {a.name: a for a in found[NAN_LENGTH].info.assessments}["length"]
    assert nan.feedback.value is None  # never 0
    assert nan.feedback.error.error_code == "METRIC_NOT_COMPUTED"


def test_errors_mode_traces_only_errored_samples(store, eval_log):
    run = open_run(store)
    counts = traces.log_sample_traces(
        spec_for(store), "exp", run.run_id, [eval_log], mode="errors", cap=None, dataset_name="toy"
    )
    assert (counts.logged, counts.skipped, counts.failed) == (1, 0, 0)
    assert list(run_traces(store, run)) == [ERRORED]


def test_errors_mode_reads_no_log_when_the_caller_counted_no_error(store, eval_log, monkeypatch):
    read: list[str] = []
    real = trace_selection._candidates
    monkeypatch.setattr(traces, "_candidates", lambda paths, warn: read.append("read") or real(paths, warn))
    run = open_run(store)
    counts = traces.log_sample_traces(spec_for(store), "exp", run.run_id, [eval_log], mode="errors", errored=0)
    assert read == [] and (counts.logged, counts.skipped, counts.failed) == (0, 0, 0)
    assert list(run_traces(store, run)) == []
    counts = traces.log_sample_traces(spec_for(store), "exp", run.run_id, [eval_log], mode="errors", errored=1)
    assert read == ["read"] and counts.logged == 1


def test_cap_keeps_errors_first_and_counts_the_rest_as_skipped(store, eval_log):
    run = open_run(store)
    counts = traces.log_sample_traces(
        spec_for(store), "exp", run.run_id, [eval_log], mode="all", cap=3, dataset_name="toy"
    )
    assert (counts.logged, counts.skipped) == (3, N_SAMPLES - 3)
    found = run_traces(store, run)
    assert len(found) == 3 and ERRORED in found  # the errored one first, then in log order
    from mlflow import MlflowClient

    metrics = MlflowClient(tracking_uri=spec_for(store).tracking_uri).get_run(run.run_id).data.metrics
    assert metrics["traces_skipped"] == N_SAMPLES - 3


def test_none_mode_logs_nothing(store, eval_log):
    run = open_run(store)
    assert (
        traces.log_sample_traces(
            spec_for(store), "exp", run.run_id, [eval_log], mode="none", cap=None, dataset_name="toy"
        )
        == traces.TraceCounts()
    )
    assert run_traces(store, run) == {}


def test_logging_again_keeps_one_trace_per_sample(store, eval_log):
    """A resumed run that retries samples logs them again: their earlier traces are replaced."""
    run = open_run(store)
    spec = spec_for(store)
    traces.log_sample_traces(spec, "exp", run.run_id, [eval_log], mode="errors", cap=None, dataset_name="toy")
    first = run_traces(store, run)[ERRORED].info.trace_id
    counts = traces.log_sample_traces(spec, "exp", run.run_id, [eval_log], mode="all", cap=None, dataset_name="toy")
    assert counts.logged == N_SAMPLES
    found = run_traces(store, run)
    assert len(found) == N_SAMPLES and found[ERRORED].info.trace_id != first


def test_log_samples_writes_given_samples(store, eval_log):
    """The entry point for samples already in memory (an Inspect hook), with no log to read."""
    from inspect_ai.log import read_eval_log

    run = open_run(store)
    samples = [s for s in read_eval_log(eval_log).samples if s.id in ("s0", ERRORED)]
    counts = traces.log_samples(spec_for(store), run.run_id, samples, dataset_name="toy")
    assert (counts.logged, counts.failed) == (2, 0)
    assert sorted(run_traces(store, run)) == ["s0", ERRORED]


def test_trace_stream_logs_samples_as_they_arrive(store, eval_log):
    from inspect_ai.log import read_eval_log

    run = open_run(store)
    samples = read_eval_log(eval_log).samples
    stream = traces.TraceStream(spec_for(store), run.run_id, mode="all", cap=10, dataset_name="toy", window_s=0.05)
    for sample in samples:
        stream.put(sample)  # what an on_sample_end hook does
    counts = stream.close()
    assert (counts.logged, counts.skipped, counts.failed) == (10, N_SAMPLES - 10, 0)
    assert len(run_traces(store, run)) == 10

    errors_only = open_run(store, "h2")
    stream = traces.TraceStream(spec_for(store), errors_only.run_id, mode="errors", dataset_name="toy")
    for sample in samples:
        stream.put(sample)
    assert stream.close().logged == 1
    assert list(run_traces(store, errors_only)) == [ERRORED]
    assert traces.TraceStream(spec_for(store), "no-such-run", mode="all").close().logged == 0  # never raises


def test_select_samples_dedupes_and_orders():
    cand = trace_selection._Candidate
    logs = [cand("a", "x", 1, True), cand("a", "y", 1, False), cand("b", "x", 1, False), cand("b", "z", 1, True)]
    chosen, skipped = trace_selection.select_samples(logs, "all", None)
    assert [(c.path, c.sample_id) for c in chosen] == [("a", "y"), ("b", "x"), ("b", "z")]  # x: the later log
    assert skipped == 0
    chosen, skipped = trace_selection.select_samples(logs, "all", 1)
    assert [(c.path, c.sample_id) for c in chosen] == [("b", "z")] and skipped == 2
    assert [c.sample_id for c in trace_selection.select_samples(logs, "errors", None)[0]] == ["z"]
    assert trace_selection.select_samples(logs, "none", None) == ([], 0)


def test_samples_are_read_in_chunks_and_one_by_one_when_a_chunk_fails(eval_log, monkeypatch):
    monkeypatch.setattr(trace_selection, "SAMPLES_PER_READ", 2)
    keys = {(f"s{i}", 1) for i in range(N_SAMPLES)}
    read = [(s.id, s.epoch, s.output.completion) for s in trace_selection._read_samples(eval_log, keys)]
    assert [(i, e) for i, e, _ in read] == sorted(keys)  # every sample, in key order
    assert all(c == "The answer is 5" for i, _, c in read if i != ERRORED)
    # a sample the log lacks (as in a log cut short): its chunk is read one by one, up to it
    missing = {("s0", 1), ("s1", 1), ("s2", 1), ("s9x", 1)}
    got = []
    with pytest.raises(IndexError):
        for sample in trace_selection._read_samples(eval_log, missing):
            got.append(sample.id)
    assert got == ["s0", "s1", "s2"]


def test_bad_input_is_a_warning_never_an_exception(store, eval_log, tmp_path, capsys):
    run = open_run(store)
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"not a zip file")
    counts = traces.log_sample_traces(
        spec_for(store),
        "exp",
        run.run_id,
        [str(broken), str(tmp_path / "absent.eval"), eval_log],
        mode="errors",
        cap=None,
        dataset_name="toy",
    )
    assert counts.logged == 1 and len(counts.warnings) == 2
    assert "cannot read Inspect log" in capsys.readouterr().err
    counts = traces.log_sample_traces(
        spec_for(store), "exp", "no-such-run", [eval_log], mode="all", cap=None, dataset_name="toy"
    )
    assert counts.logged == 0 and counts.warnings and counts.warnings[0].startswith("traces not logged")
    counts = traces.log_sample_traces(
        spec_for(store), "exp", run.run_id, [eval_log], mode="some", cap=None, dataset_name="toy"
    )
    assert counts.logged == 0 and "unknown traces mode" in counts.warnings[0]


def test_hostile_text_is_cleaned_and_bounded():
    text = "a\ud800b\x00c" + "x" * 30_000
    cleaned = trace_content._text(text)
    assert cleaned.startswith("a\ufffdb\ufffdc") and cleaned.endswith("more characters cut]")
    assert len(cleaned) < trace_content.FIELD_CHARS + 50
    deep: object = "leaf"
    for _ in range(50):
        deep = {"k": [deep]}
    clipped = trace_content._clip({"args": deep, "n": float("nan"), "big": list(range(1000)), "\ud800": 1})
    assert clipped["n"] == "nan" and len(clipped["big"]) == trace_content.MAX_LIST_ITEMS + 1
    assert "\ufffd" in clipped
    import json

    json.dumps(clipped).encode("utf-8")  # storable


def test_log_dataset_is_an_evaluation_input(store):
    import pandas as pd
    from mlflow import MlflowClient

    run = open_run(store)
    # object columns can hold what arrow-backed strings refuse (a lone surrogate)
    rows = pd.DataFrame(
        {"sample_id": ["s0", "s1"], "input": ["add 2 and 3", "bad \ud800 text"], "target": ["5", "5"]}, dtype=object
    )
    traces.log_dataset(spec_for(store), "exp", run.run_id, rows, name="toy", digest="abc123")
    inputs = MlflowClient(tracking_uri=spec_for(store).tracking_uri).get_run(run.run_id).inputs.dataset_inputs
    assert len(inputs) == 1
    assert inputs[0].dataset.name == "toy" and inputs[0].dataset.digest == "abc123"
    assert {t.key: t.value for t in inputs[0].tags} == {"mlflow.data.context": "evaluation"}


def _comparable(trace, run_id: str) -> dict[str, object]:
    """What a reader sees of a trace, without what differs between two writes of it (ids,
    the run it is linked to)."""
    info = trace.info
    ignored = {"mlflow.artifactLocation"}
    return {
        "state": info.state.value,
        "client_request_id": info.client_request_id,
        "request_preview": info.request_preview,
        "response_preview": info.response_preview,
        "tags": {k: v for k, v in info.tags.items() if k not in ignored},
        "metadata": {k: v.replace(run_id, "<run>") for k, v in info.trace_metadata.items()},
        "assessments": sorted(
            (a.name, str(a.value), a.rationale, a.source.source_type, a.source.source_id, a.run_id == run_id)
            for a in info.assessments
        ),
        "spans": sorted(
            (s.name, s.span_type, str(s.inputs), str(s.outputs), s.status.status_code.value, s.start_time_ns)
            for s in trace.data.spans
        ),
    }


def test_traces_written_in_one_transaction_read_back_as_the_public_api_writes_them(store, eval_log, monkeypatch):
    """The SQL store's traces of a batch go in one transaction, through the store's own code per
    trace (`_start_in_one_transaction`): what a reader gets back is what MLflow's public
    `start_trace`, one transaction per trace, stores; and the public call is not made."""
    from inspect_ai.log import read_eval_log
    from mlflow.tracing.client import TracingClient

    samples = read_eval_log(eval_log).samples
    public_calls: list[str] = []
    real_start = TracingClient.start_trace

    def counting_start(self, info):
        public_calls.append(info.trace_id)
        return real_start(self, info)

    monkeypatch.setattr(TracingClient, "start_trace", counting_start)
    together = open_run(store, "together")
    assert traces.log_samples(spec_for(store), together.run_id, samples, dataset_name="toy").logged == N_SAMPLES
    assert public_calls == []  # the batches went in one transaction each

    one_by_one = open_run(store, "one-by-one")
    monkeypatch.setattr(traces, "_start_in_one_transaction", lambda *args: set())
    assert traces.log_samples(spec_for(store), one_by_one.run_id, samples, dataset_name="toy").logged == N_SAMPLES
    assert len(public_calls) == N_SAMPLES

    a, b = run_traces(store, together), run_traces(store, one_by_one)
    assert sorted(a) == sorted(b) == sorted(f"s{i}" for i in range(N_SAMPLES))
    for sample_id in a:
        assert _comparable(a[sample_id], together.run_id) == _comparable(b[sample_id], one_by_one.run_id), sample_id


def _traces_with_a_hooked_store(store, eval_log, monkeypatch, n: int, name: str, hook) -> tuple[list, list[str]]:
    """Logs `n` samples with the store's `_start_trace_once` calling `hook(store, call number)`
    first on every trace; returns (the run's traces, each sorted by sample) and the trace ids
    the store's code was asked to start, in order. Every sample has one trace, with spans."""
    from inspect_ai.log import read_eval_log
    from mlflow import MlflowClient
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    samples = read_eval_log(eval_log).samples[:n]
    real_once = SqlAlchemyStore._start_trace_once
    seen: list[str] = []

    def hooked(self, info):
        seen.append(info.trace_id)
        hook(self, len(seen))
        return real_once(self, info)

    monkeypatch.setattr(SqlAlchemyStore, "_start_trace_once", hooked)
    run = open_run(store, name)
    counts = traces.log_samples(spec_for(store), run.run_id, samples, dataset_name="toy")
    assert (counts.logged, counts.failed, counts.warnings) == (n, 0, ())
    client = MlflowClient(tracking_uri=spec_for(store).tracking_uri)
    found = client.search_traces(locations=[run.experiment_id], run_id=run.run_id, max_results=1000)
    assert sorted(t.info.tags["geoeval.sample_id"] for t in found) == sorted(str(s.id) for s in samples)
    assert all(len(t.data.spans) >= 2 for t in found)
    return found, seen


def test_a_batch_that_fails_midway_is_written_once_by_the_public_api(store, eval_log, monkeypatch):
    """A trace the store refuses inside the shared transaction rolls the whole batch back; every
    trace is then written one by one, none twice, none lost."""

    def fails_on_the_third(_store, call: int) -> None:
        if call == 3:
            raise RuntimeError("refused")

    found, seen = _traces_with_a_hooked_store(store, eval_log, monkeypatch, 12, "midway", fails_on_the_third)
    assert len(found) == 12 and len(seen) == 3 + 12  # the batch's three tries, then each through the public call


def test_a_rollback_inside_the_shared_transaction_loses_no_trace(store, eval_log, monkeypatch):
    """MLflow's own code mends a conflict by rolling its session back and going on: on the shared
    session that silently drops the batch's earlier traces, which are then found missing and
    written one by one."""

    def rolls_back_before_the_fourth(store_, call: int) -> None:
        if call == 4:
            with store_.ManagedSessionMaker(read_only=False) as session:
                session.rollback()  # what the store does on an IntegrityError, then it carries on

    found, seen = _traces_with_a_hooked_store(store, eval_log, monkeypatch, 8, "rollback", rolls_back_before_the_fourth)
    assert len(found) == 8 and len(seen) == 8 + 3  # the three dropped ones were written again, through the public call
