"""`geoeval score <suite> --answers FILE.jsonl [hydra overrides] [--output FILE.jsonl]`

The public scoring entry point on the command line (`geoeval.core.scoring.score_answers`):
scores answers written outside geoeval for the samples of a run config, exactly as a run scores
them, under `scoring.protocol` (robust by default; `scoring.protocol=paper` for the authors'
reading). Each input line is a JSON object `{"sample_id": ..., "answer": ...}`, with `"messages"`
(Inspect chat messages as dicts) for a tool-using suite's trajectory and an optional `"epoch"`.
Each output line is the input's sample id with `scores`, the answer as read, the `reading` (what
was extracted, which rules fired), the `explanation` and the `protocol_disagreement`; the mean of
each metric is printed.

    geoeval score maptab --answers answers.jsonl env=maptab_synthetic limit=20
    geoeval score lifeplanner --answers plans.jsonl scoring.protocol=paper --output scored.jsonl

`geoeval score maptab results.json ...` (no `--answers`) scores a file in the MapTab authors' own
format as their evaluator does (`geoeval.suites.maptab.cli`). Exit status 2 on a bad file or config.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.errors import GeoevalError
from geoeval.core.records import AnswerToScore


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geoeval score",
        description=__doc__.split("\n\n")[1],
        epilog=examples("score"),
        formatter_class=HelpWithExamples,
    )
    p.add_argument("suite", help="suite name (maptab, maptab_qa, lifeplanner, mapsatisfy, or a plugin's)")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for `geoeval` (e.g. env=..., limit=20)")
    p.add_argument("--answers", type=Path, required=True, help="JSON Lines: one {sample_id, answer[, messages]} a line")
    p.add_argument("--output", type=Path, help="write one scored JSON object a line here (default: stdout)")
    return p


def read_answers(path: Path) -> list[AnswerToScore]:
    """The answers of a JSON Lines file; a bad line is a `GeoevalError` naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GeoevalError(f"{path}: cannot read the answers ({exc})") from None
    answers = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GeoevalError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict) or "sample_id" not in item:
            raise GeoevalError(f"{path}:{number}: expected an object with `sample_id` and `answer`")
        answer = item.get("answer", "")
        messages = item.get("messages")
        if messages is not None and not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)):
            raise GeoevalError(f"{path}:{number}: `messages` must be a list of chat messages (objects)")
        answers.append(
            AnswerToScore(
                sample_id=str(item["sample_id"]),
                answer=answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False),
                messages=messages,
                epoch=int(item.get("epoch", 1)),
            )
        )
    return answers


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def main(argv: list[str]) -> int:
    args = _parser().parse_intermixed_args(argv)  # overrides before or after --answers
    try:
        from geoeval.core.config.compose import compose_suite_spec
        from geoeval.core.scoring import score_answers

        answers = read_answers(args.answers)
        spec = compose_suite_spec(args.suite, args.overrides)
        scored = score_answers(spec, answers)
    except GeoevalError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    lines = []
    for item in scored:
        row = dataclasses.asdict(item)
        row["scores"] = {k: _finite(v) for k, v in row["scores"].items()}
        lines.append(json.dumps(row, ensure_ascii=False, default=str))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    else:
        for line in lines:
            print(line)
    metrics = sorted({m for item in scored for m in item.scores})
    means = []
    for m in metrics:
        values = [v for item in scored if not math.isnan(v := item.scores.get(m, math.nan))]
        means.append(f"{m}={sum(values) / len(values):.4f}" if values else f"{m}=-")
    disagree = sum(1 for item in scored if item.protocol_disagreement)
    print(
        f"[geoeval] scored {len(scored)} answer(s) under scoring.protocol={spec.scoring.protocol}: "
        f"{' '.join(means)}; {disagree} scored differently under the other protocol",
        file=sys.stderr,
    )
    return 0
