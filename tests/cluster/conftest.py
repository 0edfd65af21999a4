"""A real two-node Ray cluster on 127.0.0.1 (one CPU per node) for the cluster tests.

- The head: `ray start --head --port=<free port> --num-cpus=1 --temp-dir=<root>/head --block`,
  in its own mount namespace too, where `runs_dir/outside` is hidden: a driver that runs there
  is outside the cluster (as a laptop connecting with `ray://`), one in the rest of `runs_dir`
  is on the head's machine.
- The second node: `ray start --address=127.0.0.1:<port> --num-cpus=1 --temp-dir=<root>/node2
  --block`, started through `unshare -m` in its own mount namespace, where an empty tmpfs is
  mounted over the folder the driver runs in (`runs_dir`: results, logs, work dir, MLflow store),
  so its processes cannot see any file the driver writes. It still sees the venv and the repo,
  like a machine where geoeval is installed; `start_node2(hide=...)` hides more (the repo's
  sources) to check that the driver's code is shipped.

Every port is chosen free, both nodes get their own short temp dir under `/tmp/gec-<random>/`
(Ray's unix sockets must stay under 107 bytes), and teardown stops only the processes this
fixture started: each `ray start --block` leads its own session (raylet, GCS, agents and
workers inside it; Ray gives each worker a process group of its own, so a whole process
*session* is killed), never with `ray stop` (that would stop every Ray on the machine). Teardown
then checks that no process of this cluster is left.

Needs Linux, root (for `unshare -m` and `mount`), and Ray's CLI next to the test interpreter;
otherwise the tests are skipped with the reason.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

RAY_CLI = Path(sys.executable).parent / "ray"
START_TIMEOUT_S = 90.0
NODE_GONE_TIMEOUT_S = 60.0
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray's minimum is 75 MiB; the default (30% of RAM) is far too much here


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (all bound at once, so they differ)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def node_process_env(**extra: str) -> dict[str, str]:
    """The environment of a `ray start`: this machine's, minus what belongs to the driver (its
    PYTHONPATH, geoeval's settings, a RAY_ADDRESS), as on a machine of its own."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH") and not k.startswith("GEOEVAL_")
    }
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", **extra)
    return env


def node_ports_args(*, head: bool) -> list[str]:
    """The ports a node listens on, chosen free: two nodes on one machine must not share the
    defaults (the dashboard agent's 52365, the dashboard's 8265; the head's client server port,
    10001 by default, is set by the caller)."""
    names = [
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    ]
    if head:
        names += ["dashboard-port"]
    return [f"--{name}={port}" for name, port in zip(names, free_ports(len(names)))]


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append((int(entry.name), cmdline.strip()))
    return found


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid`. Each `ray start` leads its own session; Ray gives
    every worker a process group of its own, but they all stay in that session."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # state ppid pgrp session ...
        # a zombie is dead already (the `ray start` itself stays one until Popen reaps it)
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def kill_session(sid: int, timeout: float = 15.0) -> None:
    """SIGKILL every process of session `sid` (until none is left: a raylet may have been
    starting a worker)."""
    deadline = time.time() + timeout
    while (members := session_members(sid)) and time.time() < deadline:
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


class TwoNodeCluster:
    """The head and the second node, each a `ray start --block` leading its own session, each in
    a mount namespace of its own."""

    def __init__(self, root: Path, runs_dir: Path) -> None:
        self.root = root  # /tmp/gec-<random>: the nodes' temp dirs, their logs, the second node's cache
        self.runs_dir = runs_dir  # where the driver runs geoeval; hidden from the second node
        # a folder of runs_dir hidden from the head as well: a driver there is outside the
        # cluster, as a laptop that connects with ray://
        self.outside_dir = runs_dir / "outside"
        self.outside_dir.mkdir(exist_ok=True)
        self.port, self.client_port = free_ports(2)
        self.head: subprocess.Popen | None = None
        self.node2: subprocess.Popen | None = None
        self.holders: list[HeadCpuTaken] = []

    @property
    def address(self) -> str:
        """The GCS address, for a driver on the head's machine."""
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str:
        """The Ray client address, for a driver outside the cluster."""
        return f"ray://127.0.0.1:{self.client_port}"

    # ---------------------------------------------------------------- starting

    def _spawn(self, name: str, hidden: list[Path], ray_argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        """`ray start` in a new mount namespace where each folder of `hidden` is an empty tmpfs
        (private: the mounts never reach this machine's namespace)."""
        cwd = self.root / name
        cwd.mkdir(parents=True, exist_ok=True)
        mounts = [f"mount -t tmpfs -o size=64m,mode=0755 geoeval-hidden {shlex.quote(str(p))}" for p in hidden]
        script = " && ".join([*mounts, f"exec {shlex.join(ray_argv)}"])
        with open(self.root / f"{name}.log", "ab") as out:
            # its own session: what teardown (and `kill_node2`) kills, and nothing else
            return subprocess.Popen(
                ["unshare", "-m", "sh", "-c", script],
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def start_head(self) -> None:
        argv = [
            str(RAY_CLI),
            "start",
            "--head",
            f"--port={self.port}",
            f"--ray-client-server-port={self.client_port}",
            "--num-cpus=1",
            f"--temp-dir={self.root / 'head'}",
            "--disable-usage-stats",
            "--include-dashboard=false",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            *node_ports_args(head=True),
            "--block",
        ]
        self.head = self._spawn(
            "head", [self.outside_dir], argv, node_process_env(GEOEVAL_NODE_CACHE=str(self.root / "head-cache"))
        )
        self.wait_for_alive_nodes(1, why="the head did not come up")

    def start_node2(self, hide: list[Path] | None = None) -> None:
        """The second node, in a mount namespace where `runs_dir` and each folder of `hide` are
        empty. Each node's cache of environments is a folder of its own under `root`
        (`GEOEVAL_NODE_CACHE`), removed with it."""
        assert self.node2 is None or self.node2.poll() is not None, "the second node is already running"
        argv = [
            str(RAY_CLI),
            "start",
            f"--address={self.address}",
            "--num-cpus=1",
            f"--temp-dir={self.root / 'node2'}",
            "--disable-usage-stats",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            *node_ports_args(head=False),
            "--block",
        ]
        expected = self.alive_nodes() + 1
        self.node2 = self._spawn(
            "node2",
            [self.runs_dir, *(hide or [])],
            argv,
            node_process_env(GEOEVAL_NODE_CACHE=str(self.root / "node2-cache")),
        )
        self.wait_for_alive_nodes(expected, why="the second node did not join")

    def sees(self, node: subprocess.Popen, path: Path) -> bool:
        """Whether that node's processes see `path` (through its mount namespace)."""
        return (Path(f"/proc/{node.pid}/root") / str(path).lstrip("/")).exists()

    # ---------------------------------------------------------------- state

    def _gcs(self):
        from ray._raylet import GcsClient

        return GcsClient(address=self.address)

    def alive_nodes(self) -> int:
        try:
            infos = self._gcs().get_all_node_info(timeout=5)
        except Exception:  # noqa: BLE001  the GCS not up yet, or gone: no alive node
            return 0
        return sum(1 for info in infos.values() if info.state == 0)  # GcsNodeInfo.ALIVE

    def wait_for_alive_nodes(self, n: int, *, why: str, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, proc in (("head", self.head), ("node2", self.node2)):
                if proc is not None and proc.poll() is not None and (name == "head" or n > 1):
                    raise RuntimeError(
                        f"{why}: `ray start` ({name}) exited with {proc.returncode}:\n{self.log_tail(name)}"
                    )
            if self.alive_nodes() >= n:
                return
            time.sleep(0.5)
        raise RuntimeError(
            f"{why}: fewer than {n} alive node(s) after {timeout:.0f} s\n{self.log_tail('head')}"
            f"\n{self.log_tail('node2')}"
        )

    def wait_for_node_count(self, n: int, timeout: float = NODE_GONE_TIMEOUT_S) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.alive_nodes() == n:
                return True
            time.sleep(0.5)
        return False

    def log_tail(self, name: str, lines: int = 30) -> str:
        log = self.root / f"{name}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def node2_mount_namespace(self) -> str:
        """The second node's mount namespace (`/proc/<pid>/ns/mnt` of its `ray start`)."""
        assert self.node2 is not None
        return os.readlink(f"/proc/{self.node2.pid}/ns/mnt")

    def node2_worker_names(self, marker: str = ":task_name:", since: float = 0.0) -> list[str]:
        """The Ray task (`:task_name:`) or actor (`:actor_name:`) names that the second node's
        workers ran (the markers Ray writes to every worker's output), in the logs of workers
        that wrote after `since` (a time.time())."""
        names = []
        for out in (self.root / "node2").glob("session_*/logs/worker-*"):
            try:
                if out.stat().st_mtime < since:
                    continue
                text = out.read_text(errors="replace")
            except OSError:
                continue
            names += [line.split(marker, 1)[1].strip() for line in text.splitlines() if marker in line]
        return names

    def take_head_cpu(self) -> HeadCpuTaken:
        """Hold the head's CPU (see `HeadCpuTaken`) until `.release()` or teardown."""
        holder = HeadCpuTaken(self)
        self.holders.append(holder)
        return holder

    # ---------------------------------------------------------------- stopping

    def kill_node2(self) -> None:
        """The second node dies at once, as a lost machine: SIGKILL to every process of its
        session (its raylet, agents and workers)."""
        if self.node2 is not None:
            kill_session(self.node2.pid)
            self.node2.wait(timeout=30)

    def ensure_node2(self) -> None:
        """Both nodes alive (a test that killed the second node leaves one)."""
        if self.node2 is None or self.node2.poll() is not None:
            self.kill_node2()
            self.wait_for_node_count(1)
            self.start_node2()

    def stop(self) -> list[tuple[int, str]]:
        """Kill both nodes' sessions; returns the processes of this cluster still alive after
        that (killed too, then reported)."""
        for holder in self.holders:
            holder.release()
        for proc in (self.node2, self.head):
            if proc is None:
                continue
            kill_session(proc.pid)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # anything else naming our temp root (a worker that left the session) is ours too
        left = processes_mentioning(str(self.root))
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


# A Ray driver whose one task holds the head's CPU until the driver is killed (pinned to the head
# through the resource Ray gives the head node alone).
HEAD_CPU_HOLDER = """
import pathlib, sys, time
import ray
ray.init(address=sys.argv[1], log_to_driver=False)
@ray.remote(num_cpus=1, resources={"node:__internal_head__": 0.001})
def hold(flag):
    pathlib.Path(flag).write_text("busy")
    time.sleep(3600)
ray.get(hold.remote(sys.argv[2]))
"""


class HeadCpuTaken:
    """The head's only CPU held by another Ray job until `release()`: while it is held, whatever
    Ray places by CPU goes to the second node."""

    def __init__(self, cluster: TwoNodeCluster) -> None:
        self.flag = cluster.root / f"head-busy-{time.time_ns()}"
        with open(cluster.root / "head-cpu-holder.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", HEAD_CPU_HOLDER, cluster.address, str(self.flag)],
                cwd=cluster.root,
                env=node_process_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.time() + START_TIMEOUT_S
        while not self.flag.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                self.release()
                raise RuntimeError(f"could not take the head's CPU:\n{cluster.log_tail('head-cpu-holder')}")
            time.sleep(0.2)

    def release(self) -> None:
        """Kill the holding driver: Ray then ends its task and frees the CPU."""
        kill_session(self.proc.pid)
        self.proc.wait(timeout=30)


def _skip_unless_namespaces_work(scratch: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the two-node cluster needs Linux mount namespaces")
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("the two-node cluster needs `unshare` and `mount` (util-linux)")
    if os.geteuid() != 0:
        pytest.skip("the two-node cluster needs root, for `unshare -m` and `mount -t tmpfs`")
    if not RAY_CLI.exists():
        pytest.skip(f"Ray's CLI is not at {RAY_CLI}")
    probe = scratch / "mount-probe"
    probe.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs geoeval-probe {shlex.quote(str(probe))}"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        pytest.skip(
            f"cannot mount in a new mount namespace here (`unshare -m` + `mount -t tmpfs`): "
            f"{proc.stderr.strip() or proc.returncode}"
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[TwoNodeCluster]:
    """Both nodes up (two alive nodes, one CPU each) for the whole module."""
    root = Path(f"/tmp/gec-{secrets.token_hex(4)}")
    root.mkdir(mode=0o700)
    runs_dir = tmp_path_factory.mktemp("cluster_runs")
    try:
        _skip_unless_namespaces_work(root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    c = TwoNodeCluster(root, runs_dir)
    left: list[tuple[int, str]] = []
    try:
        try:
            c.start_head()
            c.start_node2()
        except RuntimeError as exc:
            pytest.skip(f"Ray did not start a two-node cluster: {exc}")
        yield c
    finally:
        left = c.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert not left, "processes of the test cluster outlived its sessions:\n" + "\n".join(
        f"{pid} {cmd[:200]}" for pid, cmd in left
    )
