"""`geoeval data`: the authors' public data in a local cache, verified (see `geoeval.core.data.fetch`).

    geoeval data list                              # names, sizes, cached or not, what reads them
    geoeval data fetch maptab-sample               # download + verify into the cache
    geoeval data fetch mapsatisfy-demo --cache /data/geoeval
    geoeval data fetch maptab-sample --url-base http://mirror.example/maptab-sample/
    geoeval data path maptab-sample                # the folder, e.g. for env.root=$(...)

Exit status: 0 done, 1 a download failed or did not verify (the message names the file; run the
same command again to resume), 2 a usage mistake (an unknown dataset name).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.analysis.reports import markdown_table
from geoeval.core.data.catalogue import DATASETS, get_dataset
from geoeval.core.data.fetch import FetchError, cache_state, dataset_dir, fetch, format_size
from geoeval.core.errors import GeoevalError


def _add_cache(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder holding every dataset (default: $GEOEVAL_DATA_DIR, else ~/.cache/geoeval/data)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="geoeval data",
        description="Fetch the benchmark authors' public data into a verified local cache.",
        epilog=examples("data"),
        formatter_class=HelpWithExamples,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,fetch,path}")
    listing = commands.add_parser(
        "list",
        help="the datasets, their sizes, and whether they are cached",
        epilog=examples("data list"),
        formatter_class=HelpWithExamples,
    )
    _add_cache(listing)
    getting = commands.add_parser(
        "fetch",
        help="download a dataset and verify every file",
        epilog=examples("data fetch"),
        formatter_class=HelpWithExamples,
    )
    getting.add_argument("name", help=f"one of {', '.join(DATASETS)}")
    _add_cache(getting)
    getting.add_argument(
        "--url-base",
        default=None,
        metavar="URL",
        help="fetch every file from URL/<path in the cache> (a mirror); for maptab-full a Hub endpoint",
    )
    where = commands.add_parser(
        "path",
        help="print the dataset's folder in the cache",
        epilog=examples("data path"),
        formatter_class=HelpWithExamples,
    )
    where.add_argument("name", help=f"one of {', '.join(DATASETS)}")
    _add_cache(where)
    return parser


def list_rows(cache: Path | None) -> list[dict[str, str]]:
    rows = []
    for dataset in DATASETS.values():
        state = cache_state(dataset.name, cache)
        size = dataset.size if dataset.size is not None else state.size
        files = len(dataset.files) if dataset.hub is None else state.total
        rows.append(
            {
                "name": dataset.name,
                "files": "?" if files is None else str(files),
                "size": format_size(size),
                "state": state.label,
                "used by": dataset.env,
                "source": dataset.source,
            }
        )
    return rows


def _fetch(args: argparse.Namespace) -> int:
    dataset = get_dataset(args.name)
    print(
        f"fetching {dataset.name} from {args.url_base or dataset.source} into {dataset_dir(dataset.name, args.cache)}",
        file=sys.stderr,
    )
    summary = fetch(dataset.name, args.cache, args.url_base, progress=lambda line: print(f"  {line}", file=sys.stderr))
    print(
        f"{summary.name}: {len(summary.downloaded)} downloaded, {summary.already} already verified, "
        f"{format_size(summary.total_bytes)} in {summary.folder}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `geoeval data`; returns the exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed its usage line
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        if args.command == "list":
            print(markdown_table(list_rows(args.cache)))
            return 0
        if args.command == "path":
            print(dataset_dir(args.name, args.cache))
            return 0
        return _fetch(args)
    except FetchError as error:
        print(f"geoeval: error: {error}", file=sys.stderr)
        return 1
    except GeoevalError as error:
        print(f"geoeval: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the cache folder cannot be written, the disk is full, ...
        print(f"geoeval: error: {error.filename or 'the data cache'}: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
