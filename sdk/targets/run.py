"""Where a program runs: the one registry of targets (the host reference included), the one
place that knows their names, and one entry.

    report = run_on_target("qemu", "corstone300", Path("model.pte"), [x], 60.0, Path("out/run"))

`make_target` assembles a target from its resources (board.yaml and what the user gave), its
drivers and its strategy (labgrid's shape: sdk.targets.resources, .drivers, .strategy). Each
returns the same typed RunReport; every firmware target runs over the host link.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import Board, load_board
from sdk.link.transport import DEFAULT_BAUD
from sdk.program.pte import LoadedProgram, load_program
from sdk.targets.base import Availability, RunOptions, RunReport, Target
from sdk.targets.drivers import BoardFlash, BootImage, PowerDriver
from sdk.targets.fvp import FvpDriver
from sdk.targets.host import REFERENCE_MODULES, HostStrategy
from sdk.targets.place import LabgridTargetDriver, PlaceDriver
from sdk.targets.qemu import QemuDriver
from sdk.targets.resources import (
    EmulatorBinary,
    FlashMethods,
    HostReference,
    LabgridPlace,
    SerialPort,
)
from sdk.targets.serial import SerialDriver
from sdk.targets.strategy import LinkStrategy


def _emulator(kind: str, power: Callable[[EmulatorBinary], PowerDriver], default_binary: str):
    def make(name: str, board: Board, options: RunOptions | None) -> Target:
        params = board.target(kind)
        resource = EmulatorBinary(
            kind, str(params.get("binary", default_binary)), board, params, params["npu"]
        )
        strategy = LinkStrategy(name, board, power(resource), BootImage())
        return Target(name, board, (resource,), strategy)

    return make


def _flash_methods(board: Board, options: RunOptions | None) -> FlashMethods:
    """The board's flash methods, and where the user said its drive or probe is."""
    if options is None:
        return FlashMethods(tuple(board.flash))
    return FlashMethods(tuple(board.flash), options.drive, options.probe)


def _serial(name: str, board: Board, options: RunOptions | None) -> Target:
    params = board.target("serial")
    port = SerialPort(
        options.port if options else None,
        int(params.get("baud", DEFAULT_BAUD)),
        params["npu"],
    )
    flash = _flash_methods(board, options)
    strategy = LinkStrategy(name, board, SerialDriver(port), BoardFlash(flash, board.name))
    return Target(name, board, (port, flash), strategy)


def _labgrid(name: str, board: Board, options: RunOptions | None) -> Target:
    params = board.target("labgrid")
    place = LabgridPlace(
        options.place if options else None,
        options.coordinator if options else None,
        board.name,
        params,
        params["npu"],
    )
    flash = _flash_methods(board, options)
    lab_target = options.labgrid_target if options else None
    power = PlaceDriver(place) if lab_target is None else LabgridTargetDriver(place, lab_target)
    strategy = LinkStrategy(name, board, power, BoardFlash(flash, board.name))
    return Target(name, board, (place, flash), strategy)


def _host(name: str, board: Board, options: RunOptions | None) -> Target:
    resource = HostReference(REFERENCE_MODULES)
    return Target(name, board, (resource,), HostStrategy(name, board, resource))


TARGETS: dict[str, Callable[[str, Board, RunOptions | None], Target]] = {
    "host": _host,
    "qemu": _emulator("qemu", QemuDriver, "qemu-system-arm"),
    "fvp": _emulator("fvp", FvpDriver, ""),
    "serial": _serial,
    "labgrid": _labgrid,
}
# The target every deploy checks the others against (`sdk doctor` counts it as needed).
REFERENCE_TARGET = "host"
# What `sdk deploy --target` takes: `auto` (AUTO_TARGETS below), or a firmware target.
DEPLOY_TARGETS = ("auto", *(name for name in TARGETS if name != REFERENCE_TARGET))


# `--target auto` (sdk deploy): the first of these the board has and is available here; the
# last the board has is the fallback (QEMU, which any machine can install, NPU delegates on the
# virtual NPU; the FVP on a board no QEMU emulates, such as Corstone-320).
AUTO_TARGETS = ("fvp", "qemu")
# The targets the machine's set-up installs (scripts/bootstrap.sh): `sdk doctor` fails when the
# default target is one of these and missing; an FVP or a board is the user's to provide.
SETUP_TARGETS = ("qemu",)


def make_target(target: str, board: Board, options: RunOptions | None = None) -> Target:
    """The target `target` for `board`; `options` carry what the user gave (--port, --fvp)."""
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; targets: {', '.join(sorted(TARGETS))}")
    return TARGETS[target](target, board, options)


def available_targets(board: Board, options: RunOptions | None = None) -> dict[str, Availability]:
    """Every target's availability for `board` here, in TARGETS order (a target the board
    has no section for is unavailable, saying so)."""
    found = {}
    for name in TARGETS:
        try:
            found[name] = make_target(name, board, options).strategy.availability(options)
        except UsageError as exc:
            found[name] = Availability(False, exc.message)
    return found


def auto_targets(board: Board) -> tuple[str, ...]:
    """The AUTO_TARGETS `board` has (board.yaml targets), in order; none is a UsageError."""
    names = tuple(t for t in AUTO_TARGETS if t in board.targets)
    if not names:
        raise UsageError(
            f"board {board.name} has none of {', '.join(AUTO_TARGETS)} for --target auto; "
            f"give --target ({', '.join(board.targets) or 'none'})"
        )
    return names


def auto_target(found: dict[str, Availability], board: Board | None = None) -> str:
    """What `auto` means given `available_targets(...)`: the first available of AUTO_TARGETS
    (those `board` has), else the last of them (whose availability then says how to install
    it)."""
    names = auto_targets(board) if board is not None else AUTO_TARGETS
    return next((t for t in names if t in found and found[t].available), names[-1])


def require_available(target: Target, options: RunOptions | None = None) -> None:
    """One TargetError line when `target` cannot run here, before anything is read or built."""
    found = target.strategy.availability(options)
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
    run_options = RunOptions(timeout_s=timeout_s, workdir=workdir, **options)
    chosen = make_target(target, load_board(board), run_options)
    return chosen.strategy.run_program(program, inputs, run_options)
