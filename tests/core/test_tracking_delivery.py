"""A job's end on the tracking server (`geoeval.core.tracking.delivery`) and the trace backfill
(`traces/backfill.py`), against a real SQLite MLflow store: one trace per stored sample under the
mode and cap, none twice; a server that does not answer keeps the end in a file, and
`send_pending` completes the run later."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.tracking import delivery
from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking.traces.backfill import TRACE_SOURCE_TAG, backfill_traces
from geoeval.core.warehouse.store import Warehouse
from tests.core.conftest import spec_for
from tests.harness.lab_servers import free_port


def result(i: int, *, error: bool = False) -> SampleResult:
    return SampleResult(
        run_hash="h1",
        sample_id=f"s{i}",
        epoch=1,
        model="m",
        answer=f"answer {i}",
        completion=f"The answer is {i}.",
        scores={"ema": 1.0 if i % 2 else 0.0},
        error="provider refused" if error else None,
        dims=Dimensions(suite="maptab", task="route", level="1"),
    )


def recorded_waits(monkeypatch) -> list[float]:
    """The pauses that geoeval's delivery loop and urllib3's retries (MLflow's HTTP client) ask
    for, recorded instead of slept: what a call would wait is counted, not timed."""
    import urllib3.util.retry

    waits: list[float] = []
    clock = SimpleNamespace(**{**vars(time), "sleep": waits.append})
    monkeypatch.setattr(urllib3.util.retry, "time", clock)
    monkeypatch.setattr(delivery, "time", clock)
    return waits


def traces_of(store, run_id):
    client = tracking.client_for(spec_for(store))
    experiment = client.get_run(run_id).info.experiment_id
    return client.search_traces(locations=[experiment], run_id=run_id, max_results=1000)


def test_backfill_logs_one_trace_per_stored_sample_never_twice_and_counts_the_cap(store):
    run = tracking.JobRun.start(spec_for(store), "exp", run_hash="h1", run_name="r")
    results = [result(i) for i in range(5)] + [result(5, error=True)]
    counts = backfill_traces(spec_for(store), run.run_id, results[:2], [], mode="all", cap=None, dataset_name="maptab")
    assert (counts.logged, counts.skipped, counts.failed) == (2, 0, 0)
    # a resume: the first two are on the run already; a cap of 4 leaves two out, errors first
    counts = backfill_traces(spec_for(store), run.run_id, results, [], mode="all", cap=4, dataset_name="maptab")
    assert (counts.logged, counts.skipped, counts.failed) == (4, 2, 0)
    traces = traces_of(store, run.run_id)
    keys = sorted(t.info.tags["geoeval.sample_key"] for t in traces)
    assert keys == ["maptab:s0:1", "maptab:s1:1", "maptab:s2:1", "maptab:s5:1"]  # s5 errored: kept first
    assert {t.info.tags[TRACE_SOURCE_TAG] for t in traces} == {"warehouse"}  # no Inspect log was given
    errored = next(t for t in traces if t.info.tags["geoeval.sample_key"] == "maptab:s5:1")
    assert errored.info.state.value == "ERROR"
    assert "provider refused" in errored.info.tags["geoeval.error"]
    scored = next(t for t in traces if t.info.tags["geoeval.sample_key"] == "maptab:s1:1")
    feedback = {a.name: a.value for a in scored.info.assessments if hasattr(a, "value")}
    assert feedback["ema"] == 1.0
    # errors mode: only errored samples are wanted, and s5 has its trace
    counts = backfill_traces(spec_for(store), run.run_id, results, [], mode="errors", cap=None, dataset_name="maptab")
    assert (counts.logged, counts.skipped) == (1, 0)
    assert len(traces_of(store, run.run_id)) == 4


def test_an_end_kept_for_a_server_that_is_down_is_sent_later(store, tmp_path, monkeypatch):
    with Warehouse(tmp_path / "wh.duckdb", config_key="results_db") as wh:
        wh.write_results([result(i) for i in range(3)])
    run = tracking.JobRun.start(spec_for(store), "exp", run_hash="h1", run_name="r")
    end = delivery.JobEnd(
        tracking_uri=f"http://127.0.0.1:{free_port()}",  # nothing listens there: a server that is down
        artifact_location=None,
        run_id=run.run_id,
        status="FINISHED",
        metrics={"ema": 0.5, "ds": math.nan},
        tags={"mlflow.note.content": "the summary"},
        artifacts=[],
        traces="all",
        max_traces=500,
        dataset_name="maptab",
        model="m",
        run_hash="h1",
        results_db=str(tmp_path / "wh.duckdb"),
        log_paths=[],
        keys=[("s0", 1), ("s1", 1), ("s2", 1)],
        progress=[3, 0, 3],
    )
    # the live progress stopped at 1 of 3 when the server went down
    tracking.log_metrics(run.client, run.run_id, tracking.progress_metrics(1, 0, 3), step=1)
    waits = recorded_waits(monkeypatch)
    kept = delivery.end_job_run(run, end, wait_s=0, work_dir=tmp_path / "work")
    # MLflow's own retries (minutes by default) are not waited out: a couple of retries, seconds in all
    assert len(waits) <= 4 and sum(waits) < 60, waits
    assert kept == tmp_path / "work" / "tracking_pending" / f"{run.run_id}.json"
    assert run.status == "RUNNING"  # the server has not heard of the end yet

    # a later command, once the server answers (here: the same store over its real URI)
    kept.write_text(kept.read_text().replace(end.tracking_uri, spec_for(store).tracking_uri))
    assert delivery.send_pending(tmp_path / "work") == (1, 0)
    assert not kept.exists()
    done = tracking.client_for(spec_for(store)).get_run(run.run_id)
    assert done.info.status == "FINISHED"
    assert done.data.metrics["ema"] == 0.5 and math.isnan(done.data.metrics["ds"])
    assert done.data.metrics["traces_logged"] == 3.0
    assert done.data.metrics["progress/samples_done"] == 3.0  # the end's point, not the live one
    assert done.data.tags["mlflow.note.content"] == "the summary"
    assert len(traces_of(store, run.run_id)) == 3
    assert delivery.send_pending(tmp_path / "work") == (0, 0)  # nothing left


def test_an_error_from_a_server_that_answers_is_raised_not_waited_out(store, tmp_path):
    end = delivery.JobEnd(
        tracking_uri=spec_for(store).tracking_uri,
        artifact_location=None,
        run_id="0" * 32,  # no such run
        status="FINISHED",
        metrics={},
        tags={},
        artifacts=[],
        traces="none",
        max_traces=None,
        dataset_name="maptab",
        model="m",
        run_hash="h1",
        results_db=str(tmp_path / "wh.duckdb"),
        log_paths=[],
    )
    with pytest.raises(Exception, match="(?i)run"):
        delivery.deliver(end, wait_s=300)


def test_a_sweep_parent_end_is_kept_only_when_the_server_is_down(store, tmp_path):
    down = SimpleNamespace(tracking_uri=f"http://127.0.0.1:{free_port()}", artifact_location=None)
    kept = delivery.keep_sweep_end(
        down,
        "p" * 32,
        ConnectionError("refused"),
        metrics={"sweep/jobs": 2.0},
        artifacts=[],
        status="FINISHED",
        tags={"mlflow.note.content": "the sweep table"},
        work_dir=tmp_path,
    )
    assert kept.is_file() and '"traces": "none"' in kept.read_text()
    with pytest.raises(ValueError, match="a bug"):  # a server that answers: not an outage, raised as it is
        delivery.keep_sweep_end(
            spec_for(store),
            "p" * 32,
            ValueError("a bug"),
            metrics={},
            artifacts=[],
            status="FINISHED",
            tags={},
            work_dir=tmp_path,
        )


@contextlib.contextmanager
def health_server(port: int) -> Iterator[None]:
    """A tracking server that is back: its `/health` answers 200."""

    class Health(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_outage_is_one_warning_line_whoever_meets_it_and_the_next_outage_another(capsys):
    """Traces, progress and the job's end that fail during one outage print one line between them
    (`note_outage`), not one per trace; once the server has answered, a new outage is said again."""
    port = free_port()
    uri = f"http://alice:s3cret-lab-pw@127.0.0.1:{port}"
    assert all(delivery.in_outage(uri) for _ in range(13))  # 13 traces failing in one outage
    delivery.note_outage(uri)  # the job's end, waiting on it
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "does not answer" in lines[0] and "s3cret" not in lines[0], lines
    with health_server(port):  # the server is back
        assert not delivery.in_outage(uri)
    assert delivery.in_outage(uri) and delivery.in_outage(uri)  # down again: a new outage, one line
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_failure_the_outage_caused_is_not_warned_about_once_the_server_is_back(capsys):
    """MLflow retries a request for a while before it fails, so a trace written during an outage
    may fail after the server is back (a proxy in front of it answered 502 meanwhile): that
    failure belongs to the outage (one line, said already), while a refusal is warned about."""
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    gateway = RuntimeError(
        f"API request to {uri}/api/3.0/mlflow/traces failed with exception HTTPConnectionPool(host='127.0.0.1', "
        f"port={port}): Max retries exceeded with url: /api/3.0/mlflow/traces (Caused by ResponseError('too many "
        "502 error responses'))"
    )
    refused = RuntimeError("RESOURCE_DOES_NOT_EXIST: Run 'abc' not found")
    assert delivery.in_outage(uri)  # the progress meets the outage first: its one line
    with health_server(port):
        assert not delivery.in_outage(uri)  # the server is back
        assert delivery.outage_explains(uri, [gateway, gateway])  # traces that failed meanwhile
        assert not delivery.outage_explains(uri, [gateway, refused])  # a refusal is an error
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "does not answer" in lines[0], lines
    assert delivery.is_unavailable(ConnectionRefusedError()) and not delivery.is_unavailable(refused)
