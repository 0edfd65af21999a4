"""The owner of an MLflow run: the host, pid and process start time it records (`owner_tags`),
and whether that owner is known to be gone (`owner_is_dead`), which lets a later job take over a
run a killed job left RUNNING.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping
from pathlib import Path

TAG_HOST = "geoeval.host"
TAG_PID = "geoeval.pid"
TAG_PID_START = "geoeval.pid_start"
#: MLflow's own "who ran it" (the runs table's User column): geoeval's researcher, the name the
#: warehouse records too (MLflow's default, the login name, is `root` for a whole lab in containers)
TAG_USER = "mlflow.user"


def _process_start(pid: int) -> str:
    """The kernel's start time of `pid` (clock ticks since boot), which tells a live owner from an
    unrelated process that reused its pid; "" where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields and fields[0] == "Z":  # a zombie has exited
        return "zombie"
    return fields[19] if len(fields) > 19 else ""


def researcher() -> str:
    """Who is running geoeval: `$GEOEVAL_USER`, else the login name; MLflow records it as the
    run's `mlflow.user` (`owner_tags`). A shared warehouse records it per invocation, and it is part of a job's
    MLflow identity, so that a colleague's rerun of the same config gets a run of their own."""
    name = os.environ.get("GEOEVAL_USER")
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return f"uid{os.getuid()}"


def owner_tags() -> dict[str, str]:
    """Who owns a run: the researcher (as MLflow's user), the host, the pid and its start."""
    pid = os.getpid()
    return {
        TAG_USER: researcher(),
        TAG_HOST: socket.gethostname(),
        TAG_PID: str(pid),
        TAG_PID_START: _process_start(pid),
    }


def owner_is_dead(tags: Mapping[str, str]) -> bool:
    """True only when the run's owner is known to be gone: it ran on this host and its pid is not
    alive (or is now another process). An owner on another host, or a run without owner tags,
    counts as alive: nothing can be checked, so nothing is taken from it."""
    if tags.get(TAG_HOST) != socket.gethostname():
        return False
    try:
        pid = int(tags.get(TAG_PID, ""))
    except ValueError:
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        return False
    except OSError:
        return False
    started = _process_start(pid)
    if started == "zombie":
        return True
    recorded = tags.get(TAG_PID_START, "")
    return bool(recorded and started and recorded != started)


def process_started_at(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch (the boot time in /proc/stat plus its start
    in clock ticks); None where /proc cannot say."""
    ticks = _process_start(pid)
    if not ticks or ticks == "zombie":
        return None
    try:
        lines = Path("/proc/stat").read_text().splitlines()
        boot = next(int(line.split()[1]) for line in lines if line.startswith("btime "))
        return boot + int(ticks) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError):
        return None


def process_is_gone(host: str, pid: int, alive_at: float) -> bool:
    """True only when the process `pid` of `host`, known to be running at `alive_at` (seconds
    since the epoch), is known to be gone: it ran on this host and its pid is not alive, is a
    zombie, or is now a process that started after `alive_at` (the pid was reused; a second of
    slack for the boot time's rounding). Another host's process counts as alive."""
    if host != socket.gethostname() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: alive, another user's
        return False
    if _process_start(pid) == "zombie":
        return True
    started = process_started_at(pid)
    return started is not None and started > alive_at + 1.0
