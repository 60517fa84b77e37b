"""`sdk export MODEL -o OUTDIR`: quantize, partition for the NPU, compile with Vela, write .pte."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdk.cli.quant_args import (
    add_calibration_argument,
    add_input_layout_argument,
    add_io_argument,
    add_quant_arguments,
    quant_options,
)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="export a PyTorch model to an Ethos-U .pte",
        description="Quantize MODEL, partition it for the Ethos-U NPU (keeping every NPU "
        "boundary tensor an integer), compile with Vela and write OUTDIR/model.pte, "
        "OUTDIR/report.json, OUTDIR/tosa/delegate_<i>.tosa and OUTDIR/example_inputs.npz.",
    )
    p.add_argument("model", help="FILE.py (defining model() and example_inputs()) or FILE.py:Name")
    p.add_argument("-o", "--outdir", required=True, type=Path, help="output folder")
    p.add_argument(
        "--npu", default="ethos-u55-128", help="NPU configuration (default ethos-u55-128)"
    )
    # `--target` is where a program runs (sdk run, sdk deploy); said so rather than guessed.
    p.add_argument("--target", help=argparse.SUPPRESS)
    p.add_argument("--quant", default="int8", help="int8 (default) or int16 (a16w8)")
    add_quant_arguments(p)
    add_io_argument(p)
    add_input_layout_argument(p)
    p.add_argument(
        "--cpu-op",
        action="append",
        default=[],
        metavar="OP",
        help="keep this operator on the CPU (e.g. aten.bmm); repeatable",
    )
    add_calibration_argument(p)
    p.add_argument(
        "--vela-arg", action="append", default=[], metavar="ARG", help="extra Vela flag; repeatable"
    )
    p.add_argument(
        "--npu-memory", metavar="MODE",
        help="compile for this NPU memory mode of --board (board.yaml npu_memories, e.g. "
        "Sram_Only) or executorch (ExecuTorch's default Vela configuration); default: the "
        "board's default",
    )  # fmt: skip
    p.add_argument(
        "--board", help="the board whose npu_memories --npu-memory names (default: the SDK's)"
    )
    p.add_argument(
        "--stock-partitioner",
        action="store_true",
        help="use ExecuTorch's partitioner unchanged (reproduces its INT-boundary bug)",
    )
    p.add_argument(
        "--etrecord",
        action="store_true",
        help="also write etrecord.bin (ExecuTorch's ETRecord: Inspector names the operators of "
        "an ETDump with it; sdk deploy writes one with every program)",
    )
    p.add_argument(
        "--bundle",
        action="store_true",
        help="also write model.bpte (ExecuTorch's BundledProgram): the program with the example "
        "inputs and the host reference's outputs on them, for `sdk run model.bpte`",
    )
    p.add_argument("--quiet", action="store_true", help="no progress (shown on a terminal)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.errors import UsageError
    from sdk.export import CPU_ONLY
    from sdk.export.pipeline import export_model
    from sdk.utils.progress import Steps

    if args.target is not None:
        raise UsageError(
            f"--target {args.target}: the NPU configuration is --npu (e.g. --npu "
            f"{args.target}); --target names where a program runs (sdk run, sdk deploy)"
        )
    options = quant_options(args)
    memory = _vela_memory(args.board, args.npu_memory)
    steps = Steps(show=not args.quiet and sys.stderr.isatty())
    with steps.step("export", "export + quantize + Vela") as step:
        result = export_model(
            args.model,
            args.outdir,
            npu=args.npu,
            quant=args.quant,
            cpu_ops=args.cpu_op,
            calibration=args.calibration,
            vela_args=args.vela_arg,
            fix_boundaries=not args.stock_partitioner,
            quant_options=options,
            etrecord=args.etrecord,
            io=args.io,
            memories=memory.spec,
            input_layout=args.input_layout,
            progress=step.progress,
        )
    report = result.report
    audit = report["boundary_audit"]
    total = report["vela_estimate_total"]
    print(f"wrote {result.program_path} ({report['program']['bytes']} bytes)")
    print(
        f"  {len(report['delegates'])} NPU delegate(s), CPU operators: "
        + (", ".join(report["program"]["cpu_operators"]) or "none")
    )
    missing = _firmware_cannot_run(result.program_path)
    if missing:
        print(f"  WARNING: {missing} (`sdk run --target host` runs it; `sdk build` refuses it)")
    calibration = report["quantization"]["calibration"]
    print(f"  calibration: {calibration['samples']} sample(s) from {calibration['source']}")
    print(f"  boundary fixes: {len(report['boundary_fixes'])} node(s) taken out of partitions")
    if report["io"]["input_layout"] != "as-model":
        print(f"  4-D inputs {report['io']['input_layout']}: the program takes them NHWC")
    for side in ("inputs", "outputs"):
        for entry in report["io"][side]:
            if entry is not None:
                print(
                    f"  integer {side[:-1]} {entry['index']}: {entry['dtype']}, scale "
                    f"{entry['scale']:.9g}, zero-point {entry['zero_point']}"
                )
    for workaround in report["vela_workarounds"]:
        print(f"  Vela workaround: {workaround['cpu_op']} on the CPU: {workaround['why']}")
    for workaround in report["lowering_workarounds"]:
        print(f"  lowering workaround: {workaround['cpu_op']} on the CPU: {workaround['why']}")
    for overlap in report["npu_output_overlaps"]:
        print(f"  WARNING: {overlap}: the device's result is not the model's")
    if report["cpu_only"]:
        print(f"  {CPU_ONLY}")
    else:
        print(
            f"  Vela estimate: {total['total_cycles']} NPU cycles, "
            f"{total['sram_used_kib_max']} KiB SRAM, {total['flash_used_kib']} KiB flash "
            "(an estimate, not a measurement)"
        )
    print(
        "  boundary audit: " + ("ok" if audit["ok"] else "FAILED: " + "; ".join(audit["problems"]))
    )
    print(f"  report: {result.report_path}")
    bundle = result.program_path.with_suffix(".bpte")
    if args.bundle:
        print(f"  bundled program: {write_example_bundle(result.program_path)}")
    else:
        bundle.unlink(missing_ok=True)  # an earlier export's: it no longer matches the program
    return 0 if audit["ok"] else 3


def write_example_bundle(program: Path) -> Path:
    """model.bpte beside the program: the example inputs the export wrote, and the host
    reference's outputs on them."""
    from sdk.export.pipeline import INPUTS_FILE
    from sdk.program.bundle import BundleCase, write_bundle
    from sdk.targets.host import run_host
    from sdk.utils.npz import read_arrays

    inputs = read_arrays(program.parent / INPUTS_FILE)
    expected = run_host(program, inputs)
    return write_bundle(program, [BundleCase(inputs, expected)], program.with_suffix(".bpte"))


def _firmware_cannot_run(program: Path) -> str | None:
    """Why the firmware's kernels cannot run the program's CPU part, if they cannot: an operator
    the SDK or --cpu-op left on the CPU may have no kernel (kernels/kernels.yaml)."""
    from sdk.errors import KernelMissingError
    from sdk.firmware.kernelgen import load_kernel_specs, program_kernel_uses, select_kernels
    from sdk.program.pte import load_program

    try:
        select_kernels(program_kernel_uses(load_program(program)), load_kernel_specs())
    except KernelMissingError as exc:
        return str(exc)
    return None


def _vela_memory(board: str | None, mode: str | None):
    """The memory configuration --board/--npu-memory name (sdk.ethosu.memories.vela_memory);
    its ini lies under the cache root, where a deploy's does (the program names its path)."""
    from sdk.cache import default_root
    from sdk.ethosu.memories import VELA_CONFIG_DIR, vela_memory
    from sdk.firmware.boards import DEFAULT_BOARD, load_board

    spec = load_board(board or DEFAULT_BOARD)
    return vela_memory(spec.npu_memories, mode, default_root() / VELA_CONFIG_DIR)
