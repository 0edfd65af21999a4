"""How a `geoeval` process ends once its command has returned (`python -m geoeval`, and a run the
warm server forked: `geoeval.cli.warm_server`).

Once a run has returned, everything it wrote is closed and every exit handler has run, the process
ends without the interpreter's teardown: freeing the objects of MLflow, Inspect, pandas and
matplotlib one by one took ~1.4 s of a 30 s sweep on 2 cores and writes nothing. A local Ray is
stopped first by `core.run.ray_session.shutdown_ray` (~1.5 s quicker than Ray's own exit handler). An exception
(a crash, Ctrl-C) takes Python's normal exit, traceback included.
"""

from __future__ import annotations

import atexit
import os
import sys

from geoeval.core.run.ray_session import shutdown_ray


def exit_now(code: int) -> None:
    """Run the exit handlers, flush the streams and end the process with `code`."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere, the normal exit
    if run_exit_handlers is None:
        sys.exit(code)
    if "ray" in sys.modules:  # geoeval's quicker stop of its Ray (Ray's exit handler then has nothing to do)
        try:
            shutdown_ray()
        except Exception:  # noqa: BLE001 -- e.g. a moved private name: Ray's own exit handler stops it
            pass
    run_exit_handlers()  # Ray's shutdown, logging's flush, temporary folders' clean-up, ...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- a closed or broken stream has nothing left to lose
            pass
    os._exit(code)
