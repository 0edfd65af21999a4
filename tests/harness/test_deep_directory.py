"""A `runner=ray` job started from a deep directory: Ray's unix sockets must still fit the
107-byte limit (a home folder like /home/<user>/projects/geoeval was enough to break it)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import geoeval_cmd


@pytest.mark.slow
def test_a_ray_job_runs_from_a_directory_deeper_than_the_socket_limit(tmp_path):
    deep = tmp_path / ("d" * 40) / ("e" * 40) / "projects" / "geoeval"
    deep.mkdir(parents=True)
    assert len(str(deep / "results" / "work" / "ray")) > 107
    proc = subprocess.run(
        geoeval_cmd(
            "runner=ray",
            "runner.num_workers=1",
            "model=oracle",
            "suite.categories=[edge_only]",
            "env.n_maps=1",
            "suite.n_per_category=1",
            "tracking=none",
        ),
        cwd=deep,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "n_errors=0" in proc.stdout
