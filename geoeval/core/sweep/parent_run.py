"""What a sweep's parent MLflow run shows, so that the run page opens on the result: its
description (`mlflow.note.content`) is the sweep table, the table is an MLflow table
(`sweep_points.json`, one row per point), the plot an image of the run (`log_image`), the headline
metrics (mean over the points) are logged before any other metric, and the points are the run's
input dataset. The parent itself is opened and ended by `geoeval.core.tracking.runs`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from geoeval.core.sweep.tables import SweepReport

#: the MLflow table of the points (an artifact the run page's table views read)
POINTS_TABLE = "sweep_points.json"
#: the image key of the sweep plot (the run page's images)
PLOT_KEY = "sweep_plot"
#: room left for the description under MLflow's 8,000-character tag limit
_DESCRIPTION_CHARS = 7500


def description(report: SweepReport, run_id: str) -> str:
    """The sweep table as the run's description: the grids, the legend, what was reused and the
    offline note (the table of every point, longer, is the MLflow table and sweep_table.md), with
    the plot drawn from the run's own artifact."""
    head, _, _ = report.markdown.partition("\n## Every point")
    text = head.rstrip()
    if report.plot is not None:
        text += f"\n\n![sweep plot](get-artifact?path={report.plot.name}&run_uuid={run_id})"
    text += (
        f"\n\nThe parent's {', '.join(report.metrics)}: the mean over the points; each point's are its child run's. "
        f"Every point, one row each: the table `{POINTS_TABLE}` and `sweep_table.md` (Artifacts)."
    )
    if len(text) > _DESCRIPTION_CHARS:  # grids of a large sweep: the file has them all
        text = text[: _DESCRIPTION_CHARS - 80].rsplit("\n", 1)[0] + "\n\n(cut here: the whole table is sweep_table.md)"
    return text


def headline_means(report: SweepReport) -> dict[str, float]:
    """Each headline metric's mean over the points that have a value."""
    out = {}
    for metric in report.metrics:
        values = [row[metric] for row in report.rows if isinstance(row.get(metric), (int, float))]
        values = [v for v in values if v == v]  # NaN: not applicable
        if values:
            out[metric] = sum(values) / len(values)
    return out


def log_sweep_result(tracking_spec: Any, run_id: str, report: SweepReport, experiment: str) -> dict[str, str]:
    """Log the headline metrics first, the points as an MLflow table and as the run's dataset,
    and the plot as an image; return the tags `end_parent_run` sets (the description). A tracking
    failure here is reported and leaves the rest of the sweep's end alone."""
    from geoeval.core.tracking.store import client_for

    tags = {"mlflow.note.content": description(report, run_id), "geoeval.headline_metrics": ",".join(report.metrics)}
    try:
        client = client_for(tracking_spec)
        for metric, value in headline_means(report).items():  # first: the first charts and columns
            client.log_metric(run_id, metric, value)
        columns = list(dict.fromkeys(k for row in report.rows for k in row))
        table = {c: [_plain(row.get(c)) for row in report.rows] for c in columns}
        existing = {f.path for f in client.list_artifacts(run_id)}
        if POINTS_TABLE not in existing:  # log_table appends to an existing file: a rerun keeps one copy
            client.log_table(run_id, data=table, artifact_file=POINTS_TABLE)
        if report.plot is not None:
            _log_plot(client, run_id, report.plot)
        _log_points_dataset(tracking_spec, experiment, run_id, table)
    except Exception as exc:  # noqa: BLE001 - the table and plot are on disk; say what MLflow missed
        print(f"[geoeval] the sweep's MLflow run {run_id} did not get its table or plot: {exc}", file=sys.stderr)
    return tags


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str)) or value is None else str(value)


def _log_plot(client: Any, run_id: str, plot: Path) -> None:
    from PIL import Image  # matplotlib's own dependency

    with Image.open(plot) as image:
        client.log_image(run_id, image.convert("RGB"), key=PLOT_KEY, step=0)


def _log_points_dataset(tracking_spec: Any, experiment: str, run_id: str, table: dict[str, list]) -> None:
    import pandas as pd

    from geoeval.core.tracking.traces.writer import log_dataset

    log_dataset(tracking_spec, experiment, run_id, pd.DataFrame(table), name=f"{experiment}-sweep-points")
