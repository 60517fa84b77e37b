"""`sdk deploy --board BOARD MODEL`: model to a validated on-target result in one command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdk.cli.farm_args import add_farm_arguments, farm_options
from sdk.cli.quant_args import (
    add_calibration_argument,
    add_input_layout_argument,
    add_io_argument,
    add_quant_arguments,
    quant_options,
)
from sdk.evaluation.accuracy import Tolerance
from sdk.evaluation.compare import DEFAULT_RTOL
from sdk.link.transport import DEFAULT_BAUD


def add_parser(subparsers) -> None:
    from sdk.cli.run import add_npu_executor_argument
    from sdk.firmware.boards import DEFAULT_BOARD
    from sdk.targets.run import DEPLOY_TARGETS

    p = subparsers.add_parser(
        "deploy",
        allow_abbrev=False,  # a zoo passes its options on by name (sdk.deploy.zoo)
        help="export, build, run on the target and check against the references, in one go",
        description="Export MODEL for the board's NPU, generate the kernel registrations, "
        "check it fits the board, build the firmware, run it on the target, and compare the "
        "outputs with the host reference (identical) and with the quantized PyTorch model "
        "(ExecuTorch's criterion: --atol/--rtol/--qtol), with the fp32 and quantized models' "
        "SNR and cosine as figures (a floor missed is a warning). The program and the "
        "firmware are cached: a second deploy of an unchanged model only runs. Exit 4 when "
        "a comparison fails.",
    )
    p.add_argument(
        "model", nargs="+",
        help="FILE.py (defining model() and example_inputs()) or FILE.py:Name; several: a zoo, "
        "deployed one after another, or at once over --places",
    )  # fmt: skip
    p.add_argument(
        "--places", metavar="P1,P2,...",
        help="labgrid: deploy the models concurrently, one board (place) each; one combined "
        "report (OUTDIR/zoo.json, zoo.junit.xml) says which place ran which model",
    )  # fmt: skip
    p.add_argument("--board", default=DEFAULT_BOARD, help=f"board (default {DEFAULT_BOARD})")
    p.add_argument(
        "--target",
        default="auto",
        help=f"where it runs: {', '.join(DEPLOY_TARGETS)} (default auto: the FVP when "
        "installed, else QEMU with the virtual NPU)",
    )
    p.add_argument("--npu", help="NPU configuration (default: the board's)")
    p.add_argument("--quant", default="int8", help="int8 (default) or int16 (a16w8)")
    add_quant_arguments(p)
    add_io_argument(p, tuned=True)
    add_input_layout_argument(p, tuned=True)
    p.add_argument(
        "--cpu-op", action="append", default=[], metavar="OP",
        help="keep this operator on the CPU (e.g. aten.bmm); repeatable",
    )  # fmt: skip
    p.add_argument(
        "--inputs", type=Path, help=".npz of inputs in the model's order (default: example inputs)"
    )
    p.add_argument(
        "--dataset", type=Path,
        help=".npz of samples (arr_0.. with a leading sample axis, optional `labels`) or a folder "
        "of PNG images: run each on the loaded program and report accuracy and errors vs the "
        "references",
    )  # fmt: skip
    add_calibration_argument(p)
    p.add_argument(
        "--max-accuracy-drop", type=float, default=2.0,
        help="--dataset with labels: top-1 points the device may lose vs fp32 (default 2)",
    )  # fmt: skip
    p.add_argument("--port", help="serial: pyserial URL of the board")
    p.add_argument(
        "--baud", type=int, help=f"serial, labgrid: baud rate (default the board's, {DEFAULT_BAUD})"
    )
    p.add_argument("--fvp", type=Path, help="fvp: the FVP binary (default $SDK_FVP, else PATH)")
    add_farm_arguments(p)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is a hang")
    p.add_argument(
        "--host-rtol", type=float, default=DEFAULT_RTOL,
        help=f"float outputs vs the host reference, relative to its largest value "
        f"(default {DEFAULT_RTOL:g})",
    )  # fmt: skip
    verdict = Tolerance()
    p.add_argument(
        "--atol", type=float, default=verdict.atol,
        help=f"the verdict (ExecuTorch's criterion): each output value within atol + qtol x step "
        f"+ rtol x |ref| of the quantized model (default {verdict.atol:g})",
    )  # fmt: skip
    p.add_argument("--rtol", type=float, default=verdict.rtol, help=f"(default {verdict.rtol:g})")
    p.add_argument(
        "--qtol", type=float, default=verdict.qtol,
        help=f"quantization steps of the output's scale (default {verdict.qtol:g})",
    )  # fmt: skip
    p.add_argument(
        "-o", "--outdir", type=Path,
        help="folder for the run's logs, outputs.npz and deploy.json (default out/deploy/<model>)",
    )  # fmt: skip
    add_npu_executor_argument(p, "QEMU's virtual NPU")
    add_vela_arguments(p)
    p.add_argument(
        "--optimize", metavar="GOAL",
        help="latency or size: try every Vela configuration the board allows (sdk tune), check "
        "each one's outputs, deploy the fastest (smallest) that passes and fits; deploy.json "
        "gets a `tuning` section with the table. The program's I/O and input layout stay "
        "--io/--input-layout's (default float, as-model) unless given as auto",
    )  # fmt: skip
    p.add_argument(
        "--tune-check", default="qemu", metavar="WHERE",
        help="--optimize: check each candidate on qemu (default) or host (the same command "
        "stream on the host's functional model; the chosen one still runs on --target)",
    )  # fmt: skip
    p.add_argument("--json", type=Path, help="write the report as JSON here ('-': stdout)")
    p.add_argument("--junit", type=Path, help="write JUnit XML here (one case per check)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--quiet", action="store_true", help="no progress and no table: one line")
    p.set_defaults(handler=run)


def add_vela_arguments(p: argparse.ArgumentParser) -> None:
    """--npu-memory and --vela-arg: the Vela configuration a program is compiled with."""
    p.add_argument(
        "--npu-memory", metavar="MODE",
        help="the board's NPU memory mode for Vela (board.yaml npu_memories: Shared_Sram, "
        "Sram_Only), or executorch (ExecuTorch's default); default: the board's default",
    )  # fmt: skip
    p.add_argument(
        "--vela-arg", action="append", default=[], metavar="ARG",
        help="extra Vela flag (e.g. --vela-arg=--optimise=Size); repeatable",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from sdk.deploy.render import render
    from sdk.deploy.report import error_report, junit_suite
    from sdk.errors import MismatchError, SdkError
    from sdk.export import CPU_ONLY
    from sdk.utils.progress import Steps

    if len(args.model) > 1 or args.places:
        return _zoo(args)
    args.model = args.model[0]
    json_to_stdout = args.json is not None and str(args.json) == "-"
    steps = Steps(show=not args.quiet and sys.stdout.isatty() and not json_to_stdout)
    try:
        report = _deploy(args, steps)
    except SdkError as exc:  # the files CI reads say so too: no old verdict left standing
        props = {"board": args.board, "target": args.target}
        write_outputs(args, error_report(args.model, args.board, steps.records, str(exc)),
                      junit_suite(steps.records, [], str(exc), props), json_to_stdout)  # fmt: skip
        raise
    write_outputs(args, report.to_json(), report.junit(), json_to_stdout)
    if not args.quiet and not json_to_stdout:
        render(report)
        if report.tuning is not None:
            from sdk.deploy.tune import render_table

            print(render_table(report.tuning))
    elif args.quiet:
        verdict = "passed" if report.passed else "FAILED"
        cpu_only = "" if report.placement["npu"] else f" ({CPU_ONLY})"
        print(f"deploy {verdict}: {report.model} on {report.board}/{report.target}{cpu_only}")
    if not report.passed:
        raise MismatchError(f"deploy failed: {report.failure}")
    return 0


def _zoo(args: argparse.Namespace) -> int:
    """Several models: sdk.deploy.zoo (one deploy process per model, one per place at once)."""
    import shutil

    from sdk.deploy.zoo import ZOO_JUNIT_FILE, ZOO_REPORT_FILE, deploy_zoo, zoo_verdict
    from sdk.errors import UsageError

    places: list[str | None] = [args.place]
    if args.places:
        if args.target != "labgrid" or args.place:
            raise UsageError("--places takes the place of --place, with --target labgrid")
        places = [p.strip() for p in args.places.split(",") if p.strip()]
        if not places:
            raise UsageError(f"--places {args.places!r}: no place named")
    if args.drive or args.probe:
        raise UsageError("--drive/--probe name one board: not with a zoo (flash with `sdk flash`)")
    outdir = args.outdir or Path("out") / "zoo"
    to_stdout = any(str(given) == "-" for given in (args.json, args.junit))
    entries = deploy_zoo(
        args.model, places, args.argv, outdir, show=not args.quiet, quiet_stdout=to_stdout
    )
    for given, name in ((args.json, ZOO_REPORT_FILE), (args.junit, ZOO_JUNIT_FILE)):
        if given is not None and str(given) == "-":
            sys.stdout.write((outdir / name).read_text())
        elif given is not None:
            shutil.copyfile(outdir / name, given)
    passed = sum(e.passed for e in entries)
    print(f"zoo: {passed} of {len(entries)} passed over {len(places)} place(s); "
          f"{outdir / ZOO_REPORT_FILE}", file=sys.stderr if to_stdout else sys.stdout)  # fmt: skip
    zoo_verdict(entries)
    return 0


def write_outputs(args: argparse.Namespace, data: dict, junit: str, to_stdout: bool) -> None:
    import json

    from sdk.utils.files import write_atomically

    if args.json is not None:
        text = json.dumps(data, indent=2) + "\n"
        if to_stdout:
            sys.stdout.write(text)
        else:
            write_atomically(args.json, text)
    if args.junit is not None:
        write_atomically(args.junit, junit)


def _deploy(args: argparse.Namespace, steps):
    from sdk.cache import Cache
    from sdk.deploy.pipeline import deploy
    from sdk.deploy.tune import (
        AUTO,
        Plan,
        Session,
        candidates,
        check_goal,
        check_where,
        interface,
        tune_and_deploy,
    )
    from sdk.errors import UsageError
    from sdk.evaluation.dataset import Thresholds
    from sdk.export.model_loader import ModelSpec
    from sdk.firmware.boards import load_board

    common = dict(
        npu=args.npu,
        quant=args.quant,
        cpu_ops=args.cpu_op,
        inputs=args.inputs,
        port=args.port,
        baud=args.baud,
        fvp=args.fvp,
        timeout_s=args.timeout,
        host_rtol=args.host_rtol,
        tolerance=Tolerance(atol=args.atol, rtol=args.rtol, qtol=args.qtol),
        quant_options=quant_options(args),
        dataset=args.dataset,
        calibration=args.calibration,
        dataset_thresholds=Thresholds(
            max_accuracy_drop=args.max_accuracy_drop, rtol=args.host_rtol
        ),
        **farm_options(args),
    )
    cache = Cache(enabled=not args.no_cache)
    if args.optimize is not None:
        check_goal(args.optimize)
        check_where(args.tune_check)
        if args.npu_memory or args.vela_arg:
            raise UsageError("--optimize chooses --npu-memory and --vela-arg itself")
        board = load_board(args.board)
        ios, layouts = interface(args.model, [args.io], [args.input_layout])
        plan = Plan(tuple(candidates(board, ios=ios, layouts=layouts)))
        outdir = args.outdir or Path("out") / "deploy" / ModelSpec.parse(args.model).stem
        session = Session(args.optimize, board, outdir, args.tune_check, cache)
        return tune_and_deploy(
            args.model, session, args.target, plan, steps, **common
        )  # fmt: skip
    for flag, value in (("--io", args.io), ("--input-layout", args.input_layout)):
        if value == AUTO:
            raise UsageError(f"{flag} {AUTO}: only with --optimize (the tuner chooses it)")
    return deploy(
        args.model, board=args.board, target=args.target, io=args.io, outdir=args.outdir,
        cache=cache, steps=steps, npu_executor=args.npu_executor, npu_memory=args.npu_memory,
        vela_args=args.vela_arg, input_layout=args.input_layout, **common,
    )  # fmt: skip
