"""A sweep's job hands its MLflow end to a background thread and returns (the next job starts
while the end is sent: ~0.2 s of the driver per job, 6 s of a 30-job sweep); the end still logs
every trace and ends the run FINISHED, and an end that fails marks the run FAILED and reaches the
job's point, which the sweep reports as failed (`JobPoint`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from geoeval.core.run.job import run_job
from geoeval.core.run.sweep_job import read_points
from geoeval.core.sweep.points import JobPoint
from geoeval.core.tracking import background_ends, delivery
from tests.conftest import compose_spec

SMALL = ("model=oracle", "suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=3")


def tracked_spec(tmp_path: Path):
    spec = compose_spec(tmp_path, *SMALL)
    tracking = spec.tracking.model_copy(
        update={
            "enabled": True,
            "tracking_uri": f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
            "traces": "all",
            "max_traces": 500,
        }
    )
    return spec.model_copy(update={"tracking": tracking})


def mlflow_run(tmp_path: Path, run_id: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    return client.get_run(run_id)


def test_the_job_returns_before_its_end_is_sent_and_the_end_finishes_the_run(tmp_path, monkeypatch):
    released = threading.Event()
    real_end = delivery.end_job_run

    def end_when_released(*args, **kwargs):
        assert released.wait(60), "the job waited for its own end"
        return real_end(*args, **kwargs)

    monkeypatch.setattr(delivery, "end_job_run", end_when_released)
    told: list[tuple] = []
    outcome = run_job(tracked_spec(tmp_path), progress=False, end_in_background=lambda *end: told.append(end))
    # returned while its end waits: the run is still RUNNING, and nobody was told anything yet
    assert background_ends.in_flight() == 1 and told == []
    assert mlflow_run(tmp_path, outcome.mlflow_run_id).info.status == "RUNNING"
    released.set()
    assert background_ends.wait_all(timeout_s=120)
    assert told == [(None, None)]  # sent, nothing kept for later
    run = mlflow_run(tmp_path, outcome.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["traces_logged"] == 3 and run.data.metrics["n_samples"] == 3


def test_an_end_that_fails_marks_the_run_failed_and_the_point_says_so(tmp_path, monkeypatch):
    def broken_end(*args, **kwargs):
        raise RuntimeError("the store refused the end")

    monkeypatch.setattr(delivery, "end_job_run", broken_end)
    points = tmp_path / "sweep_points.jsonl"
    job_point = JobPoint(points, lambda point: point)
    outcome = run_job(tracked_spec(tmp_path), progress=False, end_in_background=job_point.end_done)
    job_point.job_done({"job": 0, "metrics": outcome.metrics, "failed": None})
    assert background_ends.wait_all(timeout_s=120)
    assert mlflow_run(tmp_path, outcome.mlflow_run_id).info.status == "FAILED"
    [point] = read_points(points)  # the last line of job 0 counts
    assert point["failed"] == "its MLflow end failed: RuntimeError: the store refused the end"
    assert point["metrics"] == outcome.metrics


@pytest.mark.parametrize("end_first", [True, False])
def test_a_job_point_carries_its_kept_end_whichever_comes_first(tmp_path, end_first):
    points = tmp_path / "sweep_points.jsonl"
    job_point = JobPoint(points, lambda point: {**point, "cleaned": True})
    kept = tmp_path / "work" / "tracking_pending" / "run.json"
    steps = [lambda: job_point.end_done(kept, None), lambda: job_point.job_done({"job": 4, "metrics": {"acc": 1.0}})]
    for step in steps if end_first else steps[::-1]:
        step()
    assert read_points(points) == [{"job": 4, "metrics": {"acc": 1.0}, "tracking_pending": str(kept), "cleaned": True}]
    lines = [json.loads(line) for line in points.read_text().splitlines()]
    assert len(lines) == (1 if end_first else 2)  # an end sent after the point appends it again
    job_point.end_done(None, None)  # an end that was sent adds no line
    assert len(points.read_text().splitlines()) == len(lines)
