"""Which samples of a run's Inspect logs get a trace (`select_samples`: by mode, under a cap), and
reading them from the logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from geoeval.core.tracking.traces.content import _short

TraceMode = Literal["all", "errors", "none"]
TRACE_MODES = ("all", "errors", "none")


@dataclass(frozen=True)
class _Candidate:
    path: str
    sample_id: Any
    epoch: int
    errored: bool

    @property
    def key(self) -> tuple[str, int]:
        return (str(self.sample_id), int(self.epoch))


def select_samples(candidates: Sequence[_Candidate], mode: TraceMode, cap: int | None) -> tuple[list[_Candidate], int]:
    """The samples to trace and how many the cap left out. A sample found in several logs (an
    errored sample retried by a later invocation) counts once, as its last occurrence. Over the
    cap, errored samples go first (they are what one opens traces for), then in log order."""
    if mode == "none":
        return [], 0
    last: dict[tuple[str, int], _Candidate] = {}
    for cand in candidates:
        last.pop(cand.key, None)  # re-insert: keep log order of the last occurrence
        last[cand.key] = cand
    chosen = [c for c in last.values() if mode == "all" or c.errored]
    if cap is None or cap < 0 or len(chosen) <= cap:
        return chosen, 0
    ranked = sorted(range(len(chosen)), key=lambda i: (not chosen[i].errored, i))[:cap]
    return [chosen[i] for i in sorted(ranked)], len(chosen) - cap


def _candidates(paths: Iterable[str | Path], warn: list[str]) -> list[_Candidate]:
    from inspect_ai.log import read_eval_log_sample_summaries

    out: list[_Candidate] = []
    for path in paths:
        try:
            for s in read_eval_log_sample_summaries(str(path)):
                out.append(_Candidate(str(path), s.id, int(s.epoch), s.error is not None))
        except Exception as exc:
            warn.append(f"cannot read Inspect log {path}: {_short(exc)}")
    return out


#: samples read per call of Inspect's reader: one event loop and one parse of the log's directory
#: for the lot, and no more than this many samples (map images included) held at once
SAMPLES_PER_READ = 16


def _read_samples(path: str, wanted: set[tuple[str, int]]) -> Iterable[Any]:
    """The wanted samples of one log, `SAMPLES_PER_READ` at a time through Inspect's
    `read_eval_log_samples_by_id`. Reading them one by one (`read_eval_log_sample`) started an
    event loop and parsed the log's directory per sample: ~2/3 of a sweep job's trace backfill.
    A read that fails (a log cut short by a killed run) is retried one sample at a time, so the
    samples before the damage still come; the first one that cannot be read raises."""
    from inspect_ai.log import read_eval_log_sample, read_eval_log_samples_by_id

    keys = sorted(wanted)
    for i in range(0, len(keys), SAMPLES_PER_READ):
        chunk = [(_typed_id(sample_id), epoch) for sample_id, epoch in keys[i : i + SAMPLES_PER_READ]]
        try:
            samples: Iterable[Any] = read_eval_log_samples_by_id(path, chunk, resolve_attachments="core")
        except Exception:  # noqa: BLE001 -- read what can be read, one by one (lazily, as yielded)
            samples = (read_eval_log_sample(path, id=i, epoch=e, resolve_attachments="core") for i, e in chunk)
        yield from samples


def _typed_id(sample_id: str) -> int | str:
    return int(sample_id) if sample_id.isdigit() else sample_id
