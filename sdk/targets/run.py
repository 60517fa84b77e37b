"""Where a program runs: one registry of targets (the host reference included) and one entry.

    report = run_on_target("qemu", "corstone300", Path("model.pte"), [x], 60.0, Path("out/run"))

Each target returns the same typed RunReport; nothing here knows a board or an emulator's
flags. Every firmware target runs over the host link (sdk.targets.linked).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import Board, load_board
from sdk.program.pte import LoadedProgram, load_program
from sdk.targets.base import Availability, RunOptions, RunReport, Target
from sdk.targets.fvp import FvpTarget
from sdk.targets.host import HostTarget
from sdk.targets.qemu import QemuTarget
from sdk.targets.serial import SerialTarget

TARGETS: dict[str, Callable[[Board], Target]] = {
    "host": HostTarget,
    "qemu": QemuTarget,
    "fvp": FvpTarget,
    "serial": SerialTarget,
}


# `--target auto` (sdk deploy): the first of these available here; the last is the fallback
# any machine can install (QEMU, NPU delegates on the virtual NPU).
AUTO_TARGETS = ("fvp", "qemu")


def make_target(target: str, board: Board) -> Target:
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; targets: {', '.join(sorted(TARGETS))}")
    return TARGETS[target](board)


def available_targets(board: Board, options: RunOptions | None = None) -> dict[str, Availability]:
    """Every target's availability for `board` here, in TARGETS order (a target the board
    has no section for is unavailable, saying so)."""
    found = {}
    for name in TARGETS:
        try:
            found[name] = make_target(name, board).availability(options)
        except UsageError as exc:
            found[name] = Availability(False, exc.message)
    return found


def auto_target(found: dict[str, Availability]) -> str:
    """What `auto` means given `available_targets(...)`: the first available of AUTO_TARGETS,
    else the fallback (whose availability then says how to install it)."""
    return next((t for t in AUTO_TARGETS if t in found and found[t].available), AUTO_TARGETS[-1])


def require_available(target: Target, options: RunOptions | None = None) -> None:
    """One TargetError line when `target` cannot run here, before anything is read or built."""
    found = target.availability(options)
    if not found.available:
        raise TargetError(f"target {target.name} is not available here: {found.describe()}")


def run_on_target(
    target: str,
    board: str,
    pte: Path | LoadedProgram,
    inputs: list[np.ndarray],
    timeout_s: float = 120.0,
    workdir: Path | None = None,
    **options,
) -> RunReport:
    """Run `pte` on `target` and check it; any failure is one SdkError line with the log path.

    `options` are RunOptions fields (port, baud, tosa_dir, iterations, firmware)."""
    program = pte if isinstance(pte, LoadedProgram) else load_program(pte)
    program.outputs()  # a non-tensor output is a ProgramError before anything else
    spec = load_board(board)
    runner = make_target(target, spec)
    run_options = RunOptions(timeout_s=timeout_s, workdir=workdir, **options)
    return runner.run_program(program, inputs, run_options)
