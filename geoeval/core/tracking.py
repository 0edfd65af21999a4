"""MLflow tracking: one run per job; a multirun is one parent run with one child run per job.

The default store is a SQLite database under `mlruns/` (`sqlite:///<cwd>/mlruns/mlflow.db`, with
artifacts in `mlruns/artifacts`): MLflow 3's plain file store refuses to start unless
`MLFLOW_ALLOW_FILE_STORE=true`, and SQLite needs no server. Browse it with
`mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db`.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PARENT_RUN_ENV = "GEOEVAL_MLFLOW_PARENT_RUN_ID"


def default_tracking_uri() -> str:
    return f"sqlite:///{(Path.cwd() / 'mlruns' / 'mlflow.db').resolve()}"


def default_artifact_location() -> str:
    return (Path.cwd() / "mlruns" / "artifacts").resolve().as_uri()


def _mlflow():
    os.environ.setdefault("MLFLOW_ENABLE_ASYNC_LOGGING", "false")
    # alembic and the SQLite migrations chat on INFO at the first use of a store
    logging.getLogger("alembic").setLevel(logging.WARNING)
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", module="mlflow")
    import mlflow

    return mlflow


def setup(tracking: Any, experiment_name: str) -> Any:
    """Point MLflow at the configured store and experiment; returns the mlflow module."""
    mlflow = _mlflow()
    uri = tracking.tracking_uri or default_tracking_uri()
    if uri.startswith("sqlite:///"):
        Path(uri[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    name = tracking.experiment_name or experiment_name
    if mlflow.get_experiment_by_name(name) is None:
        artifact = tracking.artifact_location or (default_artifact_location() if uri.startswith("sqlite") else None)
        mlflow.create_experiment(name, artifact_location=artifact)
    mlflow.set_experiment(name)
    return mlflow


def flatten(d: Any, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into MLflow params (`suite.resolution` -> "0.5")."""
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(d, (list, tuple)):
        out[prefix[:-1]] = ",".join(str(x) for x in d)
    else:
        out[prefix[:-1]] = "" if d is None else str(d)
    return out


def start_parent_run(tracking: Any, experiment_name: str, run_name: str, params: dict[str, str] | None = None) -> str:
    mlflow = setup(tracking, experiment_name)
    run = mlflow.start_run(run_name=run_name)
    if params:
        mlflow.log_params({k: v[:6000] for k, v in params.items()})
    mlflow.set_tag("geoeval.kind", "sweep")
    run_id = run.info.run_id
    mlflow.end_run()
    return run_id


def log_job(outcome: Any, *, parent_run_id: str | None, artifacts: Iterable[Path], run_name: str) -> str:
    """Log one job: params (the flattened resolved config), split metrics and artifacts."""
    spec = outcome.spec
    mlflow = setup(spec.tracking, spec.experiment_name)
    tags = {"geoeval.run_hash": outcome.run_hash, "geoeval.suite": spec.suite.name, "geoeval.model": spec.model.name}
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    with mlflow.start_run(run_name=run_name, tags=tags) as run:
        params = flatten(spec.to_dict())
        items = sorted(params.items())
        for i in range(0, len(items), 100):  # MLflow caps a batch at 100 params
            mlflow.log_params({k: v[:6000] for k, v in items[i : i + 100]})
        metrics = {k: float(v) for k, v in outcome.metrics.items()}
        metrics.update({"n_samples": float(len(outcome.results)), "wall_seconds": float(outcome.seconds)})
        keys = sorted(metrics)
        for i in range(0, len(keys), 500):
            mlflow.log_metrics({k: metrics[k] for k in keys[i : i + 500]})
        for path in artifacts:
            path = Path(path)
            if path.is_dir():
                mlflow.log_artifacts(str(path), artifact_path=path.name)
            elif path.exists():
                sub = "inspect_logs" if path.suffix == ".eval" else None
                mlflow.log_artifact(str(path), artifact_path=sub)
        return run.info.run_id


def log_parent_artifacts(tracking: Any, experiment_name: str, run_id: str, artifacts: Iterable[Path], metrics: dict[str, float] | None = None) -> None:
    mlflow = setup(tracking, experiment_name)
    with mlflow.start_run(run_id=run_id):
        for path in artifacts:
            mlflow.log_artifact(str(path))
        if metrics:
            mlflow.log_metrics(metrics)
