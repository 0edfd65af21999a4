"""`geoeval warm start|stop|status`: a warm server that starts runs with everything imported, and
the client side of it, which every `geoeval` / `python -m geoeval` run tries first.

A run spends its first seconds importing: Inspect, the OpenAI SDK, the Agent Client Protocol
models Inspect loads for its first sample, MLflow and its SQL store, Hydra, the suites: ~5 s of
CPU on 2 cores, before the first model request and again in every run of a session. `geoeval
warm start` pays that once: a server process imports it all and waits on a Unix socket. A run
typed afterwards (`geoeval ...` or `python -m geoeval ...`, in any folder, as long as it uses the
same Python) is a fork of that server, in the typed command's folder, environment, arguments and
terminal: its output, exit status and signals are the typed command's own (this client forwards
SIGINT, SIGTERM and the others to the run, and exits with the run's status), so nothing about a
run changes but its start. `geoeval warm` is the dmypy pattern (mypy's daemon) for an evaluation.

What the client does not send to the server, and runs as it always did: the commands other than
a run (`results`, `runs`, ...: they import little), a Python started with flags or `PYTHON*`
variables the server's lacks (`-X importtime`, `-W`, `PYTHONPATH`, ...), and `GEOEVAL_WARM=0`.
A server whose code is out of date (a module file it imported, or a site-packages folder, changed
since it started: an edit, a `pip install`) says so, stops, and the run starts cold with one line
saying why. A server stops by itself after `--idle-minutes` (60) without a run.

This module imports the standard library only: it runs before anything else in every command.
The server itself is `geoeval.cli.warm_server`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

#: the signals the client passes on to the run it started (what a terminal or `kill` sends)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HEADER = struct.Struct("!I")


def warm_dir() -> Path:
    """Where the servers' sockets and logs live: `$GEOEVAL_WARM_DIR`, else a folder of this user's
    under `$XDG_RUNTIME_DIR` or the temporary folder (mode 0700: only this user connects)."""
    explicit = os.environ.get("GEOEVAL_WARM_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"geoeval-warm-{os.getuid()}"


def server_name() -> str:
    """One server per Python (its interpreter and environment): runs of another venv never reach it."""
    key = f"{os.path.realpath(sys.executable)}\0{sys.prefix}"
    return "warm-" + hashlib.sha1(key.encode()).hexdigest()[:12]


def socket_path() -> Path:
    return warm_dir() / f"{server_name()}.sock"


def log_path() -> Path:
    return warm_dir() / f"{server_name()}.log"


def interpreter() -> dict[str, object]:
    """What the server and a run must share for the server's imports to be the run's own."""
    return {
        "executable": os.path.realpath(sys.executable),
        "flags": list(sys.flags),
        "warnoptions": list(sys.warnoptions),
        "xoptions": sorted(f"{k}={v}" for k, v in sys._xoptions.items()),
        "python_env": sorted(
            f"{k}={v}" for k, v in os.environ.items() if k.startswith("PYTHON") and k != "PYTHONUNBUFFERED"
        ),
    }


def is_run(args: list[str]) -> bool:
    """Whether `geoeval ARGS` is an evaluation run (what a warm server starts): nothing, `rescore`,
    or a first word that is an override or a flag (`key=value`, `+key=...`, `~key`, `-m`), which
    no command's name is; help is printed cold."""
    if any(a in ("-h", "--help", "--hydra-help") for a in args):
        return False
    if not args or args[0] == "rescore":
        return True
    return "=" in args[0] or args[0].startswith(("-", "+", "~"))


def send_message(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    payload = json.dumps(message).encode()
    data = HEADER.pack(len(payload)) + payload
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def receive_message(sock: socket.socket, max_fds: int = 0) -> tuple[dict | None, list[int]]:
    """One message (and the descriptors sent with it); None when the peer closed first."""
    fds: list[int] = []
    buffer = b""
    while len(buffer) < HEADER.size:
        if max_fds and not fds and not buffer:
            chunk, fds, _flags, _addr = socket.recv_fds(sock, 65536, max_fds)
        else:
            chunk = sock.recv(65536)
        if not chunk:
            return None, fds
        buffer += chunk
    (size,) = HEADER.unpack(buffer[: HEADER.size])
    buffer = buffer[HEADER.size :]
    while len(buffer) < size:
        chunk = sock.recv(max(65536, size - len(buffer)))
        if not chunk:
            return None, fds
        buffer += chunk
    return json.loads(buffer[:size]), fds


def _connect(timeout_s: float | None = None) -> socket.socket | None:
    path = socket_path()
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        sock.connect(str(path))
    except OSError:  # a socket left by a server that died: the run starts cold
        sock.close()
        return None
    return sock


def run_warm(argv: list[str]) -> int | None:
    """Runs `argv` (the whole command line) in a fork of this Python's warm server, if one is
    running and can: the run's exit status, or None (the caller then runs it as usual)."""
    if os.environ.get("GEOEVAL_WARM", "1") in ("0", "false", "no") or not is_run(argv[1:]):
        return None
    sock = _connect(timeout_s=10.0)
    if sock is None:
        return None
    with sock:
        request = {
            "op": "run",
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _umask(),
            "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "interpreter": interpreter(),
        }
        try:
            send_message(sock, request, [0, 1, 2])
            reply, _ = receive_message(sock)
        except OSError:
            return None
        if reply is None:
            return None
        if reply.get("refused"):
            print(f"geoeval: {reply['refused']}: this run starts without it", file=sys.stderr)
            return None
        sock.settimeout(None)
        return _wait_for_run(sock, int(reply["pid"]))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _wait_for_run(sock: socket.socket, pid: int) -> int:
    """Passes signals on to the run and returns its exit status; a run killed by a signal makes
    this process die of the same one, as the run in place of it would have."""

    for signum in FORWARDED:
        signal.signal(signum, lambda received, frame: signal_run(pid, received))
    try:
        reply, _ = receive_message(sock)
    except OSError:
        reply = None
    if reply is None:  # the server died: its run goes on, orphaned, with this command's output
        print(f"geoeval: the warm server stopped during the run (pid {pid}); waiting for the run", file=sys.stderr)
        while _alive(pid):
            time.sleep(0.5)
        print("geoeval: the run ended; its exit status is unknown (the warm server stopped)", file=sys.stderr)
        return 1
    status = int(reply["status"])
    if os.WIFSIGNALED(status):
        killed_by = os.WTERMSIG(status)
        sys.stdout.flush()
        signal.signal(killed_by, signal.SIG_DFL)
        os.kill(os.getpid(), killed_by)
        return 128 + killed_by
    return os.waitstatus_to_exitcode(status)


def signal_run(pid: int, signum: int) -> None:
    """Send `signum` to the run `pid`, which may have ended already."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def ask(op: str, timeout_s: float = 10.0) -> dict | None:
    """The server's answer to `op` (`status`, `stop`), or None when none runs."""
    sock = _connect(timeout_s)
    if sock is None:
        return None
    with sock:
        try:
            send_message(sock, {"op": op})
            reply, _ = receive_message(sock)
        except OSError:
            return None
        return reply


def _parser() -> argparse.ArgumentParser:
    from geoeval.cli.help import HelpWithExamples, examples  # the help's text: only when the command runs

    parser = argparse.ArgumentParser(
        prog="geoeval warm",
        description="A server that starts runs with Inspect, MLflow, Hydra and the suites already imported "
        "(seconds sooner each); the runs of this Python use it while it runs (docs/running.md#a-warm-server).",
        epilog=examples("warm"),
        formatter_class=HelpWithExamples,
    )
    sub = parser.add_subparsers(dest="action", required=True)
    start = sub.add_parser("start", help="start the warm server in the background")
    start.add_argument("--idle-minutes", type=float, default=60.0, help="stop after this long without a run")
    start.add_argument("--foreground", action="store_true", help="serve in this process (for a supervisor)")
    sub.add_parser("status", help="whether a warm server runs, since when, and the runs it started")
    stop = sub.add_parser("stop", help="stop the warm server (after the runs it started end)")
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for it to exit")
    return parser


def main(args: list[str]) -> int:
    ns = _parser().parse_args(args)
    if ns.action == "status":
        state = ask("status")
        if state is None:
            print("no warm server for this Python (geoeval warm start starts one)")
            return 1
        print(_describe(state))
        return 0
    if ns.action == "stop":
        state = ask("stop")
        if state is None:
            print("no warm server for this Python")
            return 0
        deadline = time.monotonic() + ns.timeout
        while socket_path().exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        print(f"stopped the warm server (pid {state['pid']}, {state['served']} runs started)")
        return 0
    if ns.foreground:
        from geoeval.cli.warm_server import serve  # the server's imports: everything a run needs

        return serve(socket_path(), idle_s=ns.idle_minutes * 60)
    return _start_background(ns.idle_minutes)


def _describe(state: dict) -> str:
    minutes = (time.time() - float(state["since"])) / 60
    return (
        f"warm server pid {state['pid']} for the Python at {state['python']}: up {minutes:.1f} min, "
        f"{state['served']} runs started, {state['running']} running; stops after "
        f"{float(state['idle_s']) / 60:g} min without a run; log {log_path()}"
    )


def _start_background(idle_minutes: float) -> int:
    state = ask("status")
    if state is not None:
        print("already running: " + _describe(state))
        return 0
    directory = warm_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)
    command = [sys.executable, "-m", "geoeval", "warm", "start", "--foreground", "--idle-minutes", str(idle_minutes)]
    with open(log_path(), "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd="/",
            start_new_session=True,  # not stopped by the terminal's Ctrl-C, nor by this command's exit
        )
    started = time.monotonic()
    while time.monotonic() - started < 120:
        state = ask("status", timeout_s=2.0)
        if state is not None:
            print(f"started ({time.monotonic() - started:.1f} s): " + _describe(state))
            return 0
        if process.poll() is not None:
            break
        time.sleep(0.2)
    print(f"geoeval: error: the warm server did not start; its log: {log_path()}", file=sys.stderr)
    return 1
