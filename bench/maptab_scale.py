"""MapTab paper-scale generation, measured in parts (run by hand, not in CI):

    .venv/bin/python bench/maptab_scale.py [--fraction 0.1] [--metro 160] [--travel 168]

The paper's benchmark: 328 maps (160 Metromaps, 168 Travelmaps), 16,400 origin-destination pairs
(Algorithm 1: 8,000 Metromap, 8,400 Travelmap) x 12 categories = 196,800 RP queries with their
references (every optimal route) and difficulty, and 3,936 QA queries (12 per map), no rendering.
Issue 3's targets: <= 5 minutes on 2 cores, peak RSS <= 2 GB; one paper-size (4140 x 3744)
Metromap rendered in <= 2 s.

Parts, each timed on its own:
1. maps: generating every map (seeded) and running the B.5/B.6 quality checks;
2. difficulty: GS, WASP, MC, the 1:1:1 levels, the 2:1 split and Algorithm 1's allocation;
3. RP: `build_rp_queries` on a `--fraction` of the maps (spread over the allocation order) with
   each map's allocated number of pairs, all 12 categories; the full-scale time is extrapolated by
   queries (printed as such; `--fraction 1` measures it all);
4. QA: `build_qa_queries`, 12 types x 1 question on every map;
5. render: one paper-size Metromap.

Baseline, measured in the same run on the same maps: networkx all-pairs shortest-path lengths
(the least any generator must do to pick pairs and SPLI). Every part is also printed as a ratio to
it, which makes runs on different machines comparable.
"""

from __future__ import annotations

import argparse
import resource
import time

import networkx as nx


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--metro", type=int, default=160)
    ap.add_argument("--travel", type=int, default=168)
    ap.add_argument("--fraction", type=float, default=0.1, help="share of maps whose RP queries are built")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from geoeval.suites.maptab.difficulty import (
        PAPER_TOTALS, allocate_queries, map_difficulty_score, tercile_levels, to_graph, train_test_split)
    from geoeval.suites.maptab.generator import generate_metro_map, generate_travel_map, run_quality_checks
    from geoeval.suites.maptab.qa import QA_TYPES, build_qa_queries
    from geoeval.suites.maptab.queries import CATEGORIES, build_rp_queries
    from geoeval.suites.maptab.render import render_map

    def make_maps():
        maps = {"metromap": [], "travelmap": []}
        for i in range(args.metro):
            # paper Metromaps are larger than the suite's 3-line default
            maps["metromap"].append(generate_metro_map(args.seed * 10000 + i, n_lines=4, stations_per_line=(6, 10),
                                                       width=2400, height=2000, name=f"metro{i:03d}"))
        for i in range(args.travel):
            maps["travelmap"].append(generate_travel_map(args.seed * 10000 + 5000 + i, name=f"travel{i:03d}"))
        bad = [(m.name, p) for ms in maps.values() for m in ms for p in run_quality_checks(m)]
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

    def rp():
        n = 0
        for i, m in enumerate(chosen):
            n += len(build_rp_queries(m, CATEGORIES, alloc[m.name], seed=i, map_difficulty=levels[m.name]))
        return n

    n_rp, t_rp = timed(rp)
    full_rp = total_pairs * len(CATEGORIES)
    t_rp_full = t_rp * full_rp / max(1, n_rp)

    def qa():
        return sum(len(build_qa_queries(m, QA_TYPES, 1, seed=i, map_difficulty=levels[m.name]))
                   for i, m in enumerate(all_maps))

    n_qa, t_qa = timed(qa)

    big = generate_metro_map(args.seed + 99, n_lines=8, stations_per_line=(10, 16), width=4140, height=3744,
                             name="paper_size")
    _, t_render = timed(lambda: render_map(big))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    total = t_maps + t_diff + t_rp_full + t_qa
    print(f"maps: {len(maps['metromap'])} metro + {len(maps['travelmap'])} travel; pairs allocated {total_pairs} "
          f"-> {full_rp} RP queries; QA queries {n_qa}")
    print(f"baseline (networkx all-pairs BFS on every map): {t_base:.2f} s")
    rows = [
        ("maps + quality checks", t_maps, ""),
        ("difficulty + split + Algorithm 1", t_diff, ""),
        (f"RP queries measured ({n_rp} on {len(chosen)} maps)", t_rp, ""),
        (f"RP queries, all {full_rp} (extrapolated by queries)", t_rp_full, "extrapolated" if step > 1 else ""),
        (f"QA queries ({n_qa})", t_qa, ""),
        ("generation total (maps + difficulty + RP + QA)", total, "target <= 300 s"),
        (f"render one {big.width}x{big.height} Metromap", t_render, "target <= 2 s"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:9.2f} s  {seconds / t_base:8.1f} x baseline  {note}")
    print(f"peak RSS: {rss_mb:.0f} MB (target <= 2048 MB)")


if __name__ == "__main__":
    main()
