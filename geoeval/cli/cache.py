"""`geoeval cache`: where the computation cache is, what it holds, and clearing it.

    geoeval cache path                 # the cache folder ($GEOEVAL_CACHE_DIR, else ~/.cache/geoeval/cache)
    geoeval cache info                 # entries and size per namespace and code version
    geoeval cache clear [--namespace maptab-perception]

`--dir DIR` works with each (instead of $GEOEVAL_CACHE_DIR). The cache holds what offline agents
compute deterministically from an input (MapTab's perception baseline: its reading of each map
image), keyed by the input's content and the code's version (`geoeval/core/cache/disk.py`).
`GEOEVAL_NO_CACHE=1` turns it off for a run.
"""

from __future__ import annotations

import argparse
import sys

from geoeval.cli.help import HelpWithExamples, examples
from geoeval.core.cache import disk as diskcache


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="geoeval cache",
        description="The computation cache of offline agents.",
        epilog=examples("cache"),
        formatter_class=HelpWithExamples,
    )
    sub = ap.add_subparsers(dest="command", required=True)
    for name, text in (
        ("path", "print the cache folder"),
        ("info", "entries and size per namespace and version"),
        ("clear", "remove every entry (or one namespace's)"),
    ):
        p = sub.add_parser(name, help=text, epilog=examples(f"cache {name}"), formatter_class=HelpWithExamples)
        p.add_argument(
            "--dir", default=None, help="the cache folder (default: $GEOEVAL_CACHE_DIR, else ~/.cache/geoeval/cache)"
        )
        if name == "clear":
            p.add_argument("--namespace", default=None, help="only this namespace (e.g. maptab-perception)")
    return ap


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse's own exit (bad usage: 2, --help: 0)
        return int(exc.code or 0)
    home = diskcache.cache_home(args.dir)
    if args.command == "path":
        print(home)
        return 0
    if args.command == "info":
        state = "on" if diskcache.cache_enabled() else f"off ({diskcache.NO_CACHE_ENV} is set)"
        print(f"cache: {home} ({state})")
        rows = diskcache.usage(args.dir)
        if not rows:
            print("  empty")
        for r in rows:
            print(f"  {r.namespace}/{r.version}: {r.entries} entries, {_size(r.bytes)}")
        return 0
    try:
        removed = diskcache.clear(args.dir, args.namespace)
    except ValueError as exc:
        print(f"geoeval: error: {exc}", file=sys.stderr)
        return 2
    print(f"removed {removed} entr{'y' if removed == 1 else 'ies'} from {home}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
