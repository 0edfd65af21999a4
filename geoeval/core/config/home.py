"""The project home: the one folder under which everything a run writes lives (the warehouse
`results/`, Inspect's `logs/`, Hydra's `outputs/` and `multirun/`, the local MLflow store
`mlruns/`), found the way git finds a repository.

In order: `$GEOEVAL_HOME` (or its older name `$GEOEVAL_ROOT`); else the nearest folder, from the
current one up, that `geoeval init` marked (it holds `.geoeval/home`); else the current folder.
So a project that ran `geoeval init` once gets the same results, cache of finished samples and
MLflow store from any of its subfolders, while a folder that never did behaves as before (each
folder its own). The configs read it as `$GEOEVAL_ROOT` (`conf/config.yaml`), which the command
line sets from a marker before Hydra composes (`settle_home`).
"""

from __future__ import annotations

import os
from pathlib import Path

MARKER_DIR = ".geoeval"
MARKER_FILE = "home"


def marked_home(start: Path | None = None) -> Path | None:
    """The nearest folder from `start` (the current one) up that `geoeval init` marked."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER_DIR / MARKER_FILE).is_file():
            return folder
    return None


def project_home(start: Path | None = None) -> Path:
    """Where everything a run writes lives (see the module docstring)."""
    explicit = os.environ.get("GEOEVAL_HOME") or os.environ.get("GEOEVAL_ROOT")
    if explicit:
        return Path(explicit).expanduser().resolve()
    return marked_home(start) or (start or Path.cwd()).resolve()


def settle_home() -> Path | None:
    """Sets `$GEOEVAL_ROOT` (what the configs read) from `$GEOEVAL_HOME` or a marked home, before
    any config is composed; leaves it unset where neither is (the current folder). Returns the
    home it set, if any."""
    if os.environ.get("GEOEVAL_ROOT"):
        return None
    home = os.environ.get("GEOEVAL_HOME")
    found = Path(home).expanduser().resolve() if home else marked_home()
    if found is not None:
        os.environ["GEOEVAL_ROOT"] = str(found)
    return found


def init_home(folder: Path) -> Path:
    """Marks `folder` as a project home (idempotent); returns the marker file."""
    marker = folder.resolve() / MARKER_DIR / MARKER_FILE
    marker.parent.mkdir(parents=True, exist_ok=True)
    if not marker.exists():
        marker.write_text(
            "geoeval project home: runs in this folder or any subfolder write results/, logs/, outputs/, "
            "multirun/ and mlruns/ here (geoeval init; docs/running.md, 'The project home')\n"
        )
    return marker
