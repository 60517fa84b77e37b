"""`sdk inspect PROGRAM.pte [--json]`: what a program holds, and the NPU boundary audit."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="describe a .pte and audit its NPU boundaries",
        description="Read PROGRAM.pte with ExecuTorch's deserializer: inputs/outputs, CPU "
        "operators, each delegate's Vela payload and boundary records next to the program's "
        "tensors. Exits 3 when a delegate boundary tensor disagrees with the NPU's record.",
    )
    p.add_argument("program", type=Path, help="the .pte file")
    p.add_argument("--json", action="store_true", help="print JSON (fields: see README)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.program.inspect import inspect_program, render_text
    from sdk.program.pte import load_program

    report = inspect_program(load_program(args.program))
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    audit = report["boundary_audit"]
    if not audit["ok"]:
        for problem in audit["problems"]:
            print(f"error: boundary audit: {problem}", file=sys.stderr)
        return 3
    return 0
