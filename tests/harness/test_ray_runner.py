"""The Ray runner: merged shards equal a single-process run exactly; a failed shard is retried;
an unreachable cluster gives one clear error."""

from __future__ import annotations

import os
import subprocess

import pytest
from hydra import compose, initialize_config_module

from geoeval.core.config.validate import validate_config
from geoeval.core.run.job import run_job
from tests.conftest import geoeval_cmd


def spec_for(tmp_path, *overrides):
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                "env.n_maps=2",
                "suite.n_per_category=2",
                "tracking=none",
                "model=table_baseline",
                f"work_dir={tmp_path}/work",
                f"log_dir={tmp_path}/logs",
                *overrides,
            ],
        )
    return validate_config(cfg)


@pytest.fixture(scope="module")
def ray_session():
    import ray

    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.mark.slow
def test_ray_shards_merge_to_the_local_result_exactly(tmp_path, ray_session):
    local = run_job(spec_for(tmp_path, "runner=local", f"results_db={tmp_path}/local.duckdb"), progress=False)
    sharded = run_job(
        spec_for(
            tmp_path, "runner=ray", "runner.num_workers=2", "runner.num_cpus=2", f"results_db={tmp_path}/ray.duckdb"
        ),
        progress=False,
    )
    assert local.run_hash == sharded.run_hash
    assert len(local.results) == len(sharded.results) == 2 * 4 * 2
    assert sharded.metrics == local.metrics
    per_sample = lambda o: [(r.sample_id, r.scores, r.answer) for r in o.results]  # noqa: E731
    assert per_sample(sharded) == per_sample(local)
    # two shards really ran: one Inspect log each
    assert len(sharded.log_paths) == 2


@pytest.mark.slow
def test_failed_shard_is_retried(tmp_path, ray_session):
    marker = tmp_path / "crashed-once"
    spec = spec_for(
        tmp_path,
        "runner=ray",
        "runner.num_workers=2",
        "runner.max_retries=2",
        f"results_db={tmp_path}/retry.duckdb",
        f"+model.args.crash_once_marker={marker}",
    )
    outcome = run_job(spec, progress=False)
    assert marker.exists()  # a worker really died
    assert len(outcome.results) == 16
    assert outcome.metrics["ema/task/edge_only"] == 1.0


@pytest.mark.slow
def test_shutdown_stops_every_process_of_the_local_ray(tmp_path, ray_session):
    # geoeval's own stop (python -m geoeval's exit) kills the autoscaler monitor at once instead
    # of Ray's 1 s wait for it; nothing of the node may outlive it
    import ray

    from geoeval.core.private_api import ray_local_node_processes
    from geoeval.core.run.ray_session import ensure_ray, shutdown_ray

    ensure_ray(spec_for(tmp_path, "runner=ray", "runner.num_cpus=2"))
    # the workers run at the driver's priority, not Ray's nice 15 (issue 45)
    assert ray.get(ray.remote(lambda: os.nice(0)).remote(), timeout=120) == os.nice(0)
    processes = ray_local_node_processes()
    assert {"raylet", "gcs_server", "monitor"} <= set(processes)
    shutdown_ray()
    assert not ray.is_initialized()
    for _kind, ps in processes.items():  # each has exited or is exiting (a SIGKILL is not waited for)
        for p in ps:
            p.wait(timeout=10)
    assert ray_local_node_processes() == {}
    shutdown_ray()  # a second stop is a no-op


@pytest.mark.slow
def test_a_ray_started_in_a_thread_outlives_the_threads_work_and_stops_with_it(tmp_path, ray_session):
    # Ray's services die with the thread that started them (PR_SET_PDEATHSIG): the starter thread
    # must stay until Ray stops, and end then
    import threading
    import time

    import ray

    from geoeval.core.private_api import ray_local_node_processes
    from geoeval.core.run.ray_session import ensure_ray, shutdown_ray, start_local_ray_soon

    spec = spec_for(tmp_path, "runner=ray", "runner.num_cpus=2")
    ran_in: list[str] = []
    assert start_local_ray_soon(spec, then=lambda: ran_in.append(threading.current_thread().name))
    assert not start_local_ray_soon(spec)  # one start at a time
    ensure_ray(spec)  # waits for the thread's Ray instead of starting a second one
    assert ray.is_initialized()
    starter = [t for t in threading.enumerate() if t.name == "geoeval-ray-start"]
    assert len(starter) == 1
    deadline = time.monotonic() + 30
    while not ran_in and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ran_in == ["geoeval-ray-start"]  # the warm-up ran there, after the start
    time.sleep(1)
    processes = ray_local_node_processes()
    assert {"raylet", "gcs_server"} <= set(processes)
    assert all(p.poll() is None for ps in processes.values() for p in ps)
    assert ray.get(ray.remote(lambda: 42).remote(), timeout=120) == 42
    shutdown_ray()
    starter[0].join(timeout=10)
    assert not starter[0].is_alive()
    assert not start_local_ray_soon(spec_for(tmp_path, "runner=local"))  # nothing to start for a local runner


#: The environment variable that marks the Ray processes one test started (its services inherit
#: the driver's environment): other tests may run Ray on this machine at the same time (pytest-xdist).
RAY_TAG = "GEOEVAL_TEST_RAY_TAG"


def _ray_node_pids(tag: str, agents_only: bool = False) -> set[int]:
    """Live processes of the local Ray nodes started with `RAY_TAG=tag`: services and agents."""
    from pathlib import Path

    marker = f"{RAY_TAG}={tag}".encode()
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        agents = (b"dashboard/agent.py", b"runtime_env/agent", b"ray::DashboardAgent", b"ray::RuntimeEnvAgent")
        if (
            state != "Z"
            and marker in environ
            and any(part in cmdline for part in agents + (() if agents_only else (b"raylet", b"gcs_server")))
        ):
            found.add(int(proc.name))
    return found


@pytest.mark.slow
def test_a_ray_stopped_while_it_starts_leaves_no_process_behind(tmp_path, ray_session, monkeypatch):
    # stopped half-way (a run with nothing left to evaluate exits at once), the raylet's agents
    # outlived it; the stop now waits for the start
    import time

    from geoeval.core.run.ray_session import shutdown_ray, start_local_ray_soon

    monkeypatch.setenv(RAY_TAG, str(tmp_path))
    assert start_local_ray_soon(spec_for(tmp_path, "runner=ray", "runner.num_cpus=2"))
    time.sleep(0.5)  # in the middle of Ray's start
    shutdown_ray()
    deadline = time.monotonic() + 20
    while _ray_node_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ray_node_pids(str(tmp_path))


@pytest.mark.slow
def test_a_process_that_exits_while_its_ray_starts_leaves_no_process_behind(tmp_path):
    # a config or preflight error exits (SystemExit) while the Ray started for the run comes up:
    # the raylet's agents outlived such an exit; `shutdown_ray` now runs at the exit
    import sys
    import textwrap
    import time
    from pathlib import Path

    script = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        from geoeval.core.run.ray_session import start_local_ray_soon
        from tests.conftest import compose_spec
        from tests.harness.test_ray_runner import RAY_TAG, _ray_node_pids

        tag = os.environ[RAY_TAG]  # the tag this process's Ray inherits
        assert start_local_ray_soon(compose_spec(Path({str(tmp_path)!r}), "runner=ray", "runner.num_cpus=2"))
        deadline = time.monotonic() + 60
        while not _ray_node_pids(tag, agents_only=True) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _ray_node_pids(tag, agents_only=True), "the tag finds this Ray's agents"
        time.sleep(float(sys.argv[1]))
        sys.exit(2)  # as the node's agents start
        """
    )
    root = Path(__file__).resolve().parents[2]
    environ = {**os.environ, RAY_TAG: str(tmp_path)}
    for delay in ("0", "0.3", "0.6"):  # the window is narrow: three moments of the agents' start
        done = subprocess.run(
            [sys.executable, "-c", script, delay], cwd=root, env=environ, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 2, done.stderr[-2000:]
    deadline = time.monotonic() + 20
    while _ray_node_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ray_node_pids(str(tmp_path))


@pytest.mark.slow
def test_unreachable_cluster_gives_one_clear_error(tmp_path):
    proc = subprocess.run(
        geoeval_cmd(
            "runner=ray",
            "runner.address=ray://127.0.0.1:9",
            "runner.connect_timeout_s=5",
            "tracking=none",
            "env.n_maps=1",
            "suite.n_per_category=1",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Cannot reach the Ray cluster at runner.address='ray://127.0.0.1:9'" in proc.stderr
    assert "Traceback" not in proc.stderr
