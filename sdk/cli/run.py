"""`sdk run --target host|qemu|fvp|serial PROGRAM.pte --inputs in.npz -o out.npz`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdk.cli.farm_args import add_farm_arguments, farm_options
from sdk.evaluation.compare import DEFAULT_RTOL
from sdk.link.transport import DEFAULT_BAUD


def add_parser(subparsers) -> None:
    from sdk.firmware.boards import DEFAULT_BOARD
    from sdk.targets.run import TARGETS

    p = subparsers.add_parser(
        "run",
        help="run a .pte on the host reference, QEMU, the FVP or a board over serial",
        description="Run PROGRAM.pte on a target with the inputs of in.npz (arr_0, arr_1, ... "
        "in the program's input order) and write the outputs to out.npz in output order. "
        "host: delegates on the TOSA reference model, the rest on ExecuTorch's runtime. "
        "qemu: the firmware on QEMU, driven over the host link (docs/link.md). "
        "serial: a board flashed with the firmware, driven over --port. "
        "labgrid: a board in a labgrid farm, its --place acquired for the run. "
        "PROGRAM.bpte (ExecuTorch's BundledProgram, `sdk export --bundle`): every test case "
        "runs and is compared with its expected outputs (exit 4 on a difference).",
    )
    p.add_argument("program", type=Path)
    p.add_argument("--target", default="host", help=f"one of {', '.join(TARGETS)} (default host)")
    p.add_argument("--board", default=DEFAULT_BOARD, help=f"board (default {DEFAULT_BOARD})")
    p.add_argument(
        "--inputs", type=Path,
        help=".npz of inputs in program order (a .bpte PROGRAM brings its own test cases)",
    )  # fmt: skip
    p.add_argument("-o", "--output", type=Path, required=True, help=".npz to write outputs to")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is a hang")
    p.add_argument(
        "--port",
        help="serial: pyserial URL of the board (/dev/ttyACM0, socket://HOST:PORT, "
        "rfc2217://HOST:PORT, hwgrep://SERIAL)",
    )
    p.add_argument(
        "--baud", type=int, help=f"serial, labgrid: baud rate (default the board's, {DEFAULT_BAUD})"
    )
    p.add_argument("--iterations", type=int, default=1, help="firmware targets: runs to time")
    p.add_argument(
        "--fvp", type=Path, help="fvp: the FVP binary (default $SDK_FVP, else the board's on PATH)"
    )
    p.add_argument(
        "--expect",
        type=Path,
        help=".npz of reference outputs: fail (exit 4) unless integer outputs are identical "
        "and float outputs within --rtol of the largest magnitude",
    )
    p.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="float tolerance for --expect")
    p.add_argument(
        "--tosa-dir",
        type=Path,
        help="host and the virtual NPU: folder of delegate_<i>.tosa files (default: beside "
        "the program, as `sdk export` writes them)",
    )
    add_npu_executor_argument(p, "host and the virtual NPU")
    add_farm_arguments(p)
    p.add_argument(
        "--npu-trace",
        type=Path,
        help="host with --npu-executor command-stream: write each NPU operation's kind, mode, "
        "OFM shape, host time and MACs to this JSON file",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        help="firmware targets: folder for the firmware, blobs and logs "
        "(default: OUTPUT's folder/<stem>.<target>/)",
    )
    p.set_defaults(handler=run)


def add_npu_executor_argument(p: argparse.ArgumentParser, where: str) -> None:
    from sdk.reference.executor import NPU_EXECUTORS

    p.add_argument(
        "--npu-executor",
        choices=tuple(NPU_EXECUTORS),
        help=f"{where}: run delegates' saved TOSA on the TOSA reference model (tosa; the "
        "host's default) or Vela's command stream on a functional model of the Ethos-U (the "
        "U55's or the U85's, as the stream was compiled for) (command-stream, needs no saved "
        "TOSA; the virtual NPU's default)",
    )


def run(args: argparse.Namespace) -> int:
    from sdk.errors import UsageError
    from sdk.firmware.boards import load_board
    from sdk.program.bundle import BundleCase, read_bundle
    from sdk.program.pte import load_program
    from sdk.targets.base import RunOptions
    from sdk.targets.run import make_target
    from sdk.utils.npz import read_arrays, write_arrays
    from sdk.utils.progress import Steps

    board = load_board(args.board)
    if args.iterations < 1:
        raise UsageError(f"--iterations {args.iterations}: at least 1")
    options = {"port": args.port, "baud": args.baud, "iterations": args.iterations}
    options.update(farm_options(args))
    if args.tosa_dir is not None:
        options["tosa_dir"] = args.tosa_dir
    if args.npu_executor is not None:
        options["npu_executor"] = args.npu_executor
    if args.npu_trace is not None:
        options["npu_trace"] = args.npu_trace
    if args.fvp is not None:
        options["fvp"] = args.fvp
    # What makes the run impossible (an emulator missing, no --port, options the target does
    # not take) is said before anything is read or built; a board's port is opened once, by
    # its run (opening it twice may reset it).
    bundled = args.program.suffix == ".bpte"
    if bundled:
        options["bundle"] = args.program  # an emulator preloads it: the firmware reads it there
        if args.tosa_dir is None:  # `sdk export --bundle` wrote it beside model.pte
            options["tosa_dir"] = args.program.parent / "tosa"
    target = make_target(args.target, board, RunOptions(**options))
    target.strategy.preflight(RunOptions(**options))
    if args.inputs is None and not bundled:
        raise UsageError("--inputs IN.npz is needed (only a .bpte program brings its own)")
    if bundled:
        program_bytes, cases = read_bundle(args.program)
        program = load_program(program_bytes)
    else:
        program = load_program(args.program)
    if args.inputs is not None:
        expected = read_arrays(args.expect) if args.expect is not None else None
        cases = [BundleCase(read_arrays(args.inputs), expected)]
    workdir = args.workdir or args.output.parent / f"{args.output.stem}.{args.target}"
    run_options = RunOptions(timeout_s=args.timeout, workdir=workdir, **options)
    program.outputs()  # a non-tensor output is a ProgramError before anything runs
    for case in cases:
        program.check_inputs(case.inputs)
    with target.strategy.up(run_options, program, inputs=cases[0].inputs) as running:
        # a serial line: each large transfer's expected time, then its progress (a terminal)
        running.watch_transfers(Steps(show=sys.stderr.isatty()).transfer)
        reports = [running.run(program, case.inputs, run_options) for case in cases]
    report = reports[0]
    write_arrays(args.output, report.outputs)
    print(f"ran {args.program} on {report.where()}: {len(report.outputs)} output(s) -> "
          f"{args.output}")  # fmt: skip
    if report.log_path is not None:  # the firmware ran: its record decided
        print(f"  passed: the firmware's record is ok; log {report.log_path}")
        print(f"  run: {report.timing.describe()}")
        if report.memory is not None:
            used, size = report.memory.planned_used, report.memory.planned_size
            print(f"  planned memory: {used} of {size} bytes")
    if report.board_use is not None:
        from sdk.targets.strategy import BoardUse

        print(f"  {BoardUse.describe(report.board_use)}")
    where = args.expect if args.inputs is not None else args.program
    for i, (case, got) in enumerate(zip(cases, reports, strict=True)):
        label = f"{where} (test case {i})" if len(cases) > 1 or bundled else where
        check_expected(got.outputs, case.expected, label, args.rtol)
    return 0


def check_expected(outputs, expected, expect_path: Path | None, rtol: float) -> int:
    """With --expect: compare and print per output; MismatchError (exit 4) on a difference.
    Every target's outputs come through here."""
    if expected is None:
        return 0
    from sdk.errors import MismatchError
    from sdk.evaluation.compare import compare_outputs

    try:
        comparisons = compare_outputs(outputs, expected, rtol)
    except MismatchError as exc:  # named by where the expectation came from
        raise MismatchError(f"{exc.message} vs {expect_path}") from None
    for comparison in comparisons:
        print(f"  {comparison.describe()} vs {expect_path}")
    return 0
