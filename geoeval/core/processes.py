"""Whether a process is alive: its start time from /proc (which tells a live process from an
unrelated one that reused its pid) and whether a process known to be running then is gone now.
The warehouse's sample claims, killed invocations and MLflow run owners all ask it."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def process_start(pid: int) -> str:
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


def process_started_at(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch (the boot time in /proc/stat plus its start
    in clock ticks); None where /proc cannot say."""
    ticks = process_start(pid)
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
    if process_start(pid) == "zombie":
        return True
    started = process_started_at(pid)
    return started is not None and started > alive_at + 1.0
