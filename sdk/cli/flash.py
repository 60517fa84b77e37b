"""`sdk flash --board B fw.elf`: put the firmware on a board (board.yaml `flash:`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdk.cli.farm_args import add_farm_arguments, farm_options


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
    p.add_argument(
        "--target", choices=("labgrid",),
        help="labgrid: acquire --place, flash its board, power-cycle it, release it",
    )  # fmt: skip
    add_farm_arguments(p, flash=False)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.errors import UsageError
    from sdk.firmware.boards import load_board
    from sdk.targets.base import RunOptions
    from sdk.targets.drivers import BoardFlash
    from sdk.targets.resources import FlashMethods
    from sdk.targets.run import make_target

    board = load_board(args.board)
    if not args.firmware.is_file():
        raise UsageError(f"{args.firmware}: firmware file not found")
    if args.target is None and (args.place or args.coordinator):
        raise UsageError("--place/--coordinator name a farm's board: add --target labgrid")
    if args.target is not None:
        options = RunOptions(**farm_options(args))
        target = make_target(args.target, board, options)
        result = target.strategy.flash_firmware(args.firmware, options, args.method)
    else:
        flash = BoardFlash(FlashMethods(tuple(board.flash), args.drive, args.probe), board.name)
        result = flash.flash(args.firmware, args.method)
    print(f"flashed {args.firmware} ({result.method}): {result.detail}")
    return 0
