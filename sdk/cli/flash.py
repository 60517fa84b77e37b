"""`sdk flash --board B fw.elf`: put the firmware on a board (board.yaml `flash:`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    from sdk.firmware.boards import DEFAULT_BOARD

    p = subparsers.add_parser(
        "flash",
        help="put a firmware ELF on a board",
        description="Flash FIRMWARE.elf (from `sdk build`) with the board's flash method: "
        "the MPS3's USB configuration drive (mps3-usb) or a debug probe through pyOCD "
        "(pyocd). Afterwards `sdk run --target serial --port URL` drives it.",
    )
    p.add_argument("firmware", type=Path)
    p.add_argument("--board", default=DEFAULT_BOARD)
    p.add_argument("--method", help="a flash method of the board (default: its first)")
    p.add_argument("--drive", type=Path, help="mps3-usb: the mounted drive's folder")
    p.add_argument("--probe", help="pyocd: the probe's unique id (--uid)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.firmware.boards import load_board
    from sdk.targets.drivers import BoardFlash
    from sdk.targets.resources import FlashMethods

    board = load_board(args.board)
    flash = BoardFlash(FlashMethods(tuple(board.flash), args.drive, args.probe), board.name)
    result = flash.flash(args.firmware, args.method)
    print(f"flashed {args.firmware} ({result.method}): {result.detail}")
    return 0
