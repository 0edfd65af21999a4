"""geoeval on a real two-node Ray cluster (see conftest.py): the second node cannot see the folder
the driver runs in, so every file a shard needs (code, plugins, environments) must reach it
through Ray, and its Inspect logs must come back.

Each test runs `python -m geoeval` twice on the same config, once with `runner=local` and once
with `runner=ray runner.address=127.0.0.1:<port> runner.num_workers=2` (MLflow tracking on, in
the run's folder), and requires the same per-sample scores, every sample `scored`, and every
shard's Inspect log listed in the console and in the MLflow run's `inspect_logs/`. One test
kills the second node mid-run: the run completes on the head, and nothing is lost or redone.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from tests.cluster.conftest import TwoNodeCluster
from tests.conftest import REPO

pytestmark = pytest.mark.slow

PLUGIN_PATH = Path(__file__).resolve().parent / "plugins"  # geoeval_probe_plugin: on the driver's path only
RUN_TIMEOUT_S = 300

LIFEPLANNER = (
    "+experiment=lifeplanner_offline",
    "model=oracle",
    "env.n_places=300",
    "env.n_notes=2000",
    "suite.n_cases=6",
)
# two maps: MapTab keeps a map's samples in one shard, so two maps make two shards
MAPTAB_TOOLS = (
    "model=oracle",
    "model.name=geoeval/tool_prober",
    "suite.solver=react",
    "suite.tools=[station_neighbors]",
    "env.n_maps=2",
    "suite.categories=[edge_only,T]",
    "suite.n_per_category=4",
)
MAPSATISFY = ("+experiment=mapsatisfy_generated", "model=oracle", "env.n=8", "env.seed=4", "env.embedder=hashing")

# the repo's sources, hidden from the second node when checking that the driver's code is shipped
# (plugins/ stays: the example plugin is installed there, and an entry point whose files are
# missing is a broken install, not a node without the plugin)
REPO_SOURCES = [REPO / "geoeval", REPO / "conf", REPO / "tests"]


# ------------------------------------------------------------------------------------ runs


@dataclass
class Run:
    folder: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def output(self) -> str:
        return f"exit {self.returncode} after {self.seconds:.1f} s\nstdout:\n{self.stdout[-4000:]}\nstderr:\n{self.stderr[-8000:]}"

    @property
    def db(self) -> Path:
        return self.folder / "results" / "geoeval.duckdb"

    def listed_logs(self) -> list[Path]:
        """The Inspect logs the console lists (`Inspect log: <path>`)."""
        return [Path(m) for m in re.findall(r"^Inspect log: (.+)$", self.stdout, flags=re.MULTILINE)]

    def mlflow_run_id(self) -> str:
        found = re.findall(r"^MLflow run: (\w+)$", self.stdout, flags=re.MULTILINE)
        assert found, "the console names no MLflow run\n" + self.output()
        return found[-1]

    def mlflow_inspect_logs(self) -> list[str]:
        """The file names under the MLflow run's `inspect_logs/` artifacts."""
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"sqlite:///{self.folder / 'mlruns' / 'mlflow.db'}")
        return sorted(Path(f.path).name for f in client.list_artifacts(self.mlflow_run_id(), "inspect_logs"))

    def query(self, sql: str) -> list[tuple]:
        con = duckdb.connect(str(self.db), read_only=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def scores(self) -> dict[tuple[str, str], object]:
        """(sample_id, metric) -> value, NULL and NaN both as "NaN" (so that they compare equal)."""
        out: dict[tuple[str, str], object] = {}
        for sid, metric, value in self.query("SELECT sample_id, metric, value FROM scores"):
            out[(sid, metric)] = "NaN" if value is None or math.isnan(value) else value
        return out

    def statuses(self) -> dict[str, str]:
        return dict(self.query("SELECT sample_id, status FROM samples"))

    def completed_at(self) -> dict[str, float]:
        """sample_id -> when the driver stored it (seconds since the epoch)."""
        rows = self.query("SELECT sample_id, epoch_us(completed_at) FROM samples")
        return {sid: t / 1e6 for sid, t in rows}


def geoeval_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), str(PLUGIN_PATH)]),
        GEOEVAL_PLUGINS="geoeval_probe_plugin",
        GEOEVAL_EXPERIMENTS_DIR=str(REPO / "experiments"),
        INSPECT_DISPLAY="none",
        RAY_AUTH_MODE="disabled",
        RAY_USAGE_STATS_ENABLED="0",
    )
    return env


def geoeval_argv(*overrides: str) -> list[str]:
    return [sys.executable, "-m", "geoeval", *overrides]


def run_geoeval(folder: Path, *overrides: str) -> Run:
    folder.mkdir(parents=True, exist_ok=False)
    start = time.time()
    proc = subprocess.run(
        geoeval_argv(*overrides),
        check=False,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=geoeval_env(),
    )
    return Run(folder, proc.returncode, proc.stdout, proc.stderr, time.time() - start)


def on_cluster(cluster: TwoNodeCluster, *overrides: str) -> tuple[str, ...]:
    return ("runner=ray", f"runner.address={cluster.address}", "runner.num_workers=2", *overrides)


def log_sample_ids(paths: list[Path]) -> list[str]:
    """Every sample id in these Inspect logs (a sample in two logs appears twice)."""
    from inspect_ai.log import read_eval_log

    ids: list[str] = []
    for path in paths:
        ids += [str(s.id) for s in read_eval_log(str(path)).samples or []]
    return ids


def score_differences(got: dict, expected: dict, limit: int = 12) -> str:
    keys = sorted(set(got) | set(expected))
    diffs = [
        f"{k}: cluster={got.get(k, '<missing>')!r} local={expected.get(k, '<missing>')!r}"
        for k in keys
        if got.get(k, "<missing>") != expected.get(k, "<missing>")
    ]
    return f"{len(diffs)} difference(s):\n" + "\n".join(diffs[:limit])


def assert_ok(run: Run) -> None:
    assert run.returncode == 0, run.output()


def assert_cluster_run_equals_local(remote: Run, local: Run, *, n_samples: int, n_shards: int = 2) -> None:
    assert_ok(local)
    assert_ok(remote)
    assert len(local.statuses()) == n_samples, local.output()
    # per-sample scores identical to the local run, and every sample scored
    assert remote.scores() == local.scores(), score_differences(remote.scores(), local.scores())
    statuses = remote.statuses()
    assert len(statuses) == n_samples and set(statuses.values()) == {"scored"}, (statuses, remote.output())
    assert f"n_samples={n_samples} n_scored={n_samples} n_errors=0" in remote.stdout, remote.output()
    # every shard's Inspect log: listed in the console, on the driver, and in MLflow
    listed = remote.listed_logs()
    assert len(listed) == n_shards, (
        f"{len(listed)} Inspect log(s) listed, not one per shard ({n_shards})\n" + remote.output()
    )
    assert all(p.is_file() for p in listed), (
        f"listed logs missing on the driver: {[str(p) for p in listed if not p.is_file()]}"
    )
    assert remote.mlflow_inspect_logs() == sorted(p.name for p in listed)
    assert sorted(log_sample_ids(listed)) == sorted(statuses), "each sample in exactly one shard's log"


def node2_shards(cluster: TwoNodeCluster) -> int:
    return sum(1 for name in cluster.node2_worker_names(":task_name:") if "shard" in name)


@pytest.fixture(scope="module")
def runs_dir(cluster: TwoNodeCluster) -> Path:
    return cluster.runs_dir


def trace_dir(cluster: TwoNodeCluster, name: str) -> Path:
    """Where the probe agent records its replies: a folder both nodes see (not under runs_dir)."""
    path = cluster.root / "traces" / name
    path.mkdir(parents=True)
    return path


@pytest.fixture(scope="module")
def maptab_local(cluster: TwoNodeCluster, runs_dir: Path) -> Run:
    trace = trace_dir(cluster, "maptab_local")
    return run_geoeval(runs_dir / "maptab_local", *MAPTAB_TOOLS, f"+model.args.trace_dir={trace}", "runner=local")


# ------------------------------------------------------------------------------------ tests


def test_the_second_node_cannot_see_the_drivers_folder(cluster: TwoNodeCluster):
    cluster.ensure_node2()
    here = cluster.runs_dir / "driver-only.txt"
    outside = cluster.outside_dir / "client-only.txt"
    here.write_text("the driver's file")
    outside.write_text("the client's file")
    assert not cluster.sees(cluster.node2, here) and not cluster.sees(cluster.node2, outside)
    assert cluster.sees(cluster.head, here) and not cluster.sees(cluster.head, outside)
    assert cluster.sees(cluster.node2, REPO / "pyproject.toml") and cluster.sees(cluster.node2, Path(sys.executable))
    assert cluster.alive_nodes() == 2


def test_lifeplanner_on_the_cluster_equals_local(cluster: TwoNodeCluster, runs_dir: Path):
    cluster.ensure_node2()
    before = node2_shards(cluster)
    local = run_geoeval(runs_dir / "lifeplanner_local", *LIFEPLANNER, "runner=local")
    remote = run_geoeval(runs_dir / "lifeplanner_cluster", *on_cluster(cluster, *LIFEPLANNER))
    assert_cluster_run_equals_local(remote, local, n_samples=6)
    assert node2_shards(cluster) > before, "no shard ran on the second node"


def test_maptab_react_with_tools_on_the_cluster_equals_local(
    cluster: TwoNodeCluster, runs_dir: Path, maptab_local: Run
):
    cluster.ensure_node2()
    trace = trace_dir(cluster, "maptab_cluster")
    remote = run_geoeval(
        runs_dir / "maptab_cluster", *on_cluster(cluster, *MAPTAB_TOOLS, f"+model.args.trace_dir={trace}")
    )
    assert_cluster_run_equals_local(remote, maptab_local, n_samples=16)
    assert {v for (_, m), v in maptab_local.scores().items() if m == "ema"} == {1.0}
    # the tool really ran, without error, in every sample of every shard
    from inspect_ai.log import read_eval_log

    for path in remote.listed_logs():
        for sample in read_eval_log(str(path)).samples or []:
            calls = [
                e for e in sample.events if getattr(e, "event", "") == "tool" and e.function == "station_neighbors"
            ]
            assert calls and all(e.error is None for e in calls), (path.name, sample.id)
    # and the second node answered some of them
    answers = trace_events(trace, "answer")
    assert {e["ns"] for e in answers} >= {cluster.node2_mount_namespace()}, "the second node answered no sample"


def test_mapsatisfy_generated_on_the_cluster_equals_local(cluster: TwoNodeCluster, runs_dir: Path):
    cluster.ensure_node2()
    before = node2_shards(cluster)
    local = run_geoeval(runs_dir / "mapsatisfy_local", *MAPSATISFY, "runner=local")
    remote = run_geoeval(runs_dir / "mapsatisfy_cluster", *on_cluster(cluster, *MAPSATISFY))
    assert_cluster_run_equals_local(remote, local, n_samples=8)
    assert node2_shards(cluster) > before, "no shard ran on the second node"


def trace_events(trace_dir: Path, event: str) -> list[dict]:
    events = []
    for f in trace_dir.glob("*.jsonl"):
        events += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return sorted((e for e in events if e["event"] == event), key=lambda e: e["t"])


def test_a_driver_outside_the_cluster_through_ray_client(cluster: TwoNodeCluster, maptab_local: Run):
    """`runner.address=ray://...` from a folder that neither node sees (the README's way to use
    an existing cluster): the head's shards, too, must get the environment and send their logs
    back."""
    cluster.ensure_node2()
    trace = trace_dir(cluster, "maptab_client")
    remote = run_geoeval(
        cluster.outside_dir / "maptab_client",
        "runner=ray",
        f"runner.address={cluster.client_address}",
        "runner.num_workers=2",
        *MAPTAB_TOOLS,
        f"+model.args.trace_dir={trace}",
    )
    assert_cluster_run_equals_local(remote, maptab_local, n_samples=16)
    assert cluster.node2_mount_namespace() in {e["ns"] for e in trace_events(trace, "answer")}


def test_killing_the_second_node_mid_run_loses_and_redoes_nothing(
    cluster: TwoNodeCluster, runs_dir: Path, maptab_local: Run
):
    cluster.ensure_node2()
    node2_ns = cluster.node2_mount_namespace()
    trace = trace_dir(cluster, "maptab_kill")
    folder = runs_dir / "maptab_kill"
    folder.mkdir()
    # one sample at a time per shard, 2 x 0.5 s per sample: each shard takes >= 8 s
    overrides = on_cluster(
        cluster, *MAPTAB_TOOLS, f"+model.args.trace_dir={trace}", "+model.args.delay_s=0.5", "runner.max_samples=1"
    )
    out_path, err_path = runs_dir / "maptab_kill.stdout", runs_dir / "maptab_kill.stderr"

    def node2_answers() -> int:
        return sum(1 for e in trace_events(trace, "answer") if e["ns"] == node2_ns)

    def wait_until(condition, what: str) -> None:
        deadline = time.time() + RUN_TIMEOUT_S
        while not condition():
            assert proc.poll() is None, f"the run ended before {what}:\n" + err_path.read_text()[-5000:]
            if time.time() > deadline:  # a wait bound, not a speed target
                pytest.fail(f"timed out waiting until {what}")
            time.sleep(0.1)

    # The run starts while another job holds the head's CPU, so that Ray places what it places
    # by CPU (the first shard, and anything else of the run that asks for a CPU) on the second
    # node: losing that node must still lose nothing but its shard's unfinished samples.
    busy_head = cluster.take_head_cpu()
    start = time.time()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(
            geoeval_argv(*overrides), cwd=folder, stdout=out, stderr=err, text=True, env=geoeval_env()
        )
    try:
        wait_until(lambda: node2_answers() >= 1, "the second node answered a sample")
        busy_head.release()  # the other shard can now run on the head
        # kill once the second node has answered two samples (and so is in the middle of its shard)
        wait_until(lambda: node2_answers() >= 2, "the second node answered two samples")
        actors_on_node2 = sorted(set(cluster.node2_worker_names(":actor_name:", since=start)))
        killed_at = time.time()
        cluster.kill_node2()
        proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        busy_head.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = Run(folder, proc.returncode, out_path.read_text(), err_path.read_text(), time.time() - start)
    print(
        f"kill test: killed the second node {killed_at - start:.1f} s into the run; the run took {run.seconds:.1f} s; "
        f"actors on the second node when it died: {actors_on_node2}"
    )
    assert run.returncode == 0, f"actors on the second node when it died: {actors_on_node2}\n" + run.output()
    assert re.search(r"shard \d+ failed", run.stderr) and re.search(r"retry 1/\d+", run.stderr), run.output()

    # nothing lost: every sample stored once, scored, with the local run's scores
    statuses = run.statuses()
    assert sorted(statuses) == sorted(maptab_local.statuses()) and set(statuses.values()) == {"scored"}, statuses
    assert run.scores() == maptab_local.scores(), score_differences(run.scores(), maptab_local.scores())
    assert run.query("SELECT count(*), count(DISTINCT sample_id) FROM samples") == [(16, 16)]

    # nothing redone: a sample stored before the kill is never answered again; at most the one
    # sample in flight on the second node (runner.max_samples=1) is answered twice
    stored_at = run.completed_at()
    answers = trace_events(trace, "answer")
    answered = Counter(e["sample"] for e in answers)
    stored_before_kill = {sid for sid, t in stored_at.items() if t < killed_at}
    answered_after_kill = {e["sample"] for e in answers if e["t"] > killed_at}
    assert not stored_before_kill & answered_after_kill, "samples stored before the kill were evaluated again"
    redone = {sid for sid, n in answered.items() if n > 1}
    assert len(redone) <= 1 and all(stored_at[sid] > killed_at for sid in redone), (redone, answered)
    assert sorted(answered) == sorted(statuses)
    assert any(e["ns"] == node2_ns for e in answers) and any(e["ns"] != node2_ns for e in answers)

    # the logs that came back: listed, in MLflow, no sample twice; a sample in none of them was
    # answered on the second node before it died (that shard's log died with the node)
    listed = run.listed_logs()
    assert listed and all(p.is_file() for p in listed), run.output()
    assert run.mlflow_inspect_logs() == sorted(p.name for p in listed)
    in_logs = Counter(log_sample_ids(listed))
    assert max(in_logs.values()) == 1, in_logs
    answered_on_node2_before_kill = {e["sample"] for e in answers if e["ns"] == node2_ns and e["t"] < killed_at}
    assert set(statuses) - set(in_logs) <= answered_on_node2_before_kill, "a sample the head evaluated has no log"
    assert cluster.wait_for_node_count(1), "the cluster still counts the killed node as alive"


def test_driver_code_and_plugins_are_shipped_to_a_node_without_the_sources(
    cluster: TwoNodeCluster, runs_dir: Path, maptab_local: Run
):
    """The second node sees neither geoeval's sources nor the probe plugin (the repo's geoeval/,
    conf/ and tests/ are empty there): only what the driver ships can run."""
    if cluster.node2 is not None and cluster.node2.poll() is None:
        cluster.kill_node2()
    cluster.wait_for_node_count(1)
    cluster.start_node2(hide=REPO_SOURCES)
    assert not cluster.sees(cluster.node2, REPO / "geoeval" / "__init__.py")
    trace = trace_dir(cluster, "maptab_shipped")
    remote = run_geoeval(
        runs_dir / "maptab_shipped", *on_cluster(cluster, *MAPTAB_TOOLS, f"+model.args.trace_dir={trace}")
    )
    assert_cluster_run_equals_local(remote, maptab_local, n_samples=16)
    assert cluster.node2_mount_namespace() in {e["ns"] for e in trace_events(trace, "answer")}
