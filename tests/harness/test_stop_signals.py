"""SIGTERM (a scheduler's stop, `kill`) stops a run as Ctrl-C does: one line on stderr, exit
128 + the signal, the samples that finished stored, the warehouse run `interrupted` and its MLflow
run KILLED (not left `running`), and the same command resumes the rest. With `runner=ray` too:
`ray.init` replaces the driver's SIGTERM handler (in Python and with its core worker's crash
handler in C), and such a run used to end with SIGABRT."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import duckdb
import pytest

from geoeval.cli.main import STOP_GRACE_S
from tests.conftest import geoeval_cmd

RUNNERS = pytest.mark.parametrize("runner", ["local", "ray"])


def _done(text: str) -> int:
    counts = [int(n) for n in re.findall(r"\| *(\d+)/\d+ \[", text)]
    return max(counts, default=0)


@pytest.mark.slow  # two whole LifePlanner runs
@RUNNERS
def test_sigterm_stops_the_run_cleanly_and_the_rerun_resumes(tmp_path, runner):
    args = ("+experiment=lifeplanner_offline", f"runner={runner}")
    err = tmp_path / "stderr.txt"
    with err.open("w") as sink:
        proc = subprocess.Popen(geoeval_cmd(*args), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=sink)
        deadline = time.monotonic() + 300
        while _done(err.read_text(errors="replace")) < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, err.read_text()[-3000:]  # still running when the signal comes
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=STOP_GRACE_S + 120)  # a hung stop ends itself, its stacks printed
    text = err.read_text(errors="replace")
    if "the stop did not finish" in text:  # ended by the watchdog: the run's records are checked below
        warnings.warn(f"the stop hung and was ended by its watchdog:\n{text[-6000:]}", stacklevel=1)
    assert rc == 128 + signal.SIGTERM, text[-3000:]
    assert "geoeval: stopped by SIGTERM: the samples that finished are stored" in text
    assert "Traceback" not in text
    assert "*** SIGTERM received" not in text  # Ray's crash handler (a stack dump) gave way to the driver's

    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
        stored = con.execute("SELECT count(*) FROM samples WHERE status = 'scored'").fetchone()[0]
    assert stored >= 5
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as store:
        assert store.execute("SELECT status FROM runs").fetchall() == [("KILLED",)]

    rerun = subprocess.run(geoeval_cmd(*args), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    with duckdb.connect(str(tmp_path / "results" / "geoeval.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("finished",)]
        assert con.execute("SELECT count(*) FROM samples WHERE status = 'scored'").fetchone()[0] >= stored
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as store:
        assert store.execute("SELECT status FROM runs").fetchall() == [("FINISHED",)]  # the same run, resumed


@pytest.mark.slow
@RUNNERS
def test_sigterm_stops_a_sweep_and_its_parent_run_and_the_rerun_finishes_it(tmp_path, runner):
    args = ("-m", "+experiment=lifeplanner_offline", f"runner={runner}", "seed=1,2")
    err = tmp_path / "stderr.txt"
    with err.open("w") as sink:
        proc = subprocess.Popen(geoeval_cmd(*args), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=sink)
        deadline = time.monotonic() + 300
        while "sweep 1/2 done" not in err.read_text(errors="replace") and proc.poll() is None:
            if time.monotonic() > deadline:  # a wait bound, not a speed target
                pytest.fail("the sweep's first job did not end:\n" + err.read_text()[-3000:])
            time.sleep(0.2)
        assert proc.poll() is None, err.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=STOP_GRACE_S + 120)  # a hung stop ends itself, its stacks printed
    text = err.read_text(errors="replace")
    if "the stop did not finish" in text:  # ended by the watchdog: the run's records are checked below
        warnings.warn(f"the stop hung and was ended by its watchdog:\n{text[-6000:]}", stacklevel=1)
    assert rc == 128 + signal.SIGTERM and "geoeval: stopped by SIGTERM" in text, text[-3000:]
    assert "*** SIGTERM received" not in text
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as store:
        runs = dict(store.execute("SELECT name, status FROM runs").fetchall())
    assert runs["sweep:lifeplanner_offline over seed"] == "KILLED" and runs["seed=1"] == "FINISHED"

    rerun = subprocess.run(geoeval_cmd(*args), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    with sqlite3.connect(tmp_path / "mlruns" / "mlflow.db") as store:
        rows = store.execute("SELECT name, status FROM runs ORDER BY name").fetchall()
    assert rows == [("seed=1", "FINISHED"), ("seed=2", "FINISHED"), ("sweep:lifeplanner_offline over seed", "FINISHED")]


HUNG_STOP = """
import threading, time
import geoeval.cli.main as cli
cli.STOP_GRACE_S = 1.0
threading.Thread(target=lambda: threading.Event().wait(), daemon=False).start()  # never ends
with cli._stop_signals():
    print("ready", flush=True)
    time.sleep(600)
"""


def test_a_stop_that_hangs_ends_the_process_with_every_threads_stack():
    """A SIGTERM whose unwinding waits on something that never ends (a thread the interpreter
    joins at exit) still ends the process, within the stop's grace, with 128 + the signal."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG_STOP], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)  # a bound on a hang, not a speed target
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "the stop did not finish within 1 s" in err and "most recent call first" in err, err
