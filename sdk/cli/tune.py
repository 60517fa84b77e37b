"""`sdk tune MODEL`: try the Vela configurations the board allows and print what each gives."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(subparsers) -> None:
    from sdk.deploy.tune import CHECKS, GOALS, IOS, VELA_OPTIMISE
    from sdk.firmware.boards import DEFAULT_BOARD
    from sdk.program.layout import INPUT_LAYOUTS

    p = subparsers.add_parser(
        "tune",
        help="try each Vela configuration the board allows, check each, print the table",
        description="Export MODEL once per configuration the board allows (NPU memory mode, "
        "Vela --optimise, float or integer I/O; --arena-cache-size when the arena spills out "
        "of the board's npu_arena), check each one's outputs with the deploy's verdict, time "
        "it (the cycle model of its command stream; QEMU's instruction count for the CPU) and "
        "print the table with the one `sdk deploy --optimize GOAL` would deploy. Each "
        "configuration's program is cached. Exit 4 when none passes.",
    )
    p.add_argument("model", help="FILE.py (defining model() and example_inputs()) or FILE.py:Name")
    p.add_argument("--board", default=DEFAULT_BOARD, help=f"board (default {DEFAULT_BOARD})")
    p.add_argument("--optimize", default="latency", metavar="GOAL",
                   help=f"{' or '.join(GOALS)} (default latency)")  # fmt: skip
    p.add_argument("--check", default="qemu", metavar="WHERE",
                   help=f"where each candidate's outputs are checked: {', '.join(CHECKS)} "
                   "(default qemu)")  # fmt: skip
    p.add_argument("--npu-memory", action="append", metavar="MODE",
                   help="only this memory configuration (repeatable; default all)")  # fmt: skip
    p.add_argument(
        "--optimise",
        action="append",
        metavar="HOW",
        help=f"only this Vela --optimise ({', '.join(VELA_OPTIMISE)}; repeatable)",
    )
    p.add_argument("--io", action="append", metavar="IO",
                   help=f"only this I/O ({', '.join(IOS)}; repeatable)")  # fmt: skip
    p.add_argument("--input-layout", action="append", metavar="LAYOUT",
                   help=f"only this input layout ({', '.join(INPUT_LAYOUTS)}; repeatable; "
                   "default both for a model with a 4-D input)")  # fmt: skip
    p.add_argument("--npu", help="NPU configuration (default: the board's)")
    p.add_argument("--quant", default="int8", help="int8 (default) or int16 (a16w8)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is a hang")
    p.add_argument("-o", "--outdir", type=Path,
                   help="folder for each candidate's deploy and tuning.json "
                   "(default out/tune/<model>)")  # fmt: skip
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.cache import Cache
    from sdk.deploy.tune import candidates, check_goal, model_layouts, render_table, tune
    from sdk.errors import MismatchError
    from sdk.export.model_loader import ModelSpec
    from sdk.firmware.boards import load_board
    from sdk.utils.files import write_atomically

    check_goal(args.optimize)
    board = load_board(args.board)
    outdir = args.outdir or Path("out") / "tune" / ModelSpec.parse(args.model).stem
    tuning = tune(
        args.model, goal=args.optimize, board=board, check=args.check, outdir=outdir,
        cache=Cache(enabled=not args.no_cache),
        tried=candidates(
            board, args.npu_memory, args.optimise, args.io,
            model_layouts(args.model, args.input_layout),
        ),
        npu=args.npu, quant=args.quant, timeout_s=args.timeout,
    )  # fmt: skip
    data = tuning.to_json()
    write_atomically(outdir / "tuning.json", json.dumps(data, indent=2) + "\n")
    print(render_table(data))
    if tuning.chosen is None:
        raise MismatchError(f"tune: no configuration of {args.model} passed")
    return 0
