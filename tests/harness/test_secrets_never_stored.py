"""Secrets are never stored: a key planted in every place a user could put one (the config's
`model.args.api_key`, credentials inside the base URL, the provider's environment variable, a
command-line override) appears in no file the run wrote: the MLflow store and its artifacts,
the warehouse, the Inspect logs (their zipped members too), Hydra's saved config and the outputs.
The run goes through Inspect's real `openai-api` provider against a local server."""

from __future__ import annotations

import os
import subprocess
import threading
import zipfile
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import geoeval_cmd
from tests.harness.test_openai_provider import BaselineServer

CONFIG_KEY = "sk-PLANTEDconfigKEY1234567890"
URL_PASSWORD = "p4ssw0rdPLANTEDinURL"
ENV_KEY = "envPLANTEDsecretKEY42"
SECRETS = (CONFIG_KEY, URL_PASSWORD, ENV_KEY)


def _hits(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        blobs = [path.read_bytes()]
        if zipfile.is_zipfile(path):  # Inspect's .eval logs compress their members
            with zipfile.ZipFile(path) as archive:
                blobs += [archive.read(name) for name in archive.namelist()]
        for secret in SECRETS:
            if any(secret.encode() in blob for blob in blobs):
                found.append(f"{path.relative_to(root)}: {secret}")
    return found


@pytest.mark.slow
def test_a_planted_secret_is_in_no_file_the_run_wrote(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaselineServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    n_requests = len(BaselineServer.requests)
    try:
        proc = subprocess.run(
            geoeval_cmd(
                "model=openai_api",
                "model.name=openai-api/local/table-baseline",
                f"model.base_url=http://user:{URL_PASSWORD}@127.0.0.1:{port}/v1",
                f"+model.args.api_key={CONFIG_KEY}",
                "suite.categories=[edge_only]",
                "env.n_maps=1",
                "suite.n_per_category=2",
            ),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LOCAL_API_KEY": ENV_KEY},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(BaselineServer.requests) > n_requests  # the key really reached the server's side
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".eval" for p in written) and any(p.name == "mlflow.db" for p in written)
    assert any(".hydra" in p.parts for p in written) and any(p.suffix == ".duckdb" for p in written)
    assert _hits(tmp_path) == []
    assert not any(secret in proc.stdout + proc.stderr for secret in SECRETS)


SWEEP_KEY = "sk-PLANTEDsweepKEY9876543210"


@pytest.mark.slow
def test_a_key_given_to_a_sweep_is_in_no_file_the_sweep_wrote(tmp_path):
    """Hydra writes a sweep's config, every override included, to `<sweep dir>/multirun.yaml`
    before its first job: the key is blanked there as in each job's own files."""
    proc = subprocess.run(
        geoeval_cmd(
            "-m",
            "model=oracle",
            f"+model.args.api_key={SWEEP_KEY}",
            "suite.categories=[edge_only]",
            "env.n_maps=1",
            "suite.n_per_category=1",
            "runner=local",
            "suite.resolution=1,0.5",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    multirun = list(tmp_path.glob("multirun/*/*/multirun.yaml"))
    assert len(multirun) == 1 and "api_key" in multirun[0].read_text()  # the file is there, the key is not
    hits = [
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and SWEEP_KEY.encode() in p.read_bytes()
    ]
    assert hits == []
    assert SWEEP_KEY not in proc.stdout + proc.stderr


def test_a_key_copied_into_a_plain_field_stops_the_run_before_any_file(tmp_path):
    """`experiment_name: ${oc.env:...}` would put the key into the warehouse and MLflow, which
    redact by field name: the config is refused, naming the field, before Hydra writes anything."""
    proc = subprocess.run(
        geoeval_cmd("model=oracle", "experiment_name=${oc.env:GEOEVAL_PLANTED_API_KEY}"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "GEOEVAL_PLANTED_API_KEY": ENV_KEY},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "experiment_name: holds the value of a secret (the environment's GEOEVAL_PLANTED_API_KEY)" in proc.stderr
    assert ENV_KEY not in proc.stdout + proc.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
