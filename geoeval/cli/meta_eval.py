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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.core.analysis.meta_eval import run_meta_eval, tier_means
from geoeval.core.analysis.reports import markdown_table
from geoeval.core.errors import GeoevalError

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="geoeval meta-eval", description=__doc__.split("\n\n")[1])
    p.add_argument("suite", help="suite name (maptab, maptab_qa, lifeplanner, mapsatisfy, or a plugin's)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for `geoeval` (e.g. env=..., limit=20)")
    p.add_argument("--output", type=Path, help="write the whole report (with examples) as JSON here")
    return p


def compose_spec(suite: str, overrides: Sequence[str]) -> RunSpec:
    """The validated RunSpec of `suite=<suite> <overrides>`, tracking off (nothing is logged)."""
    from importlib.resources import files

    from hydra import compose, initialize_config_module

    from geoeval.core.config.search_path import register
    from geoeval.core.config.validate import validate_config

    register()
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    # the suite's own metric set where one is named after it (maptab_qa, lifeplanner, ...)
    metrics = (
        [f"metrics={suite}"]
        if "metrics" not in given and (files("geoeval.conf") / "metrics" / f"{suite}.yaml").is_file()
        else []
    )
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        try:
            env: list[str] = []
            if "env" not in given:  # the suite's generated environment, chosen before `env.*` overrides apply
                base = compose(config_name="config", overrides=[f"suite={suite}", *metrics, "tracking=none"])
                chosen = generated_env(str(base.suite.name), str(base.env.name))
                env = [f"env={chosen}"] if chosen != str(base.env.name) else []
            cfg = compose(
                config_name="config", overrides=[f"suite={suite}", *metrics, *env, "tracking=none", *overrides]
            )
        except GeoevalError:
            raise
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors: one line, naming the override
            raise GeoevalError(f"Invalid config: {exc}") from None
    return validate_config(cfg)


def generated_env(suite_name: str, default: str) -> str:
    """The environment a meta-evaluation uses when none is given: the primary config's where the
    suite takes it, else the suite's generated one (no external files needed)."""
    from geoeval.core.registry import get_suite

    schemas = get_suite(suite_name).env_schema
    if not isinstance(schemas, Mapping) or default in schemas:
        return default
    generated = [name for name in schemas if name.endswith(("_synthetic", "_generated"))]
    return (generated or list(schemas))[0]


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
        from geoeval.core.registry import get_suite

        spec = compose_spec(args.suite, args.overrides)
        suite = get_suite(spec.suite.name)
        print(f"[geoeval] meta-eval {spec.suite.name}: building the environment and samples ...", file=sys.stderr)
        answers, report = run_meta_eval(spec, suite)
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
