"""`geoeval compare A B`: two runs on their common samples, metric by metric and split by split.

    geoeval compare 3f2a91 b77c04                       # run hashes, or unique prefixes of them
    geoeval compare 3f2a91 b77c04 --metrics ema,pma --by level
    geoeval compare 3f2a91 b77c04 --json comparison.json

Samples are paired on (sample_id, epoch). A sample that only one run has, or that errored in
either run (status 'error', NaN scores), is left out of the pairs and counted in the header; a
pair where a metric has no value in one run (the metric does not apply) is left out of that
metric's row only. Each row gives n (pairs), mean A, mean B, the difference B - A with its 95%
paired bootstrap interval (clustered by `geoeval.core.analysis.stats.cluster_of`: MapTab pairs on
one map are resampled together), and a paired test: McNemar's exact test for 0/1 metrics on
independent samples, else a sign-flip permutation test on the cluster totals of the differences
(see `geoeval.core.analysis.stats`). Every metric is compared as a per-sample mean, DS included
(its total is n times the mean).

The database is opened read-only. Mistakes (an unknown run, an ambiguous prefix, no common
samples, an unknown metric or dimension) print one line `geoeval: error: ...` and return 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.cli.results import default_db_path
from geoeval.core.analysis.aggregate import CAPABILITY_NAMES, LEVEL_ORDER, group_keys, known_dimensions
from geoeval.core.analysis.console import fit_tables
from geoeval.core.analysis.reports import markdown_table
from geoeval.core.analysis.stats import (
    DEFAULT_N_BOOT,
    FEW_CLUSTERS,
    SAMPLE_CLUSTER,
    SUITE_CLUSTER_KEYS,
    cluster_of,
    paired_comparison,
)
from geoeval.core.errors import GeoevalError
from geoeval.core.records import SampleResult
from geoeval.core.warehouse.store import Warehouse

#: How many characters of a run hash the output shows.
SHORT_HASH = 12
_ALL = "(all)"


def resolve_run(runs: Sequence[dict[str, Any]], ref: str, where: Path | str) -> dict[str, Any]:
    """The run whose hash is `ref`, or the only one that starts with it; a `GeoevalError` when
    none or several do (naming them)."""
    exact = [run for run in runs if run["run_hash"] == ref]
    if exact:
        return exact[0]
    matches = [run for run in runs if run["run_hash"].startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        known = ", ".join(run["run_hash"][:SHORT_HASH] for run in runs[:10])
        more = f" (and {len(runs) - 10} more)" if len(runs) > 10 else ""
        listed = f"runs there: {known}{more}" if runs else "it has no runs yet"
        raise GeoevalError(f"no run {ref!r} in {where}: {listed} (see `geoeval results`)")
    names = ", ".join(run["run_hash"][:SHORT_HASH] for run in matches)
    raise GeoevalError(f"run prefix {ref!r} is ambiguous: it matches {names}; give more characters")


def pair_results(
    results_a: Sequence[SampleResult], results_b: Sequence[SampleResult]
) -> tuple[list[tuple[SampleResult, SampleResult]], dict[str, int]]:
    """The (A, B) results of every (sample_id, epoch) both runs scored, in A's order, and the
    counts of what was left out: `only_a`, `only_b`, `errored_a`, `errored_b` (common samples
    that errored in that run; one that errored in both counts in both) and `pairs`."""
    by_key_b = {(r.sample_id, r.epoch): r for r in results_b}
    keys_a = {(r.sample_id, r.epoch) for r in results_a}
    pairs: list[tuple[SampleResult, SampleResult]] = []
    errored_a = errored_b = 0
    for result_a in results_a:
        result_b = by_key_b.get((result_a.sample_id, result_a.epoch))
        if result_b is None:
            continue
        errored_a += result_a.status == "error"
        errored_b += result_b.status == "error"
        if result_a.status != "error" and result_b.status != "error":
            pairs.append((result_a, result_b))
    counts = {
        "common": sum(1 for key in keys_a if key in by_key_b),
        "pairs": len(pairs),
        "only_a": sum(1 for key in keys_a if key not in by_key_b),
        "only_b": sum(1 for key in by_key_b if key not in keys_a),
        "errored_a": errored_a,
        "errored_b": errored_b,
    }
    return pairs, counts


def _sort_key(key: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    return tuple((LEVEL_ORDER.index(v), "") if v in LEVEL_ORDER else (len(LEVEL_ORDER), v) for v in key)


def _check_names(
    pairs: Sequence[tuple[SampleResult, SampleResult]], metrics: Sequence[str] | None, by: Sequence[str]
) -> list[str]:
    """The metrics to compare (default: every metric both runs carry); raises on unknown ones."""
    results = [result for pair in pairs for result in pair]
    known = set(known_dimensions(results)) | set(CAPABILITY_NAMES)
    unknown_dims = [name for name in by if name not in known]
    if unknown_dims:
        raise GeoevalError(
            f"unknown dimension {', '.join(map(repr, unknown_dims))}: split by one of "
            f"{', '.join(known_dimensions(results))}"
        )
    metrics_a = {m for a, _ in pairs for m in a.scores}
    metrics_b = {m for _, b in pairs for m in b.scores}
    shared = sorted(metrics_a & metrics_b)
    if not metrics:
        if not shared:
            raise GeoevalError("the two runs have no metric in common")
        return shared
    missing = [m for m in metrics if m not in shared]
    if missing:
        raise GeoevalError(
            f"metric {', '.join(map(repr, missing))} is not in both runs: choose from {', '.join(shared) or '(none)'}"
        )
    return list(metrics)


def compare_results(
    results_a: Sequence[SampleResult],
    results_b: Sequence[SampleResult],
    *,
    metrics: Sequence[str] | None = None,
    by: Sequence[str] = (),
    cluster_key: str | None = None,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
) -> dict[str, Any]:
    """The comparison as data: `pairing` (counts, see `pair_results`), `metrics`, `by` and
    `rows`, one per (split, metric): the split's `by` values ("(all)" for the overall rows, which
    come first when `by` is given), metric, n, n_clusters, mean_a, mean_b, difference, ci_low,
    ci_high, test, p_value, and for McNemar only_a / only_b (pairs only A / only B got right).
    Splits and clusters are read off A's results. No common scored sample is a `GeoevalError`."""
    pairs, counts = pair_results(results_a, results_b)
    if not pairs:
        raise GeoevalError(
            f"the two runs have no common scored sample ({counts['common']} in common, "
            f"{counts['errored_a']} errored in A, {counts['errored_b']} in B): compare runs of the "
            "same samples"
        )
    by = list(by)
    metrics = _check_names(pairs, metrics, by)
    groups: dict[tuple[str, ...], list[tuple[SampleResult, SampleResult]]] = {}
    if by:
        groups[tuple(_ALL for _ in by)] = list(pairs)
    for pair in pairs:
        for key in group_keys(pair[0], by):
            groups.setdefault(key, []).append(pair)
    ordered = sorted((k for k in groups if _ALL not in k), key=_sort_key)
    if by:
        ordered.insert(0, tuple(_ALL for _ in by))
    rows = []
    for key in ordered:
        members = groups[key]
        clusters = [cluster_of(a, cluster_key) for a, _ in members]
        for metric in metrics:
            values_a = [a.scores.get(metric, math.nan) for a, _ in members]
            values_b = [b.scores.get(metric, math.nan) for _, b in members]
            comparison = paired_comparison(
                values_a, values_b, clusters, confidence=confidence, n_boot=n_boot, seed=seed
            )
            row: dict[str, Any] = dict(zip(by, key))
            row["metric"] = metric
            found = comparison.as_dict()
            row.update(
                {
                    "n": found["n"],
                    "n_clusters": found["n_clusters"],
                    "mean_a": found["mean_a"],
                    "mean_b": found["mean_b"],
                    "difference": found["difference"],
                    "ci_low": found["low"],
                    "ci_high": found["high"],
                    "test": found["test"],
                    "p_value": found["p_value"],
                    "only_a": found["only_a"],
                    "only_b": found["only_b"],
                }
            )
            rows.append(row)
    return {
        "pairing": counts,
        "metrics": metrics,
        "by": by,
        "confidence": confidence,
        "n_boot": n_boot,
        "seed": seed,
        "cluster": cluster_key or "default",
        "rows": rows,
    }


def _interval_text(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "–"
    return f"[{low:+.3f}, {high:+.3f}]"


def _p_text(p: float) -> str:
    if math.isnan(p):
        return "–"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _cluster_text(cluster: str) -> str:
    if cluster != "default":
        return "each sample" if cluster == SAMPLE_CLUSTER else f"by {cluster}"
    rules = ", ".join(f"{suite} by {key}" for suite, key in sorted(SUITE_CLUSTER_KEYS.items()))
    return f"{rules}; otherwise each sample" if rules else "each sample"


def _run_label(run: dict[str, Any]) -> str:
    return f"{run['run_hash'][:SHORT_HASH]} (model {run['model'] or '?'}, suite {run['suite'] or '?'}, {run['n_samples']} samples)"


def render_text(report: dict[str, Any], run_a: dict[str, Any], run_b: dict[str, Any]) -> str:
    """The console form: a header with the pairing counts, then a Markdown table."""
    counts = report["pairing"]
    percent = round(report["confidence"] * 100)
    cluster = report["cluster"]
    header = [
        f"A = {_run_label(run_a)}",
        f"B = {_run_label(run_b)}",
        (
            f"paired on {counts['pairs']} common scored samples; left out: {counts['only_a']} only in A, "
            f"{counts['only_b']} only in B, {counts['errored_a']} errored in A, {counts['errored_b']} errored in B"
        ),
        (
            f"B - A with a {percent}% paired bootstrap interval ({report['n_boot']} resamples, clusters: "
            f"{_cluster_text(cluster)}); test: McNemar exact (0/1 metrics, independent samples), else "
            "sign-flip permutation"
        ),
    ]
    few = sorted({row["n_clusters"] for row in report["rows"] if 0 < row["n_clusters"] < FEW_CLUSTERS})
    if few:
        header.append(
            f"note: some rows rest on fewer than {FEW_CLUSTERS} clusters ({', '.join(map(str, few))}): bootstrap "
            "intervals from so few understate the uncertainty"
        )
    ci_column = f"{percent}% CI"
    table_rows = []
    for row in report["rows"]:
        shown = {name: row[name] for name in report["by"]}
        shown.update(
            {
                "metric": row["metric"],
                "n": row["n"],
                "clusters": row["n_clusters"],
                "mean A": row["mean_a"],
                "mean B": row["mean_b"],
                "B - A": row["difference"],
                ci_column: _interval_text(row["ci_low"], row["ci_high"]),
                "test": row["test"],
                "p": _p_text(row["p_value"]),
            }
        )
        table_rows.append(shown)
    columns = [*report["by"], "metric", "n", "clusters", "mean A", "mean B", "B - A", ci_column, "test", "p"]
    return "\n".join(header) + "\n\n" + markdown_table(table_rows, columns)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _run_summary(run: dict[str, Any]) -> dict[str, Any]:
    return {key: run[key] for key in ("run_hash", "model", "suite", "experiment", "n_samples")}


def _split_list(values: Sequence[str] | None) -> list[str]:
    items = [part.strip() for value in values or [] for part in value.split(",")]
    return list(dict.fromkeys(item for item in items if item))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="geoeval compare",
        description="Compare two runs on their common samples: per metric (and split), the "
        "difference B - A with a paired bootstrap interval and a paired test.",
        epilog=examples("compare"),
        formatter_class=HelpWithExamples,
    )
    parser.add_argument("run_a", metavar="A", help="a run hash, or a unique prefix of one")
    parser.add_argument("run_b", metavar="B", help="a run hash, or a unique prefix of one")
    parser.add_argument(
        "--db", type=Path, default=None, help="the results database (default: $GEOEVAL_DB, else results/geoeval.duckdb)"
    )
    parser.add_argument(
        "--metrics", action="append", help="metrics to compare, comma-separated (default: every metric both runs have)"
    )
    parser.add_argument("--by", action="append", help="also split by these dimensions, e.g. level or level,setting")
    parser.add_argument(
        "--cluster",
        default=None,
        help="resample by this dimension (e.g. map), or 'sample' for independent "
        "samples (default: the suite's rule, see docs/statistics.md)",
    )
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and permutations")
    parser.add_argument(
        "--json", type=Path, default=None, metavar="FILE", help="also write the comparison as JSON to FILE"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `geoeval compare`; returns the exit status (0 ok, 2 a user mistake)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed its usage line
        return exit_.code if isinstance(exit_.code, int) else 2
    db = args.db if args.db is not None else default_db_path()
    try:
        if args.n_boot < 1:
            raise GeoevalError(f"--n-boot must be at least 1 (got {args.n_boot})")
        with Warehouse(db, read_only=True) as warehouse:
            runs = warehouse.runs()
            run_a = resolve_run(runs, args.run_a, db)
            run_b = resolve_run(runs, args.run_b, db)
            results_a = warehouse.results(run_a["run_hash"])
            results_b = warehouse.results(run_b["run_hash"])
        report = compare_results(
            results_a,
            results_b,
            metrics=_split_list(args.metrics) or None,
            by=_split_list(args.by),
            cluster_key=args.cluster,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        if args.json is not None:
            payload = {"a": _run_summary(run_a), "b": _run_summary(run_b), **report}
            try:
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(_json_safe(payload), indent=2, default=str) + "\n", encoding="utf-8")
            except OSError as error:
                raise GeoevalError(f"--json: cannot write {args.json} ({error.strerror or error})") from None
    except GeoevalError as error:
        print(f"geoeval: error: {error}", file=sys.stderr)
        return 2
    except duckdb.Error as error:  # a damaged or foreign file
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        print(f"geoeval: error: reading {db} failed: {message}", file=sys.stderr)
        return 2
    text = render_text(report, run_a, run_b)
    print(fit_tables(text) if sys.stdout.isatty() else text)  # a console: wide tables in 120-column blocks
    return 0


if __name__ == "__main__":
    sys.exit(main())
