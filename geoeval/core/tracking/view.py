"""What the MLflow UI shows first of geoeval's experiments (issue 40).

MLflow 3 opens an experiment that holds traces on its GenAI overview, and its runs table shows no
metric column until a reader picks one (a choice kept in that browser only), so a first look at a
run found neither its runs nor its numbers. geoeval's experiments therefore carry:

- `mlflow.experimentKind = custom_model_development`: an experiment of runs, not of an agent's
  traces (MLflow's own kinds); the links also ask for the UI's model-training pages
  (`workflowType=machine_learning`), which MLflow 3 otherwise shows only once a reader switches;
- a shared view of that table, `mlflow.sharedViewState.geoeval` (the tag MLflow's own "share
  view" writes), whose columns are the suites' headline metrics and n: the link
  `#/experiments/<id>?viewStateShareKey=geoeval` (`ui_url`) opens the table with them shown.

The console prints the links: a job's run, a sweep's parent run and the table (`ui_url`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from geoeval.core.config.secrets import redact_url

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_DEVELOPMENT = "custom_model_development"  # MLflow's kind whose experiments open on the runs table
VIEW_KEY = "geoeval"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
#: the runs table's columns besides the metrics (MLflow's own default, Source, Models and Dataset,
#: pushed the metrics out of sight beside its assistant panel)
DEFAULT_COLUMNS: tuple[str, ...] = ()
#: where `mlflow ui` serves a local store by default
LOCAL_UI = "http://127.0.0.1:5000"


def metric_column(name: str) -> str:
    """A metric's column key in MLflow's runs table."""
    return f"metrics.`{name}`"


def show_metrics(client: Any, experiment_id: str, metrics: Sequence[str]) -> None:
    """Make the experiment open on its runs table, and its shared view show `metrics` (and n)
    as columns, added to the columns it shows already (an experiment may hold several suites)."""
    experiment = client.get_experiment(experiment_id)
    tags = dict(experiment.tags or {})
    if EXPERIMENT_KIND_TAG not in tags:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, MODEL_DEVELOPMENT)
    try:
        state = json.loads(tags.get(VIEW_TAG) or "{}")
    except json.JSONDecodeError:
        state = {}
    columns = list(state.get("selectedColumns") or DEFAULT_COLUMNS)
    missing = [c for c in (metric_column(m) for m in (*metrics, "n_samples")) if c not in columns]
    if not missing and "selectedColumns" in state:
        return
    state["selectedColumns"] = columns + missing
    client.set_experiment_tag(experiment_id, VIEW_TAG, json.dumps(state))


def ui_url(tracking_uri: str, experiment_id: str, run_id: str | None = None) -> str:
    """The MLflow UI's page of a run, or (no run) the experiment's runs table in geoeval's view:
    on the tracking server itself (credentials in its URI redacted), or where `mlflow ui`
    serves a local store."""

    remote = tracking_uri.startswith(("http://", "https://"))
    base = redact_url(tracking_uri).rstrip("/") if remote else LOCAL_UI
    if run_id:
        return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"
    # MLflow 3 shows its GenAI pages unless the link asks for the model-training ones (a choice
    # it then keeps in the browser)
    return f"{base}/#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves a local store's UI (None for a tracking server: it serves its own)."""
    if tracking_uri.startswith(("http://", "https://")):
        return None
    return f"mlflow ui --backend-store-uri {tracking_uri}"
