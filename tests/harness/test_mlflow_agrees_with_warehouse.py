"""MLflow never disagrees with the warehouse (issue 40): a smaller rerun of a config (`limit=4`
after a full run: the same run hash, its samples resumed from the warehouse) is an MLflow run of
its own, named and tagged as a subset; the whole run's MLflow record keeps its n, its metrics and
its name, which are the warehouse's, and the warehouse keeps pointing at it."""

from __future__ import annotations

from geoeval.core.run.job import run_job
from geoeval.core.tracking.runs import TAG_SUBSET
from geoeval.core.warehouse.store import Warehouse
from tests.conftest import compose_spec

SMALL = ("model=oracle", "suite.categories=[edge_only]", "env.n_maps=1", "suite.n_per_category=8")


def _runs(store_uri: str) -> dict[str, object]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=store_uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    return {r.info.run_id: r for r in client.search_runs(experiments)}


def test_a_limit_rerun_after_a_full_run_is_its_own_mlflow_run_and_the_whole_run_keeps_the_warehouses_n(tmp_path):
    store_uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    tracked = ("tracking=mlflow", f"tracking.tracking_uri={store_uri}", "tracking.traces=none")
    full = run_job(compose_spec(tmp_path, *SMALL, *tracked), progress=False, run_name="full")
    subset = run_job(compose_spec(tmp_path, *SMALL, *tracked, "limit=4"), progress=False, run_name="limit=4")
    assert subset.run_hash == full.run_hash and subset.resumed == 4  # the same run, resumed
    assert subset.mlflow_run_id != full.mlflow_run_id

    runs = _runs(store_uri)
    whole, part = runs[full.mlflow_run_id], runs[subset.mlflow_run_id]
    with Warehouse(tmp_path / "results.duckdb") as wh:
        (stored,) = wh.runs()
    # the warehouse and the whole run's MLflow record say the same
    assert stored["n_samples"] == whole.data.metrics["n_samples"] == 8
    assert stored["mlflow_run_id"] == full.mlflow_run_id
    assert whole.info.run_name == "full" and TAG_SUBSET not in whole.data.tags
    assert whole.data.metrics["ema"] == 1.0
    # the subset says what it is
    assert part.data.metrics["n_samples"] == 4
    assert part.data.tags[TAG_SUBSET] == "4 of 8 stored"
    assert part.info.run_name == "limit=4 (subset: 4 of 8 stored)"
    # the console's link opens the run, and the experiment its runs table with the metrics shown
    assert full.mlflow_url.endswith(f"/#/experiments/{whole.info.experiment_id}/runs/{full.mlflow_run_id}")

    again = run_job(compose_spec(tmp_path, *SMALL, *tracked), progress=False, run_name="full")
    assert again.mlflow_run_id == full.mlflow_run_id  # the whole run goes on in its own record
    runs = _runs(store_uri)
    assert len(runs) == 2 and runs[full.mlflow_run_id].data.metrics["n_samples"] == 8


def test_a_first_small_run_grows_into_the_whole_run(tmp_path):
    """The other order: `limit=4` first, then the full run, which resumes it: one MLflow run,
    ending with every sample the warehouse holds."""
    store_uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    tracked = ("tracking=mlflow", f"tracking.tracking_uri={store_uri}", "tracking.traces=none")
    small = run_job(compose_spec(tmp_path, *SMALL, *tracked, "limit=4"), progress=False, run_name="limit=4")
    full = run_job(compose_spec(tmp_path, *SMALL, *tracked), progress=False, run_name="full")
    assert full.mlflow_run_id == small.mlflow_run_id
    (run,) = _runs(store_uri).values()
    assert run.data.metrics["n_samples"] == 8 and TAG_SUBSET not in run.data.tags
