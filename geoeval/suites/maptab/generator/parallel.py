"""MapTab generation on every core: maps and RP references built by map, in worker processes.

Each map's RP queries (`rp.queries.build_rp_queries`) depend only on that map and that map's seed
(every random draw comes from a private `random.Random` seeded per map, category and pair), so
maps are independent units of work. `ProcessPoolExecutor.map` hands maps to the workers and
returns their results in map order, which makes the output identical to a one-core run, query for
query and byte for byte (`tests/maptab/test_parallel_gen.py` compares the JSON).

Small jobs stay in the calling process: starting workers costs more than a suite's few maps do
(`min_queries`). `workers`: `None` is every core this process may use.

Map generation (`generate_maps`) is parallel the same way: each map is generated from its own
seed.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

#: below this many queries in all, a pool costs more than it saves
MIN_QUERIES_FOR_POOL = 2000


@dataclass(frozen=True)
class RPJob:
    """What `build_rp_queries` needs for one map."""

    map: Any
    categories: tuple[str, ...]
    n_per_category: int
    seed: int
    map_difficulty: str = "Easy"
    style: int | None = None


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _build(job: RPJob) -> list[Any]:
    from geoeval.suites.maptab.rp.queries import build_rp_queries

    return build_rp_queries(
        job.map,
        list(job.categories),
        job.n_per_category,
        seed=job.seed,
        map_difficulty=job.map_difficulty,
        style=job.style,
    )


def _context() -> Any:
    # fork is the cheapest start on Linux (the parent's imports are inherited); elsewhere, and in
    # a threaded parent (fork copies held locks), spawn
    import threading

    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def map_in_processes(
    fn: Callable[[Any], Any], items: Sequence[Any], workers: int | None = None, parallel: bool = True
) -> list[Any]:
    """`[fn(x) for x in items]`, on `workers` processes when `parallel` (results in item order)."""
    workers = min(workers or available_cores(), len(items))
    if not parallel or workers <= 1:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        # chunks of one: maps differ in size by several times, so fine-grained hand-out balances
        return list(pool.map(fn, items, chunksize=1))


def build_rp_queries_parallel(
    jobs: Sequence[RPJob], workers: int | None = None, min_queries: int = MIN_QUERIES_FOR_POOL
) -> list[list[Any]]:
    """Every job's RP queries, in job order, built on `workers` processes (one process when the
    whole is smaller than `min_queries` queries)."""
    total = sum(j.n_per_category * len(j.categories) for j in jobs)
    return map_in_processes(_build, list(jobs), workers, parallel=total >= min_queries)


def synthetic_rp_queries(
    maps: Sequence[Any],
    categories: Sequence[str],
    n_per_category: int,
    base_seed: int,
    map_difficulty: dict[str, str],
    style: int | None = None,
    workers: int | None = None,
) -> list[tuple[Any, list[Any]]]:
    """(map, its RP queries) as `MapTabSuite.synthetic_queries` builds them (map i seeded
    `base_seed + i`, its difficulty from `map_difficulty`, "Easy" when absent), in parallel."""
    jobs = [
        RPJob(m, tuple(categories), n_per_category, base_seed + i, map_difficulty.get(m.name, "Easy"), style)
        for i, m in enumerate(maps)
    ]
    return list(zip(maps, build_rp_queries_parallel(jobs, workers)))


# ------------------------------------------------------------------ maps


@dataclass(frozen=True)
class MapJob:
    """One map to generate: `kind` "metromap" or "travelmap", its seed and generator keywords."""

    kind: str
    seed: int
    kwargs: tuple[tuple[str, Any], ...] = ()


def _generate(job: MapJob) -> tuple[Any, list[str]]:
    from geoeval.suites.maptab.generator.checks import run_quality_checks
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.generator.travel import generate_travel_map

    make = generate_metro_map if job.kind == "metromap" else generate_travel_map
    m = make(job.seed, **dict(job.kwargs))
    return m, run_quality_checks(m)


def generate_maps(jobs: Sequence[MapJob], workers: int | None = None) -> list[tuple[Any, list[str]]]:
    """(map, its quality-check problems) per job, in job order, on `workers` processes."""
    return map_in_processes(_generate, list(jobs), workers, parallel=len(jobs) >= 8)
