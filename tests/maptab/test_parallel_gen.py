"""Parallel MapTab generation (`generator/parallel.py`) gives exactly the one-core output."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from geoeval.suites.maptab.generator.checks import run_quality_checks
from geoeval.suites.maptab.generator.metro import generate_metro_map
from geoeval.suites.maptab.generator.parallel import (
    MapJob,
    RPJob,
    build_rp_queries_parallel,
    generate_maps,
    map_in_processes,
    synthetic_rp_queries,
)
from geoeval.suites.maptab.generator.travel import generate_travel_map
from geoeval.suites.maptab.rp.queries import CATEGORIES, build_rp_queries


def _digest(per_map) -> str:
    blob = json.dumps([[dataclasses.asdict(q) for q in qs] for qs in per_map], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _maps():
    return [generate_metro_map(i, n_lines=3) for i in range(3)] + [generate_travel_map(100 + i) for i in range(3)]


@pytest.mark.slow
def test_rp_queries_on_two_processes_equal_one_core_byte_for_byte():
    maps = _maps()
    jobs = [RPJob(m, tuple(CATEGORIES), 6, seed=i, map_difficulty=("Easy", "Hard")[i % 2]) for i, m in enumerate(maps)]
    one_core = [
        build_rp_queries(m, CATEGORIES, 6, seed=i, map_difficulty=("Easy", "Hard")[i % 2]) for i, m in enumerate(maps)
    ]
    parallel = build_rp_queries_parallel(jobs, workers=2, min_queries=0)
    assert [len(qs) for qs in parallel] == [len(qs) for qs in one_core] and sum(map(len, one_core)) > 0
    assert _digest(parallel) == _digest(one_core)
    # the order is the maps' order, not the order workers finish in
    assert [qs[0].map_name for qs in parallel] == [m.name for m in maps]


@pytest.mark.slow
def test_small_jobs_stay_in_process_and_agree():
    maps = _maps()[:2]
    jobs = [RPJob(m, ("map_only", "T"), 3, seed=7 + i) for i, m in enumerate(maps)]
    assert _digest(build_rp_queries_parallel(jobs)) == _digest(
        build_rp_queries_parallel(jobs, workers=2, min_queries=0)
    )


def test_synthetic_rp_queries_matches_the_suite_loop():
    """What `MapTabSuite.synthetic_queries` computes, map i seeded base + i."""
    maps = _maps()
    levels = {maps[0].name: "Medium"}
    expected = [
        build_rp_queries(
            m, ["map_only", "mix"], 4, seed=5 * 7919 + i, map_difficulty=levels.get(m.name, "Easy"), style=2
        )
        for i, m in enumerate(maps)
    ]
    got = synthetic_rp_queries(maps, ["map_only", "mix"], 4, 5 * 7919, levels, style=2, workers=2)
    assert [m.name for m, _ in got] == [m.name for m in maps]
    assert _digest([qs for _, qs in got]) == _digest(expected)


@pytest.mark.slow
def test_generated_maps_in_processes_equal_one_core():
    jobs = [MapJob("metromap", i, (("n_lines", 3), ("name", f"m{i}"))) for i in range(5)]
    jobs += [MapJob("travelmap", 50 + i, (("name", f"t{i}"),)) for i in range(4)]
    parallel = generate_maps(jobs, workers=2)
    assert len(parallel) == 9
    for job, (m, problems) in zip(jobs, parallel):
        make = generate_metro_map if job.kind == "metromap" else generate_travel_map
        expected = make(job.seed, **dict(job.kwargs))
        assert m == expected
        assert problems == run_quality_checks(expected)


def test_map_in_processes_keeps_item_order():
    assert map_in_processes(abs, [-3, 2, -1, 0], workers=2) == [3, 2, 1, 0]


def test_the_suite_path_gives_the_suites_queries(tmp_path):
    """`synthetic_rp_queries` with the suite's arguments equals `MapTabSuite.synthetic_queries`
    (what the one-line wiring into the suite would replace)."""
    from geoeval.core.registry import get_suite
    from tests.conftest import compose_spec

    spec = compose_spec(
        tmp_path, "env.n_maps=2", "suite.scenario=both", "suite.n_per_category=3", "suite.categories=[map_only,T,mix]"
    )
    suite = get_suite("maptab")
    env = suite.build_env(spec)
    expected = suite.synthetic_queries(spec, env)
    seed = spec.env.seed if spec.env.seed is not None else spec.seed
    got = synthetic_rp_queries(
        suite._maps(spec, env),
        spec.suite.selected_categories(),
        spec.suite.n_per_category,
        seed * 7919,
        env.map_difficulty,
        spec.suite.fixed_style(),
        workers=2,
    )
    assert [m.name for m, _ in got] == [m.name for m, _ in expected]
    assert _digest([qs for _, qs in got]) == _digest([qs for _, qs in expected])
