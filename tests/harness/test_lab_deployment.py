"""A lab's deployment, as the README's team setup runs it: an MLflow tracking server on PostgreSQL
over HTTP, researchers who set only `MLFLOW_TRACKING_URI`, a run killed mid-way and resumed, the
tracking server stopped for a while mid-run, a colleague rerunning a config on a shared
warehouse, whose MLflow user is theirs, and a third who reads her own warehouse with the shared
one (a run in both merged by sample); and a Ray cluster that runs geoeval through `ray job submit`.
Alice's tracking URI holds her credentials (`http://alice:<password>@...`: the server is behind a
proxy that demands basic auth); they are in no output and no file.

Checked: every run FINISHED on the server, one trace per stored sample (the killed invocation's,
the reused ones' and those finished during the outage included), nothing in a local `mlruns/`, the
warehouse stored samples while the tracking server was down, the colleague got an MLflow run of
their own and the warehouse says who ran what; the outage was one warning line; the Ray job's results are read with `geoeval
results` from the submitting directory."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from geoeval.core.warehouse.store import Warehouse
from tests.conftest import geoeval_cmd
from tests.harness.lab_servers import basic_auth_proxy, mlflow_server, postgres, postgres_bin, ray_head

pytestmark = pytest.mark.slow

MAPTAB = ("suite=maptab", "model=table_baseline", "runner=local", "env.n_maps=1")
PASSWORD = "s3cret-lab-pw"
SLOW_MAPTAB = (*MAPTAB, "suite.n_per_category=3", "+model.args.delay_s=1.5", "runner.max_samples=1")  # 12 samples
LIFEPLANNER = ("+experiment=lifeplanner_offline", "env.n_places=300", "env.n_notes=2000", "suite.n_cases=11", "limit=3")


def researcher_env(server_url: str, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "GEOEVAL_", "RAY_"))}
    return {**env, "MLFLOW_TRACKING_URI": server_url, "GEOEVAL_USER": name}


def run(cwd: Path, env: dict[str, str], *overrides: str, timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(geoeval_cmd(*overrides), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def stored(db: Path) -> dict[str, int]:
    """Samples per run hash in the warehouse, read as any geoeval reader does (under the file's
    lock, which a job's writer lets go of between its commits)."""
    with Warehouse(db, read_only=True) as wh:
        return dict(wh.query("SELECT run_hash, count(*) FROM samples GROUP BY run_hash")[1])


def wait_for_progress(proc: subprocess.Popen, at_least: int, of: int, timeout_s: float = 300) -> str:
    """Reads the run's stderr until its progress bar shows `at_least` of `of` samples."""
    buf, deadline = "", time.time() + timeout_s
    while time.time() < deadline:
        chunk = proc.stderr.read(1)
        if not chunk:
            break
        buf += chunk
        counts = re.findall(rf"(\d+)/{of}\b", buf[-300:])
        if counts and int(counts[-1]) >= at_least:
            return buf
    raise AssertionError(f"no progress to {at_least}/{of}: {buf[-2000:]}")


def server_view(url: str) -> list[dict]:
    """Every run on the server: status, kind, run hash, and how many traces it holds."""
    code = """
import json, sys
from mlflow import MlflowClient
client = MlflowClient(sys.argv[1])
out = []
for exp in client.search_experiments():
    for r in client.search_runs([exp.experiment_id], max_results=500):
        traces, token = [], None
        while True:
            page = client.search_traces(locations=[exp.experiment_id], run_id=r.info.run_id, include_spans=False,
                                        max_results=500, page_token=token)
            traces += list(page)
            token = page.token
            if not token:
                break
        out.append({"experiment": exp.name, "name": r.info.run_name, "id": r.info.run_id, "status": r.info.status,
                    "kind": r.data.tags.get("geoeval.kind"), "run_hash": r.data.tags.get("geoeval.run_hash"),
                    "user": r.data.tags.get("mlflow.user"), "traces": len(traces),
                    "trace_keys": sorted({t.info.tags.get("geoeval.sample_key") for t in traces}),
                    "parent": r.data.tags.get("mlflow.parentRunId")})
print(json.dumps(out))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    proc = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(postgres_bin() is None, reason="PostgreSQL is not installed (.ci/run installs it)")
def test_a_lab_on_a_tracking_server_loses_no_run_no_trace_and_no_sample(tmp_path, capfd):
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    alice.mkdir()
    bob.mkdir()
    with (
        postgres() as backend,
        mlflow_server(backend, tmp_path) as server,
        basic_auth_proxy(server.port, "alice", PASSWORD) as proxy,
    ):
        # alice's server is behind basic auth, her credentials in the URI (MLflow sends them)
        env = researcher_env(f"http://alice:{PASSWORD}@127.0.0.1:{proxy}", "alice")
        refused = subprocess.run(
            geoeval_cmd(*MAPTAB), cwd=alice, env=researcher_env(f"http://127.0.0.1:{proxy}", "alice"),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert refused.returncode == 2 and "refused the credentials (HTTP 401)" in refused.stderr, refused.stderr
        # a single run, a sweep (two points whose samples are the same: the second reuses them)
        # and LifePlanner, with only MLFLOW_TRACKING_URI set
        outputs = [run(alice, env, *MAPTAB, "suite.n_per_category=2")]
        sweep = run(alice, env, "-m", *MAPTAB, "suite.n_per_category=1", "suite.resolution=1,0.5")
        assert "MLflow parent run:" in sweep.stdout
        assert f"open http://***@127.0.0.1:{proxy}" in sweep.stdout and "mlflow ui" not in sweep.stdout
        outputs += [sweep, run(alice, env, *LIFEPLANNER)]

        # a run killed mid-way (kill -9: nothing is ended), then resumed; the tracking server is
        # stopped while the resumed run goes on, and comes back before it ends
        killed = subprocess.Popen(
            geoeval_cmd(*SLOW_MAPTAB), cwd=alice, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        wait_for_progress(killed, 3, 12)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(30)
        db = alice / "results" / "geoeval.duckdb"
        before_resume = sum(stored(db).values())
        resumed = subprocess.Popen(
            geoeval_cmd(*SLOW_MAPTAB, "tracking.outage_wait_s=300"),
            cwd=alice,
            env=env,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        buf = wait_for_progress(resumed, 6, 12)
        rest: list[str] = []  # read on: a pipe nobody reads would block the run's own output
        drain = threading.Thread(target=lambda: rest.append(resumed.stderr.read()), daemon=True)
        drain.start()
        server.stop(crash=True)
        at_outage = sum(stored(db).values())
        assert before_resume < at_outage < before_resume + 9, "the resumed run ended before the outage began"
        deadline = time.time() + 240
        while sum(stored(db).values()) < at_outage + 2 and resumed.poll() is None and time.time() < deadline:
            time.sleep(2)  # a reader that never lets go would keep the writer out: read now and then
        during_outage = sum(stored(db).values())
        server.start()
        code = resumed.wait(600)
        drain.join(60)
        resumed_err = buf + "".join(rest)
        assert code == 0, resumed_err[-4000:]
        assert during_outage >= at_outage + 2, "the warehouse stalled while the tracking server was down"
        # the outage is one warning line (traces, progress and the end that met it say nothing more)
        noise = ("does not answer", "not written", "not logged", "MLflow traces")
        warnings = [line for line in resumed_err.splitlines() if "warning" in line and any(n in line for n in noise)]
        assert len(warnings) == 1 and "does not answer" in warnings[0], "\n".join(warnings)

        # a colleague reruns a config on the shared warehouse: nothing is evaluated again, and
        # the rerun is an MLflow run of their own
        shared = f"results_db={db}"
        again = run(bob, researcher_env(server.url, "bob"), *MAPTAB, "suite.n_per_category=2", shared)
        assert "8 sample(s) already scored, 0 to run" in again.stderr
        # carol ran the same config in a warehouse of her own: read with the shared one, the run
        # is there once, merged by sample (its 8 samples in both, counted once), and said so
        carol_db = tmp_path / "carol.duckdb"
        run(bob, researcher_env(server.url, "carol"), *MAPTAB, "suite.n_per_category=2", f"results_db={carol_db}",
            "tracking=none")  # fmt: skip
        merged = run(bob, env, "results", "--db", str(db), "--db", str(carol_db), "--format", "json")
        assert "merged by sample, 8 distinct sample(s); 8 stored more than once counted once" in merged.stderr
        assert sum(1 for row in json.loads(merged.stdout) if row["n"] == 8) == 1, merged.stdout

        runs = server_view(server.url)
        counts = stored(db)
        lifeplanner_db = counts  # LifePlanner wrote to alice's same warehouse
        assert runs and all(r["status"] == "FINISHED" for r in runs), [(r["name"], r["status"]) for r in runs]
        jobs = [r for r in runs if r["kind"] == "job"]
        assert len(jobs) == 6, [r["name"] for r in jobs]  # single, 2 sweep points, LifePlanner, killed+resumed, bob
        for job in jobs:  # one trace per stored sample, distinct samples
            assert job["traces"] == lifeplanner_db[job["run_hash"]] == len(job["trace_keys"]), job
        slow = [j for j in jobs if j["traces"] == 12]
        assert len(slow) == 1  # the killed run and its resume are one MLflow run
        points = [j for j in jobs if j["parent"]]
        assert len(points) == 2 and len({p["name"] for p in points}) == 2
        single = [j for j in jobs if j["traces"] == 8]
        assert len(single) == 2 and single[0]["id"] != single[1]["id"]  # alice's run and bob's
        assert not (alice / "mlruns").exists() and not (bob / "mlruns").exists()
        # who ran it, in MLflow as in the warehouse: every run of alice's is hers, bob's is his
        bobs = [r for r in runs if r["user"] == "bob"]
        assert len(bobs) == 1 and bobs[0]["id"] in {r["id"] for r in single}, [(r["name"], r["user"]) for r in runs]
        assert all(r["user"] == "alice" for r in runs if r not in bobs), [(r["name"], r["user"]) for r in runs]
        # alice's password is in no output and no file she or geoeval wrote
        said = "".join(o.stdout + o.stderr for o in outputs) + resumed_err + capfd.readouterr().out
        assert PASSWORD not in said
        holding = [p for p in alice.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
        assert holding == [], holding

    with Warehouse(db, read_only=True) as wh:
        who = wh.query(
            "SELECT researcher, n_evaluated, n_reused FROM invocations WHERE run_hash = "
            "(SELECT run_hash FROM invocations WHERE researcher = 'bob') ORDER BY started_at"
        )[1]
    assert who == [("alice", 8, 0), ("bob", 0, 8)]


def test_ray_job_submit_runs_on_the_cluster_and_its_results_are_read_from_the_submitting_directory(tmp_path):
    shared = tmp_path / "shared"  # where the job writes: a persistent place, not Ray's working copy
    submitter = tmp_path / "laptop"
    submitter.mkdir()
    ray = str(Path(sys.executable).parent / "ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEOEVAL_", "RAY_", "MLFLOW_"))}
    with ray_head(tmp_path) as dashboard:
        runtime_env = {"env_vars": {"GEOEVAL_ROOT": str(shared), "RAY_USAGE_STATS_ENABLED": "0"}}
        submit = partial(
            subprocess.run,
            [
                ray,
                "job",
                "submit",
                "--address",
                dashboard,
                "--runtime-env-json",
                json.dumps(runtime_env),
                "--",
                sys.executable,
                "-m",
                "geoeval",
                "suite=maptab",
                "model=table_baseline",
                "env.n_maps=1",
                "suite.n_per_category=1",
                "runner=ray",
                "runner.num_workers=2",
            ],
            cwd=submitter,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        proc = submit()
        deadline = time.monotonic() + 120
        # a head whose dashboard answers may not have its job agent yet: Ray refuses the job
        # (nothing is submitted) and says to try again later
        while proc.returncode != 0 and "No available agent" in proc.stderr and time.monotonic() < deadline:
            time.sleep(2)
            proc = submit()
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        assert "succeeded" in proc.stdout.lower(), proc.stdout[-2000:]
    assert (shared / "results" / "geoeval.duckdb").is_file()
    results = subprocess.run(
        geoeval_cmd("results"),
        cwd=submitter,
        env={**env, "GEOEVAL_ROOT": str(shared)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert results.returncode == 0, results.stderr[-2000:]
    assert "maptab" in results.stdout and "table_baseline" in results.stdout, results.stdout
