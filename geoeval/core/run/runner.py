"""Runners: where the shards of a job execute.

- `local`: one shard, in this process.
- `ray`: samples are split into `runner.num_workers` balanced shards (see `shard_samples`); each shard is a Ray task
  that runs Inspect on its samples and streams every finished sample into a Ray queue; the driver
  drains the queue into the warehouse as results arrive. A failed shard is resubmitted (only its
  unfinished samples) up to `runner.max_retries` times.

Both runners hand results to the same sink, and aggregation sorts them by sample id, so the merged
metrics of a Ray run equal those of a local run of the same config exactly.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geoeval.core.errors import GeoevalError
from geoeval.core.records import SampleResult
from geoeval.core.run import cluster
from geoeval.core.run.cluster import receive_logs
from geoeval.core.run.ray_session import (
    cluster_address,
    ensure_ray,
    local_ray_starting,
    start_local_ray_soon,
    worker_secrets,
)
from geoeval.core.timing import stage

if TYPE_CHECKING:
    from geoeval.core.config.schema import RunSpec

Sink = Callable[[SampleResult], None]


def shard_samples(samples: list[Any], n: int) -> list[list[Any]]:
    """Split samples into at most n non-empty shards.

    Samples that share `metadata["shard_key"]` (MapTab: the map, whose image an OCR agent reads
    once per process) stay in one shard; groups go to the least-loaded shard, largest first, so
    shards stay balanced. Samples without a key are dealt one by one. Order within a shard keeps
    the dataset's order. Deterministic for a given sample list.
    """
    n = max(1, n)
    groups: dict[str, list[Any]] = {}
    for i, s in enumerate(samples):
        key = (getattr(s, "metadata", None) or {}).get("shard_key")
        groups.setdefault(str(key) if key is not None else f"__sample{i}", []).append(s)
    shards: list[list[Any]] = [[] for _ in range(n)]
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        target = min(range(n), key=lambda j: (len(shards[j]), j))
        shards[target].extend(groups[key])
    position = {id(s): i for i, s in enumerate(samples)}
    return [sorted(sh, key=lambda s: position[id(s)]) for sh in shards if sh]


#: stored model calls by (sample_id, epoch) (`run/replay.py`)
Replay = dict[tuple[str, int], list[dict[str, Any]]]


def replay_for(replay: Replay | None, samples: list[Any]) -> Replay:
    """The part of `replay` that belongs to `samples` (what one shard is sent)."""
    if not replay:
        return {}
    ids = {str(s.id) for s in samples}
    return {key: calls for key, calls in replay.items() if key[0] in ids}


def run_local(
    spec: RunSpec,
    env: Any,
    samples: list[Any],
    sink: Sink,
    log_dir: Path,
    on_sample: Callable[[Any], None] | None = None,
    replay: Replay | None = None,
) -> list[str]:
    from geoeval.core.run.inspect_bridge import run_shard

    if not samples:
        return []
    with stage("inspect_eval"):
        return run_shard(spec, env, samples, shard=0, sink=sink, log_dir=log_dir, on_sample=on_sample, replay=replay)


# ---------------------------------------------------------------- Ray


class ResultOutbox:
    """A shard's finished samples on their way to the driver's results queue.

    A `Queue.put` is a round trip to the queue actor; on a busy 2-core machine it took ~28 ms,
    and Inspect waits for it (the sink runs in its sample-end hook), so a shard spent a third of
    its time waiting to hand results over. Results go into this outbox instead, and a thread sends
    what has gathered every `interval` seconds in one `put_nowait_batch`: the driver still sees
    samples as they finish (progress, resume), and `close` sends the rest before the shard returns.
    A worker that dies loses at most the last interval's results, which the shard's retry reruns
    (the driver retries whatever it has not received)."""

    def __init__(self, queue: Any, interval: float = 0.1) -> None:
        self._queue = queue
        self._interval = interval
        self._items: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="geoeval-outbox", daemon=True)
        self._thread.start()

    def put(self, result: SampleResult) -> None:
        item = result.model_dump(mode="json")
        with self._lock:
            self._items.append(item)

    def _send(self) -> None:
        with self._lock:
            items, self._items = self._items, []
        if items:
            self._queue.put_nowait_batch(items)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            try:
                self._send()
            except BaseException as exc:  # raised again by close(), on the shard's thread
                self._error = exc
                return

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def close(self, *, quiet: bool = False) -> None:
        """Stop the thread and send what is left; a failed send fails the shard (it is retried),
        unless `quiet` (the shard is failing already: its own error is the one to report)."""
        self.stop()
        try:
            if self._error is not None:
                raise self._error
            self._send()
        except BaseException:
            if not quiet:
                raise


def _remote_shard_fn():
    import ray

    @ray.remote(num_cpus=1, max_retries=0)
    def run_shard_remote(
        spec: RunSpec,
        env: Any,
        samples: list[Any],
        shard: int,
        queue: Any,
        log_dir: str,
        secrets: dict[str, str] | None = None,
        job: dict[str, Any] | None = None,
        replay: Replay | None = None,
    ) -> list[Any]:
        # one CPU per shard: native thread pools (ONNX Runtime, OpenMP) must not oversubscribe
        os.environ.setdefault("OMP_NUM_THREADS", "1")

        job = job or {}
        if job.get("code"):
            cluster.check_code(job["code"])
        env = cluster.localize_env(env, job.get("env_pack"))
        before = {k: os.environ.get(k) for k in secrets or {}}
        os.environ.update(secrets or {})
        from geoeval.core.run.inspect_bridge import run_shard

        outbox = ResultOutbox(queue)
        try:
            try:
                with stage("inspect_eval"):
                    paths = run_shard(
                        spec,
                        env,
                        samples,
                        shard=shard,
                        sink=outbox.put,
                        log_dir=log_dir,
                        replay=replay,
                        point=job.get("sweep_point"),
                    )
            except BaseException:
                outbox.close(quiet=True)  # what finished still reaches the driver; the retry runs the rest
                raise
            outbox.close()  # every result is in the queue before the shard returns
            return cluster.logs_for_driver(paths, job.get("driver_marker"))
        finally:  # the worker's own environment, as it was
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    return run_shard_remote


def _job_context(spec: RunSpec, env: Any, log_dir: Path) -> dict[str, Any]:
    """What every shard of this job gets besides its samples: a file only the driver's filesystem
    has (a shard that cannot see it sends its logs back as bytes), and for a cluster the driver's
    code digest and the environment's files in the object store, fetched only by a node that
    lacks them (`cluster.localize_env`); and the sweep point's name, which a worker does not
    know, for its logs' tags and task args."""
    import ray

    from geoeval.core.run.inspect_bridge import sweep_point

    context: dict[str, Any] = {"driver_marker": cluster.driver_marker(log_dir), "sweep_point": sweep_point()}
    if cluster_address(spec) is not None:  # a local Ray imports the driver's own files
        context["code"] = cluster.code_digest()
        packed = cluster.pack_env(env)
        context["env_pack"] = [ray.put(packed)] if packed is not None else None
    return context


def _ray_session() -> str:
    """This process's Ray connection: its job on its node (a new `ray.init` is a new one)."""
    import ray

    context = ray.get_runtime_context()
    return f"{context.get_job_id()}:{context.get_node_id()}"


#: The Ray session whose workers `start_early` has warmed (its tasks run whether or not anyone
#: keeps their references).
_WARMED: set[str] = set()


def start_early(spec: RunSpec) -> None:
    """Start the local Ray of a `runner=ray` job or sweep now, in a thread of its own, and have as
    many workers as the job uses import what a shard needs (Inspect, the suite, the plugins)
    while the driver prepares the job (the sweep's compositions, checks and MLflow run, the
    environment, the samples). The first shards then start on warm workers instead of paying
    that start-up in the job. Does nothing for `runner=local` or a cluster (`runner.address`),
    whose workers are not this machine's spare cores; idempotent."""
    if spec.runner.name != "ray" or cluster_address(spec) is not None or local_ray_starting():
        return  # (a local Ray already starting warms its workers when it is up)
    if not start_local_ray_soon(spec, then=partial(_warm_workers, spec)):  # Ray is up
        with stage("ray_start"):
            ensure_ray(spec)
        _warm_workers(spec)


def _warm_workers(spec: RunSpec) -> None:
    import ray

    session = _ray_session()
    if session in _WARMED:
        return

    @ray.remote(num_cpus=1, max_retries=0)
    def import_shard_code(suite_name: str, model_name: str) -> int:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # as a shard sets it
        from geoeval.core import registry
        from geoeval.core.run import inspect_bridge
        from geoeval.core.run.models import import_provider_sdk

        registry.get_suite(suite_name)  # the suite's own plugins, not every suite's
        import_provider_sdk(model_name)  # what the shard's first model would import
        inspect_bridge.warm_up()
        return os.getpid()

    for _ in range(spec.runner.num_workers):
        import_shard_code.remote(spec.suite.name, spec.model.name)
    _WARMED.clear()
    _WARMED.add(session)
    _results_queue()  # its actor's process starts now too, not when the first shards are sent


#: The results queue of this process's Ray session, kept from job to job: the queue is an actor,
#: and each actor is a process of its own (a new one per job cost a Python start-up in every job
#: of a sweep, while the shards were running).
_RESULT_QUEUES: dict[str, Any] = {}
_RESULT_QUEUE_LOCK = threading.Lock()


def _results_queue() -> Any:
    """The queue shards send finished samples to. It lives on the driver's node and takes no
    CPU: losing another node must not lose the queue, and a busy cluster must not keep it from
    being scheduled. Items carry their run hash, so a job ignores what an interrupted earlier
    job of this process left in it."""
    key = _ray_session()
    with _RESULT_QUEUE_LOCK:  # the warm-up's thread and the job's may ask at once
        return _RESULT_QUEUES.get(key) or _new_results_queue(key)


def _new_results_queue(key: str) -> Any:
    import ray
    from ray.util.queue import Queue
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    _RESULT_QUEUES.clear()
    queue = Queue(
        actor_options={
            "num_cpus": 0,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(
                node_id=ray.get_runtime_context().get_node_id(), soft=False
            ),
        }
    )
    _RESULT_QUEUES[key] = queue
    return queue


def run_ray(
    spec: RunSpec, env: Any, samples: list[Any], sink: Sink, log_dir: Path, replay: Replay | None = None
) -> list[str]:
    import ray
    from ray.util.queue import Empty

    from geoeval.core.run.models import shard_count  # Inspect's model classes: a driver of local runs never needs them

    if not samples:
        return []
    with stage("ray_start"):
        ensure_ray(spec)
    remote = _remote_shard_fn()
    with stage("ray_queue"):
        queue = _results_queue()
    run_hash = spec.config_hash()
    shards = shard_samples(samples, shard_count(spec))  # no more shards than connections
    received: set[tuple[str, int]] = set()
    attempts = {i: 0 for i in range(len(shards))}
    with stage("ray_submit"):
        secrets = worker_secrets(spec)
        job = _job_context(spec, env, log_dir)
        pending = {
            remote.remote(spec, env, shard, i, queue, str(log_dir), secrets, job, replay_for(replay, shard)): i
            for i, shard in enumerate(shards)
        }
    log_paths: list[str] = []

    def drain() -> None:
        # two queue-actor calls per drain, however many results wait (not one per result)
        try:
            size = queue.qsize()
            if not size:
                return
            items = queue.get_nowait_batch(size)
        except Empty:
            return
        except ray.exceptions.RayError as exc:
            _RESULT_QUEUES.clear()  # the next job starts a new queue
            raise GeoevalError(
                f"the results queue on the driver's node failed ({_last_line(exc)}); finished samples "
                "are stored, the rest can be resumed by rerunning"
            ) from exc
        for item in items:
            if item.get("run_hash") != run_hash:  # left by an earlier job of this process that was interrupted
                continue
            result = SampleResult.model_validate(item)
            received.add((result.sample_id, result.epoch))
            sink(result)

    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
        drain()
        for ref in ready:
            i = pending.pop(ref)
            try:
                log_paths.extend(receive_logs(ray.get(ref), log_dir))
            except Exception as exc:
                drain()
                attempts[i] += 1
                left = [s for s in shards[i] if any((str(s.id), e) not in received for e in range(1, spec.epochs + 1))]
                # the worker's traceback, on the driver (Ray's error text carries it)
                print(f"[geoeval] shard {i} failed:\n{_indent(str(exc))}", file=sys.stderr)
                if attempts[i] > spec.runner.max_retries:
                    raise GeoevalError(
                        f"Shard {i} failed {attempts[i]} time(s) (runner.max_retries={spec.runner.max_retries}); "
                        f"{len(left)} sample(s) unfinished and can be resumed by rerunning. Last error: "
                        f"{_last_line(exc)}"
                    ) from exc
                print(
                    f"[geoeval] shard {i}: retry {attempts[i]}/{spec.runner.max_retries} "
                    f"with {len(left)} unfinished sample(s)",
                    file=sys.stderr,
                )
                if left:
                    shards[i] = left
                    pending[
                        remote.remote(spec, env, left, i, queue, str(log_dir), secrets, job, replay_for(replay, left))
                    ] = i
    # a shard sends its last results before it returns (`ResultOutbox.close`): one drain takes
    # them; a shard that died sent what it could, and the wait below is only a safety margin
    expected = {(str(s.id), e) for s in samples for e in range(1, spec.epochs + 1)}
    deadline = time.time() + 2.0
    drain()
    while not expected <= received and time.time() < deadline:
        time.sleep(0.05)
        drain()
    return log_paths


def _indent(text: str, limit: int = 6000) -> str:
    text = text if len(text) <= limit else "…" + text[-limit:]
    return "\n".join("    " + line for line in text.splitlines())


def _last_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def run_samples(
    spec: RunSpec,
    env: Any,
    samples: list[Any],
    sink: Sink,
    log_dir: Path,
    on_sample: Callable[[Any], None] | None = None,
    replay: Replay | None = None,
) -> list[str]:
    """Run the samples; `on_sample` also sees each finished Inspect sample where it finishes in
    this process (the local runner; Ray's shards finish in workers). `replay`: stored model calls
    (`run/replay.py`), sent with each shard's samples."""
    if spec.runner.name == "ray":
        return run_ray(spec, env, samples, sink, log_dir, replay)
    return run_local(spec, env, samples, sink, log_dir, on_sample, replay)
