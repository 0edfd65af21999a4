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
