"""A job's end on the tracking server, whatever the server does (`end_job_run`), and what a server
that was down missed, sent later (`send_pending`).

Finished samples never wait on the tracking server: the warehouse writer stores them, and the
run's progress goes to MLflow from a courier thread of its own (`runs.JobRun.progress`). What
needs the server is the job's end: its traces (one per stored sample, `traces/backfill.py`), its
final metrics, tags and artifacts, and its status. When the server does not answer then, the end
is tried again, with growing pauses, for `tracking.outage_wait_s` seconds; an outage that outlasts
that leaves the end in a file (`<work_dir>/tracking_pending/<run id>.json`: the metrics, tags,
artifact paths, status and which samples to trace) and the run exits with status 4
(`EXIT_TRACKING_PENDING`; the scores were computed and stored, only the tracking server lacks
them). The next geoeval job on that tracking store, or `geoeval runs --sync`, sends it: the run
is then complete on the server as if it had never been down. MLflow's own HTTP retries (minutes
by default) are shortened for geoeval's process (`MLFLOW_HTTP_REQUEST_MAX_RETRIES`,
`_BACKOFF_FACTOR`, `_TIMEOUT`, unless set), since these retries take their place.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from geoeval.core.config.secrets import REDACTED, redact_url, redact_urls
from geoeval.core.errors import GeoevalError
from geoeval.core.text import clean_text

#: the exit status of a run whose scores are stored but whose tracking server missed its end
EXIT_TRACKING_PENDING = 4
PENDING_DIR = "tracking_pending"

#: MLflow's HTTP retry settings for geoeval's process (MLflow's defaults retry for minutes)
MLFLOW_HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}


class TrackingUnavailable(GeoevalError):
    """The tracking server stopped answering and did not come back within the wait."""


def shorten_mlflow_retries() -> None:
    """MLflow's HTTP retries shortened (unless set), and urllib3's line per retry silenced: during
    an outage it prints one per request and attempt, burying geoeval's own one-line warning."""
    for key, value in MLFLOW_HTTP_DEFAULTS.items():
        os.environ.setdefault(key, value)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


def server_answers(uri: str, timeout_s: float = 5.0) -> bool:
    """Whether the tracking store at `uri` answers now: an http(s) server answers any request
    below HTTP 500 (its `/health`); any other store (a file, a database URI) counts as answering,
    so its errors are raised as errors, not waited out."""
    from geoeval.core.tracking.store import server_request

    if not uri.startswith(("http://", "https://")):
        return True
    try:
        with urllib.request.urlopen(server_request(uri, "/health"), timeout=timeout_s):
            answers = True
    except urllib.error.HTTPError as exc:
        answers = exc.code < 500
    except (urllib.error.URLError, OSError, ValueError):
        answers = False
    if answers and uri in _OUTAGES:
        _OUTAGES.discard(uri)  # the outage is over: the next one is said again
        _ENDED.add(uri)
    return answers


#: tracking servers this process has said are down, until they answer again
_OUTAGES: set[str] = set()
#: tracking servers whose outage was said and is over (a failure it caused may still be reported)
_ENDED: set[str] = set()
# what a failed request says when the server did not answer it: no connection, or a gateway's
# 502/503/504 (a proxy in front of a stopped server), after MLflow's own retries
_UNAVAILABLE = re.compile(
    r"Max retries exceeded|Connection (?:refused|reset|aborted)|RemoteDisconnected|Name or service not known|"
    r"timed? ?out|too many 50[234] error|\b(?:HTTP|status(?: code)?|code)\W*50[234]\b|Bad Gateway|"
    r"Service Unavailable|Gateway Time-?out",
    re.IGNORECASE,
)


def is_unavailable(exc: BaseException) -> bool:
    """Whether a failed request failed because the server did not answer it (no connection, a
    timeout, a gateway's 502/503/504), not because it refused it."""
    return isinstance(exc, (ConnectionError, TimeoutError)) or bool(_UNAVAILABLE.search(str(exc)))


def outage_explains(uri: str, errors: Iterable[BaseException] = ()) -> bool:
    """Whether failures on `uri` are the tracking server's outage, to be said once for the whole
    outage (`note_outage`), not warned about one by one: the server does not answer now, or
    every failure says it did not answer then. MLflow retries a request for a while before it
    fails, so the server may be back by the time the failure is known; an outage already said
    and over then stays said."""
    errors = list(errors)
    if errors and all(is_unavailable(e) for e in errors):
        if uri not in _ENDED:
            note_outage(uri)
        return True
    return in_outage(uri)


def note_outage(uri: str) -> None:
    """The one warning line of an outage of the tracking server at `uri`, printed by whatever
    meets it first (a trace, the progress, the job's end): the others stay silent until the
    server has answered again, so an outage is one line, not one per trace."""

    if uri in _OUTAGES:
        return
    _OUTAGES.add(uri)
    print(
        f"[geoeval] warning: the MLflow tracking server at {redact_url(uri)} does not answer; the scores are "
        "stored; its traces, progress and the run's end are sent when it answers (the end waits up to "
        "tracking.outage_wait_s, then is kept for the next run or `geoeval runs --sync`)",
        file=sys.stderr,
        flush=True,
    )


def in_outage(uri: str) -> bool:
    """Whether a failure on `uri` is an outage (the server does not answer now; said once,
    `note_outage`) rather than an error to warn about."""
    if server_answers(uri):
        return False
    note_outage(uri)
    return True


@dataclass
class JobEnd:
    """Everything the end of one job's MLflow run needs, in a form that can wait in a file."""

    tracking_uri: str
    artifact_location: str | None
    run_id: str
    status: str
    metrics: dict[str, float]
    tags: dict[str, str]
    artifacts: list[str]
    traces: str  # all | errors | none
    max_traces: int | None
    dataset_name: str
    model: str
    run_hash: str
    results_db: str
    log_paths: list[str]
    keys: list[tuple[str, int]] | None = None  # the job's samples (None: every sample of the run)
    progress: list[int] | None = None  # the last progress point: done, errors, total
    created_at: float = field(default_factory=time.time)

    def tracking(self) -> Any:
        return SimpleNamespace(enabled=True, tracking_uri=self.tracking_uri, artifact_location=self.artifact_location)


def _send(end: JobEnd, live_run: Any | None, results: list[Any] | None) -> dict[str, float]:
    """One attempt at the whole end: traces first (their counts are metrics of the end), then
    the run's metrics, tags, artifacts and status. `results`: the job's own samples (None: read
    from the warehouse). Returns the trace counts as metrics."""
    from geoeval.core.tracking.runs import JobRun
    from geoeval.core.tracking.traces.backfill import backfill_traces
    from geoeval.core.warehouse.store import Warehouse

    trace_metrics: dict[str, float] = {}
    if end.traces != "none":
        if results is None:  # a kept end: the job's samples, read back from the warehouse
            with Warehouse(end.results_db, config_key="results_db") as wh:
                results = wh.results(end.run_hash)
            if end.keys is not None:
                keys = {(str(k[0]), int(k[1])) for k in end.keys}
                results = [r for r in results if (r.sample_id, r.epoch) in keys]
        counts = backfill_traces(
            end.tracking(),
            end.run_id,
            results,
            end.log_paths,
            mode=end.traces,
            cap=end.max_traces,
            dataset_name=end.dataset_name,
            model=end.model,
        )
        if counts.failed and not server_answers(end.tracking_uri):
            raise ConnectionError(f"{counts.failed} trace(s) not written: the tracking server stopped answering")
        trace_metrics = counts.as_metrics()
    run = live_run if live_run is not None else JobRun.attach(end.tracking(), end.run_id)
    run.send_end(
        {**end.metrics, **trace_metrics}, end.artifacts, status=end.status, tags=end.tags or None, progress=end.progress
    )
    return trace_metrics


def deliver(
    end: JobEnd, *, wait_s: float, live_run: Any | None = None, results: list[Any] | None = None
) -> dict[str, float]:
    """Sends the end, trying again while the server does not answer, for up to `wait_s` seconds;
    raises `TrackingUnavailable` after that. An error from a server that answers is raised as it
    is (a bug or a refusal is not waited out). `results`: the job's stored samples (read from the
    warehouse when None)."""

    shorten_mlflow_retries()
    deadline = time.monotonic() + wait_s
    pause = 1.0
    while True:
        try:
            return _send(end, live_run, results)
        except Exception as exc:
            if server_answers(end.tracking_uri):
                raise
            reason = clean_text(redact_urls(f"{type(exc).__name__}: {exc}"), max_chars=200)
            if time.monotonic() + pause > deadline:
                raise TrackingUnavailable(
                    f"the MLflow tracking server at {redact_url(end.tracking_uri)} stopped answering ({reason})"
                ) from None
            note_outage(end.tracking_uri)  # said once an outage (a trace may have said it already)
            time.sleep(pause)
            pause = min(2 * pause, 10.0)


def keep_for_later(end: JobEnd, work_dir: str | Path) -> Path:
    """Writes `end` where `send_pending` finds it (atomically: a whole file or none)."""
    folder = Path(work_dir) / PENDING_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{end.run_id}.json"
    tmp = path.with_suffix(".tmp")

    # the file never holds the URI's credentials: `send_pending` takes them from the URI it runs on
    kept = {**asdict(end), "tracking_uri": redact_url(end.tracking_uri)}
    tmp.write_text(json.dumps(kept, indent=1, default=str))
    os.replace(tmp, path)
    return path


def end_job_run(
    live_run: Any, end: JobEnd, *, wait_s: float, work_dir: str | Path, results: list[Any] | None = None
) -> Path | None:
    """Ends a job's live run (`runs.JobRun`): its background work stops, then the end is sent,
    or, when the server stays down past `wait_s`, kept in a file for later. Returns that file
    (None when the server has it all)."""
    live_run.stop_background()
    try:
        deliver(end, wait_s=wait_s, live_run=live_run, results=results)
        return None
    except TrackingUnavailable as exc:
        path = keep_for_later(end, work_dir)
        print(
            f"[geoeval] warning: {exc}; this run's end (metrics, artifacts, traces, status) is kept in {path} "
            "and sent by the next geoeval run on this tracking store, or by `geoeval runs --sync`",
            file=sys.stderr,
        )
        return path


def keep_sweep_end(
    tracking_spec: Any,
    run_id: str,
    error: BaseException,
    *,
    metrics: dict[str, float],
    artifacts: list[str],
    status: str,
    tags: dict[str, str],
    work_dir: str | Path,
) -> Path:
    """A sweep parent whose end failed: kept for later when the tracking server is down (the
    error is raised again when it answers: that is not an outage). Returns the kept file."""
    from geoeval.core.tracking.store import tracking_uri_for

    uri = tracking_uri_for(tracking_spec)
    if server_answers(uri):
        raise error
    end = JobEnd(
        tracking_uri=uri,
        artifact_location=getattr(tracking_spec, "artifact_location", None),
        run_id=run_id,
        status=status,
        metrics=metrics,
        tags=tags,
        artifacts=[str(p) for p in artifacts],
        traces="none",  # a sweep parent holds no samples: its jobs hold their traces
        max_traces=None,
        dataset_name="",
        model="",
        run_hash="",
        results_db="",
        log_paths=[],
    )
    path = keep_for_later(end, work_dir)
    print(
        f"[geoeval] warning: the sweep's MLflow run {run_id} could not be ended (the tracking server does not "
        f"answer); its end is kept in {path} and sent by the next geoeval run or `geoeval runs --sync`",
        file=sys.stderr,
    )
    return path


def _credentialed(kept: str, tracking_uri: str | None) -> str | None:
    """The URI a kept end goes to: `kept` (written with its credentials redacted), with them
    back from the URI this process tracks to (`tracking_uri`, else `MLFLOW_TRACKING_URI`) when
    that is the same server; None when credentials were kept out and none is at hand."""

    for candidate in (tracking_uri, os.environ.get("MLFLOW_TRACKING_URI")):
        if candidate and redact_url(candidate) == redact_url(kept):
            return candidate
    netloc = kept.partition("://")[2].split("/", 1)[0]
    return None if netloc.startswith(f"{REDACTED}@") else kept


def send_pending(work_dir: str | Path, tracking_uri: str | None = None, *, quiet: bool = False) -> tuple[int, int]:
    """Sends what a tracking server missed (`keep_for_later`'s files under `work_dir`), for
    `tracking_uri` only when given; a server still down keeps its files. Returns (sent, left)."""

    folder = Path(work_dir) / PENDING_DIR
    if not folder.is_dir():
        return 0, 0
    sent = left = 0
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
            data["keys"] = [tuple(k) for k in data["keys"]] if data.get("keys") is not None else None
            end = JobEnd(**data)
        except (OSError, ValueError, TypeError) as exc:
            print(f"[geoeval] warning: {path} cannot be read ({exc}); left in place", file=sys.stderr)
            left += 1
            continue
        if tracking_uri is not None and redact_url(end.tracking_uri) != redact_url(tracking_uri):
            continue
        uri = _credentialed(end.tracking_uri, tracking_uri)
        if uri is None:
            print(
                f"[geoeval] warning: {path} is for the tracking server {end.tracking_uri}, whose credentials are "
                "not kept: run `geoeval runs --sync` with MLFLOW_TRACKING_URI set to it (credentials included)",
                file=sys.stderr,
            )
            left += 1
            continue
        end.tracking_uri = uri
        if not server_answers(end.tracking_uri):
            left += 1
            continue
        try:
            counts = deliver(end, wait_s=0)
        except Exception as exc:  # noqa: BLE001 - kept for the next try, said why
            print(
                f"[geoeval] warning: MLflow run {end.run_id}: what the tracking server missed is not sent yet "
                f"({clean_text(redact_urls(str(exc)), max_chars=200)}); kept in {path}",
                file=sys.stderr,
            )
            left += 1
            continue
        path.unlink(missing_ok=True)
        sent += 1
        if not quiet:
            print(
                f"[geoeval] MLflow run {end.run_id} ({end.status}): sent what the tracking server missed "
                f"({int(counts.get('traces_logged', 0))} trace(s) on the run)",
                file=sys.stderr,
            )
    return sent, left
