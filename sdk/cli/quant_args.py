"""The quantizer-setting flags export, deploy and numerics share, read off OPTIONS."""

from __future__ import annotations

import argparse
from pathlib import Path

from sdk.export.quant_options import OPTIONS, QuantOptions
from sdk.program.integer_io import IO_MODES
from sdk.program.layout import INPUT_LAYOUTS


def add_quant_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per setting; values are checked by QuantOptions (a one-line `error:`)."""
    for option in OPTIONS:
        p.add_argument(
            option.flag,
            dest=f"quant_{option.name}",
            action="append" if option.repeatable else "store",
            default=[] if option.repeatable else None,
            metavar="NAME_OR_TYPE=" + "|".join(option.values)
            if option.repeatable
            else "|".join(option.values),
            help=option.help,
        )


def add_io_argument(p: argparse.ArgumentParser, tuned: bool = False) -> None:
    """--io: what the program takes and returns (export and deploy say it the same way);
    `tuned`: also `auto`, the tuner's choice (deploy --optimize)."""
    auto = "; auto (with --optimize): the tuner tries both" if tuned else ""
    p.add_argument(
        "--io",
        default=IO_MODES[0],
        metavar="|".join([*IO_MODES, *(["auto"] if tuned else [])]),
        help="float (default): the program quantizes its inputs and dequantizes its outputs on "
        "the CPU; int: it takes and returns the quantized integers (int8, int16 with --quant "
        f"int16), their scale and zero-point in report.json's `io` (docs/integer-io.md){auto}",
    )


def add_input_layout_argument(p: argparse.ArgumentParser, tuned: bool = False) -> None:
    """--input-layout: how the program takes a 4-D input (export and deploy say it the same);
    `tuned`: also `auto`, the tuner's choice (deploy --optimize)."""
    auto = "; auto (with --optimize): the tuner tries each the model can take" if tuned else ""
    p.add_argument(
        "--input-layout",
        default=INPUT_LAYOUTS[0],
        metavar="|".join([*INPUT_LAYOUTS, *(["auto"] if tuned else [])]),
        help="as-model (default): the program takes 4-D inputs as the model does (NCHW); "
        "channels-last: in NHWC, as a camera gives an image, so the NPU needs no input "
        f"transpose (inputs files stay NCHW: the SDK reorders them; docs/tuning.md){auto}",
    )


def quant_options(args: argparse.Namespace) -> QuantOptions:
    values = {option.name: getattr(args, f"quant_{option.name}") for option in OPTIONS}
    return QuantOptions.parse(**values)


def add_calibration_argument(p: argparse.ArgumentParser) -> None:
    """--calibration: what export and deploy quantize with (sdk.export.calibration)."""
    p.add_argument(
        "--calibration", type=Path, metavar="D.npz|FOLDER",
        help="calibration samples as --dataset takes them: a .npz (arr_i: N x input i) or a "
        "folder of PNG images of the input's size (default: the model's calibration_inputs(), "
        "else its example inputs)",
    )  # fmt: skip
