"""`sdk tune MODEL`: try the Vela configurations the board allows and print what each gives."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    from sdk.deploy.tune import AUTO, CHECKS, GOALS, IOS, VELA_OPTIMISE
    from sdk.firmware.boards import DEFAULT_BOARD
    from sdk.program.layout import INPUT_LAYOUTS

    p = subparsers.add_parser(
        "tune",
        help="try each Vela configuration the board allows, check each, print the table",
        description="Export MODEL once per configuration the board allows (NPU memory mode, "
        "Vela --optimise; --arena-cache-size when the arena spills out of the board's "
        "npu_arena), check each one's outputs with the deploy's verdict, time it (the deploy's "
        "latency: QEMU's instruction count and the modelled NPU cycles) and print the table "
        "with the one `sdk deploy --optimize GOAL` would deploy. The program's interface (float "
        "I/O, inputs as the model takes them) is kept unless --io auto / --input-layout auto "
        "let it vary. The candidates share one quantization; each program is cached. Exit 4 "
        "when none passes.",
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
    p.add_argument(
        "--io", action="append", metavar="IO",
        help=f"the program's I/O ({', '.join(IOS)}; repeatable; default float, as the model; "
        f"{AUTO}: try each, the chosen program may take integers)",
    )  # fmt: skip
    p.add_argument("--input-layout", action="append", metavar="LAYOUT",
                   help=f"the program's input layout ({', '.join(INPUT_LAYOUTS)}; repeatable; "
                   f"default as-model; {AUTO}: each the model can take)")  # fmt: skip
    p.add_argument("--npu", help="NPU configuration (default: the board's)")
    p.add_argument("--quant", default="int8", help="int8 (default) or int16 (a16w8)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before a run is a hang")
    p.add_argument("-o", "--outdir", type=Path,
                   help="folder for each candidate's deploy and tuning.json "
                   "(default out/tune/<model>)")  # fmt: skip
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--quiet", action="store_true", help="no progress: the table alone")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.cache import Cache
    from sdk.deploy.tune import Plan, Session, candidates, check_goal, interface, render_table, tune
    from sdk.errors import MismatchError
    from sdk.export.model_loader import ModelSpec
    from sdk.firmware.boards import load_board
    from sdk.utils.files import write_atomically
    from sdk.utils.progress import Steps

    check_goal(args.optimize)
    board = load_board(args.board)
    outdir = args.outdir or Path("out") / "tune" / ModelSpec.parse(args.model).stem
    ios, layouts = interface(args.model, args.io, args.input_layout)
    plan = Plan(tuple(candidates(board, args.npu_memory, args.optimise, ios, layouts)))
    session = Session(args.optimize, board, outdir, args.check, Cache(enabled=not args.no_cache))
    tuning = tune(
        args.model, session, plan, Steps(show=not args.quiet and sys.stdout.isatty()),
        npu=args.npu, quant=args.quant, timeout_s=args.timeout,
    )  # fmt: skip
    data = tuning.to_json()
    write_atomically(outdir / "tuning.json", json.dumps(data, indent=2) + "\n")
    print(render_table(data))
    if tuning.chosen is None:
        raise MismatchError(f"tune: no configuration of {args.model} passed")
    return 0
