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
        "tensors. Exits 3 when a delegate boundary tensor disagrees with the NPU's record, or "
        "when an NPU operation's output overlaps itself or a batched MatMul reads batch 0's "
        "operand for every batch (Vela miscompilations).",
    )
    p.add_argument("program", type=Path, help="the .pte file")
    p.add_argument("--json", action="store_true", help="print JSON (fields: see README)")
    p.add_argument(
        "--npu-commands",
        action="store_true",
        help="also decode each Ethos-U delegate's command stream and list it (disassembly); "
        "exits 1 when a stream is malformed",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.program.audit import audit_program
    from sdk.program.inspect import decode_npu_commands, inspect_program, render_text
    from sdk.program.pte import load_program

    program = load_program(args.program)
    audit = audit_program(program)
    npu_commands = decode_npu_commands(audit.delegates) if args.npu_commands else None
    report = inspect_program(program, audit, npu_commands)
    print(json.dumps(report, indent=2) if args.json else render_text(report, npu_commands))
    refused = [
        f"error: delegate {index}: {decoded}"
        for index, decoded in (npu_commands or {}).items()
        if isinstance(decoded, Exception)
    ]
    for line in refused:
        print(line, file=sys.stderr)
    audit_json = report["boundary_audit"]
    for problem in audit_json["problems"]:
        print(f"error: boundary audit: {problem}", file=sys.stderr)
    for overlap in report["npu_output_overlaps"] or []:
        print(f"error: {overlap}: the device's result is not the model's", file=sys.stderr)
    for stuck in report["npu_stuck_matmul_operands"] or []:
        print(f"error: {stuck}: the device's result is not the model's", file=sys.stderr)
    if not audit_json["ok"] or report["npu_output_overlaps"] or report["npu_stuck_matmul_operands"]:
        return 3
    return 1 if refused else 0
