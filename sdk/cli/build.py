"""`sdk build --board corstone300 PROGRAM.pte -o fw.elf`: the executor_runner firmware."""

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
    elf = build_firmware(args.board, args.program, args.output, embed=args.embed, exit=args.exit)
    print(f"built {elf}")
    return 0
