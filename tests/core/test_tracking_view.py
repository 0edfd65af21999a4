"""What the MLflow UI shows first of geoeval's experiments (`geoeval.core.tracking.view`, issue
40): the experiment is one of runs (not MLflow 3's GenAI overview), its shared view of the runs
table shows the suites' headline metrics as columns, and the console's links open those pages."""

from __future__ import annotations

import json

from geoeval.core.tracking import runs as tracking
from geoeval.core.tracking.view import EXPERIMENT_KIND_TAG, VIEW_TAG, show_metrics, ui_url
from tests.core.conftest import spec_for


def _view(client, experiment_id):
    tags = client.get_experiment(experiment_id).tags
    return tags.get(EXPERIMENT_KIND_TAG), json.loads(tags[VIEW_TAG])["selectedColumns"]


def test_the_experiment_opens_on_its_runs_with_every_suites_headline_metrics(store):
    run = tracking.JobRun.start(spec_for(store), "exp", run_hash="h1", run_name="r")
    run.show_in_runs_table(["ema", "pma"])
    kind, columns = _view(run.client, run.experiment_id)
    assert kind == "custom_model_development"
    assert columns == ["metrics.`ema`", "metrics.`pma`", "metrics.`n_samples`"]
    show_metrics(run.client, run.experiment_id, ["ar", "ses", "ema"])  # another suite in the same experiment
    assert _view(run.client, run.experiment_id)[1] == [
        "metrics.`ema`",
        "metrics.`pma`",
        "metrics.`n_samples`",
        "metrics.`ar`",
        "metrics.`ses`",
    ]


def test_the_links_open_the_model_training_pages_of_the_server_or_of_mlflow_ui():
    local = ui_url("sqlite:////tmp/mlruns/mlflow.db", "3", "abc")
    assert local == "http://127.0.0.1:5000/#/experiments/3/runs/abc"
    table = ui_url("https://user:secret@mlflow.lab:5000/", "3")
    assert (
        table
        == "https://***@mlflow.lab:5000/#/experiments/3/runs?workflowType=machine_learning&viewStateShareKey=geoeval"
    )
