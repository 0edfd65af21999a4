"""The warm server (`geoeval warm start`; what it is for: `geoeval.cli.warm`).

It imports what a run imports (`preload`), then serves a Unix socket in one thread. A run request
brings the typed command's arguments, folder, environment, umask and niceness, and its stdin,
stdout and stderr (passed as descriptors); the server forks, and the child becomes that command:
its descriptors on 0-2, its folder and environment, a process group of its own, then geoeval's
`main` and the exit `python -m geoeval` takes. The server reaps the child and sends its wait
status back. A client that goes away (killed) leaves its run a SIGTERM, geoeval's stop.

Forking is safe because the server never starts a thread, an event loop, a connection or a
store: `preload` only imports (and checks that no thread was started), and every run opens its
own. Each child reseeds what Python does not reseed by itself at a fork (NumPy's global
generator; `random` and `tempfile` reseed themselves).

Before each run the server checks that its imports are still the code on disk (`CodeSnapshot`):
every module file it imported, and the site-packages folders (an install adds a folder there),
unchanged since `preload`. If not, it refuses the run (the client then runs cold and says why) and
stops; the next `geoeval warm start` imports the new code.
"""

from __future__ import annotations

import gc
import importlib
import os
import select
import signal
import site
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from geoeval.cli.exit import exit_now
from geoeval.cli.main import main
from geoeval.cli.warm import interpreter, receive_message, send_message, signal_run

#: what a run imports before its first model request, beyond `geoeval.cli.main` (the modules that
#: are slow to import: Inspect, the providers' SDKs, Ray; MLflow and its SQL store come from
#: `import_mlflow`, which sets MLflow's settings first; the suites from `SUITES`)
PRELOADED = (
    "geoeval.cli.main",
    "geoeval.cli.app",
    "geoeval.core.run.job",
    "geoeval.core.run.evaluate",
    "geoeval.core.run.inspect_bridge",
    "geoeval.core.run.startup",
    "geoeval.core.run.runner",
    "inspect_ai",
    "inspect_ai.model",
    "openai",
    "anthropic",
    "geoeval.core.tracking.runs",
    "geoeval.core.tracking.traces.writer",
    "fastapi",
    "ray",
    "ray.util.queue",
)
#: the built-in suites, loaded with their plugins as a run loads its own
SUITES = ("maptab", "lifeplanner", "mapsatisfy")


def preload(log: list[str]) -> None:
    """Import what runs import; what fails to import is left to the run (and logged)."""
    from geoeval.core.private_api import inspect_first_sample_modules  # Inspect's own lazy imports
    from geoeval.core.registry import load_suite_plugins  # the suites: what runs load by name
    from geoeval.core.tracking.store import import_mlflow  # MLflow's settings, then its import

    import_mlflow(None)
    for name in (*PRELOADED, *inspect_first_sample_modules()):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:  # an optional provider's SDK, not installed
            continue
        except Exception as exc:  # noqa: BLE001 -- the run imports it, and reports what is wrong
            log.append(f"not preloaded: {name} ({type(exc).__name__}: {exc})")
    for suite in SUITES:
        try:
            load_suite_plugins(suite)
        except Exception as exc:  # noqa: BLE001 -- the run that uses the suite reports it
            log.append(f"not preloaded: suite {suite} ({type(exc).__name__}: {exc})")


@dataclass
class CodeSnapshot:
    """The code a server imported, as files and folders with their modification times: every module
    file, and the site-packages folders (an install or uninstall adds or removes a folder there;
    the other folders on `sys.path`, such as a project's own, change with every file a run writes
    in them)."""

    files: dict[str, int] = field(default_factory=dict)
    folders: dict[str, int] = field(default_factory=dict)

    @classmethod
    def now(cls) -> CodeSnapshot:
        snapshot = cls()
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path not in snapshot.files:
                snapshot.files[path] = _mtime(path)
        for folder in [*site.getsitepackages(), site.getusersitepackages()]:
            if folder not in snapshot.folders:
                snapshot.folders[folder] = _mtime(folder)
        return snapshot

    def changed(self) -> str | None:
        """The first file or folder that is not as it was, said; None when all are."""
        for kind, entries in (("module file", self.files), ("site-packages folder", self.folders)):
            for path, mtime in entries.items():
                if _mtime(path) != mtime:
                    return f"its code changed since it started ({kind} {path})"
        return None


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


@dataclass
class Server:
    socket_path: Path
    idle_s: float
    snapshot: CodeSnapshot
    since: float = field(default_factory=time.time)
    served: int = 0
    #: the running children, by pid: the connection of the client waiting on each (None: it went away)
    children: dict[int, socket.socket | None] = field(default_factory=dict)
    stopping: bool = False
    last_activity: float = field(default_factory=time.monotonic)

    def state(self) -> dict:
        return {
            "pid": os.getpid(),
            "since": self.since,
            "served": self.served,
            "running": len(self.children),
            "idle_s": self.idle_s,
            "python": sys.prefix,
        }


def serve(socket_path: Path, idle_s: float) -> int:
    """Preload, then serve runs until stopped, stale, or idle for `idle_s` seconds."""
    started = time.monotonic()
    notes: list[str] = []
    os.chdir("/")  # nothing imported may take a project folder for its own
    preload(notes)
    for note in notes:
        _log(note)
    if threading.active_count() != 1:  # a fork would copy a thread's locks without the thread
        _log(f"cannot serve: preloading started threads ({[t.name for t in threading.enumerate()]})")
        return 1
    gc.collect()
    gc.freeze()  # the preloaded objects are shared by every child: the collector leaves their pages alone
    server = Server(socket_path, idle_s, CodeSnapshot.now())
    socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        socket_path.unlink(missing_ok=True)
        listener.bind(str(socket_path))
        os.chmod(socket_path, 0o600)
        listener.listen(16)
        signal.signal(signal.SIGTERM, lambda *_: setattr(server, "stopping", True))
        _log(f"serving {socket_path} (pid {os.getpid()}, preloaded in {time.monotonic() - started:.1f} s)")
        _loop(server, listener)
    finally:
        listener.close()
        socket_path.unlink(missing_ok=True)
    _log(f"stopped after {server.served} runs")
    return 0


def _loop(server: Server, listener: socket.socket) -> None:
    while True:
        _reap(server)
        if server.stopping and not server.children:
            return
        if not server.children and time.monotonic() - server.last_activity > server.idle_s:
            _log(f"idle for {server.idle_s / 60:g} min: stopping")
            return
        waiting = [] if server.stopping else [listener]
        clients = [c for c in server.children.values() if c is not None]
        readable, _, _ = select.select([*waiting, *clients], [], [], 0.2)
        for sock in readable:
            if sock is listener:
                conn, _ = listener.accept()
                server.last_activity = time.monotonic()
                _answer(server, conn, listener)
            else:  # a waiting client closed its end (it was killed): stop its run as `kill` would
                pid = next(p for p, c in server.children.items() if c is sock)
                _log(f"the client of run {pid} went away: SIGTERM to the run")
                signal_run(pid, signal.SIGTERM)
                sock.close()
                server.children[pid] = None


def _reap(server: Server) -> None:
    while server.children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = server.children.pop(pid, None)
        server.last_activity = time.monotonic()
        if conn is None:
            continue
        try:
            send_message(conn, {"status": status, "cpu_s": usage.ru_utime + usage.ru_stime})
        except OSError:
            pass
        conn.close()


def _answer(server: Server, conn: socket.socket, listener: socket.socket) -> None:
    conn.settimeout(10.0)
    try:
        request, fds = receive_message(conn, max_fds=3)
    except (OSError, ValueError):
        conn.close()
        return
    op = (request or {}).get("op")
    if op != "run" or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        if op == "stop":
            server.stopping = True
        try:
            send_message(conn, server.state())
        except OSError:
            pass
        conn.close()
        return
    assert request is not None
    refused = server.snapshot.changed() or _other_interpreter(request.get("interpreter") or {})
    if refused:
        stale = refused.startswith("its code changed")
        _log(f"refused a run: {refused}")
        send_message(
            conn, {"refused": f"the warm server (pid {os.getpid()}) {refused}" + ("; it stopped" if stale else "")}
        )
        for fd in fds:
            os.close(fd)
        conn.close()
        server.stopping = server.stopping or stale
        return
    pid = os.fork()
    if pid == 0:  # the run
        for other in [listener, *(c for c in server.children.values() if c is not None)]:
            other.close()
        _become_run(request, fds, conn)
    for fd in fds:
        os.close(fd)
    server.served += 1
    server.children[pid] = conn
    _log(f"run {pid}: {' '.join(request['argv'][1:])} (in {request['cwd']})")
    try:
        send_message(conn, {"pid": pid})
        conn.settimeout(None)
    except OSError:
        signal_run(pid, signal.SIGTERM)


def _other_interpreter(theirs: dict) -> str | None:
    ours = interpreter()
    for key, value in ours.items():
        if theirs.get(key) != value:
            return f"runs another Python setting ({key}: {value!r}, the run's {theirs.get(key)!r})"
    return None


def _become_run(request: dict, fds: list[int], conn: socket.socket) -> None:
    """In the forked child: become the typed command, run it, and exit as `python -m geoeval` does."""
    code = 1
    try:
        conn.close()
        os.setpgid(0, 0)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(int(request["umask"]))
        if int(request["nice"]) > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, int(request["nice"]))
        # buffered as Python buffers a fresh process's streams: stdout by line on a terminal,
        # stderr always by line, both written through under PYTHONUNBUFFERED
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        sys.stdout.reconfigure(line_buffering=sys.stdout.isatty(), write_through=unbuffered)  # type: ignore[union-attr]
        sys.stderr.reconfigure(line_buffering=True, write_through=unbuffered)  # type: ignore[union-attr]
        sys.argv = list(request["argv"])
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()  # as a fresh process has it: from the system's entropy
        code = int(main() or 0)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int) and stop.code is not None:
            print(stop.code, file=sys.stderr)
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # Python's own exit on an uncaught Ctrl-C: killed by SIGINT
    except BaseException:  # noqa: BLE001 -- a crash of the run: its traceback, as Python prints it
        traceback.print_exc()
        code = 1
    try:
        exit_now(code)
    finally:
        os._exit(code)


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}", flush=True)
