"""LifePlanner tool latency at paper scale (run by hand, not in CI):

    .venv/bin/python bench/lifeplanner_tools.py [--places 3600] [--notes 40000] [--calls 200] [--db city.duckdb]

Builds (or opens) a city, then times every standard and data-engine tool over `--calls` varied,
seeded calls, and prints p50/p95 per tool in ms with the ratio of its p50 to two raw DuckDB
queries measured in the same run on the same connection: a point lookup of a place by id
(`SELECT * FROM places WHERE id = ?`) and a full-text scan of the notes
(`SELECT count(*) FROM notes WHERE contains(search_text, ?)`). The ratios say what the tools add
on top of the database and stay comparable across machines; the absolute times do not.
Also prints the build and open times and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    for i in range(min(3, n)):  # warm DuckDB's caches and the route cache's first entries: not measured
        fn(i)
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1] if len(xs) > 1 else xs[0]


def main(argv: list[str] | None = None) -> int:
    from geoeval.suites.lifeplanner.city.environment import build_synthetic_city
    from geoeval.suites.lifeplanner.tools import city as city_handle
    from geoeval.suites.lifeplanner.tools import nearby as nearby_tools
    from geoeval.suites.lifeplanner.tools import notes as note_tools
    from geoeval.suites.lifeplanner.tools import places as place_tools
    from geoeval.suites.lifeplanner.tools import routing as routing_tools

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--places", type=int, default=3600)
    ap.add_argument("--notes", type=int, default=40_000)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--db", default=None, help="an existing city database (skips the build)")
    args = ap.parse_args(argv)

    tmp = tempfile.TemporaryDirectory()
    db = Path(args.db) if args.db else Path(tmp.name) / "city.duckdb"
    if not args.db:
        t = time.perf_counter()
        build_synthetic_city(db, seed=args.seed, n_places=args.places, n_notes=args.notes)
        print(f"build: {time.perf_counter() - t:.1f} s ({args.places} places, {args.notes} notes)")
    t = time.perf_counter()
    city = city_handle.open_city(db)
    print(f"open_city: {time.perf_counter() - t:.2f} s")

    con = city.cursor()
    rng = random.Random(args.seed)
    ids = [r[0] for r in con.execute("SELECT id FROM places ORDER BY id").fetchall()]
    names = [r[0] for r in con.execute("SELECT name FROM places ORDER BY id").fetchall()]
    note_ids = [r[0] for r in con.execute("SELECT note_id FROM notes ORDER BY note_id").fetchall()]
    words = sorted({w.lower() for n in names for w in n.split() if len(w) > 3})
    n = args.calls
    # one seeded draw per call, the same for every run with the same seed
    pid = [rng.choice(ids) for _ in range(n)]
    pid2 = [rng.choice(ids) for _ in range(n)]
    word = [rng.choice(words) for _ in range(n)]
    nid = [rng.choice(note_ids) for _ in range(n)]
    stops = [rng.sample(ids, 6) for _ in range(max(1, n // 10))]

    baselines = {
        "raw point lookup": timed(lambda i: con.execute("SELECT * FROM places WHERE id = ?", [pid[i]]).fetchall(), n),
        "raw notes scan": timed(
            lambda i: con.execute("SELECT count(*) FROM notes WHERE contains(search_text, ?)", [word[i]]).fetchall(), n
        ),
    }
    cases: dict[str, Callable[[int], object]] = {
        "place_search": lambda i: place_tools.place_search(city, word[i]),
        "place_detail": lambda i: place_tools.place_detail(city, pid[i]),
        "nearby_search (place, 500 m)": lambda i: nearby_tools.nearby_search(city, pid[i], 500),
        "nearby_search (route buffer)": lambda i: nearby_tools.nearby_search(
            city, {"start": pid[i], "end": pid2[i], "vehicle": "walking"}, 100
        ),
        "routing": lambda i: routing_tools.routing(city, pid[i], pid2[i]),
        "search_notes": lambda i: note_tools.search_notes(city, word[i]),
        "search_notes (AND/NOT)": lambda i: note_tools.search_notes(city, f"{word[i]} AND NOT {word[-i - 1]}"),
        "note_detail": lambda i: note_tools.note_detail(city, nid[i]),
        "place_search (data engine)": lambda i: place_tools.place_search(
            city, "", social_mem=["quiet"], toolset="data_engine"
        ),
        "search_notes (data engine)": lambda i: note_tools.search_notes(city, word[i], toolset="data_engine"),
    }
    results = {name: timed(fn, n) for name, fn in cases.items()}
    results["multi_stop_routing (6 stops)"] = timed(
        lambda i: routing_tools.multi_stop_routing(city, stops[i], start_id=stops[i][0], end_id=stops[i][-1]),
        len(stops),
    )

    base = {k: statistics.median(v) for k, v in baselines.items()}
    print(f"\n{'call':34} {'p50 ms':>8} {'p95 ms':>8} {'x lookup':>9} {'x scan':>8}")
    for name, xs in [*baselines.items(), *results.items()]:
        p50 = statistics.median(xs)
        print(
            f"{name:34} {p50:8.2f} {pct(xs, 95):8.2f} {p50 / base['raw point lookup']:9.1f} "
            f"{p50 / base['raw notes scan']:8.2f}"
        )
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"\npeak RSS: {rss_kb / 1024:.0f} MiB")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
