"""`geoeval estimate [hydra overrides] [--pilot N]`: what a run or sweep would cost, before any
model call (`geoeval.core.cost.estimate`).

Takes the overrides `geoeval` takes (an experiment, `-m` with comma-separated values, a sweep's
own `hydra.sweeper.params`), builds each job's environment and samples (cached, no model call)
and prints per job: samples, already stored (resumed for free), replayable (a stored trajectory:
replayed for free), to generate, and the expected tokens and dollars of those with a 95%
interval, measured from stored samples of the same model and suite. `--pilot N`: for a job with
nothing to measure from, first run its first N samples (a normal run, stored: the full run
resumes them), then estimate.

    geoeval estimate +experiment=maptab_resolution_sweep model=openai model.name=openai/gpt-4.1
    geoeval estimate +experiment=lifeplanner model=openai --pilot 5
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.cost.estimate import estimate_job
from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import basic_sweeper_batches
from geoeval.core.run.startup import started
from geoeval.core.sweep.compositions import share_config_files


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geoeval estimate",
        description=__doc__.split("\n\n")[1],
        epilog=examples("estimate"),
        formatter_class=HelpWithExamples,
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for `geoeval` (comma lists sweep)")
    p.add_argument("--pilot", type=int, default=0, help="run the first N samples of a job with nothing to measure")
    p.add_argument("-m", "--multirun", action="store_true", help="accepted for symmetry with `geoeval -m`")
    return p


def job_specs(overrides: list[str]) -> list[tuple[str, Any]]:
    """(label, validated RunSpec) of every job the overrides make, as the sweep would make them."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from geoeval.core.config.search_path import register
    from geoeval.core.config.validate import validate_config

    register()
    parsed = OverridesParser.create().parse_overrides(overrides)
    fixed = [o.input_line for o in parsed if not o.is_sweep_override() and o.input_line]
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        share_config_files(GlobalHydra.instance().config_loader())  # each job reads the same files
        try:
            base = compose(config_name="config", overrides=fixed, return_hydra_config=True)
            params = base.hydra.sweeper.get("params") or {}
            given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
            swept = [f"{k}={v}" for k, v in params.items() if k not in given] + [
                o.input_line for o in parsed if o.is_sweep_override() and o.input_line
            ]
            combos = basic_sweeper_batches(OverridesParser.create().parse_overrides(swept)) if swept else [[]]
            jobs = []
            for combo in combos:
                cfg = compose(config_name="config", overrides=[*fixed, *combo])
                jobs.append((" ".join(combo) or "run", validate_config(cfg)))
        except GeoevalError:
            raise
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors: one line
            raise GeoevalError(f"Invalid config: {exc}") from None
    return jobs


def _range(value: tuple[float, float], unit: str = "") -> str:
    mean, half = value
    if math.isnan(mean):
        return "unknown"
    fmt = (lambda x: f"${x:,.4f}") if unit == "$" else (lambda x: f"{x:,.0f}")
    return fmt(mean) + ("" if half == 0 else (" ± ?" if math.isnan(half) else f" ± {fmt(half)[len(unit) :]}"))


def _pilot(spec: Any, label: str) -> None:
    """Run the pilot as `python -m geoeval` runs a job (`core.run.startup`: the local checks, the
    model's server, the preflight), so that every model config a run takes, a pilot takes too; a
    pilot that cannot run is one `GeoevalError` line. Samples that errored are said, since they
    measure nothing."""
    from geoeval.core.run.job import run_job

    try:
        with started(spec) as (served, _notes):
            outcome = run_job(served, progress=False)
    except GeoevalError:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, as every other failure of the command
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise GeoevalError(f"the pilot of {label} failed: {type(exc).__name__}: {first}") from None
    errors = int(outcome.counts.get("n_errors", 0))
    if errors:
        first = next((r.error for r in outcome.results if r.status == "error"), "") or ""
        print(
            f"[geoeval] estimate: {label}: {errors} of {len(outcome.results)} pilot sample(s) errored and measure "
            f"nothing; first error: {first[:300]}",
            file=sys.stderr,
        )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        from geoeval.core.analysis.reports import markdown_table
        from geoeval.core.registry import get_suite
        from geoeval.core.warehouse.store import Warehouse

        jobs = job_specs(args.overrides)
        print(
            f"[geoeval] estimate: {len(jobs)} job(s); building environments and samples (no model call) ...",
            file=sys.stderr,
        )
        rows = []
        totals = {"samples": 0, "to_generate": 0, "usd": 0.0, "usd_var": 0.0, "tokens": 0.0, "tokens_var": 0.0}
        for label, spec in jobs:
            suite = get_suite(spec.suite.name)
            env = suite.build_env(spec)
            if getattr(env, "fingerprint", ""):  # the run identity holds its inputs' content, as a run's does
                spec = spec.model_copy(update={"env_fingerprint": env.fingerprint})
            samples = suite.build_samples(spec, env)
            if spec.limit:
                samples = samples[: spec.limit]
            wh = Warehouse(spec.results_db, config_key="results_db=")
            estimate = estimate_job(wh, spec, samples, label)
            if estimate.measured.n == 0 and estimate.to_generate and args.pilot:
                print(f"[geoeval] estimate: {label}: a pilot of {args.pilot} sample(s) ...", file=sys.stderr)
                _pilot(spec.model_copy(update={"limit": min(args.pilot, len(samples))}), label)
                estimate = estimate_job(wh, spec, samples, label)
            rows.append(
                {
                    "job": label,
                    "model": spec.model.name,
                    "samples": estimate.samples,
                    "stored": estimate.stored,
                    "replayable": estimate.replayable,
                    "to generate": estimate.to_generate,
                    "tokens": _range(estimate.tokens),
                    "cost": _range(estimate.usd, "$"),
                    "measured on": f"{estimate.measured.n} sample(s) ({estimate.measured.basis})",
                }
            )
            totals["samples"] += estimate.samples
            totals["to_generate"] += estimate.to_generate
            for key, value in (("usd", estimate.usd), ("tokens", estimate.tokens)):
                totals[key] += value[0]
                totals[f"{key}_var"] += (value[1] / 1.96) ** 2 if not math.isnan(value[1]) else math.nan
    except GeoevalError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    columns = ["job", "model", "samples", "stored", "replayable", "to generate", "tokens", "cost", "measured on"]
    print(markdown_table(rows, columns))
    usd = (totals["usd"], 1.96 * math.sqrt(totals["usd_var"]))
    tokens = (totals["tokens"], 1.96 * math.sqrt(totals["tokens_var"]))
    print(
        f"\ntotal: {totals['samples']} sample(s), {totals['to_generate']} to generate; "
        f"expected tokens {_range(tokens)}, cost {_range(usd, '$')} (95% interval)"
    )
    unmeasured = [r["job"] for r in rows if r["tokens"] == "unknown"]
    if unmeasured:
        print(
            f"[geoeval] estimate: nothing stored to measure {len(unmeasured)} job(s) from (no earlier run of this model "
            "on this suite): rerun with --pilot N to run N samples of each first",
            file=sys.stderr,
        )
    return 0
