"""Inspect's entry point for geoeval (`geoeval/_inspect_registry.py`): in a process of its own
(`inspect eval geoeval/<suite>`) it names every suite, importing every plugin; in a process that
evaluates geoeval's tasks as objects (a run's driver, a Ray worker) it imports no suite that the
run did not load (issue 45: ~0.45 s of CPU in each such process)."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
from geoeval.core.run import inspect_bridge
if sys.argv[1] == "run":
    inspect_bridge.warm_up()  # what a Ray worker does first: Inspect loads its entry points in its eval
import geoeval._inspect_registry
from inspect_ai._util.registry import registry_find
print(json.dumps({
    "entry point loaded": "geoeval._inspect_registry" in sys.modules,
    "mapsatisfy imported": "geoeval.suites.mapsatisfy.suite" in sys.modules,
    "tasks": sorted(str(t.__registry_info__.name) for t in registry_find(lambda info: info.type == "task")),
}))
"""


def _run(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_run_process_imports_no_suite_for_inspects_entry_point():
    found = _run("run")
    # the warm-up loaded no suite: none is named (a run's own suite is, as `run_shard` loads it first)
    assert found == {"entry point loaded": True, "mapsatisfy imported": False, "tasks": []}


def test_inspect_on_its_own_finds_every_suites_task():
    found = _run("inspect")
    assert found == {
        "entry point loaded": True,
        "mapsatisfy imported": True,
        "tasks": ["lifeplanner", "mapsatisfy", "maptab", "station_lines"],  # the example plugin's too
    }
