"""The options that reach a board in a labgrid farm (`--target labgrid`) and let the host
flash a board by itself; shared by `sdk run`, `sdk deploy` and `sdk flash`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_farm_arguments(p: argparse.ArgumentParser, flash: bool = True) -> None:
    p.add_argument("--place", help="labgrid: the place to acquire (`labgrid-client places`)")
    p.add_argument(
        "--coordinator", metavar="HOST:PORT",
        help="labgrid: the coordinator (default $LG_COORDINATOR, else 127.0.0.1:20408)",
    )  # fmt: skip
    p.add_argument(
        "--use-acquired", action="store_true",
        help="labgrid: a place you hold already (`labgrid-client acquire`) is used as it is "
        "and left acquired (default: wait for it like any held place)",
    )  # fmt: skip
    p.add_argument(
        "--acquire-timeout",
        type=float,
        metavar="S",
        help="labgrid: seconds to wait while another client holds the place (default: the "
        "board's, board.yaml targets.labgrid)",
    )
    if flash:
        p.add_argument(
            "--drive", type=Path,
            help="mps3-usb: the board's mounted drive; on a board the host can reset (a "
            "place with a power switch), a program needing kernels the running firmware "
            "lacks makes the host flash a firmware with every kernel",
        )  # fmt: skip
        p.add_argument("--probe", help="pyocd: the probe's unique id (--uid); as --drive")


def farm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The RunOptions fields of the options above (what was given)."""
    fields = {
        "place": args.place,
        "coordinator": args.coordinator,
        "acquire_timeout_s": args.acquire_timeout,
        "use_acquired": args.use_acquired or None,
        "drive": getattr(args, "drive", None),
        "probe": getattr(args, "probe", None),
    }
    return {k: v for k, v in fields.items() if v is not None}
