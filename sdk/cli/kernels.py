"""`sdk kernels PROGRAM.pte [-o DIR]`: the CPU kernels a program needs, and their registrations."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "kernels",
        help="list/generate the CPU kernel registrations a program needs",
        description="Read the program's operator table and select exactly the kernels (and "
        "dtypes) it uses from kernels/kernels.yaml. With -o, write kernel_registry.cpp, "
        "kernel_select.h and kernel_manifest.json there. Fails, naming the operator, when a "
        "kernel is missing.",
    )
    p.add_argument("program", type=Path)
    p.add_argument("-o", "--outdir", type=Path, help="write the generated files here")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.firmware.kernelgen import (
        load_kernel_specs,
        program_kernel_uses,
        select_kernels,
        write_registrations,
    )
    from sdk.program.pte import load_program

    selected = select_kernels(program_kernel_uses(load_program(args.program)), load_kernel_specs())
    for kernel in selected:
        print(f"{kernel.spec.op:55} {kernel.spec.source:32} {','.join(sorted(kernel.dtypes))}")
    if args.outdir:
        write_registrations(selected, args.outdir)
        print(f"wrote registrations for {len(selected)} kernel(s) to {args.outdir}")
    return 0
