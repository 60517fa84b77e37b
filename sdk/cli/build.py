"""`sdk build --board corstone300 PROGRAM.pte -o fw.elf`: the executor_runner firmware, and
what it takes of each of the board's memory regions (sdk.firmware.memory)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdk.firmware.boards import DEFAULT_BOARD, EXIT_METHODS


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "build",
        help="build the executor_runner firmware for a program",
        description="Generate the kernel registrations PROGRAM.pte needs and build the "
        "executor_runner ELF for the board with SCons and arm-none-eabi-gcc. The firmware serves "
        "the host link (docs/link.md): flash it once, then load and run programs over the "
        "serial port. Without PROGRAM it has every kernel (any program); with --embed the "
        "program is linked into the image and loaded at boot.",
    )
    p.add_argument("program", type=Path, nargs="?", help="the program (default: every kernel)")
    p.add_argument("--board", default=DEFAULT_BOARD)
    p.add_argument("-o", "--output", type=Path, required=True, help="where to write the ELF")
    p.add_argument("--embed", action="store_true", help="link the program into the image")
    p.add_argument(
        "--exit",
        choices=EXIT_METHODS,
        help="how the firmware ends a run: semihosting (QEMU, FVP) or park (a board without a "
        "debugger: a wfi loop, the record alone tells the result); default: the board's "
        "runtime.exit",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.errors import UsageError
    from sdk.firmware.build import build_firmware

    if args.embed and args.program is None:
        raise UsageError("--embed needs a PROGRAM to embed")
    from sdk.firmware.boards import load_board
    from sdk.firmware.memory import check_fits, elf_region_use
    from sdk.utils.units import human_bytes

    elf = build_firmware(args.board, args.program, args.output, embed=args.embed, exit=args.exit)
    board = load_board(args.board)
    uses = elf_region_use(elf, board)
    print(f"built {elf} for {board.name}")
    for use in uses:
        if use.used:
            share = 100 * use.used / use.size
            print(f"  {use.region:8} {human_bytes(use.used):>11} of {human_bytes(use.size):>8}"
                  f" ({share:.1f}%)  {use.detail}")  # fmt: skip
    check_fits(uses, board)  # a region overflowing the board: one error line naming it
    return 0
