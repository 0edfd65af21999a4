"""Reports written after a job and after a sweep: the files a person looks at, which are also
logged to MLflow (summary table, per-sample Parquet, plots)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from geoeval.core.analysis.aggregate import group_table
from geoeval.core.analysis.console import TERMINAL_WIDTH, fit_tables
from geoeval.core.analysis.provenance import provenance
from geoeval.core.analysis.reports import plot_bars, summary_markdown, write_per_sample_parquet
from geoeval.core.cost.pricing import local_models
from geoeval.core.registry import get_suite
from geoeval.core.tracking.view import ui_command

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec
    from geoeval.core.records import JobOutcome


def plots_wanted(spec: RunSpec) -> bool:
    """Whether a job draws its plots (`job_plots`; a sweep's jobs get `never` for `auto`)."""
    return spec.job_plots != "never"


def write_job_reports(outcome: JobOutcome) -> list[Path]:
    out = Path(outcome.out_dir)
    metrics = list(outcome.spec.metrics.metrics)
    title = f"{outcome.spec.suite.name} · {outcome.spec.model.name} · run {outcome.run_hash}"
    summary = out / "summary.md"
    suite = get_suite(outcome.spec.suite.name)
    text = summary_markdown(
        outcome.results,
        metrics,
        title=title,
        sum_metrics=frozenset(outcome.spec.metrics.sum_metrics),
        report_dimensions=tuple(suite.report_dimensions),
    )
    note = provenance(outcome.spec, suite)["note"]
    notes = "".join(f"\n{line}\n" for line in getattr(outcome, "notes", []))  # the suite's own (`summary_notes`)
    summary.write_text(text + notes + (f"\n> {note}\n" if note else ""))
    parquet = write_per_sample_parquet(outcome.results, out / "per_sample_scores.parquet")
    artifacts = [summary, Path(parquet)]
    mean_metrics = [m for m in metrics if m not in outcome.spec.metrics.sum_metrics]
    if outcome.results and mean_metrics and plots_wanted(outcome.spec):
        for dim in ("setting", "level"):
            rows = group_table(
                outcome.results, by=[dim], metrics=mean_metrics, sum_metrics=frozenset(outcome.spec.metrics.sum_metrics)
            )
            if len(rows) > 1:  # one group of bars would only repeat the summary's overall row
                artifacts.append(
                    plot_bars(
                        rows,
                        dim,
                        mean_metrics,
                        out / f"metrics_by_{dim}.png",
                        title=f"{', '.join(mean_metrics)} by {dim} — {outcome.spec.model.name}",
                    )
                )
    return [*artifacts, *outcome.artifacts]


def usd(value: float) -> str:
    """Dollars as a person reads them; NaN (a model without a price) as "unknown"."""
    if isinstance(value, float) and math.isnan(value):
        return "unknown (a model has no price: see `pricing`)"
    return f"${value:.4f}" if value < 100 else f"${value:,.2f}"


def cost_line(metrics: dict[str, float], local: tuple[list[str], bool] = ([], False)) -> str:
    """The run's spending in two lines (each within 120 columns): dollars (agent and judges) and
    tokens sent; what replayed trajectories and Inspect's cache saved. `local`: the local models
    called, and whether the agent's calls all went to them (`pricing.local_models`): a local
    model's cost is compute on this machine, which the line says instead of a $0 that reads as free."""
    models, agent_local = local
    judges = f"judges {usd(metrics.get('cost_usd/judge', 0.0))}"
    if agent_local:
        dollars = f"local model (compute, not dollars; {judges})"
    else:
        dollars = f"{usd(metrics.get('cost_usd', 0.0))} ({judges}" + ("; local models: compute" if models else "") + ")"
    text = (
        f"cost: {dollars}; "
        f"tokens sent: {int(metrics.get('tokens_in', 0)):,} in, {int(metrics.get('tokens_out', 0)):,} out "
        f"over {int(metrics.get('model_calls', 0))} model call(s);\n"
        f"  replayed: {int(metrics.get('replayed_calls', 0))} "
        f"call(s) in {int(metrics.get('n_replayed', 0))} sample(s); cache hits: {int(metrics.get('cache_hits', 0))}; "
        f"saved: {usd(metrics.get('saved_usd', 0.0))}"
    )
    if models:
        text += f"\n  local (priced $0, run here): {', '.join(models)}"
    return text


def protocol_line(outcome: JobOutcome, disagreements: int) -> str:
    """How many samples the robust and paper answer protocols score differently, with examples."""
    from geoeval.core.scoring import PROTOCOL_DISAGREEMENT_KEY

    examples = []
    for r in outcome.results:
        found = r.details.get(PROTOCOL_DISAGREEMENT_KEY) or {}
        if found and r.status != "error":
            metric, values = next(iter(sorted(found.items())))
            shown = " vs ".join(f"{k} {v:g}" for k, v in values.items())
            examples.append(f"{r.sample_id} {metric}: {shown}")
        if len(examples) == 3:
            break
    return (
        f"protocols: {disagreements} of {len(outcome.results)} sample(s) score differently under "
        f"scoring.protocol=paper and robust (e.g. {'; '.join(examples)})"
    )


def print_outcome(outcome: JobOutcome) -> None:
    summary = Path(outcome.out_dir) / "summary.md"
    text = summary.read_text()
    fitted = fit_tables(text)
    print(fitted)
    if fitted != text.rstrip("\n"):  # a table was split for the console: the file has it whole
        print(f"(tables split to fit {TERMINAL_WIDTH} columns; the whole tables:)\n  {summary}")
    counts = outcome.counts
    print(
        f"run hash: {outcome.run_hash}  ({outcome.ran} sample(s) evaluated now, {outcome.resumed} resumed, "
        f"{outcome.seconds:.1f} s)"
    )
    print(
        f"samples: n_samples={int(counts.get('n_samples', 0))} n_scored={int(counts.get('n_scored', 0))} "
        f"n_errors={int(counts.get('n_errors', 0))} http_retries={int(outcome.metrics.get('http_retries', 0))}"
    )
    print(cost_line(outcome.metrics, local_models(outcome.spec.pricing, outcome.results)))
    disagreements = int(outcome.metrics.get("n_protocol_disagreements", 0))
    if disagreements:
        print(protocol_line(outcome, disagreements))
    if outcome.budget_exceeded is not None:
        print(f"BUDGET_EXCEEDED: {outcome.budget_exceeded}", file=sys.stderr)
    if counts.get("n_errors"):
        errored = [r for r in outcome.results if r.status == "error"]
        first = (errored[0].error or "") if errored else ""
        print(
            f"WARNING: {int(counts['n_errors'])} sample(s) errored and have no scores; the means are over the "
            f"{int(counts.get('n_scored', 0))} scored. A rerun of the same command retries them. "
            f"First error: {first[:300]}",
            file=sys.stderr,
        )
    if outcome.mlflow_run_id:
        print(f"MLflow run: {outcome.mlflow_run_id}")
        if outcome.mlflow_url:
            from geoeval.core.tracking.store import tracking_uri_for

            local = ui_command(tracking_uri_for(outcome.spec.tracking)) is not None
            print(f"  open: {outcome.mlflow_url}" + ("  (served by `mlflow ui`)" if local else ""))
    for p in outcome.log_paths_all:
        print(f"Inspect log: {p}")
    print(f"outputs: {outcome.out_dir}")
    sys.stdout.flush()
