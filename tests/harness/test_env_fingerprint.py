"""Changed external inputs (the authors' files) change the run hash, so a rerun never resumes
scores computed from other data."""

from __future__ import annotations

import json
import shutil

from geoeval.core.config.validate import validate_config
from geoeval.core.run.job import run_job


def spec(tmp_path, root):
    return validate_config(
        {
            "work_dir": str(tmp_path / "work"),
            "log_dir": str(tmp_path / "logs"),
            "results_db": str(tmp_path / "r.duckdb"),
            "limit": 2,
            "env": {"name": "maptab_authors", "root": str(root), "scenario": "metromap", "categories": ["edge_only"]},
            "suite": {"name": "maptab"},
            "model": {"name": "geoeval/table_baseline"},
            "judge": {"models": ["rules"]},
            "metrics": {"name": "maptab_rp", "metrics": ["ema"]},
            "runner": {"name": "local"},
            "tracking": {"enabled": False},
        }
    )


def test_changed_authors_files_change_the_run_hash(tmp_path, peers):
    root = tmp_path / "release"
    shutil.copytree(peers / "maptab", root)
    first = run_job(spec(tmp_path, root), progress=False)
    again = run_job(spec(tmp_path, root), progress=False)
    assert again.run_hash == first.run_hash and again.ran == 0  # unchanged files: resumed
    test_set = root / "metromap" / "data" / "test_set" / "metromap_shortest_path_query_only_tab_test_set.json"
    items = json.loads(test_set.read_text())
    items[0]["question"] = items[0]["question"].replace("fewest stations", "fewest stops")
    test_set.write_text(json.dumps(items))
    changed = run_job(spec(tmp_path, root), progress=False)
    assert changed.run_hash != first.run_hash
    assert changed.ran == len(changed.results) > 0  # evaluated afresh
