"""Results and warehouse rows, both ways: a batch of `SampleResult`s as the Arrow tables of its
`samples` and `scores` rows (`batch_tables`) and of its `trajectories` rows (`trajectory_table`),
and stored rows rebuilt as `SampleResult`s (`rebuild_results`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.text import clean_text, clean_value
from geoeval.core.warehouse.schema import SAMPLES_ARROW, SCORES_ARROW, TRAJECTORIES_ARROW


def batch_tables(results: Sequence[SampleResult], *, completed_at: datetime) -> tuple[pa.Table, pa.Table]:
    """The `samples` and `scores` rows of a batch, as Arrow tables with the tables' types."""
    samples: dict[str, list[Any]] = {name: [] for name in SAMPLES_ARROW.names}
    scores: dict[str, list[Any]] = {name: [] for name in SCORES_ARROW.names}
    for result in results:
        dims = result.dims
        # text from a model or tool may hold what UTF-8 cannot encode (lone surrogates): clean it
        dimension_values = clean_value(dims.columns())
        key = {"run_hash": result.run_hash, "sample_id": clean_text(result.sample_id), "epoch": result.epoch}
        sample_row = {
            **key,
            "model": clean_text(result.model),
            "answer": clean_text(result.answer),
            "explanation": clean_text(result.explanation),
            "error": None if result.error is None else clean_text(result.error),
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            **dimension_values,
            "completed_at": completed_at,
            "status": result.status,
            "details": json.dumps(clean_value(result.details), sort_keys=True, default=str),
            "cost_usd": result.cost_usd,
            "judge_cost_usd": result.judge_cost_usd,
            "cache_hits": result.cache_hits,
            "replayed_calls": result.replayed_calls,
            "usage": json.dumps(clean_value(result.usage), sort_keys=True, default=str),
            "completion": clean_text(result.completion),
            "stop_reason": result.stop_reason,
        }
        for name, value in sample_row.items():
            samples[name].append(value)
        for metric, value in result.scores.items():
            # NaN is stored as NULL: "no value" (an error, or a metric that does not apply)
            stored = None if value is None or math.isnan(value) else value
            score_row = {**key, "metric": clean_text(metric), "value": stored, **dimension_values}
            for name, column_value in score_row.items():
                scores[name].append(column_value)
    return (
        pa.Table.from_pydict(samples, schema=SAMPLES_ARROW),
        pa.Table.from_pydict(scores, schema=SCORES_ARROW),
    )


#: the field of a stored model call that holds its integrity digest (`call_integrity`)
INTEGRITY = "integrity"
#: what the digest covers: the request (`digest`, of what the model was shown), who asked, and the reply
_SEALED_FIELDS = ("role", "model", "digest", "output")


def call_integrity(call: dict[str, Any], position: tuple[int, int] | None = None) -> str:
    """The integrity digest of a stored model call: SHA-256 over its request digest, role, model
    and reply, and its `position` in the trajectory (index, number of calls: a list cut short or
    reordered fails too), as canonical JSON. Stored with the call (`seal_calls`) and checked
    before it is replayed (`core/run/replay.py`): an answer edited in the warehouse is an error
    naming the sample, never a silent score. A checksum, not a signature: whoever edits the file
    and recomputes it can forge a call (docs/cost.md)."""
    sealed: dict[str, Any] = {name: call.get(name) for name in _SEALED_FIELDS}
    if position is not None:
        sealed["position"] = list(position)
    blob = json.dumps(sealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def seal_calls(calls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`calls`, each with its integrity digest (`call_integrity`) at its position, as stored."""
    return [{**call, INTEGRITY: call_integrity(call, (i, len(calls)))} for i, call in enumerate(calls)]


def seal_problem(calls: Sequence[dict[str, Any]]) -> str | None:
    """Why `calls` (a stored trajectory) fails its integrity check, or None when it passes or
    carries no digest at all (stored by an older geoeval: `unsealed`)."""
    if unsealed(calls):
        return None
    for i, call in enumerate(calls):
        if call.get(INTEGRITY) != call_integrity(call, (i, len(calls))):
            return (
                f"call {i + 1} of {len(calls)} fails its integrity check (edited, cut short or reordered since stored)"
            )
    return None


def unsealed(calls: Sequence[dict[str, Any]]) -> bool:
    """Whether no call of `calls` carries an integrity digest (an older geoeval stored them)."""
    return not any(INTEGRITY in call for call in calls)


def trajectory_table(
    results: Sequence[SampleResult], *, generation_hash: str | None, created_at: datetime
) -> pa.Table | None:
    """The `trajectories` rows of a batch: each result's recorded model calls when one of them
    was made (not replayed), under `generation_hash`; the last of a (sample, epoch) wins, as
    rows written one after another would. None when there is none. (An Arrow table: DuckDB's
    `executemany` took ~1.3 ms a row, 0.34 s for 256 samples with a 3 KB call each.)"""
    if not generation_hash:
        return None
    rows: dict[tuple[str, int], SampleResult] = {}
    for r in results:
        if r.trajectory and any(not call.get("replayed") for call in r.trajectory):
            rows.pop((r.sample_id, r.epoch), None)  # the last one, in its place in the order
            rows[(r.sample_id, r.epoch)] = r
    if not rows:
        return None
    columns: dict[str, list[Any]] = {
        "generation_hash": [generation_hash] * len(rows),
        "sample_id": [r.sample_id for r in rows.values()],
        "epoch": [r.epoch for r in rows.values()],
        "run_hash": [r.run_hash for r in rows.values()],
        "n_calls": [len(r.trajectory or []) for r in rows.values()],
        "calls": [json.dumps(seal_calls(r.trajectory or [])) for r in rows.values()],
        "created_at": [created_at] * len(rows),
    }
    return pa.Table.from_pydict(columns, schema=TRAJECTORIES_ARROW)


def parse_trajectories(
    rows: Sequence[tuple[str, int, str]], wanted: set[tuple[str, int]]
) -> tuple[dict[tuple[str, int], list[dict]], dict[tuple[str, int], str]]:
    """`trajectories` rows (sample_id, epoch, calls JSON) of the `wanted` pairs parsed: the calls
    by pair, and apart the pairs whose JSON cannot be read (cut short, edited by hand), with why."""
    calls_by_key: dict[tuple[str, int], list[dict]] = {}
    unreadable: dict[tuple[str, int], str] = {}
    for sample_id, epoch, calls in rows:
        key = (sample_id, int(epoch))
        if key not in wanted:
            continue
        try:
            parsed = json.loads(calls)
        except (TypeError, ValueError) as error:
            unreadable[key] = f"its stored JSON cannot be read ({str(error).splitlines()[0][:200]})"
            continue
        if parsed == []:
            unreadable[key] = "its stored JSON holds no model call (cut short)"
            continue
        if not isinstance(parsed, list) or not all(_is_call(call) for call in parsed):
            unreadable[key] = "its stored JSON is not a list of model calls (each with its request digest and reply)"
            continue
        calls_by_key[key] = parsed
    return calls_by_key, unreadable


def _is_call(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("digest"), str) and isinstance(call.get("output"), dict)


def rebuild_results(run_hash: str, samples: Sequence[tuple], score_rows: Sequence[tuple]) -> list[SampleResult]:
    """The `SampleResult`s of `run_hash` from its `samples` rows (in `Warehouse.results`' column
    order) and its `scores` rows (sample_id, epoch, metric, value); a NULL value is NaN."""
    scores: dict[tuple[str, int], dict[str, float]] = {}
    for sample_id, epoch, metric, value in score_rows:
        scores.setdefault((sample_id, epoch), {})[metric] = math.nan if value is None else value
    rebuilt = []
    for row in samples:
        (sample_id, epoch, model, answer, explanation, error, input_tokens, output_tokens,
         suite, task_family, task, level, setting, capabilities, extra, status,
         details, cost_usd, judge_cost_usd, cache_hits, replayed_calls, usage, completion,
         stop_reason) = row  # fmt: skip
        rebuilt.append(
            SampleResult(
                run_hash=run_hash,
                sample_id=sample_id,
                epoch=epoch,
                model=model,
                answer=answer,
                explanation=explanation,
                error=error,
                status=status or ("error" if error is not None else "scored"),
                details=json.loads(details) if details else {},
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost_usd,
                judge_cost_usd=judge_cost_usd,
                cache_hits=cache_hits or 0,
                replayed_calls=replayed_calls or 0,
                usage=json.loads(usage) if usage else {},
                completion=completion or "",
                stop_reason=stop_reason or "",
                scores=scores.get((sample_id, epoch), {}),
                dims=Dimensions(
                    suite=suite,
                    task_family=task_family,
                    task=task,
                    level=level,
                    setting=setting,
                    capabilities=tuple(capabilities),
                    extra=json.loads(extra),
                ),
            )
        )
    return rebuilt
