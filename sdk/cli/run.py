"""`sdk run --target host|qemu|fvp PROGRAM.pte --inputs in.npz -o out.npz`."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdk.compare import DEFAULT_RTOL

TARGETS = ("host", "qemu", "fvp")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a .pte on the host reference, QEMU or the FVP",
        description="Run PROGRAM.pte on a target with the inputs of in.npz (arr_0, arr_1, ... "
        "in the program's input order) and write the outputs to out.npz in output order. "
        "host: delegates on the TOSA reference model, the rest on ExecuTorch's runtime.",
    )
    p.add_argument("program", type=Path)
    p.add_argument("--target", default="host", help=f"one of {', '.join(TARGETS)} (default host)")
    p.add_argument(
        "--board", default="corstone300", help="board for qemu/fvp (default corstone300)"
    )
    p.add_argument("--inputs", type=Path, required=True, help=".npz of inputs in program order")
    p.add_argument("-o", "--output", type=Path, required=True, help=".npz to write outputs to")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is a hang")
    p.add_argument(
        "--expect",
        type=Path,
        help=".npz of reference outputs: fail (exit 4) unless integer outputs are identical "
        "and float outputs within --rtol of the largest magnitude",
    )
    p.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help="float tolerance for --expect")
    p.add_argument("--tosa-dir", type=Path, help="host: folder of delegate_<i>.tosa files")
    p.add_argument(
        "--workdir",
        type=Path,
        help="qemu/fvp: folder for the firmware, blobs and console log "
        "(default: OUTPUT's folder/<stem>.<target>/)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.errors import UsageError
    from sdk.npz import read_arrays, write_arrays

    if args.target not in TARGETS:
        raise UsageError(f"unknown target {args.target!r}; known targets: {', '.join(TARGETS)}")
    inputs = read_arrays(args.inputs)
    if args.target == "host":
        from sdk.targets.host import run_host

        outputs = run_host(args.program, inputs, args.tosa_dir)
        write_arrays(args.output, outputs)
        print(
            f"ran {args.program} on the host reference: {len(outputs)} output(s) -> {args.output}"
        )
        return 0
    from sdk.program.pte import load_program
    from sdk.targets.run import run_on_target

    program = load_program(args.program)
    delegates = {d.id for d in program.plan.delegates}
    if delegates:
        # Said before building anything: the firmware would refuse it with BackendMissing.
        raise UsageError(
            f"{args.program} has NPU delegates ({', '.join(sorted(delegates))}) and the firmware "
            "has no Ethos-U delegate yet; run it with --target host, or run its CPU parts on "
            f"{args.target} with `sdk cut` (see README)"
        )
    workdir = args.workdir or args.output.parent / f"{args.output.stem}.{args.target}"
    result = run_on_target(args.target, args.board, program, inputs, args.timeout, workdir)
    write_arrays(args.output, result.outputs)
    print(f"ran {args.program} on {args.target} ({args.board}): passed, firmware record ok")
    print(f"  {len(result.outputs)} output(s) -> {args.output}; console log {result.console_log}")
    if result.instructions is not None:
        print(
            f"  run: {result.instructions} instructions (QEMU -icount: retired instructions, "
            "not cycles)"
        )
    else:
        print(f"  run: {result.run_ticks} ticks at {result.tick_hz} Hz ({args.target} timer)")
    used, size = result.memory.get("planned_used"), result.memory.get("planned_size")
    print(f"  planned memory: {used} of {size} bytes")
    return check_expected(args, result.outputs)


def check_expected(args: argparse.Namespace, outputs) -> int:
    """With --expect: compare and print per output; MismatchError (exit 4) on a difference."""
    if args.expect is None:
        return 0
    from sdk.compare import compare_outputs
    from sdk.npz import read_arrays

    for comparison in compare_outputs(outputs, read_arrays(args.expect), args.rtol):
        print(f"  {comparison.describe()} vs {args.expect}")
    return 0
