"""`geoeval meta-eval <suite> [hydra overrides] [--output FILE.json] [--limit N]`

Scores answers of known quality (the reference, one-defect variants, empty, refusal, invented)
for every sample of the suite's configured dataset through the suite's real scorers and judges,
and reports per metric how often the scores order them as they should (see
`geoeval.core.analysis.meta_eval`). Exits 1 when a metric misses its target, 2 on a bad command line.

    geoeval meta-eval maptab --output maptab_meta.json
    geoeval meta-eval lifeplanner suite.n_per_level=2
    geoeval meta-eval mapsatisfy env=mapsatisfy_generated judge=rules
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.analysis.meta_eval import reference_on_same_samples, run_meta_eval, tier_means
from geoeval.core.analysis.reports import markdown_table
from geoeval.core.errors import GeoevalError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geoeval meta-eval",
        description=__doc__.split("\n\n")[1],
        epilog=examples("meta-eval"),
        formatter_class=HelpWithExamples,
    )
    p.add_argument("suite", help="suite name (maptab, maptab_qa, lifeplanner, mapsatisfy, or a plugin's)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for `geoeval` (e.g. env=..., limit=20)")
    p.add_argument("--output", type=Path, help="write the whole report (with examples) as JSON here")
    return p


def _fmt(x: float) -> str:
    return "-" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def summary_table(report: dict[str, Any]) -> str:
    rows = [
        {
            "metric": m,
            "pairs": r["pairs"],
            "violations": r["violations"],
            "reference 0": r.get("n_reference_zero", 0),
            "ordering accuracy": _fmt(r["accuracy"]),
            "target": f"{r['target']:.2f}",
            "met": "yes" if r["met"] else "NO",
        }
        for m, r in report.items()
    ]
    return markdown_table(rows, ["metric", "pairs", "violations", "reference 0", "ordering accuracy", "target", "met"])


def families_table(report: dict[str, Any]) -> str:
    """Ordering accuracy per answer family (rows) and metric (columns), "-" where a family has no pair."""
    families = sorted({f for r in report.values() for f in r.get("by_family", {})}, key=lambda f: (f != "tiers", f))
    rows = []
    for family in families:
        row: dict[str, Any] = {"family": family}
        for metric, r in report.items():
            f = r.get("by_family", {}).get(family)
            row[metric] = "-" if f is None else f"{f['accuracy']:.3f}" + ("" if f["met"] else " (NO)")
        rows.append(row)
    return markdown_table(rows, ["family", *report])


def tiers_table(means: dict[str, dict[str, float]], metrics: list[str]) -> str:
    order = sorted(means, key=lambda t: (t != "reference", t.startswith(("empty", "refusal", "invented")), t))
    rows = [{"tier": t, **{m: _fmt(means[t].get(m, float("nan"))) for m in metrics}} for t in order]
    return markdown_table(rows, ["tier", *metrics])


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from geoeval.core.config.compose import compose_suite_spec
        from geoeval.core.registry import get_suite

        spec = compose_suite_spec(args.suite, args.overrides)
        suite = get_suite(spec.suite.name)
        name = spec.suite.name
        print(f"[geoeval] meta-eval {name}: building the environment and samples ...", file=sys.stderr)
        answers, report = run_meta_eval(
            spec, suite, progress=lambda line: print(f"[geoeval] meta-eval {name}: {line}", file=sys.stderr, flush=True)
        )
    except GeoevalError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    n_samples = len({a.sample_id for a in answers})
    tiers = sorted({a.tier.name for a in answers})
    print(f"meta-eval of {spec.suite.name}: {n_samples} samples x {len(tiers)} tiers ({len(answers)} answers scored)")
    print("\nMean score per tier (the reference first, worthless answers last):\n")
    print(tiers_table(tier_means(answers), list(report)))
    print("\nOrdering accuracy per metric (pairs of one sample's answers whose order is known):\n")
    print(summary_table(report))
    print("\nOrdering accuracy per answer family (tiers, surface, gaming, partial, trajectory) and metric:\n")
    print(families_table(report))
    missed = [m for m, r in report.items() if not r["met"]]
    for m in missed:
        for ex in report[m]["examples"][:2]:
            print(
                f"  {m}: {ex['sample']}: {ex['better']}={_fmt(ex['better_score'])} vs "
                f"{ex['worse']}={_fmt(ex['worse_score'])}",
                file=sys.stderr,
            )
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(
            json.dumps(
                {
                    "suite": spec.suite.name,
                    "run_hash": spec.config_hash(),
                    "n_samples": n_samples,
                    "tiers": tiers,
                    "tier_means": tier_means(answers),
                    "reference_on_same_samples": reference_on_same_samples(answers),
                    "metrics": report,
                },
                indent=2,
                default=str,
            )
        )
        print(f"\n[geoeval] meta-eval report: {args.output}")
    if missed:
        print(f"geoeval: error: meta-eval: {len(missed)} metric(s) below target: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0
