"""`sdk cache info|clean`: what the deploy cache holds, and emptying it."""

from __future__ import annotations

import argparse

from sdk.deploy.keys import CACHE_KINDS


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cache",
        help="show or clean the cache of exported programs, built firmware and host references",
        description="The cache lives in $SDK_CACHE_DIR, else $XDG_CACHE_HOME/sdk, else "
        "~/.cache/sdk. Entries are written whole (an interrupted write leaves none).",
    )
    sub = p.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    info = sub.add_parser("info", help="where the cache is, its entries and size")
    info.set_defaults(handler=run_info)
    clean = sub.add_parser("clean", help="remove every entry (or those of one kind)")
    clean.add_argument("--kind", choices=CACHE_KINDS, help="only this kind")
    clean.set_defaults(handler=run_clean)


def run_info(args: argparse.Namespace) -> int:
    from sdk.cache import Cache

    info = Cache().info()
    print(f"cache {info.root}: {info.bytes} bytes")
    for kind in info.kinds:
        partial = f", {kind.partial} interrupted write(s)" if kind.partial else ""
        print(f"  {kind.kind}: {kind.entries} entr{'y' if kind.entries == 1 else 'ies'}, "
              f"{kind.bytes} bytes{partial}")  # fmt: skip
    if not info.kinds:
        print("  empty")
    return 0


def run_clean(args: argparse.Namespace) -> int:
    from sdk.cache import Cache

    cache = Cache()
    freed = cache.clean(args.kind)
    print(f"cache {cache.root}: removed {args.kind or 'every'} entries, {freed} bytes freed")
    return 0
