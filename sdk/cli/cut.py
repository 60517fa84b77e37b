"""`sdk cut PROGRAM.pte --inputs in.npz -o DIR`: the program's CPU parts as programs of their own.

A target without the NPU (QEMU) cannot run a program's delegates, but it can run everything
else: each run of CPU instructions between delegate calls is written as a CPU-only program,
with the inputs the host reference feeds it and the outputs it gives (ExecuTorch's runtime),
ready for `sdk run --target qemu DIR/segment_K.pte --inputs DIR/segment_K_inputs.npz
--expect DIR/segment_K_expected.npz`. Also a way to bisect a mismatch.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cut",
        help="write a program's CPU parts as CPU-only programs with reference inputs/outputs",
        description=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("program", type=Path)
    p.add_argument("--inputs", type=Path, required=True, help=".npz of the program's inputs")
    p.add_argument("-o", "--outdir", type=Path, required=True)
    p.add_argument("--tosa-dir", type=Path, help="folder of delegate_<i>.tosa files")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.program.pte import load_program
    from sdk.targets.host import host_runner
    from sdk.utils.npz import read_arrays, write_arrays

    program = load_program(args.program)
    runner = host_runner(program, args.tosa_dir)
    runner.run(read_arrays(args.inputs))
    args.outdir.mkdir(parents=True, exist_ok=True)
    index = []
    calls = dict(program.kernel_calls())
    operators = program.operators()
    for k, seg_run in enumerate(runner.segment_runs):
        segment = seg_run.segment
        stem = f"segment_{k}"
        (args.outdir / f"{stem}.pte").write_bytes(segment.pte)
        write_arrays(args.outdir / f"{stem}_inputs.npz", seg_run.inputs)
        write_arrays(args.outdir / f"{stem}_expected.npz", seg_run.outputs)
        ops = [operators[calls[i].op_index] for i in segment.step.instructions if i in calls]
        index.append(
            {
                "segment": k,
                "program": f"{stem}.pte",
                "instructions": segment.step.instructions,
                "operators": ops,
                "input_values": segment.inputs,
                "output_values": segment.outputs,
            }
        )
        first, last = segment.step.instructions[0], segment.step.instructions[-1]
        print(
            f"{stem}: instructions {first}..{last}, {len(segment.inputs)} in / "
            f"{len(segment.outputs)} out: {', '.join(sorted(set(ops)))}"
        )
    (args.outdir / "segments.json").write_text(json.dumps(index, indent=2) + "\n")
    print(f"wrote {len(index)} CPU segment(s) to {args.outdir}")
    return 0
