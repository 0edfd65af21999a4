"""The end of a sweep in its own process: the report of the points that ran (table, plot, the
offline note of the models and judges the jobs used) and the line that says where everything is.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from geoeval.core.analysis.provenance import provenance
from geoeval.core.config.secrets import redact_url
from geoeval.core.errors import GeoevalError
from geoeval.core.sweep.tables import SweepReport, write_sweep_reports
from geoeval.core.tracking.view import ui_command, ui_url


def _job_config(point: dict) -> dict[str, Any]:
    """The job's resolved config (`resolved_config.yaml` in its output folder), {} if unreadable."""
    path = Path(point.get("out_dir") or "") / "resolved_config.yaml"
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def offline_note(configs: list[dict[str, Any]], suite: Any) -> str:
    """The offline-stand-in note of the jobs' models and judges (each different note once), from
    their resolved configs."""
    notes: list[str] = []
    for config in configs:
        model = (config.get("model") or {}).get("name")
        if not model:
            continue
        judges = list((config.get("judge") or {}).get("models") or [])
        spec = SimpleNamespace(model=SimpleNamespace(name=str(model)), judge=SimpleNamespace(models=judges))
        note = provenance(spec, suite)["note"]  # type: ignore[arg-type]  # reads model.name and judge.models only
        if note and note not in notes:
            notes.append(note)
    return " ".join(notes)


def sweep_report(config: Any, ran: list[dict], sweep_dir: Path) -> SweepReport:
    """Write the sweep's table and plot for the points that ran, titled by the experiment and the
    model(s), led by the suite's headline metrics."""
    from geoeval.core.registry import get_suite

    suite_name = str(config.suite.name)
    try:
        suite = get_suite(suite_name)
    except GeoevalError:  # a plugin suite not importable here: the table leads with the first metrics
        suite = None
    configs = [_job_config(p) for p in ran]
    models = [m for m in dict.fromkeys(str((c.get("model") or {}).get("name") or "") for c in configs) if m]
    title = f"{config.get('experiment_name') or 'sweep'} ({suite_name}; {', '.join(models) or 'model?'})"
    return write_sweep_reports(
        ran,
        sweep_dir,
        headline_metrics=tuple(suite.headline_metrics) if suite else (),
        log2_axes=tuple(suite.log2_sweep_axes) if suite else (),
        suites=(suite_name,),
        title=title,
        note=offline_note(configs, suite) if suite else "",
    )


def where_line(report: SweepReport | None, sweep_dir: Path, tracking_spec: Any, run_id: str | None) -> str:
    """Where the table (every point, one row each), the plot and the MLflow run are, a line each."""
    parts = [f"table (every point, one row each): {sweep_dir / 'sweep_table.md'}"]
    if report is not None and report.plot is not None:
        parts.append(f"plot: {report.plot}")
    if run_id and tracking_spec is not None:
        from geoeval.core.tracking.store import tracking_uri_for

        uri = tracking_uri_for(tracking_spec)
        parts.append(f"MLflow parent run {run_id}, its description the table above:")
        command = ui_command(uri)  # a tracking server serves its own UI: its URL, credentials redacted
        parts.append(f"  {command}" if command else f"  open {redact_url(uri)} (the tracking server's UI)")
        parts += [f"  {line}" for line in _ui_links(tracking_spec, uri, run_id)]
    parts.append(f"points: {sweep_dir / 'sweep_points.jsonl'}")
    return "[geoeval] sweep outputs:\n" + "\n".join(f"  {part}" for part in parts)


def _ui_links(tracking_spec: Any, uri: str, run_id: str) -> list[str]:
    """The parent run's page and the runs table (headline metrics shown) in the MLflow UI."""
    from geoeval.core.tracking.store import client_for

    try:
        experiment_id = client_for(tracking_spec).get_run(run_id).info.experiment_id
    except Exception:  # noqa: BLE001 -- a server down at the end: the run id above still finds it
        return []
    return [
        f"parent run: {ui_url(uri, experiment_id, run_id)}",
        f"runs table: {ui_url(uri, experiment_id)}",
    ]
