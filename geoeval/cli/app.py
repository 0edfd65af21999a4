"""The Hydra application behind `python -m geoeval` and the `geoeval` console script.

Config groups live in `conf/` (shipped as the package `geoeval.conf`); user experiments in
`./experiments/*.yaml` are found through `geoeval.core.config.search_path`.
A single run is one job; `-m` (or an experiment that sets `hydra.mode: MULTIRUN`) makes a sweep,
which `SweepCallback` wraps in one parent MLflow run and ends with a sweep table and plot. The
jobs of a sweep run through `geoeval.core.sweep.launcher` (`runner.max_concurrent_jobs` at a time); the
worker processes of a fanned-out sweep run this module (`python -m geoeval.cli.app --multirun ...`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from geoeval.core.config.scrub import scrub_file, scrub_tree
from geoeval.core.config.search_path import register as _register_experiments_path
from geoeval.core.config.secrets import collect_secret_values, env_secret_values, redact, redact_urls, scrub_text
from geoeval.core.config.validate import validate_config
from geoeval.core.cost.budget import EXIT_BUDGET_EXCEEDED
from geoeval.core.errors import GeoevalError, JobExit
from geoeval.core.private_api import basic_sweeper_batches
from geoeval.core.run.preflight import endpoint_checks, preflight
from geoeval.core.run.ray_session import job_without_root_warning
from geoeval.core.run.startup import check_local, started
from geoeval.core.run.sweep_job import SWEEP_POINTS, SweepJob, current_sweep_job, read_points
from geoeval.core.sweep.compositions import share_compositions
from geoeval.core.sweep.launcher import in_sweep_worker
from geoeval.core.sweep.launcher import register as _register_launcher
from geoeval.core.sweep.points import JobPoint, sweep_run_name
from geoeval.core.tracking.delivery import EXIT_TRACKING_PENDING, keep_sweep_end

_register_experiments_path()
_register_launcher()


def _fail(exc: GeoevalError) -> None:
    print(f"geoeval: error: {exc}", file=sys.stderr)
    raise JobExit(2, str(exc))


def _sweep_job(hc: Any) -> SweepJob | None:
    """The sweep this job belongs to: as geoeval's launcher announced it, or (another Hydra
    launcher) as Hydra's multirun config says."""
    job = current_sweep_job()
    if job is None and hc.mode == RunMode.MULTIRUN:
        job = SweepJob(int(hc.job.num), str(hc.sweep.dir), hc.job.override_dirname or "base", job_tables=True)
    return job


def _job_label(hc: Any, sweep: SweepJob | None) -> str:
    """The MLflow run name: a sweep job's swept values (`resolution=0.25 setting=map`), a single
    run's overrides, without where results go (`tracking.*`, paths) or any URL."""
    if sweep is not None:
        return sweep.label
    kept = [
        o
        for o in hc.overrides.task
        if not o.lstrip("+~").startswith(("tracking.", "results_db=", "log_dir=", "work_dir=")) and "://" not in o
    ]
    return ",".join(sorted(kept)) or "run"


def _scrub_hydra_outputs(out_dir: Path, secrets: set[str], sweep_dir: Path | None = None) -> None:
    """Hydra saves the composed config and the overrides under `<out_dir>/.hydra/` before the job
    starts, and a sweep's config with every override as `<sweep dir>/multirun.yaml` before its
    first job: any secret given in the config is blanked there too."""

    if secrets and (out_dir / ".hydra").is_dir():
        scrub_tree(out_dir / ".hydra", secrets)
    if secrets and sweep_dir is not None and (sweep_dir / "multirun.yaml").is_file():
        scrub_file(sweep_dir / "multirun.yaml", secrets)


def _say_where_results_go(spec: Any) -> None:
    """One line naming where the warehouse and the logs are (a job submitted from a laptop must
    say where it wrote), and inside a Ray job without `GEOEVAL_ROOT` a warning naming where its
    results really land (`ray_session.job_without_root_warning`)."""
    from geoeval.core.tracking.store import tracking_uri_for

    tracking = tracking_uri_for(spec.tracking) if spec.tracking.enabled else "off"
    print(
        f"[geoeval] results: {Path(spec.results_db).resolve()}; Inspect logs: {Path(spec.log_dir).resolve()}; "
        f"MLflow: {redact_url_text(tracking)}",
        file=sys.stderr,
    )
    ray_job_warning = job_without_root_warning(spec.results_db)
    if ray_job_warning:
        print(f"[geoeval] warning: {ray_job_warning}", file=sys.stderr)


def redact_url_text(text: str) -> str:

    return redact_urls(text)


def _report_preflight(results: list) -> None:
    """One note per endpoint that answered but not plainly (429, 5xx, a refused probe): the run
    goes on, and the user knows why it may be slow."""
    for r in results:
        if r.status not in (None, 200) and r.ok:
            print(f"[geoeval] preflight: {r.message}", file=sys.stderr)


def run_hydra_job(cfg: DictConfig) -> dict[str, float]:
    from geoeval.core.analysis.job_reports import print_outcome
    from geoeval.core.run.job import run_job
    from geoeval.core.tracking import runs as tracking
    from geoeval.core.tracking.store import import_mlflow

    try:
        spec = validate_config(cfg)
    except GeoevalError as exc:
        _fail(exc)
    hc = HydraConfig.get()
    sweep = _sweep_job(hc)
    if sweep is not None and spec.job_plots == "auto":  # the sweep draws its curves once
        spec = spec.model_copy(update={"job_plots": "never"})
    out_dir = Path(hc.runtime.output_dir)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    secrets = collect_secret_values(resolved) | env_secret_values()
    _scrub_hydra_outputs(out_dir, secrets, Path(str(hc.sweep.dir)) if sweep is not None else None)
    (out_dir / "resolved_config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(redact(resolved))))
    if sweep is None or sweep.num == 0:
        _say_where_results_go(spec)
    if sweep is None:  # a sweep's Ray started while it composed its jobs
        from geoeval.core.run.runner import start_early

        start_early(spec)  # a local Ray and its workers start while the run prepares
    if spec.generation == "replay_only" and (sweep is None or sweep.num == 0):
        print(
            f"[geoeval] rescore (generation=replay_only): {spec.model.name} is not called: every call is replayed "
            "from the stored trajectories, no server is started for it and no request is sent to it",
            file=sys.stderr,
        )
    # MLflow's import (the run opens next) while the probes wait on the model
    meanwhile = partial(import_mlflow, spec.tracking) if spec.tracking.enabled else None
    try:
        # local checks first, then the tracking server, the model's server and the probes (a
        # sweep checks the last ones once, before job 0)
        with started(spec, checked=sweep is not None, meanwhile=meanwhile) as (spec, notes):
            _report_preflight(notes)
            # a sweep's next job starts while this one's MLflow end is sent; its point says how it went
            job_point = JobPoint(sweep.points_path, redact) if sweep is not None else None
            outcome = run_job(
                spec,
                out_dir=out_dir,
                run_name=scrub_text(_job_label(hc, sweep), secrets),
                parent_run_id=os.environ.get(tracking.PARENT_RUN_ENV),
                end_in_background=job_point.end_done if job_point is not None else None,
            )
    except GeoevalError as exc:
        _fail(exc)
    if sweep is not None:
        point = {
            "job": sweep.num,
            "overrides": dict(o.split("=", 1) for o in hc.overrides.task if "=" in o),
            "metrics": outcome.metrics,
            "counts": outcome.counts,
            "failed": outcome.failed,
            "budget_exceeded": outcome.budget_exceeded,
            "tracking_pending": str(outcome.tracking_pending) if outcome.tracking_pending else None,
            "run_hash": outcome.run_hash,
            "mlflow_run_id": outcome.mlflow_run_id,
            "n": len(outcome.results),
            "seconds": outcome.seconds,
            "out_dir": str(out_dir),
        }
        assert job_point is not None
        job_point.job_done(point)
    if sweep is None or sweep.job_tables:  # in a sweep, the launcher prints one line per job
        print_outcome(outcome)
    if outcome.budget_exceeded is not None and sweep is None:
        print(f"geoeval: error: run stopped: {outcome.failed}", file=sys.stderr)
        raise SystemExit(EXIT_BUDGET_EXCEEDED)
    if outcome.failed and sweep is None:
        print(f"geoeval: error: run FAILED: {outcome.failed}", file=sys.stderr)
        raise SystemExit(1)
    if outcome.tracking_pending is not None and sweep is None:
        print(
            f"geoeval: error: the scores are stored, but the MLflow tracking server missed the run's end (kept in "
            f"{outcome.tracking_pending}; the next run or `geoeval runs --sync` sends it)",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_TRACKING_PENDING)
    return outcome.metrics


def _sweep_combinations(config: DictConfig) -> list[list[str]]:
    """Every job's override list, expanded as Hydra's basic sweeper will expand it. Under another
    sweeper (Optuna, Ax, ...), whose jobs are chosen as it runs, only the base config (the
    overrides that do not sweep) is checked here; each job is still validated as it starts."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = list(config.hydra.overrides.task)
    sweeper = str(config.hydra.sweeper.get("_target_", ""))
    if sweeper and not sweeper.endswith(".BasicSweeper"):
        print(
            f"[geoeval] sweeper {sweeper}: checking the base config now; each job is checked as it starts",
            file=sys.stderr,
        )
        parsed = OverridesParser.create().parse_overrides(overrides)
        return [[o.input_line for o in parsed if not o.is_sweep_override() and o.input_line]]
    params = config.hydra.sweeper.get("params") or {}
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    overrides = [f"{k}={v}" for k, v in params.items() if k not in given] + overrides
    return basic_sweeper_batches(OverridesParser.create().parse_overrides(overrides))


def sweep_metrics(points: list[dict]) -> dict[str, float]:
    """The sweep parent's summary metrics: the jobs, the samples and errors over all of them, and
    the mean over jobs of each overall metric every job that ran has (the per-job values are the
    child runs' and the sweep table's). `points` in job order, so that the means do not depend on
    the order in which concurrent jobs finished."""
    totals = {"sweep/jobs": float(len(points)), "sweep/failed_jobs": float(sum(1 for p in points if p.get("failed")))}
    for key in ("n_samples", "n_scored", "n_errors"):
        totals[f"sweep/{key}"] = float(sum((p.get("counts") or {}).get(key, 0) for p in points))
    totals.update({f"sweep/{key}": value for key, value in sweep_costs(points).items()})
    ran = [p for p in points if not p.get("crashed")]
    shared = set.intersection(*({k for k in p["metrics"] if "/" not in k} for p in ran)) if ran else set()
    for key in sorted(shared - {"n_samples", "n_scored", "n_errors", "http_retries", *SUMMED_COSTS}):
        values = [p["metrics"][key] for p in ran if p["metrics"][key] == p["metrics"][key]]  # skip NaN
        if values:
            totals[f"sweep/mean_over_jobs/{key}"] = sum(values) / len(values)
    return totals


#: the run totals a sweep adds up over its jobs (`core.cost.pricing.run_costs`)
SUMMED_COSTS = (
    "cost_usd",
    "cost_usd/judge",
    "saved_usd",
    "tokens_in",
    "tokens_out",
    "cache_hits",
    "replayed_calls",
    "model_calls",
    "n_replayed",
)


def sweep_costs(points: list[dict]) -> dict[str, float]:
    """What the sweep's jobs spent and saved, summed (NaN when a job's price is unknown)."""
    return {key: float(sum((p.get("metrics") or {}).get(key, 0.0) for p in points)) for key in SUMMED_COSTS}


class SweepCallback(Callback):
    """Validates every job of a sweep before the first one starts, opens the parent MLflow run,
    and at the end writes the sweep table and plot and logs them to the parent run."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.global_hydra import GlobalHydra

        loader = GlobalHydra.instance().config_loader()
        share_compositions(loader)  # the sweeper's check and the launcher compose the same configs again
        if in_sweep_worker():  # the sweep's own process has validated it and opened its run
            return
        from geoeval.core.tracking import runs as tracking

        specs = []
        # composed as the launcher will compose each job (Hydra's own overrides first), so that
        # the launcher gets the checked compositions back
        hydra_overrides = list(config.hydra.overrides.hydra)
        from geoeval.core.run.runner import start_early

        combos = []
        try:
            for combo in _sweep_combinations(config):
                combos.append(list(combo))
                cfg = loader.load_configuration(
                    config_name=config.hydra.job.config_name,
                    overrides=hydra_overrides + list(combo),
                    run_mode=RunMode.RUN,
                )
                specs.append(validate_config(cfg))
                if len(specs) == 1:  # a local Ray and its workers start while the rest are composed
                    start_early(specs[0])
        except GeoevalError as exc:
            _fail(exc)
        except Exception as exc:  # Hydra's own errors (unknown group option, bad override)
            print(f"geoeval: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        spec = specs[0]
        print(f"[geoeval] sweep of {len(specs)} job(s) validated", file=sys.stderr)

        served = [s for s in specs if s.preflight and not s.model.serve]  # a served model starts per job
        try:
            from geoeval.core.tracking.store import check_tracking_server, import_mlflow

            for local in {(s.results_db, s.log_dir, s.work_dir): s for s in specs}.values():
                check_local(local)  # before any request leaves this machine
            for tracking_spec in {str(s.tracking.model_dump()): s.tracking for s in specs}.values():
                check_tracking_server(tracking_spec)
            checks = [c for s in served for c in endpoint_checks(s)]
            # MLflow's import (the sweep's run opens next) while the probes wait on the models
            meanwhile = partial(import_mlflow, spec.tracking) if spec.tracking.enabled else None
            _report_preflight(preflight(checks, timeout_s=spec.preflight_timeout_s, meanwhile=meanwhile))
        except GeoevalError as exc:
            _fail(exc)
        if spec.tracking.enabled:
            secrets = set().union(*(collect_secret_values(s.to_dict()) for s in specs))
            params = {
                "sweep.jobs": str(len(specs)),
                "sweep.overrides": scrub_text(" ".join(config.hydra.overrides.task), secrets),
            }
            # the sweep's identity: a killed and rerun sweep finds (and reuses) its parent run
            sweep_hash = hashlib.sha256(" ".join(sorted(s.config_hash() for s in specs)).encode()).hexdigest()[:16]
            from geoeval.core import registry

            run_id = tracking.start_parent_run(
                spec.tracking,
                spec.experiment_name,
                sweep_run_name(spec.experiment_name, combos),
                params,
                sweep_hash=sweep_hash,
                headline_metrics=registry.get_suite(spec.suite.name).headline_metrics,
            )
            os.environ[tracking.PARENT_RUN_ENV] = run_id
            self._tracking = spec.tracking
            self._experiment = spec.experiment_name
            _OPEN_SWEEP[:] = [(spec.tracking, spec.experiment_name, run_id)]

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if in_sweep_worker():  # the sweep's own process writes the reports
            return
        from geoeval.core.analysis.job_reports import cost_line
        from geoeval.core.sweep.parent_run import log_sweep_result
        from geoeval.core.sweep.report import sweep_report, where_line
        from geoeval.core.tracking import runs as tracking

        sweep_dir = Path(config.hydra.sweep.dir)
        points = read_points(sweep_dir / SWEEP_POINTS)  # by job number, whatever order they ended in
        if not points:
            return
        ran = [p for p in points if not p.get("crashed")]  # a crashed job has no metrics to show
        report = sweep_report(config, ran, sweep_dir) if ran else None
        artifacts = report.artifacts if report else []
        summary = report.terminal if report else "(no job of the sweep finished)"
        run_id = os.environ.pop(tracking.PARENT_RUN_ENV, None)
        _OPEN_SWEEP.clear()
        stopped = [p for p in points if p.get("budget_exceeded")]
        failed = [p for p in points if p.get("failed") and not p.get("budget_exceeded")]
        pending = [p for p in points if p.get("tracking_pending")]
        if run_id and getattr(self, "_tracking", None) is not None:
            status = "FAILED" if failed else ("KILLED" if stopped else "FINISHED")
            tags = {"geoeval.status": "BUDGET_EXCEEDED"} if stopped and not failed else {}
            try:
                tags.update(log_sweep_result(self._tracking, run_id, report, self._experiment) if report else {})
                tracking.end_parent_run(
                    self._tracking,
                    self._experiment,
                    run_id,
                    metrics=sweep_metrics(points),
                    artifacts=artifacts,
                    status=status,
                    tags=tags or None,
                )
            except Exception as exc:  # a tracking server down at the sweep's end: kept for later
                kept = keep_sweep_end(
                    self._tracking,
                    run_id,
                    exc,
                    metrics=sweep_metrics(points),
                    artifacts=[str(a) for a in artifacts],
                    status=status,
                    tags=tags,
                    work_dir=str(config.work_dir),
                )
                pending.append({"tracking_pending": str(kept)})
            print(f"[geoeval] MLflow parent run: {run_id}")
        print(summary)
        print(where_line(report, sweep_dir, getattr(self, "_tracking", None), run_id))
        print(cost_line(sweep_costs(points)).replace("cost:", "sweep cost:", 1))
        if failed:
            for p in failed:
                print(f"geoeval: error: sweep job {p['job']} FAILED: {p['failed']}", file=sys.stderr)
            raise SystemExit(1)
        if stopped:
            for p in stopped:
                print(f"geoeval: error: sweep job {p['job']} stopped: {p['budget_exceeded']}", file=sys.stderr)
            raise SystemExit(EXIT_BUDGET_EXCEEDED)
        if pending:
            print(
                f"geoeval: error: the scores are stored, but the MLflow tracking server missed the end of "
                f"{len(pending)} run(s); the next run or `geoeval runs --sync` sends it",
                file=sys.stderr,
            )
            raise SystemExit(EXIT_TRACKING_PENDING)


#: the sweep whose MLflow parent run this process opened and has not ended: (tracking, experiment, run id)
_OPEN_SWEEP: list[tuple[Any, str, str]] = []


def end_interrupted_sweep() -> None:
    """Mark the open sweep's MLflow parent run KILLED (Ctrl-C, SIGTERM): its jobs mark their own
    runs as they unwind, and a rerun of the sweep finds the parent and goes on in it."""
    from geoeval.core.tracking import runs as tracking

    while _OPEN_SWEEP:
        tracking_spec, experiment, run_id = _OPEN_SWEEP.pop()
        os.environ.pop(tracking.PARENT_RUN_ENV, None)
        try:
            tracking.end_parent_run(tracking_spec, experiment, run_id, status="KILLED")
        except Exception as exc:  # noqa: BLE001 -- the stop must still be reported; say what was left
            print(f"[geoeval] the sweep's MLflow run {run_id} could not be marked KILLED: {exc}", file=sys.stderr)


@hydra.main(config_path="pkg://geoeval.conf", config_name="config", version_base="1.3")
def hydra_main(cfg: DictConfig) -> Any:
    return run_hydra_job(cfg)


if __name__ == "__main__":  # a worker process of a fanned-out sweep (geoeval.core.sweep.launcher)
    from geoeval.cli.app import (
        hydra_main as _job_main,  # the importable module's copy, not __main__'s
    )

    _job_main()
