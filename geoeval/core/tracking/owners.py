"""The owner of an MLflow run: the host, pid and process start time it records (`owner_tags`),
and whether that owner is known to be gone (`owner_is_dead`), which lets a later job take over a
run a killed job left RUNNING.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping

from geoeval.core.processes import process_start

TAG_HOST = "geoeval.host"
TAG_PID = "geoeval.pid"
TAG_PID_START = "geoeval.pid_start"
#: MLflow's own "who ran it" (the runs table's User column): geoeval's researcher, the name the
#: warehouse records too (MLflow's default, the login name, is `root` for a whole lab in containers)
TAG_USER = "mlflow.user"


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
        TAG_PID_START: process_start(pid),
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
    started = process_start(pid)
    if started == "zombie":
        return True
    recorded = tags.get(TAG_PID_START, "")
    return bool(recorded and started and recorded != started)
