"""Per-sample score fingerprints of the three suites' offline experiments (run by hand).

    .venv/bin/python scripts/score_fingerprint.py [--out F.json] [--only maptab,lifeplanner,...] [--protocol paper]

A refactor that must not change any result (issue 9) is checked by running this before and after
and comparing the two outputs: each experiment runs from an empty directory with an empty cache,
and its digest is the sha256 over every stored sample's (run hash, sample id, epoch, status, answer,
scores) in a canonical order, so a changed score, answer, status or run identity changes it. The
meta-eval reports (every tier of every sample through each suite's scorer) are fingerprinted too.
`--protocol paper` runs everything under `scoring.protocol=paper`: a change to the robust reading
must leave that fingerprint unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path.insert(0, str(REPO / "bench"))
from profile_main import score_digest  # noqa: E402  (the main command's bench digests the same way)


def scores_only_digest(results_db: Path) -> str:
    """sha256 over every stored sample's (id, epoch, status, answer, scores) without its run hash:
    equal across a change that bumps a suite's scoring version but leaves every score as it was."""
    from geoeval.core.warehouse.store import Warehouse

    rows = []
    with Warehouse(results_db, read_only=True) as wh:
        for run in wh.runs():
            for r in wh.results(run["run_hash"]):
                rows.append(
                    [r.sample_id, r.epoch, r.status, r.answer, sorted((k, repr(v)) for k, v in r.scores.items())]
                )
    rows.sort()
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


#: name -> (command arguments after `python -m geoeval`, whether it needs ../shared/peers)
RUNS: dict[str, tuple[list[str], bool]] = {
    "maptab_perception": (
        [
            "model=perception_baseline",
            "env.n_maps=2",
            "suite.scenario=both",
            "suite.setting=map_edge_tab",
            "suite.resolution=0.5",
            "runner=local",
        ],
        False,
    ),
    "maptab_table": (["model=table_baseline", "suite.scenario=both", "suite.setting=edge_tab", "runner=local"], False),
    "maptab_oracle": (["model=oracle", "suite.scenario=both", "runner=local"], False),
    "maptab_qa": (["+experiment=maptab_qa"], False),
    "maptab_authors": (["+experiment=maptab_authors_sample", f"env.root={SHARED / 'peers' / 'maptab'}"], True),
    "lifeplanner_offline": (["+experiment=lifeplanner_offline"], False),
    "lifeplanner_oracle": (["+experiment=lifeplanner_offline", "model=oracle"], False),
    "mapsatisfy_generated": (["+experiment=mapsatisfy_generated"], False),
    "mapsatisfy_clarify": (["+experiment=mapsatisfy_generated", "model=clarify_baseline"], False),
    "mapsatisfy_demo": (["+experiment=mapsatisfy_demo", f"env.root={SHARED / 'peers' / 'mapsatisfy'}"], True),
    # the oracle's answers exercise the judge (the default agent's mostly score 0)
    "mapsatisfy_oracle": (["+experiment=mapsatisfy_generated", "model=oracle"], False),
    "mapsatisfy_demo_oracle": (
        ["+experiment=mapsatisfy_demo", "model=oracle", f"env.root={SHARED / 'peers' / 'mapsatisfy'}"],
        True,
    ),
}
META_EVAL = {
    "meta_maptab": ["maptab"],
    "meta_maptab_qa": ["maptab_qa"],
    "meta_lifeplanner": ["lifeplanner"],
    "meta_mapsatisfy": ["mapsatisfy"],
}


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ, GEOEVAL_CACHE_DIR=str(work / "cache"), PYTHONPATH=str(REPO))
    env.pop("CI", None)
    return env


def run_experiment(args: list[str]) -> dict:
    work = Path(tempfile.mkdtemp(prefix="geoeval-fp-"))
    cwd = work / "w"
    cwd.mkdir()
    db = cwd / "results.duckdb"
    cmd = [
        sys.executable,
        "-m",
        "geoeval",
        *args,
        f"results_db={db}",
        f"log_dir={cwd}/logs",
        f"work_dir={cwd}/work",
        "tracking=none",
    ]
    # run from the repository: relative paths in experiments (../shared/peers) resolve from there
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=_env(work), capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
    digest, n = score_digest(db)
    return {
        "digest": digest,
        "scores_digest": scores_only_digest(db),
        "samples": n,
        "seconds": round(time.perf_counter() - t, 1),
    }


def run_meta_eval(args: list[str]) -> dict:
    work = Path(tempfile.mkdtemp(prefix="geoeval-fpm-"))
    out = work / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "geoeval", "meta-eval", *args, "--output", str(out)],
        cwd=REPO,
        env=_env(work),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 and not out.exists():
        return {"error": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
    report = json.loads(out.read_text())
    report.pop("seconds", None)
    text = json.dumps(report, sort_keys=True, default=str)
    return {"digest": hashlib.sha256(text.encode()).hexdigest(), "exit": proc.returncode}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--only", default="", help="comma-separated names (default: all)")
    p.add_argument(
        "--protocol", choices=["robust", "paper"], help="scoring.protocol of every run (default: each config's)"
    )
    a = p.parse_args()
    extra = [f"scoring.protocol={a.protocol}"] if a.protocol else []
    only = {x for x in a.only.split(",") if x}
    result: dict[str, dict] = {}
    for name, (args, needs_peers) in RUNS.items():
        if only and name not in only:
            continue
        if needs_peers and not (SHARED / "peers").exists():
            result[name] = {"skipped": "no ../shared/peers"}
            continue
        result[name] = run_experiment([*args, *extra])
        print(name, result[name], flush=True)
    for name, args in META_EVAL.items():
        if only and name not in only:
            continue
        result[name] = run_meta_eval([*args, *extra])
        print(name, result[name], flush=True)
    text = json.dumps(
        {k: {kk: vv for kk, vv in v.items() if kk != "seconds"} for k, v in result.items()}, indent=1, sort_keys=True
    )
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
