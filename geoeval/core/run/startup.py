"""What a run checks and starts before its first sample, cheapest first: the local checks (the
warehouse, the folders, the disk), the tracking server, the model's server (`model.serve`), and
the one probe per model endpoint (`preflight`). `python -m geoeval` and `geoeval estimate
--pilot` go through the same steps, so every model config that runs is also one a pilot runs.

A rescore (`generation=replay_only`) never calls the evaluated model: its server is not started
and its endpoint is not probed (`serving.served_model`, `preflight.endpoint_checks`), so a
rescore makes no request to it and works while it is down.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from geoeval.core.errors import GeoevalError
from geoeval.core.run.preflight import endpoint_checks, preflight, send_early
from geoeval.core.run.runner import start_early
from geoeval.core.run.serving import served_model

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.run.preflight import PreflightResult


def _existing_ancestor(path: Path) -> Path:
    folder = path
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_writable_folder(path: Path, key: str) -> None:
    """A `GeoevalError` naming `key` when `path` (a folder, created later) could not be created or
    written: it is a file, or the nearest folder that exists is not writable. Creates nothing."""
    found = _existing_ancestor(path.resolve())
    if found == path.resolve() and not found.is_dir():
        raise GeoevalError(f"{path} is a file, not a folder: point {key} at a folder")
    if not found.is_dir():
        raise GeoevalError(f"cannot create {path}: {found} is a file: point {key} at a writable place")
    if not os.access(found, os.W_OK | os.X_OK):
        raise GeoevalError(f"cannot write {path}: {found} is not writable: point {key} at a writable place")


def check_local(spec: RunSpec) -> None:
    """The checks that need nothing but this machine, before any request leaves it: the results
    warehouse opens as the run will write it (an existing file is opened and checked; a new one's
    folder must be writable, with room on its disk), and the log and work folders can be written.
    Creates nothing that the run would not."""
    from geoeval.core.warehouse.lock import check_free_space
    from geoeval.core.warehouse.store import Warehouse

    results_db = Path(spec.results_db)
    if results_db.exists():
        Warehouse(results_db, config_key="results_db=", check_readable=True)
    else:
        check_writable_folder(results_db.parent, "results_db=")
        check_free_space(results_db, "results_db=")
    check_writable_folder(Path(spec.log_dir), "log_dir=")
    check_writable_folder(Path(spec.work_dir), "work_dir=")


def start_soon(spec: RunSpec) -> None:
    """What a single run starts as soon as its config is valid, before Hydra composes its job and
    the run imports what it needs: its endpoint probes (`preflight.send_early`; `started` takes
    their answers), and for `runner=ray` its local Ray and the workers' warm-up
    (`runner.start_early`), each on a thread of its own. Nothing for a run that fails its local
    checks (it stops before any probe, as it would have); no probe for a model the run serves
    itself (its server starts later)."""
    try:
        check_local(spec)
    except GeoevalError:
        return  # the run says so in its place, before any probe
    if spec.preflight and not spec.model.serve:
        send_early(endpoint_checks(spec), timeout_s=spec.preflight_timeout_s)
    start_early(spec)


@contextmanager
def started(
    spec: RunSpec, *, checked: bool = False, meanwhile: Callable[[], object] | None = None
) -> Iterator[tuple[RunSpec, list[PreflightResult]]]:
    """Within the block the run may start its samples: yields the spec to run (a served model's
    `base_url` set) and the preflight's results (notes worth printing). `checked`: the tracking
    server and the endpoints were checked already (a sweep checks them once, before job 0).
    `meanwhile`: work for this thread while the probes wait (`preflight.preflight`)."""
    from geoeval.core.tracking.store import check_tracking_server

    check_local(spec)
    if not checked:
        check_tracking_server(spec.tracking)
    with served_model(spec) as served:
        results: list[PreflightResult] = []
        if served.preflight and not checked:
            results = preflight(endpoint_checks(served), timeout_s=served.preflight_timeout_s, meanwhile=meanwhile)
        yield served, results
