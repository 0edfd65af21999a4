"""MLflow's own conventions (issue 25): `MLFLOW_TRACKING_URI` and `MLFLOW_EXPERIMENT_NAME` are
honoured (the config wins), and a tracking server that is down or refuses the credentials is one
clear error in seconds, before any work."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from geoeval.core.errors import GeoevalError
from geoeval.core.tracking.store import check_tracking_server, experiment_name_for, tracking_uri_for


def _tracking(uri=None, experiment=None):
    return SimpleNamespace(enabled=True, tracking_uri=uri, experiment_name=experiment)


def test_mlflow_variables_are_honoured_and_the_config_wins(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    assert tracking_uri_for(_tracking()).endswith("mlruns/mlflow.db")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.lab:5000")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "team-study")
    assert tracking_uri_for(_tracking()) == "http://mlflow.lab:5000"
    assert tracking_uri_for(_tracking("sqlite:///x.db")) == "sqlite:///x.db"
    assert experiment_name_for(_tracking(), "maptab") == "team-study"
    assert experiment_name_for(_tracking(experiment="mine"), "maptab") == "mine"


class _Server(BaseHTTPRequestHandler):
    status = 200

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"experiment": {"name": "Default"}}).encode()
        self.send_response(_Server.status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_tracking_server_that_answers_passes_one_that_refuses_or_is_down_fails_fast(server, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    _Server.status = 200
    check_tracking_server(_tracking(server))
    _Server.status = 401
    with pytest.raises(GeoevalError, match="refused the credentials .*HTTP 401.*MLFLOW_TRACKING_TOKEN"):
        check_tracking_server(_tracking(server))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # nothing listens on port 9
    import urllib.request

    asked = []
    real_urlopen = urllib.request.urlopen

    def counted(request, timeout=None):
        asked.append(timeout)
        return real_urlopen(request, timeout=timeout)

    monkeypatch.setattr(urllib.request, "urlopen", counted)
    with pytest.raises(GeoevalError, match=r"at http://127.0.0.1:9 \(MLFLOW_TRACKING_URI\) does not answer"):
        check_tracking_server(_tracking())
    assert asked == [5.0]  # one request, bounded by seconds, never retried (MLflow's retries take minutes)
    check_tracking_server(SimpleNamespace(enabled=False, tracking_uri="http://127.0.0.1:9"))  # tracking off: not asked


class _BasicAuthServer(BaseHTTPRequestHandler):
    """A tracking server behind basic auth (alice / s3cret-lab-pw); counts what it was sent."""

    seen: list[str | None] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        import base64

        auth = self.headers.get("Authorization")
        _BasicAuthServer.seen.append(auth)
        ok = auth == "Basic " + base64.b64encode(b"alice:s3cret-lab-pw").decode()
        body = json.dumps({"experiment": {"name": "Default"}}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_credentials_in_the_tracking_uri_are_sent_as_basic_auth_and_never_shown(monkeypatch):
    from geoeval.core.tracking.delivery import server_answers

    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(key, raising=False)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _BasicAuthServer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    try:
        _BasicAuthServer.seen = []
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://alice:s3cret-lab-pw@127.0.0.1:{port}")
        check_tracking_server(_tracking())  # accepted: the server got the URI's credentials
        assert len(_BasicAuthServer.seen) == 1 and _BasicAuthServer.seen[0].startswith("Basic ")
        assert server_answers(f"http://alice:s3cret-lab-pw@127.0.0.1:{port}")
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://alice:wrong-password@127.0.0.1:{port}")
        with pytest.raises(GeoevalError, match="refused the credentials") as refused:
            check_tracking_server(_tracking())
        assert "wrong-password" not in str(refused.value) and "alice" not in str(refused.value)
    finally:
        httpd.shutdown()
        httpd.server_close()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://alice:s3cret-lab-pw@127.0.0.1:9")  # down
    with pytest.raises(
        GeoevalError, match=r"at http://\*\*\*@127.0.0.1:9 \(MLFLOW_TRACKING_URI\) does not answer"
    ) as down:
        check_tracking_server(_tracking())
    assert "s3cret" not in str(down.value) and "Name or service" not in str(down.value)


def test_a_sweep_on_a_tracking_server_suggests_its_url_not_mlflow_ui_and_no_credentials(tmp_path):
    from geoeval.core.sweep.report import where_line

    line = where_line(None, tmp_path, _tracking("http://alice:s3cret-lab-pw@127.0.0.1:9"), None)
    assert "MLflow parent run" not in line  # no run id: nothing about MLflow
    import geoeval.core.sweep.report as report

    real = report._ui_links
    report._ui_links = lambda *a: []  # the server is not there: only the lines without it
    try:
        line = where_line(None, tmp_path, _tracking("http://alice:s3cret-lab-pw@127.0.0.1:9"), "abc123")
    finally:
        report._ui_links = real
    assert "s3cret" not in line and "mlflow ui --backend-store-uri" not in line
    assert "open http://***@127.0.0.1:9" in line
    local = where_line(None, tmp_path, _tracking(f"sqlite:///{tmp_path}/mlflow.db"), "abc123")
    assert "mlflow ui --backend-store-uri sqlite:///" in local


def test_an_end_kept_for_a_credentialed_server_holds_no_credentials_and_is_sent_with_them(tmp_path, monkeypatch):
    from geoeval.core.tracking import delivery

    uri = "http://alice:s3cret-lab-pw@127.0.0.1:9"
    end = delivery.JobEnd(
        tracking_uri=uri, artifact_location=None, run_id="r1", status="FINISHED", metrics={}, tags={}, artifacts=[],
        traces="none", max_traces=None, dataset_name="", model="", run_hash="", results_db="", log_paths=[],
    )  # fmt: skip
    path = delivery.keep_for_later(end, tmp_path)
    assert "s3cret" not in path.read_text() and "alice" not in path.read_text()
    sent_to: list[str] = []
    monkeypatch.setattr(delivery, "server_answers", lambda u, timeout_s=5.0: True)
    monkeypatch.setattr(delivery, "deliver", lambda e, wait_s: sent_to.append(e.tracking_uri) or {})
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert delivery.send_pending(tmp_path, quiet=True) == (0, 1)  # credentials not at hand: kept, said so
    assert sent_to == []
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert delivery.send_pending(tmp_path, quiet=True) == (1, 0)
    assert sent_to == [uri]
