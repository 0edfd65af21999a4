"""End to end: `python -m geoeval +experiment=mapsatisfy_generated` on a small generated set, offline:
the oracle scores ECR = IISR = TS = IFS = 1, and after_run writes the reports."""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, geoeval_cmd

pytestmark = pytest.mark.slow  # whole MapSatisfy runs on generated instances

N = 12


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("generated")
    proc = subprocess.run(
        geoeval_cmd(
            "+experiment=mapsatisfy_generated",
            "model=oracle",
            "tracking=none",
            f"env.n={N}",
            "env.seed=4",
            "env.embedder=hashing",
        ),
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp


def test_oracle_scores_one_on_generated_instances(run_dir):
    from inspect_ai.log import read_eval_log

    [log] = glob.glob(str(run_dir / "logs" / "**" / "*.eval"), recursive=True)
    samples = read_eval_log(log).samples
    assert samples is not None and len(samples) == N
    for s in samples:
        v = s.scores["geoeval"].value
        assert {m: v[m] for m in ("ecr", "iisr", "ts", "ifs")} == {m: 1.0 for m in ("ecr", "iisr", "ts", "ifs")}, s.id
        calls = s.metadata["mapsatisfy"]["tool_calls"]
        assert calls and all(c["match_type"] == "exact" for c in calls), s.id
        expects_profile = "profile_evidence" in s.metadata["dims"]["capabilities"]
        assert v["profile_call"] == float(expects_profile), s.id
    domains = {s.metadata["dims"]["extra"]["domain"] for s in samples}
    assert len(domains) == 6


def test_generated_files_and_reports_are_written(run_dir):
    gen = run_dir / "results" / "mapsatisfy_generated" / "seed4_n12_synthetic360"
    assert (gen / "instances.jsonl").is_file() and (gen / "coverage.md").is_file()
    assert len(list((gen / "mock_data").glob("*.csv"))) >= 7
    [reports] = glob.glob(str(run_dir / "outputs" / "*" / "*" / "mapsatisfy_reports"))
    text = (Path(reports) / "results.md").read_text(encoding="utf-8")
    assert f"| geoeval/oracle | {N} | 1.0000 | 1.0000 | 1.0000 | 1.0000 | 1.0000 |" in text
    assert (Path(reports) / "by_domain.png").stat().st_size > 0
    # the oracle calls the expected tools: a profile tool exactly where the case expects one
    assert "| geoeval/oracle | default, profile tool expected | 1.0000 |" in text
