"""MapTab paper-scale generation, measured in parts (run by hand, not in CI):

    .venv/bin/python bench/maptab_scale.py [--fraction 0.1] [--metro 160] [--travel 168] [--workers N]
    .venv/bin/python bench/maptab_scale.py --fraction 1      # issue 12's target: all of it, measured

The paper's benchmark: 328 maps (160 Metromaps, 168 Travelmaps), 16,400 origin-destination pairs
(Algorithm 1: 8,000 Metromap, 8,400 Travelmap) x 12 categories = 196,800 RP queries with their
references (every optimal route) and difficulty, and 3,936 QA queries (12 per map), no rendering.
Issue 3's targets: <= 5 minutes on 2 cores, peak RSS <= 2 GB; one paper-size (4140 x 3744)
Metromap rendered in <= 2 s. Issue 12's: generation <= 60 s on 2 cores (every core used: maps and RP
references are built by map in worker processes, `generator/parallel.py`), output identical to one core.

Parts, each timed on its own:
1. maps: generating every map (seeded) and running the B.5/B.6 quality checks;
2. difficulty: GS, WASP, MC, the 1:1:1 levels, the 2:1 split and Algorithm 1's allocation;
3. RP: `build_rp_queries` on a `--fraction` of the maps (spread over the allocation order) with
   each map's allocated number of pairs, all 12 categories; the full-scale time is extrapolated by
   queries (printed as such; `--fraction 1` measures it all);
4. QA: `build_qa_queries`, 12 types x 1 question on every map;
5. render: one paper-size Metromap.

Baselines, measured in the same run on the same maps: networkx all-pairs shortest-path lengths
(the least any generator must do to pick pairs and SPLI); every part is also printed as a ratio to
it, which makes runs on different machines comparable. And (unless `--no-serial-check`) the RP
queries of the measured maps built again on one core: the parallel speedup, and a sha256 of both
outputs' JSON, which must be equal.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import resource
import time

import networkx as nx


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the pool's workers, once joined)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


CPU: dict[str, float] = {}  # CPU seconds per timed part


def timed(fn, name: str | None = None):
    t, c = time.perf_counter(), cpu_seconds()
    out = fn()
    if name:
        CPU[name] = cpu_seconds() - c
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--metro", type=int, default=160)
    ap.add_argument("--travel", type=int, default=168)
    ap.add_argument("--fraction", type=float, default=0.1, help="share of maps whose RP queries are built")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    ap.add_argument("--no-serial-check", action="store_true", help="skip the one-core rebuild of the RP part")
    args = ap.parse_args()

    from geoeval.suites.maptab.generator.difficulty import (
        PAPER_TOTALS,
        allocate_queries,
        map_difficulty_score,
        tercile_levels,
        to_graph,
        train_test_split,
    )
    from geoeval.suites.maptab.generator.metro import generate_metro_map
    from geoeval.suites.maptab.generator.parallel import (
        MapJob,
        RPJob,
        available_cores,
        build_rp_queries_parallel,
        generate_maps,
    )
    from geoeval.suites.maptab.qa.questions import QA_TYPES, build_qa_queries
    from geoeval.suites.maptab.render.image import render_map
    from geoeval.suites.maptab.rp.queries import CATEGORIES, build_rp_queries

    workers = args.workers or available_cores()

    def make_maps():
        # paper Metromaps are larger than the suite's 3-line default
        metro = {"n_lines": 4, "stations_per_line": (6, 10), "width": 2400, "height": 2000}
        jobs = [
            MapJob("metromap", args.seed * 10000 + i, tuple({**metro, "name": f"metro{i:03d}"}.items()))
            for i in range(args.metro)
        ]
        jobs += [
            MapJob("travelmap", args.seed * 10000 + 5000 + i, (("name", f"travel{i:03d}"),)) for i in range(args.travel)
        ]
        built = generate_maps(jobs, workers)
        maps = {"metromap": [m for m, _ in built[: args.metro]], "travelmap": [m for m, _ in built[args.metro :]]}
        bad = [(m.name, p) for m, problems in built for p in problems]
        if bad:
            raise SystemExit(f"quality check failures: {bad[:5]}")
        return maps

    maps, t_maps = timed(make_maps)
    all_maps = maps["metromap"] + maps["travelmap"]

    def baseline():
        for m in all_maps:
            dict(nx.all_pairs_shortest_path_length(to_graph(m)))

    _, t_base = timed(baseline)

    def difficulty():
        alloc, levels = {}, {}
        for scenario, ms in maps.items():
            scores = map_difficulty_score(ms, scenario)
            lv = tercile_levels(scores)
            split = train_test_split(scores, args.seed)
            cities = [(m.name, lv[i], split[i], len(m.stations)) for i, m in enumerate(ms)]
            alloc.update(allocate_queries(cities, PAPER_TOTALS[scenario]))
            levels.update({m.name: lv[i] for i, m in enumerate(ms)})
        return alloc, levels

    (alloc, levels), t_diff = timed(difficulty)
    total_pairs = sum(alloc.values())
    step = max(1, round(1 / args.fraction)) if args.fraction < 1 else 1
    chosen = all_maps[::step]

    rp_jobs = [RPJob(m, tuple(CATEGORIES), alloc[m.name], i, levels[m.name]) for i, m in enumerate(chosen)]

    def digest(per_map) -> str:
        # map by map: one JSON text of every query at once would be the run's largest object
        h = hashlib.sha256()
        for qs in per_map:
            h.update(json.dumps([dataclasses.asdict(q) for q in qs], sort_keys=True).encode() + b"\n")
        return h.hexdigest()

    per_map, t_rp = timed(lambda: build_rp_queries_parallel(rp_jobs, workers, min_queries=0), "rp")
    n_rp = sum(len(qs) for qs in per_map)
    rp_digest = digest(per_map)
    del per_map
    serial = None
    if not args.no_serial_check:
        serial_out, t_serial = timed(
            lambda: [
                build_rp_queries(j.map, CATEGORIES, j.n_per_category, seed=j.seed, map_difficulty=j.map_difficulty)
                for j in rp_jobs
            ],
            "rp_serial",
        )
        serial = (t_serial, digest(serial_out))
        del serial_out
    full_rp = total_pairs * len(CATEGORIES)
    t_rp_full = t_rp * full_rp / max(1, n_rp)

    def qa():
        return sum(
            len(build_qa_queries(m, QA_TYPES, 1, seed=i, map_difficulty=levels[m.name])) for i, m in enumerate(all_maps)
        )

    n_qa, t_qa = timed(qa)

    big = generate_metro_map(
        args.seed + 99, n_lines=8, stations_per_line=(10, 16), width=4140, height=3744, name="paper_size"
    )
    _, t_render = timed(lambda: render_map(big))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    total = t_maps + t_diff + t_rp_full + t_qa
    print(
        f"maps: {len(maps['metromap'])} metro + {len(maps['travelmap'])} travel; pairs allocated {total_pairs} "
        f"-> {full_rp} RP queries; QA queries {n_qa}"
    )
    print(f"workers: {workers} process(es)")
    print(f"baseline (networkx all-pairs BFS on every map): {t_base:.2f} s")
    rows = [
        ("maps + quality checks", t_maps, ""),
        ("difficulty + split + Algorithm 1", t_diff, ""),
        (f"RP queries measured ({n_rp} on {len(chosen)} maps)", t_rp, ""),
        (f"RP queries, all {full_rp} (extrapolated by queries)", t_rp_full, "extrapolated" if step > 1 else ""),
        (f"QA queries ({n_qa})", t_qa, ""),
        (
            "generation total (maps + difficulty + RP + QA)",
            total,
            f"target <= 60 s (issue 12): {total / 60:.2f} x target",
        ),
        (f"render one {big.width}x{big.height} Metromap", t_render, "target <= 2 s"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:9.2f} s  {seconds / t_base:8.1f} x baseline  {note}")
    # on a shared machine the wall time is capped by the cores other work leaves free: CPU seconds
    # / wall seconds is how many cores the RP part actually got, and CPU seconds / workers is its
    # wall time on that many idle cores
    print(
        f"RP part: {CPU['rp']:.1f} CPU s in {t_rp:.1f} wall s = {CPU['rp'] / t_rp:.2f} cores obtained of {workers}; "
        f"on {workers} idle cores: ~{CPU['rp'] / workers:.1f} s"
    )
    if serial is not None:
        t_serial, serial_digest = serial
        print(
            f"RP on one core (same {len(chosen)} maps): {t_serial:.2f} s; parallel / one core = "
            f"{t_rp / t_serial:.2f} (speedup {t_serial / t_rp:.2f} x on {workers} workers)"
        )
        print(
            f"  cores obtained (CPU s / wall s): parallel {CPU['rp'] / t_rp:.2f}, one core "
            f"{CPU['rp_serial'] / t_serial:.2f}; CPU s parallel {CPU['rp']:.1f} vs one core {CPU['rp_serial']:.1f}"
        )
        print(
            f"RP output sha256 parallel {rp_digest[:16]} one-core {serial_digest[:16]}: "
            + ("IDENTICAL" if rp_digest == serial_digest else "DIFFERENT")
        )
    # a worker's pages are mostly the parent's (fork), so parent + workers x largest child bounds it
    bound = rss_mb + workers * child_mb
    print(
        f"peak RSS: main {rss_mb:.0f} MB, largest worker {child_mb:.0f} MB, bound main + {workers} workers "
        f"{bound:.0f} MB (target <= 2048 MB: {bound / 2048:.2f} x target)"
    )
    if serial is not None and serial[1] != rp_digest:
        raise SystemExit("parallel RP output differs from the one-core output")


if __name__ == "__main__":
    main()
