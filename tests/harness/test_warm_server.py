"""`geoeval warm` (issue 45): a run started from the warm server prints, stores and exits as the
same command run cold; signals reach the run; a client whose Python differs, or a server whose
code changed on disk, runs cold and says why; and the message framing carries the descriptors."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import duckdb
import pytest

from geoeval.cli import warm
from geoeval.cli.main import STOP_GRACE_S
from geoeval.cli.warm_server import CodeSnapshot
from tests.conftest import geoeval_cmd

SMALL_RUN = (
    "model=table_baseline",
    "suite.categories=[edge_only]",
    "env.n_maps=1",
    "suite.n_per_category=3",
    "limit=3",
)


@pytest.mark.parametrize(
    ("args", "run"),
    [
        ([], True),
        (["limit=5", "model=oracle"], True),
        (["+experiment=maptab_resolution_sweep"], True),
        (["-m", "seed=1,2"], True),
        (["rescore", "limit=2"], True),
        (["results"], False),
        (["warm", "start"], False),
        (["maptab", "generate"], False),  # a suite's own command
        (["limit=5", "--help"], False),
    ],
)
def test_the_client_sends_runs_and_only_runs(args, run):
    assert warm.is_run(args) is run


def test_a_message_carries_its_descriptors_and_any_length():
    left, right = socket.socketpair()
    with left, right, open(os.devnull, "rb") as null:
        big = {"env": {f"K{i}": "v" * 100 for i in range(2000)}}  # ~230 kB: several reads
        sender = threading.Thread(target=warm.send_message, args=(left, big, [null.fileno()]))
        sender.start()  # the socket's buffer holds less than the message: read while it is sent
        got, fds = warm.receive_message(right, max_fds=3)
        sender.join()
        assert got == big and len(fds) == 1
        assert os.fstat(fds[0]).st_ino == os.fstat(null.fileno()).st_ino
        os.close(fds[0])
        left.close()
        assert warm.receive_message(right) == (None, [])  # the peer closed: no message


def test_the_code_snapshot_sees_an_edited_module(tmp_path, monkeypatch):
    module = tmp_path / "geoeval_warm_probe.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import geoeval_warm_probe  # noqa: F401  (a module the snapshot finds in sys.modules)

    try:
        snapshot = CodeSnapshot.now()
        assert snapshot.changed() is None
        stat = module.stat()
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        reason = snapshot.changed()
        assert reason is not None and str(module) in reason
    finally:
        sys.modules.pop("geoeval_warm_probe", None)


# ------------------------------------------------------------------ a server of the test's own


@pytest.fixture(scope="module")
def warm_env(tmp_path_factory):
    """The environment of a server started for this module (its socket in a folder of its own),
    and of the clients that use it; the server is stopped at the end."""
    folder = tmp_path_factory.mktemp("warm")
    env = {**os.environ, "GEOEVAL_WARM": "1", "GEOEVAL_WARM_DIR": str(folder)}
    with (folder / "server.log").open("w") as log:  # where `geoeval warm start` (not --foreground) logs
        server = subprocess.Popen(
            [*geoeval_cmd("warm", "start", "--foreground", "--idle-minutes", "30")],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 600  # the preload: ~10 s alone, minutes on a machine saturated by tests
    while time.monotonic() < deadline:
        status = subprocess.run(geoeval_cmd("warm", "status"), env=env, capture_output=True, text=True)
        if status.returncode == 0:
            break
        assert server.poll() is None, (folder / "server.log").read_text()
        time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("the warm server did not start")
    yield env
    subprocess.run(geoeval_cmd("warm", "stop"), env=env, capture_output=True, text=True, timeout=120)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()


def _served(env: dict, folder: Path) -> bool:
    """Whether the server's log names a run started in `folder`."""
    log = Path(env["GEOEVAL_WARM_DIR"]).glob("*.log")
    return any(f"(in {folder})" in path.read_text() for path in log)


def _overall(stdout: str) -> str:
    return stdout.split("## Overall", 1)[1].split("##", 1)[0]


@pytest.mark.slow  # a warm server (its preload) and four small runs
def test_a_warm_run_prints_stores_and_exits_as_the_cold_one(warm_env, tmp_path):
    warm_dir, cold_dir = tmp_path / "warm", tmp_path / "cold"
    warm_dir.mkdir()
    cold_dir.mkdir()
    hot = subprocess.run(
        geoeval_cmd(*SMALL_RUN), cwd=warm_dir, env=warm_env, capture_output=True, text=True, timeout=600
    )
    cold_env = {**warm_env, "GEOEVAL_WARM": "0"}
    cold = subprocess.run(
        geoeval_cmd(*SMALL_RUN), cwd=cold_dir, env=cold_env, capture_output=True, text=True, timeout=600
    )
    assert hot.returncode == cold.returncode == 0, hot.stderr[-3000:] + cold.stderr[-3000:]
    assert _served(warm_env, warm_dir) and not _served(warm_env, cold_dir)
    assert _overall(hot.stdout) == _overall(cold.stdout)  # the same scores, the same table
    for folder in (warm_dir, cold_dir):  # each run wrote its own folder: warehouse, MLflow store, logs
        with duckdb.connect(str(folder / "results" / "geoeval.duckdb"), read_only=True) as con:
            assert con.execute("SELECT status FROM runs").fetchall() == [("finished",)]
        assert (folder / "mlruns" / "mlflow.db").is_file() and any((folder / "logs").rglob("*.eval"))

    bad = ("model=table_baseline", "nonsense.key=3")
    hot = subprocess.run(geoeval_cmd(*bad), cwd=warm_dir, env=warm_env, capture_output=True, text=True, timeout=300)
    cold = subprocess.run(geoeval_cmd(*bad), cwd=cold_dir, env=cold_env, capture_output=True, text=True, timeout=300)
    assert hot.returncode == cold.returncode == 2
    assert hot.stderr == cold.stderr and "nonsense.key" in hot.stderr


@pytest.mark.slow
def test_sigterm_reaches_the_warm_run_which_stops_as_a_cold_one_does(warm_env, tmp_path):
    args = ("model=table_baseline", "suite.categories=[edge_only]", "env.n_maps=32", "suite.n_per_category=16")
    err = tmp_path / "stderr.txt"
    with err.open("w") as sink:
        proc = subprocess.Popen(geoeval_cmd(*args), cwd=tmp_path, env=warm_env, stdout=subprocess.DEVNULL, stderr=sink)
        deadline = time.monotonic() + 300
        while not re.search(r"\| *([5-9]|\d\d+)/512 \[", err.read_text(errors="replace")) and proc.poll() is None:
            if time.monotonic() > deadline:  # a bound on the wait, not an assertion on speed
                proc.kill()
                pytest.fail(f"no progress: {err.read_text()[-3000:]}")
            time.sleep(0.2)
        assert proc.poll() is None, err.read_text()[-3000:]  # still running when the signal comes
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=STOP_GRACE_S + 120)
    text = err.read_text(errors="replace")
    assert rc == 128 + signal.SIGTERM, text[-3000:]  # the signal reached the run, and its status the client
    assert _served(warm_env, tmp_path)
    if "the stop did not finish" in text:
        # Inspect's task cancellation can hang on a stop early in a run, cold as well (1 of 5 cold
        # runs of this command on a loaded 2-core machine): the watchdog ended it, as designed,
        # and the run is left for the next one to take over (issue 45's note)
        warnings.warn(f"the stop hung and was ended by its watchdog:\n{text[-6000:]}", stacklevel=1)
        return
    assert "geoeval: stopped by SIGTERM: the samples that finished are stored" in text
    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]


@pytest.mark.slow
def test_a_client_with_other_python_settings_runs_cold_and_says_why(warm_env, tmp_path):
    env = {**warm_env, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}  # not the server's: its imports may differ
    proc = subprocess.run(
        geoeval_cmd(*SMALL_RUN, "tracking=none"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "runs another Python setting" in proc.stderr and "this run starts without it" in proc.stderr
    assert not _served(warm_env, tmp_path)

    status = subprocess.run(geoeval_cmd("warm", "status"), env=warm_env, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0 and re.search(r"warm server pid \d+ .* \d+ runs started", status.stdout)
    none = {**warm_env, "GEOEVAL_WARM_DIR": str(tmp_path / "no-server")}
    status = subprocess.run(geoeval_cmd("warm", "status"), env=none, capture_output=True, text=True, timeout=120)
    assert status.returncode == 1 and "no warm server" in status.stdout
