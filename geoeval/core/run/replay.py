"""Stored trajectories: every model call of a sample is recorded, and replayed instead of sent
when a later run has the same generation identity (`RunSpec.generation_hash`).

The seam is the provider's `generate` (as for `models.clean_model_replies`): the
evaluated model and the suite's simulated roles (a user, a tool simulator) are wrapped; judges are
not (they score the trajectory: a rescore asks them again, through Inspect's cache). For each call
the wrapper computes a digest of what the model is shown (the messages without their random ids,
the tools offered, the tool choice, the model); when the sample's stored calls hold an output
recorded for that digest, it is returned without a request, else the call is sent and recorded.
So a trajectory is replayed exactly as far as the model would be shown the same input: a changed
prompt or tool output is generated anew (or, with `generation=replay_only`, is an error), never
answered with a stale reply. Inspect still logs each replayed call as a model event and counts
its tokens (the scores that read tokens stay identical); the tokens of replayed calls are kept
apart, so nothing replayed is priced as spent.

The store is the warehouse (`trajectories`, written with the sample's result); the Inspect logs
hold the same calls for reading, but are not read back. Stored calls carry integrity digests
(`warehouse.rows.call_integrity`), checked before anything is replayed (`load_stored`): an edited
or cut trajectory is an error naming its sample. Each new call is also journaled the moment it is
answered (`run/journal.py`), so a killed run's rerun replays what was paid for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoeval.core.errors import GeoevalError
from geoeval.core.private_api import sample_state
from geoeval.core.run import journal
from geoeval.core.run.journal import JOURNALED
from geoeval.core.stop import halt, halted
from geoeval.core.text import clean_fields, clean_text

#: where a call's record says it came from
REPLAYED = "replayed"


class JobHalted(RuntimeError):
    """A model call after the job was halted (`core.stop.halt`)."""


class ReplayMissing(RuntimeError):
    """`generation=replay_only` and a model call that the stored trajectory does not hold."""


class RetriesSpent(RuntimeError):
    """A model call that already failed `max_retries` + 1 requests in this sample, asked again by
    Inspect's sample retry (`retry_on_error`): it is not sent again, so that one failing call costs
    at most `max_retries` + 1 requests per sample, as the docs promise (a truncated reply cost
    (`max_retries` + 1) x (`retry_on_error` + 1)). A rerun of the run sends it again."""


class _Active:
    """The stored calls and the recordings of the eval running in this process (one at a time
    per process, as for `inspect_bridge`'s sink)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stored: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.pools: dict[tuple[str, int], dict[str, deque[dict[str, Any]]]] = {}
        self.recorded: dict[tuple[str, int], list[dict[str, Any]]] = {}
        # {((sample_id, epoch), digest): (failed requests, the last error in one line)}
        self.failed: dict[tuple[tuple[str, int], str], tuple[int, str]] = {}
        self.replay_only = False


_ACTIVE = _Active()


@contextlib.contextmanager
def replaying(stored: dict[tuple[str, int], list[dict[str, Any]]] | None, *, replay_only: bool) -> Iterator[None]:
    """Within the block, the wrapped models answer from `stored` ({(sample_id, epoch): calls})."""
    with _ACTIVE.lock:
        _ACTIVE.stored = dict(stored or {})
        _ACTIVE.pools = {}
        _ACTIVE.recorded = {}
        _ACTIVE.failed = {}
        _ACTIVE.replay_only = replay_only
    try:
        yield
    finally:
        with _ACTIVE.lock:
            _ACTIVE.stored, _ACTIVE.pools, _ACTIVE.recorded, _ACTIVE.failed = {}, {}, {}, {}
            _ACTIVE.replay_only = False


def take_recording(sample_id: str, epoch: int) -> list[dict[str, Any]]:
    """The calls recorded for a finished sample (removed from the process's state)."""
    with _ACTIVE.lock:
        return _ACTIVE.recorded.pop((sample_id, epoch), [])


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "source")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def call_digest(model: str, input: list[Any], tools: list[Any], tool_choice: Any) -> str:
    """What the model is shown in one call, as a digest: the messages (without the ids Inspect
    draws at random), the tools offered, the tool choice and the model."""
    shown = {
        "model": model,
        "input": [_without_ids(m.model_dump(mode="json", exclude_none=True)) for m in input],
        "tools": [t.model_dump(mode="json", exclude_none=True) for t in tools],
        "tool_choice": tool_choice if isinstance(tool_choice, str) else _dump(tool_choice),
    }
    blob = json.dumps(shown, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else repr(value)


def _described(error: BaseException) -> str:
    """A failed request's error as the stored errors say it: `APIConnectionError (the connection
    failed or was closed)`."""
    from geoeval.core.run.inspect_bridge import PROVIDER_ERRORS

    name = type(error).__name__
    said = PROVIDER_ERRORS.get(name) or clean_text(" ".join(str(error).split()), max_chars=200)
    return f"{name} ({said})"


def _pool(key: tuple[str, int]) -> dict[str, deque[dict[str, Any]]]:
    pool = _ACTIVE.pools.get(key)
    if pool is None:
        pool = {}
        for call in _ACTIVE.stored.get(key, []):
            pool.setdefault(call["digest"], deque()).append(call)
        _ACTIVE.pools[key] = pool
    return pool


def record_and_replay(model: Any, role: str) -> Any:
    """`model` (an Inspect `Model`) with its provider's `generate` recording each call of a
    sample and replaying stored ones (see the module doc), once; returns it. `role`: "agent" for
    the evaluated model, the role's name for a suite's simulated role."""
    from inspect_ai.model import ModelOutput

    api = getattr(model, "api", None)
    if api is None or getattr(api, "_geoeval_replay", False):
        return model
    generate = api.generate
    name = str(model)

    async def replay_generate(input: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
        reason = halted()
        if reason is not None:  # the job cannot store results any more: pay for nothing more
            raise JobHalted(f"the run is stopping, no model call is made: {reason}")
        state = sample_state()
        if state is None:  # outside a sample (a preflight probe): nothing to record
            return await generate(input, tools, tool_choice, config)
        key = (str(state.sample_id), int(state.epoch))
        digest = call_digest(name, input, tools, tool_choice)
        with _ACTIVE.lock:
            stored = _pool(key).get(digest)
            found = stored.popleft() if stored else None
            replay_only = _ACTIVE.replay_only
            n_before = len(_ACTIVE.recorded.get(key, []))
        if found is not None:
            # cleaned as a fresh reply is (`models.clean_model_output`): what was stored may be edited
            output = clean_fields(ModelOutput.model_validate(found["output"]))
            # a journaled call (`run/journal.py`) was paid for by a killed invocation: stored and priced as made
            record = (
                {k: v for k, v in found.items() if k != JOURNALED}
                if found.get(JOURNALED)
                else {**found, REPLAYED: True}
            )
            with _ACTIVE.lock:
                _ACTIVE.recorded.setdefault(key, []).append(record)
            return output
        if replay_only:
            raise ReplayMissing(
                f"generation=replay_only: the stored trajectory has no {role} call for what the model is shown "
                f"at call {n_before + 1} of this sample (its prompt or a tool output changed since it was "
                "generated, or it was never generated): rerun without rescore to generate it"
            )
        limit = getattr(config, "max_retries", None)
        with _ACTIVE.lock:
            failed, last = _ACTIVE.failed.get((key, digest), (0, ""))
        if limit is not None and failed > limit:
            raise RetriesSpent(
                f"the model call failed after its retries: {last} ({failed} requests, model.config.max_retries="
                f"{limit}); the sample's retry does not send it again (a rerun does)"
            )
        try:
            reply = await generate(input, tools, tool_choice, config)
        except Exception as error:  # counted per call and sample: Inspect's retries send the same digest
            with _ACTIVE.lock:
                n, _ = _ACTIVE.failed.get((key, digest), (0, ""))
                _ACTIVE.failed[(key, digest)] = (n + 1, _described(error))
            raise
        output = reply[0] if isinstance(reply, tuple) else reply
        if isinstance(output, ModelOutput) and output.choices:
            call = {"role": role, "model": name, "digest": digest, "output": output.model_dump(mode="json")}
            with _ACTIVE.lock:
                _ACTIVE.recorded.setdefault(key, []).append(call)
            _journal(key, call)
        return reply

    api.generate = replay_generate
    api._geoeval_replay = True
    return model


#: providers whose calls cost nothing (geoeval's offline agents, Inspect's mock): not journaled
FREE_PROVIDERS = ("geoeval/", "mockllm/")


def _journal(key: tuple[str, int], call: dict[str, Any]) -> None:
    """Write an answered call to the job's journal before Inspect sees it (`run/journal.py`); a
    journal that cannot be written (a full disk) halts the job: what it pays for could be lost."""
    writer = journal.current()
    if writer is None or str(call.get("model", "")).startswith(FREE_PROVIDERS):
        return
    try:
        writer.write(key, call)
    except OSError as error:
        halt(f"the trajectory journal {writer.path} cannot be written ({error.strerror or error})")


def replayed_usage(calls: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Tokens of the replayed calls among `calls`, by model: {model: {input, output, calls}}."""
    out: dict[str, dict[str, int]] = {}
    for call in calls:
        if not call.get(REPLAYED):
            continue
        usage = (call.get("output") or {}).get("usage") or {}
        entry = out.setdefault(call["model"], {"input": 0, "output": 0, "calls": 0})
        entry["input"] += int(usage.get("input_tokens") or 0)
        entry["output"] += int(usage.get("output_tokens") or 0)
        entry["calls"] += 1
    return out


@dataclass
class StoredCalls:
    """What a job may replay: the stored calls by (sample_id, epoch); the samples whose stored
    calls fail their check, with the one line that says why (they are errors, never replayed);
    how many samples' calls carry no integrity digest (stored by an older geoeval: replayed
    unchecked, said once); and how many samples' calls come from a killed run's journal
    (`run/journal.py`)."""

    calls: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    refused: dict[tuple[str, int], str] = field(default_factory=dict)
    unsealed: int = 0
    journaled: int = 0


def load_stored(wh: Any, generation_hash: str, keys: set[tuple[str, int]], journal_folder: Path) -> StoredCalls:
    """The stored trajectories of `keys` under `generation_hash` from the warehouse `wh`, each
    checked against its integrity digests (`warehouse.rows.seal_problem`), and for the samples the
    warehouse lacks, the calls a killed invocation journaled in `journal_folder`."""
    from geoeval.core.warehouse.rows import seal_problem, unsealed

    calls, unreadable = wh.read_trajectories(generation_hash, keys)
    found = StoredCalls()
    for key, why in unreadable.items():
        found.refused[key] = _refusal(key, why)
    for key, sample_calls in calls.items():
        problem = seal_problem(sample_calls)
        if problem is not None:
            found.refused[key] = _refusal(key, problem)
            continue
        found.unsealed += unsealed(sample_calls)
        found.calls[key] = sample_calls
    for key, sample_calls in journal.read_journals(journal_folder, keys - set(calls) - set(unreadable)).items():
        problem = journal.journal_problem(sample_calls)
        if problem is not None:
            found.refused[key] = _refusal(key, problem)
        else:
            found.calls[key] = sample_calls
            found.journaled += 1
    return found


def _refusal(key: tuple[str, int], why: str) -> str:
    return (
        f"the stored trajectory of sample {key[0]} (epoch {key[1]}) is not replayed: {why}; "
        "generation=fresh generates it anew"
    )


#: the error of a sample a rescore cannot score (formatted with the generation hash)
NEVER_GENERATED = (
    "generation=replay_only: no stored trajectory for this sample under generation identity {} (a rescore "
    "makes no model call): run without rescore to generate it"
)


def stored_warnings(found: StoredCalls | None) -> list[str]:
    """The lines a job prints about what it loaded: refused trajectories, unchecked ones, journals."""
    if found is None:
        return []
    lines = []
    if found.refused:
        first = next(iter(found.refused.values()))
        lines.append(f"warning: {len(found.refused)} sample(s) are errors, not replayed; the first: {first}")
    if found.unsealed:
        lines.append(
            f"warning: {found.unsealed} stored trajectory(ies) carry no integrity digest (stored by an older geoeval): "
            "replayed unchecked (docs/cost.md)"
        )
    if found.journaled:
        lines.append(f"{found.journaled} sample(s) resume from the calls a killed run journaled: not paid again")
    return lines


def stored_keys(wh: Any, generation_hash: str) -> set[tuple[str, int]]:
    """The (sample_id, epoch) pairs whose trajectories `wh` holds under `generation_hash`."""

    try:
        _, rows = wh.query("SELECT sample_id, epoch FROM trajectories WHERE generation_hash = ?", [generation_hash])
    except GeoevalError:  # a damaged file: keep the journals, they may be all that is left
        return set()
    return {(str(sample_id), int(epoch)) for sample_id, epoch in rows}
