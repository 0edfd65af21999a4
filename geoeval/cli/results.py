"""`geoeval results`: a leaderboard of the runs in the results warehouse, or raw SQL over it.

    geoeval results                               # every run: mean of each metric, n samples
    geoeval results --suite maptab --metric ema --metric ds --by level
    geoeval results --sql "SELECT level, avg(value) FROM scores GROUP BY level"
    geoeval results --format csv > leaderboard.csv

Without `--by` the leaderboard has one row per run: its hash (first 12 characters), model,
suite, the labels found in its config (`LABEL_KEYS`, e.g. resolution or setting), the mean of each
metric (DS, and any metric a run's config lists in `metrics.sum_metrics`, summed) and n, the
number of (sample, epoch) results; runs are sorted by their value of the first metric, best first.
Metrics lead with the suites' headline metrics (MapTab EMA, PMA; LifePlanner PR, SC, RP; ...).

`--by DIMS` groups instead: one row per combination of DIMS over every listed run's samples, with
`runs`, the number of runs pooled into the row. DIMS may name run-level keys (`run`, `model`,
`suite`, and the label keys `label`, `setting`, `resolution`: a sample's own dimension wins, its
run's label fills in where the sample has none) and sample dimensions (`level`, `setting`, `task`,
`task_family`, `capabilities`, or a suite's extra keys such as `query_level`). So
`--by model,setting` gives one row per model and setting, and `--by run,level` splits each run by
level. Rows are sorted by their DIMS values, except that a grouping by run-level keys only is
sorted best first.

Several warehouses at once (a team's, one per person): repeat `--db`; their runs are listed
together. A run stored in several of them is shown once, merged by sample: the union of their
samples by (sample, epoch), one stored in more than one counted once (the first `--db`'s); a line
on stderr says, per merged run, how many samples it has and how many were counted once (and
whether their scores differed). `--sql` reads one warehouse.

    geoeval results --db alice/results/geoeval.duckdb --db bob/results/geoeval.duckdb --by model
    geoeval results export --output scores.parquet [--db ...]   # one row per score, for DuckDB, pandas, a notebook

The database is opened read-only: this command never changes it (an `--sql` that writes fails).
Mistakes (a missing file, bad SQL, an unknown metric) print one line to stderr and return 2.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.analysis.aggregate import DEFAULT_SUM_METRICS, group_keys, group_table
from geoeval.core.analysis.console import fit_tables
from geoeval.core.analysis.reports import fraction_label, markdown_table
from geoeval.core.config.home import project_home
from geoeval.core.cost.pricing import run_costs
from geoeval.core.errors import GeoevalError
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.warehouse.store import Warehouse

#: Where the results live unless --db or GEOEVAL_DB says otherwise (relative to the project home).
DEFAULT_DB = Path("results") / "geoeval.duckdb"

#: Config keys shown as leaderboard columns when a run's config has them (as a scalar, at any
#: depth; the shallowest wins): what tells apart two runs of one model on one suite.
LABEL_KEYS: tuple[str, ...] = ("label", "setting", "resolution")

#: The label of a key the run does not depend on (its suite leaves the key out of the run identity,
#: as MapTab leaves out `resolution` where no image is shown): one run stands for every value, e.g.
#: the Edge_tab-only run that every point of a resolution sweep reused.
ANY_VALUE = "all"

# `--by` names whose value is the run's own, not a sample's
_RUN_KEYS = ("run", "model", "suite", *LABEL_KEYS)


def default_db_path() -> Path:
    """`$GEOEVAL_DB` if set, else results/geoeval.duckdb under the project home (`$GEOEVAL_HOME`
    or `$GEOEVAL_ROOT`, a folder marked by `geoeval init`, else the current folder), where runs
    write it."""

    env = os.environ.get("GEOEVAL_DB")
    return Path(env) if env else project_home() / DEFAULT_DB


def run_labels(config: dict[str, Any]) -> dict[str, str]:
    """The `LABEL_KEYS` found in a run's config, searched breadth-first (the shallowest scalar
    wins), as text; numbers are written like sweep values (0.5 -> "1/2")."""
    labels: dict[str, str] = {}
    level: list[Any] = [config]
    while level:
        below: list[Any] = []
        for node in level:
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, value in items:
                if isinstance(value, (dict, list)):
                    below.append(value)
                elif key in LABEL_KEYS and key not in labels and value is not None:
                    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
                    labels[key] = fraction_label(float(value)) if is_number else str(value)
        level = below
    return labels


def labels_outside_identity(run: dict[str, Any]) -> set[str]:
    """The `LABEL_KEYS` of a run's suite config that its run identity leaves out (the suite's
    `identity_dict()`): the run's stored value is only the last one it was asked with."""
    from geoeval.core.config.schema import IdentityDict
    from geoeval.core.registry import get_suite

    suite_config = (run.get("config") or {}).get("suite")
    if not isinstance(suite_config, dict) or not run.get("suite"):
        return set()
    try:
        validated = get_suite(run["suite"]).config_schema.model_validate(suite_config)
    except Exception:  # noqa: BLE001 -- a plugin not installed here, or an older config: keep the value
        return set()
    if not isinstance(validated, IdentityDict):
        return set()
    identity = validated.identity_dict()
    return {key for key in LABEL_KEYS if key in suite_config and key not in identity}


def configured_sum_metrics(config: dict[str, Any]) -> frozenset[str]:
    """The metrics a run's config declares as totals (`metrics.sum_metrics`), if any."""
    metrics = config.get("metrics")
    listed = metrics.get("sum_metrics") if isinstance(metrics, dict) else None
    return frozenset(str(m) for m in listed) if isinstance(listed, list) else frozenset()


def _split_list(values: Sequence[str] | None) -> list[str]:
    """Repeated and comma-separated option values, in order, without blanks or repeats."""
    items = [part.strip() for value in values or [] for part in value.split(",")]
    return list(dict.fromkeys(item for item in items if item))


def ordered_metrics(available: Sequence[str], suites: Sequence[str]) -> list[str]:
    """`available` with the listed suites' headline metrics first (in their declared order), then
    the rest sorted; a suite that is not registered (a plugin not installed here) declares none."""
    from geoeval.core.registry import get_suite

    headline: list[str] = []
    for name in suites:
        try:
            headline += [m for m in get_suite(name).headline_metrics if m in available]
        except GeoevalError:
            continue
    headline = list(dict.fromkeys(headline))
    return headline + sorted(m for m in available if m not in headline)


def _with_run_keys(result: SampleResult, run: dict[str, Any], labels: dict[str, str]) -> SampleResult:
    """`result` with its run's keys (`run`, and the labels the sample lacks) as extra dimensions,
    so that `group_table` can group on them like on any other dimension."""
    extra = {"run": run["run_hash"][:12], **result.dims.extra}
    update: dict[str, Any] = {}
    for key, value in labels.items():
        if key in Dimensions.model_fields:
            if not getattr(result.dims, key):
                update[key] = value
        else:
            extra.setdefault(key, value)
    dims = result.dims.model_copy(update={**update, "extra": extra})
    return result.model_copy(update={"dims": dims, "model": result.model or run["model"]})


def leaderboard(
    warehouse: Warehouse,
    *,
    suite: str | None = None,
    metrics: Sequence[str] | None = None,
    by: Sequence[str] | None = None,
    sum_metrics: frozenset[str] = DEFAULT_SUM_METRICS,
) -> tuple[list[str], list[dict[str, Any]]]:
    """The leaderboard's (columns, rows); see the module docstring. Metrics in `sum_metrics`, and
    those any listed run's config declares as totals (`metrics.sum_metrics`), are summed; the
    others averaged. A `suite` with no runs, or a metric no run has, is a `GeoevalError` naming
    what there is."""
    runs = warehouse.runs(suite)
    if suite is not None and not runs:
        suites = sorted({run["suite"] for run in warehouse.runs() if run["suite"]})
        raise GeoevalError(
            f"no runs of suite {suite!r} in {warehouse.path}: choose one of "
            f"{', '.join(suites) if suites else '(none: the database has no runs yet)'}"
        )
    labels = {run["run_hash"]: run_labels(run["config"]) for run in runs}
    for run in runs:  # a key the run does not depend on: one run for every value
        labels[run["run_hash"]].update(dict.fromkeys(labels_outside_identity(run), ANY_VALUE))
    results = [
        _with_run_keys(result, run, labels[run["run_hash"]])
        for run in runs
        for result in warehouse.results(run["run_hash"])
    ]
    sum_metrics = frozenset(sum_metrics).union(*(configured_sum_metrics(run["config"]) for run in runs))
    available = sorted({metric for result in results for metric in result.scores})
    if metrics:
        unknown = [metric for metric in metrics if metric not in available]
        if unknown:
            raise GeoevalError(
                f"no scores for metric {', '.join(map(repr, unknown))}: choose from "
                f"{', '.join(available) if available else '(none: no scores stored yet)'}"
            )
        metrics = list(metrics)
    else:
        metrics = ordered_metrics(available, list(dict.fromkeys(run["suite"] for run in runs)))
    if by:
        return _grouped(results, list(by), metrics, sum_metrics)
    label_columns = [key for key in LABEL_KEYS if any(key in found for found in labels.values())]
    by_run: dict[str, list[SampleResult]] = {}
    for result in results:  # what each run spent, every invocation of it (unknown prices: NaN)
        by_run.setdefault(result.run_hash, []).append(result)
    overall = {row["run"]: row for row in group_table(results, ["run"], metrics, sum_metrics=sum_metrics)}

    def best_first(run: dict[str, Any]) -> tuple[bool, float]:
        value = overall.get(run["run_hash"][:12], {}).get(metrics[0]) if metrics else None
        if value is None or math.isnan(value):
            return (True, 0.0)
        return (False, -value)

    # runs best first by their overall first metric (stable: ties keep the oldest first)
    rows: list[dict[str, Any]] = []
    for run in sorted(runs, key=best_first):
        row = {"run": run["run_hash"][:12], "model": run["model"], "suite": run["suite"]}
        row.update({key: labels[run["run_hash"]].get(key, "") for key in label_columns})
        # a registered run with nothing stored yet still gets its row, with n = 0
        found = overall.get(run["run_hash"][:12], {"n": 0})
        row.update({m: found.get(m) for m in metrics})
        row["n"] = found["n"]
        if "n_errors" in found:
            row["n_errors"] = found["n_errors"]
        costs = run_costs(by_run.get(run["run_hash"], []))
        row["cost_usd"] = costs["cost_usd"]
        row["tokens"] = int(costs["tokens_in"] + costs["tokens_out"])
        reuses = reused_invocations(warehouse, run["run_hash"])
        row["reused"] = f"{reuses}x, not re-run" if reuses else ""
        rows.append(row)
    extra = ["n_errors"] if any("n_errors" in row for row in rows) else []
    reused = ["reused"] if any(row["reused"] for row in rows) else []
    return ["run", "model", "suite", *label_columns, *metrics, "n", *extra, "cost_usd", "tokens", *reused], rows


def any_value_note(columns: list[str], rows: list[dict[str, Any]]) -> str:
    """The line under a table that has a label `all`: what it stands for."""
    keys = [c for c in columns if c in LABEL_KEYS and any(row.get(c) == ANY_VALUE for row in rows)]
    if not keys:
        return ""
    return (
        f"\n\n{', '.join(keys)} `{ANY_VALUE}`: the run does not depend on it (not part of its identity, e.g. "
        f"MapTab's resolution where no image is shown), so the one run stands for every "
        f"{' and every '.join(keys)}: each point of a sweep over it reused the run"
    )


def reused_invocations(warehouse: Any, run_hash: str) -> int:
    """How often the run was asked for again and answered from the warehouse without evaluating a
    sample (e.g. a sweep's points whose swept value does not change the samples: MapTab's
    Edge_tab-only points at every resolution): invocations that reused samples and evaluated none.
    0 for a warehouse without the `invocations` table (written before schema 4)."""
    stores = getattr(warehouse, "stores", [warehouse])  # `Warehouses`: every one it reads
    try:
        from geoeval.core.warehouse.invocations import invocations  # the table's reader

        found = [i for store in stores for i in invocations(store, run_hash)]
    except (ImportError, GeoevalError, duckdb.Error):
        return 0
    return sum(1 for i in found if not i.get("n_evaluated") and (i.get("n_reused") or 0) > 0)


def _grouped(
    results: list[SampleResult], by: list[str], metrics: list[str], sum_metrics: frozenset[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per combination of `by` over `results` (see the module docstring)."""
    by = list(dict.fromkeys("run" if name == "run_hash" else name for name in by))
    rows = group_table(results, by, metrics, sum_metrics=sum_metrics) if results else []
    runs_per_group: dict[tuple, set[str]] = {}
    for result in results:
        for key in group_keys(result, by):
            runs_per_group.setdefault(key, set()).add(result.run_hash)
    for row in rows:
        row["runs"] = len(runs_per_group.get(tuple(row[name] for name in by), ()))
    if metrics and all(name in _RUN_KEYS for name in by):
        rows.sort(key=lambda row: (row[metrics[0]] is None, -(row[metrics[0]] or 0.0)))
    extra = ["n_errors"] if any("n_errors" in row for row in rows) else []
    return [*by, *metrics, "n", *extra, "runs"], rows


def _unique_columns(columns: Sequence[str]) -> list[str]:
    """SQL may name two columns alike (`SELECT 1 AS a, 2 AS a`); rows are dicts, so number them."""
    seen: dict[str, int] = {}
    unique = []
    for column in columns:
        seen[column] = seen.get(column, 0) + 1
        unique.append(column if seen[column] == 1 else f"{column}_{seen[column]}")
    return unique


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    return value


def render(columns: Sequence[str], rows: Sequence[dict[str, Any]], fmt: str) -> str:
    """The rows as a Markdown table, CSV, or a JSON list of objects."""
    if fmt == "markdown":
        return markdown_table(rows, columns)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in columns])
        return buffer.getvalue().rstrip("\n")
    if fmt == "json":
        records = [{c: _json_value(row.get(c)) for c in columns} for row in rows]
        return json.dumps(records, indent=2, default=str)
    raise ValueError(f"unknown format {fmt!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="geoeval results",
        description="Show the runs stored in the results database as a leaderboard, or run SQL "
        "over it (tables: runs, samples, scores).",
        epilog=examples("results"),
        formatter_class=HelpWithExamples,
    )
    parser.add_argument(
        "--db",
        type=Path,
        action="append",
        default=None,
        help="a results database; repeat to read several (default: $GEOEVAL_DB, else results/geoeval.duckdb in the project home)",
    )
    parser.add_argument("--suite", help="only the runs of this suite")
    parser.add_argument(
        "--metric",
        action="append",
        help="a metric to show (repeat, or separate with commas; default: every metric stored)",
    )
    parser.add_argument(
        "--by",
        action="append",
        help="group by these dimensions across runs, e.g. model,setting or run,level (default: one row per run)",
    )
    parser.add_argument("--sql", help='run this SQL instead, e.g. "SELECT * FROM runs"')
    parser.add_argument("--format", choices=("markdown", "csv", "json"), default="markdown", help="output format")
    return parser


class Warehouses:
    """Several warehouses read as one for the leaderboard: their runs together (a run hash in two
    of them listed once), a run's results from every warehouse that has it (a (sample, epoch) from
    the first that has it)."""

    def __init__(self, warehouses: list[Warehouse]) -> None:
        self._warehouses = warehouses
        self.path = ", ".join(str(w.path) for w in warehouses)
        #: run hash -> (warehouses holding it, distinct samples, samples stored twice or more,
        #: of those how many with other scores or answer in a later warehouse)
        self.merged: dict[str, tuple[int, int, int, int]] = {}

    def runs(self, suite: str | None = None) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        for warehouse in self._warehouses:
            for run in warehouse.runs(suite):
                seen.setdefault(run["run_hash"], run)
        return list(seen.values())

    @property
    def stores(self) -> list[Warehouse]:
        return list(self._warehouses)

    def results(self, run_hash: str) -> list[SampleResult]:
        """The union of the run's samples by (sample, epoch); one stored in several warehouses is
        counted once (the first `--db`'s), and `merged` records what was merged for `merge_notes`."""
        found: dict[tuple[str, int], SampleResult] = {}
        holders = duplicates = differing = 0
        for warehouse in self._warehouses:
            stored = warehouse.results(run_hash)
            holders += bool(stored)
            for result in stored:
                key = (result.sample_id, result.epoch)
                first = found.setdefault(key, result)
                if first is not result:
                    duplicates += 1
                    differing += (first.scores, first.answer, first.error) != (
                        result.scores,
                        result.answer,
                        result.error,
                    )
        if holders > 1:
            self.merged[run_hash] = (holders, len(found), duplicates, differing)
        return [found[key] for key in sorted(found)]

    def merge_notes(self) -> list[str]:
        """One line per run stored in more than one warehouse: what was merged, and what was
        counted once."""
        notes = []
        for run_hash, (holders, distinct, duplicates, differing) in sorted(self.merged.items()):
            note = (
                f"run {run_hash[:12]} is stored in {holders} of the warehouses: merged by sample, {distinct} "
                f"distinct sample(s); {duplicates} stored more than once counted once (the first --db's)"
            )
            if differing:
                note += f", {differing} of them with other scores, answer or error in a later --db"
            notes.append(note)
        return notes


def export(argv: list[str]) -> int:
    """`geoeval results export --output FILE.parquet [--db ...]`: every stored score, one row per
    (run, sample, epoch, metric) with the run's model and the dimensions (`SCORE_COLUMNS`), plus
    the warehouse it came from (`db`), as Parquet."""
    parser = argparse.ArgumentParser(
        prog="geoeval results export",
        description=export.__doc__,
        epilog=examples("results export"),
        formatter_class=HelpWithExamples,
    )
    parser.add_argument("--db", type=Path, action="append", default=None, help="a results database (repeatable)")
    parser.add_argument("--output", type=Path, required=True, help="the Parquet file to write")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    import pandas as pd

    frames = []
    try:
        for db in args.db or [default_db_path()]:
            with Warehouse(db, read_only=True) as warehouse:
                frame = warehouse.scores_frame()
            frame.insert(0, "db", str(Path(db).resolve()))
            frames.append(frame)
    except GeoevalError as error:
        print(f"geoeval results export: error: {error}", file=sys.stderr)
        return 2
    combined = pd.concat(frames, ignore_index=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    combined.to_parquet(args.output, index=False)
    print(f"[geoeval] {len(combined)} score row(s) from {len(frames)} warehouse(s): {args.output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `geoeval results`; returns the exit status (0 ok, 2 a user mistake)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "export":
        return export(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its usage line; report, don't exit
        return exit_.code if isinstance(exit_.code, int) else 2
    dbs = args.db or [default_db_path()]
    if len(dbs) > 1 and args.sql is not None:
        print("geoeval results: error: --sql reads one warehouse: give one --db", file=sys.stderr)
        return 2
    try:
        with contextlib.ExitStack() as stack:
            opened = [stack.enter_context(Warehouse(db, read_only=True)) for db in dbs]
            if args.sql is not None:
                columns, tuples = opened[0].query(args.sql)
                columns = _unique_columns(columns)
                rows = [dict(zip(columns, values)) for values in tuples]
            else:
                # several warehouses read as one: the two methods the leaderboard reads
                source: Any = opened[0] if len(opened) == 1 else Warehouses(opened)
                if not source.runs() and args.suite is None:
                    print(f"no runs in {', '.join(str(db) for db in dbs)} yet", file=sys.stderr)
                    return 0
                columns, rows = leaderboard(
                    source,
                    suite=args.suite,
                    metrics=_split_list(args.metric) or None,
                    by=_split_list(args.by) or None,
                )
                for note in source.merge_notes() if isinstance(source, Warehouses) else []:
                    print(f"geoeval results: {note}", file=sys.stderr)
    except GeoevalError as error:
        print(f"geoeval results: error: {error}", file=sys.stderr)
        return 2
    except duckdb.Error as error:  # a damaged or foreign file, read by DuckDB
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        where = dbs[0] if len(dbs) == 1 else "the warehouses"
        print(f"geoeval results: error: reading {where} failed: {message}", file=sys.stderr)
        return 2
    if columns:
        text = render(columns, rows, args.format)
        if args.format == "markdown":
            text += any_value_note(columns, rows)
        if args.format == "markdown" and sys.stdout.isatty():  # a console: wide tables in blocks
            text = fit_tables(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
