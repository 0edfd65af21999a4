"""The hostile battery (issue 43): nothing paid twice, nothing forged, nothing outside the run
touched. Each fault is its own test: a lone surrogate in a tool call, truncated reply bodies,
forged and truncated stored trajectories, a YAML bomb, a logging handler aimed outside the run, a
full disk mid-run on a small filesystem, and kill -9 right after the model answered. Each asserts
what the issue asks of it: no collateral errors, no finished sample lost, nothing paid twice beyond
the stated bound, forged data detected, nothing written outside the run, every failure one line.
No test measures wall time: they wait on what they can observe (the server's request count, the
rows in the warehouse). The issue's budget with samples in flight (item 7) is tested on its own, in
`tests/cost/test_budget_in_flight.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import duckdb
import pytest

from tests.conftest import geoeval_cmd
from tests.harness.hostile_server import HostileServer

pytestmark = pytest.mark.slow  # whole runs of `python -m geoeval` against local servers

HOSTILE = "openai-api/local/hostile"
MAPTAB = ("suite.categories=[edge_only]", "env.n_maps=1")


def geoeval_args(*overrides: str, server: HostileServer | None = None, command: tuple[str, ...] = ()) -> list[str]:
    """`python -m geoeval [command]` with `overrides` (tracking off, the local runner), against `server` if given."""
    model = ("model=openai_api", f"model.name={HOSTILE}", f"model.base_url={server.base_url}") if server else ()
    return geoeval_cmd(*command, *model, *overrides, "tracking=none", "runner=local")


def run_geoeval(cwd: Path, *overrides: str, server: HostileServer | None = None, command: tuple[str, ...] = ()):
    """The same, run to its end (output captured, as text)."""
    return subprocess.run(
        geoeval_args(*overrides, server=server, command=command),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "LOCAL_API_KEY": "x"},
    )


def start_geoeval(cwd: Path, *overrides: str, server: HostileServer, stderr: int = subprocess.PIPE) -> subprocess.Popen:
    """The same, started and not waited for (its stderr piped, as text, unless told otherwise)."""
    return subprocess.Popen(
        geoeval_args(*overrides, server=server),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        env={**os.environ, "LOCAL_API_KEY": "x"},
    )


def samples(db: Path) -> list[tuple[str, str | None]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT status, error FROM samples ORDER BY sample_id").fetchall()


def one_line_failure(stderr: str) -> str:
    """The run's failure: exactly one `geoeval: error:` line, no traceback."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("geoeval: error:")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def test_a_lone_surrogate_in_a_tool_call_voids_no_sample(tmp_path):
    """In the called tool's name, its id and the reply's id: the react agent's samples are scored
    (3 of 3 were errors with `PydanticSerializationError`, exit 1)."""
    with HostileServer(schedule=["surrogate_call_id", "surrogate_tool_name"]) as server:
        proc = run_geoeval(tmp_path, "suite.solver=react", *MAPTAB, "suite.n_per_category=3", server=server)
        modes = set(server.counts)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {"surrogate_call_id", "surrogate_tool_name"} <= modes
    assert [status for status, _ in samples(tmp_path / "results" / "geoeval.duckdb")] == ["scored"] * 3


def test_truncated_replies_cost_at_most_max_retries_plus_one_requests_per_sample(tmp_path):
    """Every reply's body is cut short: each sample's call makes `max_retries` + 1 requests, and
    Inspect's sample retry (`retry_on_error=2`) sends it no more (it cost 3 x as much)."""
    with HostileServer(schedule=["partial_body"]) as server:
        proc = run_geoeval(
            tmp_path,
            *MAPTAB,
            "suite.n_per_category=2",
            "++model.config.max_retries=1",
            "retry_on_error=2",
            "preflight=false",
            "fail_on_error=false",
            server=server,
        )
        requests = server.n_requests
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert requests == 2 * (1 + 1)  # 2 samples, 1 call each: the request and its one retry
    stored = samples(tmp_path / "results" / "geoeval.duckdb")
    assert [status for status, _ in stored] == ["error", "error"]
    assert all(error.startswith("the model call failed after its retries: APIConnectionError") for _, error in stored)
    assert all("\n" not in error for _, error in stored)  # each error one line


def test_a_yaml_bomb_fails_in_one_line_before_anything_runs(tmp_path):
    """Ten lines of nested anchors expand to 3.5 billion strings: the run hung with no output."""
    lines = ["# @package _global_", 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "bomb.yaml").write_text("\n".join(lines) + "\n")
    proc = run_geoeval(tmp_path, "+experiment=bomb")
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line_failure(proc.stderr)
    assert "bomb.yaml: its anchors and aliases expand to more than" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["experiments"]  # nothing ran, nothing written


LOG_OUTSIDE = """# @package _global_
hydra:
  job_logging:
    version: 1
    handlers:
      file:
        class: logging.FileHandler
        filename: {victim}
        mode: w
    root:
      handlers: [file]
"""


def test_a_logging_handler_aimed_outside_the_run_is_refused(tmp_path):
    """`hydra.job_logging` with `mode: w` and a file outside the run truncated it to 0 bytes."""
    victim = tmp_path / "notes.txt"
    victim.write_text("a week of notes\n")
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "experiments" / "logs_elsewhere.yaml").write_text(LOG_OUTSIDE.format(victim=victim))
    proc = run_geoeval(project, "+experiment=logs_elsewhere", "model=oracle", "limit=2")
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line_failure(proc.stderr)
    assert f"hydra.job_logging.handlers.file.filename: '{victim}' is outside the run's output folder" in line
    assert victim.read_text() == "a week of notes\n"  # untouched
    assert sorted(p.name for p in project.iterdir()) == ["experiments"]  # and nothing ran


def test_forged_and_cut_stored_trajectories_are_errors_naming_their_samples(tmp_path):
    """A stored answer edited in the warehouse re-scored silently (`ema=1.0`, exit 0), and a cut
    trajectory was a raw traceback: each is now an error naming its sample, and a rescore still
    makes no request; the untouched sample is scored as before."""
    overrides = (*MAPTAB, "suite.n_per_category=3", "preflight=false")
    db = tmp_path / "results" / "geoeval.duckdb"
    with HostileServer(schedule=["valid"]) as server:
        first = run_geoeval(tmp_path, *overrides, server=server)
        assert first.returncode == 0, first.stderr[-3000:]
        with duckdb.connect(str(db)) as con:
            ids = [sid for (sid,) in con.execute("SELECT sample_id FROM trajectories ORDER BY sample_id").fetchall()]
            assert len(ids) == 3
            forged, cut, kept = ids
            con.execute(  # a better answer written in by hand
                "UPDATE trajectories SET calls = replace(CAST(calls AS VARCHAR), 'the route goes', 'the route is')::JSON "
                "WHERE sample_id = ?",
                [forged],
            )
            con.execute('UPDATE trajectories SET calls = \'[{"role": "agent"}]\' WHERE sample_id = ?', [cut])
        before = server.n_requests
        rescored = run_geoeval(tmp_path, *overrides, "scoring.protocol=paper", server=server, command=("rescore",))
        assert server.n_requests == before  # a rescore calls no model, forged or not
    assert rescored.returncode == 1, rescored.stderr[-3000:]  # 2 of 3 errors: past fail_on_error
    assert "run FAILED: 2 of 3 sample(s) errored" in one_line_failure(rescored.stderr)
    with duckdb.connect(str(db), read_only=True) as con:
        latest = con.execute(
            "SELECT sample_id, status, error FROM samples WHERE run_hash = "
            "(SELECT run_hash FROM runs ORDER BY created_at DESC LIMIT 1) ORDER BY sample_id"
        ).fetchall()
    by_id = {sid: (status, error) for sid, status, error in latest}
    assert by_id[kept] == ("scored", None)
    assert by_id[forged][0] == "error" and by_id[forged][1].startswith(
        f"the stored trajectory of sample {forged} (epoch 1) is not replayed: call 1 of 1 fails its integrity check"
    )
    assert (
        by_id[cut][0] == "error"
        and f"sample {cut} (epoch 1) is not replayed: its stored JSON is not a list" in by_id[cut][1]
    )
    assert all("\n" not in error for _, error in by_id.values() if error)


class TwoTurnServer(HostileServer):
    """Each sample's first request is answered with a call to a tool that does not exist (the
    react agent asks again: a second request carrying the first reply); second requests hang
    while `hang` is set (they are in flight when the run is killed), else are answered."""

    def __init__(self) -> None:
        super().__init__(schedule=["valid"])
        self.hang = True
        self.turns: list[int] = []  # per request: 1 (a first request) or 2

    def next_mode(self, body):
        super().next_mode(body)
        turn = 2 if any(m.get("role") == "tool" for m in body.get("messages") or []) else 1
        self.turns.append(turn)
        return "unknown_tool" if turn == 1 else ("timeout" if self.hang else "valid")


def test_kill_9_right_after_the_answers_pays_for_none_of_them_again(tmp_path):
    """Every answered call is journaled before Inspect sees it: killed (SIGKILL) while each
    sample's second call is in flight, the rerun sends only those (it sent every call again: 0
    of 6 answered samples had been stored)."""
    n = 3
    overrides = (
        "suite.solver=react",
        *MAPTAB,
        f"suite.n_per_category={n}",
        f"runner.max_samples={n}",
        "preflight=false",
    )
    with TwoTurnServer() as server:
        killed = start_geoeval(tmp_path, *overrides, server=server, stderr=subprocess.DEVNULL)  # not read: not piped
        # a second request carries the first reply: once all are here, every first reply was received
        while server.turns.count(2) < n and killed.poll() is None:
            threading.Event().wait(0.02)
        killed.kill()  # SIGKILL: no handler, no flush, no commit
        killed.wait()
        assert killed.returncode == -signal.SIGKILL and sorted(server.turns) == [1] * n + [2] * n
        server.hang = False
        before = len(server.turns)
        rerun = run_geoeval(tmp_path, *overrides, server=server)
        paid_again = server.turns[before:]
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert paid_again == [2] * n  # the calls in flight at the kill; none answered before it
    assert f"{n} sample(s) resume from the calls a killed run journaled" in rerun.stderr
    assert [status for status, _ in samples(tmp_path / "results" / "geoeval.duckdb")] == ["scored"] * n
    assert not (tmp_path / "results" / "work" / "journal").exists()  # in the warehouse now: journals gone


class HeldServer(HostileServer):
    """Answers validly, but holds request `hold_at` (and every later one) until `go` is set."""

    def __init__(self, hold_at: int) -> None:
        super().__init__(schedule=["valid"])
        self.hold_at = hold_at
        self.go = threading.Event()
        self.held = threading.Event()

    def next_mode(self, body):
        mode = super().next_mode(body)
        if self.n_requests >= self.hold_at:
            self.held.set()
            self.go.wait()
        return mode


@pytest.fixture
def small_disk(tmp_path):
    """A 72 MiB tmpfs (the run's free-space check asks for 64 MiB) mounted for the test."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (test_full_disk.py injects the error instead)")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=72m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 2**16)
                handle.flush()
        except OSError:  # no space left on device: full
            pass


def test_a_disk_that_fills_mid_run_keeps_every_finished_sample_and_the_rerun_finishes(small_disk):
    """The project (warehouse, journals, logs, outputs) on a small filesystem that fills while
    sample 5 of 12 is being answered: it was exit 1 with two tracebacks (`cannot rollback - no
    transaction is active`), the run left `running` and 0 samples kept. Now every sample that was
    answered is stored, the run is `interrupted`, one line says so, and the rerun (room again)
    finishes paying only for the samples that never got an answer."""
    n = 12
    overrides = (*MAPTAB, f"suite.n_per_category={n}", "runner.max_samples=1")
    with HeldServer(hold_at=1 + 5) as server:  # the preflight, then sample 5's request is held
        run = start_geoeval(small_disk, *overrides, server=server)
        server.held.wait()
        fill(small_disk)
        server.go.set()
        _, stderr = run.communicate()
        answered = server.n_requests - 1  # each answered request is one sample's answer
        assert run.returncode == 2, stderr[-3000:]
        line = one_line_failure(stderr)
        assert "is full" in line and "the finished samples are kept" in line and "rerun the same command" in line
        db = small_disk / "results" / "geoeval.duckdb"
        with duckdb.connect(str(db), read_only=True) as con:
            stored = dict(con.execute("SELECT status, count(*) FROM samples GROUP BY 1").fetchall())
            [(status,)] = con.execute("SELECT status FROM runs").fetchall()
        assert status == "interrupted"
        assert stored.get("scored", 0) == answered >= 5  # 0 finished samples lost
        assert stored.get("scored", 0) + stored.get("error", 0) == n  # the rest: errors, never paid for
        (small_disk / "filler").unlink()  # room again
        before = server.n_requests
        rerun = run_geoeval(small_disk, *overrides, server=server)
        paid = server.n_requests - before - 1  # without its preflight
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert paid == n - answered  # nothing answered before is paid again
    assert [status for status, _ in samples(db)] == ["scored"] * n
    assert not list(small_disk.rglob("*.reserve"))
