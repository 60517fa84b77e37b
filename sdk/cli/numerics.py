"""`sdk numerics MODEL`: where accuracy is lost between the fp32 model and the program."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from sdk.cli.quant_args import add_quant_arguments, quant_options


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "numerics",
        help="measure each output and delegate output at every stage; name where accuracy is lost",
        description="Export MODEL, run the fp32 and quantized PyTorch models and the host "
        "reference on the inputs, and report per output the SNR/max error/cosine against fp32 "
        "at each stage and the LSB error against the stage before; per NPU delegate output, "
        "the LSB error against the quantized model; the first stage and tensor where the loss "
        "appears; and outputs whose concatenated parts collapse under one scale, with fixes.",
    )
    p.add_argument("model", help="FILE.py or FILE.py:Name")
    p.add_argument("--npu", default="ethos-u55-128", help="NPU configuration")
    p.add_argument("--quant", default="int8", help="int8 (default) or int16")
    add_quant_arguments(p)
    p.add_argument("--cpu-op", action="append", default=[], metavar="OP", help="repeatable")
    p.add_argument("--inputs", type=Path, help=".npz of inputs (default: the example inputs)")
    p.add_argument("-o", "--outdir", type=Path, help="keep the export here (default: temporary)")
    p.add_argument("--json", type=Path, help="write the report as JSON here")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from sdk.ethosu.config import NpuConfig, QuantMode
    from sdk.evaluation.numerics import analyse
    from sdk.export.model_loader import load_model
    from sdk.export.pipeline import lower, quantize
    from sdk.utils.npz import read_arrays

    npu, quant = NpuConfig.parse(args.npu), QuantMode.parse(args.quant)
    options = quant_options(args)
    loaded = load_model(args.model)
    inputs = read_arrays(args.inputs) if args.inputs else [t.numpy() for t in loaded.example_inputs]
    quantized = quantize(loaded, npu, quant, options=options)
    with tempfile.TemporaryDirectory(prefix="sdk-numerics-") as tmp:
        outdir = args.outdir or Path(tmp) / "export"
        result = lower(quantized, outdir, cpu_ops=args.cpu_op)
        report = analyse(loaded, quantized, result.program_path, inputs)
    data = report.to_json()
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    print_report(report)
    return 0


def print_report(report) -> None:
    for o in report.outputs:
        scale = f", step {o.scale:.3g}" if o.scale else ""
        print(f"output {o.index} {o.shape}{scale}:")
        for s in o.stages:
            lsb = "" if s.lsb_vs_previous is None else (
                f"; vs previous stage max {s.lsb_vs_previous[0]:.3g} / mean "
                f"{s.lsb_vs_previous[1]:.3g} LSB"
                + (
                    ""
                    if s.differing_vs_previous is None
                    else f", {100 * s.differing_vs_previous:.1f} % differ"
                )
            )  # fmt: skip
            print(f"  {s.stage:9} vs fp32: {s.vs_fp32.describe()}{lsb}")
    for b in report.boundaries:
        if b.node is None:
            print(f"delegate {b.delegate} output {b.output}: no matching tensor in the model")
            continue
        print(
            f"delegate {b.delegate} output {b.output} ({b.dtype} {b.shape}, {b.node}): max "
            f"{b.max_lsb:g} LSB, mean {b.mean_lsb:.3g}, {100 * b.differing:.1f} % differ"
        )
    print(f"first loss: {report.first_loss or 'none beyond one LSB and the floors'}")
    for c in report.collapses:
        print(f"COLLAPSE: {c.describe()}")
