"""`sdk build --board corstone300 PROGRAM.pte -o fw.elf`: the executor_runner firmware."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdk.firmware.boards import EXIT_METHODS


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "build",
        help="build the executor_runner firmware for a program",
        description="Generate the kernel registrations PROGRAM.pte needs and build the "
        "executor_runner ELF for the board with SCons and arm-none-eabi-gcc. With --embed the "
        "program is linked into the image; otherwise it is preloaded at run time, so one "
        "firmware serves every program with the same kernels.",
    )
    p.add_argument("program", type=Path)
    p.add_argument("--board", default="corstone300")
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
    from sdk.firmware.build import build_firmware

    elf = build_firmware(args.board, args.program, args.output, embed=args.embed, exit=args.exit)
    print(f"built {elf}")
    return 0
