"""The servers of a lab's deployment, started by the tests on 127.0.0.1: PostgreSQL (a cluster of
its own in a temporary folder), an `mlflow server` on it over HTTP, and a Ray head with its
dashboard (the Jobs API), and a reverse proxy that puts a tracking server behind basic auth.
Each is a context manager that stops what it started."""

from __future__ import annotations

import base64
import contextlib
import glob
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin() -> Path | None:
    """PostgreSQL's server programs (`.ci/run` installs Debian's `postgresql` where missing)."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


def _as_postgres_user() -> list[str]:
    """PostgreSQL refuses to run as root: run its programs as the `postgres` user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A PostgreSQL cluster on a free port with one database, `mlflow`; yields its SQLAlchemy URI."""
    bindir = postgres_bin()
    assert bindir is not None, "PostgreSQL is not installed (.ci/run installs Debian's postgresql)"
    root = Path(tempfile.mkdtemp(prefix="geoeval-pg-"))
    root.chmod(0o755)  # the postgres user must reach its folders
    data, run = root / "data", root / "run"
    for folder in (data, run):
        folder.mkdir()
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres")
    port = free_port()
    sudo = _as_postgres_user()
    try:
        subprocess.run(
            [*sudo, str(bindir / "initdb"), "-D", str(data), "-U", "geoeval", "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        subprocess.run(
            [
                *sudo,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                f"-p {port} -k {run} -c listen_addresses=127.0.0.1",
                "-l",
                str(run / "postgres.log"),
                "-w",
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        subprocess.run(
            [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "geoeval", "mlflow"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield f"postgresql+psycopg2://geoeval@127.0.0.1:{port}/mlflow"
    finally:
        subprocess.run(
            [*sudo, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], capture_output=True, timeout=60
        )
        shutil.rmtree(root, ignore_errors=True)


def wait_for_http(url: str, proc: subprocess.Popen | None = None, timeout_s: float = 240) -> None:
    deadline = time.time() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except Exception:
            if time.time() > deadline or (proc is not None and proc.poll() is not None):
                raise AssertionError(f"{url} did not answer") from None
            time.sleep(0.5)


class MlflowServer:
    """`mlflow server` on a backend store URI, stoppable and restartable on the same port (an
    outage, as a restarted or crashed tracking server gives)."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path) -> None:
        self.backend_uri, self.artifacts, self.log = backend_uri, artifacts, log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mlflow",
                    "server",
                    "--backend-store-uri",
                    self.backend_uri,
                    "--artifacts-destination",
                    self.artifacts.as_uri(),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--workers",
                    "1",
                ],
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        wait_for_http(f"{self.url}/health", self.proc)

    def stop(self, *, crash: bool = False) -> None:
        """Stops the server: gracefully (it finishes what it serves), or at once (`crash`)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL if crash else signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self.proc = None


@contextlib.contextmanager
def mlflow_server(backend_uri: str, folder: Path) -> Iterator[MlflowServer]:
    server = MlflowServer(backend_uri, folder / "artifacts", folder / "mlflow-server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def ray_head(folder: Path) -> Iterator[str]:
    """A Ray head with its dashboard (the Jobs API) on free ports; yields the dashboard URL. Its
    processes are stopped by their process group (never `ray stop`, which would stop every Ray
    on the machine)."""
    ray = Path(sys.executable).parent / "ray"
    port, dashboard = free_port(), free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    log = (folder / "ray-head.log").open("w")
    proc = subprocess.Popen(
        [
            str(ray),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",  # docs/team.md: a local test cluster on the loopback
            f"--port={port}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dashboard}",
            "--include-dashboard=true",
            "--num-cpus=2",
            "--disable-usage-stats",
        ],
        stdout=log,
        stderr=log,
        env=env,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{dashboard}"
    try:
        wait_for_http(f"{url}/api/version", proc)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()


@contextlib.contextmanager
def basic_auth_proxy(upstream_port: int, user: str, password: str) -> Iterator[int]:
    """A reverse proxy on a free loopback port that demands HTTP basic auth (`user`, `password`)
    and forwards every request to the tracking server on `upstream_port` (a 502 while that is
    down, as a lab's proxy answers); yields its port."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _forward(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="mlflow"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "host", "connection")
            }
            try:
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=120)
                conn.request(self.command, self.path, body=body or None, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                status, reply_headers = reply.status, reply.getheaders()
                conn.close()
            except OSError:
                status, reply_headers, data = 502, [], b"bad gateway"
            self.send_response(status)
            for key, value in reply_headers:
                if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
