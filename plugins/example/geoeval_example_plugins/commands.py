"""The suite's own command: `geoeval station_lines lines [--seed S] [--map I]` prints the stations
of each line of one generated map, the facts the questions ask about (the suite declares it in
`StationLinesSuite.commands`; this module is imported only when the command runs)."""

from __future__ import annotations

import argparse
import csv
import io
import sys

from geoeval.suites.maptab.api import edge_table, format_table, generate_metro_map


def lines(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="geoeval station_lines lines", description="The stations of each line of a generated map."
    )
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (`seed=`)")
    parser.add_argument("--map", type=int, default=0, help="which of the run's maps (0 .. env.n_maps - 1)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return int(exc.code or 0)
    if args.map < 0:
        print(f"error: --map must be 0 or more, got {args.map}", file=sys.stderr)
        return 2
    # the map `build_env` generates for this seed and index, read back from its Edge table
    m = generate_metro_map(args.seed * 100 + args.map, n_lines=3, name=f"lines{args.map}")
    stations: dict[str, set[str]] = {}
    for row in csv.DictReader(io.StringIO(format_table(edge_table(m, ["Edge", "Line"]), "csv").lstrip("\ufeff"))):
        for line in (x.strip() for x in row["Line"].split(",")):
            stations.setdefault(line, set()).update(s.strip() for s in row["Edge"].split("-"))
    for line in sorted(stations):
        print(f"{line}: {', '.join(sorted(stations[line]))}")
    return 0
