"""Coverage statistics of generated instances (Figure 3, Table B1): counts per metadata dimension
(`coverage`) and their Markdown tables (`coverage_markdown`, `print_coverage`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from geoeval.suites.mapsatisfy.schema import MapSatisfyInstance


def coverage(instances: list[MapSatisfyInstance]) -> dict[str, Counter]:
    """Counts per metadata dimension. Domain, sub-task and source are multi-label hits (an instance
    counts once per label, as Table B1 counts sources); factors count hard / soft per source."""
    out: dict[str, Counter] = {
        k: Counter()
        for k in (
            "domain",
            "sub_task",
            "implicit_factor_source",
            "time_slot",
            "day_type",
            "city_tier",
            "locality",
            "difficulty",
            "constraint_type",
            "expected_tool",
        )
    }
    for inst in instances:
        m = inst.metadata
        for key in ("domain", "sub_task", "implicit_factor_source"):
            out[key].update(getattr(m, key))
        for key in ("time_slot", "day_type", "city_tier", "locality", "difficulty"):
            if getattr(m, key):
                out[key][getattr(m, key)] += 1
        for f in inst.ground_truth.implicit_intent:
            out["constraint_type"][f"{f.source or 'unknown'}:{f.constraint_type}"] += 1
        out["expected_tool"].update(inst.expected_tools)
    return out


def coverage_markdown(instances: list[MapSatisfyInstance], funnel: Counter | None = None) -> str:
    n = len(instances)
    lines = [f"# MapSatisfy generated instances: coverage ({n} instances)", ""]
    titles = {
        "domain": "Domain (Figure 3)",
        "sub_task": "Sub-task (Figure 3)",
        "implicit_factor_source": "Implicit-factor source, multi-label hits (Table B1)",
        "time_slot": "Time slot",
        "day_type": "Day type",
        "city_tier": "City tier",
        "locality": "Locality",
        "difficulty": "Difficulty",
        "constraint_type": "Factors by source:constraint type",
        "expected_tool": "Expected tool (instances)",
    }
    for key, counts in coverage(instances).items():
        lines += [f"## {titles[key]}", "", "| value | count | share |", "| --- | ---: | ---: |"]
        for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {value} | {count} | {count / n:.1%} |" if n else f"| {value} | {count} | - |")
        lines.append("")
    if funnel:
        lines += ["## restore -> identify -> filter", "", "| step | count |", "| --- | ---: |"]
        lines += [
            f"| {k} | {funnel[k]} |"
            for k in ("restored", "identified_factors", "retained_factors", "dropped_factors", "rejected", "accepted")
        ]
        lines.append("")
    return "\n".join(lines)


def print_coverage(
    instances: list[MapSatisfyInstance], funnel: Counter | None = None, path: str | Path | None = None
) -> str:
    """Print the coverage tables, and write them as Markdown when `path` is given."""
    text = coverage_markdown(instances, funnel)
    print(text)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text
