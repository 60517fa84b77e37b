"""The quantizer-setting flags export, deploy and numerics share, read off OPTIONS."""

from __future__ import annotations

import argparse

from sdk.export.quant_options import OPTIONS, QuantOptions


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


def quant_options(args: argparse.Namespace) -> QuantOptions:
    values = {option.name: getattr(args, f"quant_{option.name}") for option in OPTIONS}
    return QuantOptions.parse(**values)
