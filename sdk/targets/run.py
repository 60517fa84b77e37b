"""Where a program runs: one registry of targets (the host reference included) and one entry.

    report = run_on_target("qemu", "corstone300", Path("model.pte"), [x], 60.0, Path("out/run"))

Each target declares what it can do (`capabilities()`: preload, NPU, link) and
returns the same typed RunReport; nothing here knows a board or an emulator's flags. Every
firmware target runs over the host link (sdk.targets.linked); the preloaded fast path
(`run_firmware`, `run_built`: blobs placed in memory, the text record) is QEMU's way to boot
one firmware with many programs (the kernel tests and benchmarks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sdk.errors import ResourceError, TargetError, UsageError
from sdk.firmware.boards import Board, load_board
from sdk.firmware.image import write_blobs
from sdk.firmware.records import check_record, parse_record
from sdk.program.pte import LoadedProgram, TensorInfo, load_program
from sdk.targets.base import Availability, RunOptions, RunReport, Target
from sdk.targets.emulator import Emulator, Preload
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


def run_built(
    emulator: Emulator,
    board: Board,
    elf: Path,
    program: LoadedProgram,
    inputs: list[np.ndarray],
    timeout_s: float,
    workdir: Path,
) -> RunReport:
    """Boot an already built firmware with `program` and `inputs` preloaded, and check."""
    program_blob, inputs_blob = write_fitting_blobs(board, program, inputs, workdir)
    return run_firmware(
        emulator, board, elf, program_blob, inputs_blob, timeout_s, workdir,
        outputs=program.outputs(),
    )  # fmt: skip


def write_fitting_blobs(
    board: Board, program: LoadedProgram, inputs: list[np.ndarray], workdir: Path
) -> tuple[Path, Path]:
    """program.sdkp and inputs.sdki in `workdir` (the inputs are checked against the program
    before anything is written), each checked to fit its slot of the board."""
    blobs = write_blobs(program, inputs, workdir)
    for slot_name, blob in zip(("program", "inputs"), blobs, strict=True):
        slot = board.slots[slot_name]
        size = blob.stat().st_size
        if size > slot.size:
            raise ResourceError(
                f"the {slot_name} blob ({size} bytes) does not fit board {board.name}'s "
                f"{slot_name} slot ({slot.size} bytes)"
            )
    return blobs


def run_firmware(
    emulator: Emulator,
    board: Board,
    elf: Path,
    program_blob: Path | None,
    inputs_blob: Path,
    timeout_s: float,
    workdir: Path,
    *,
    outputs: Sequence[TensorInfo],
) -> RunReport:
    """Boot a built firmware with the blobs preloaded and check its record.

    `outputs` are the outputs of the program the firmware runs (`load_program(pte).outputs()`,
    whether preloaded or embedded): the outputs reported must be these in count, dtype and
    shape, since the CRC covers only the data. Without exit-code propagation (the FVP, a board)
    the record alone decides.
    """
    # Absolute paths: the emulator runs in `workdir`.
    workdir = Path(workdir).resolve()
    elf = Path(elf).resolve()
    preloads = [Preload(Path(inputs_blob).resolve(), board.slots["inputs"].base)]
    if program_blob is not None:
        preloads.insert(0, Preload(Path(program_blob).resolve(), board.slots["program"].base))
    run = emulator.run(elf, preloads, timeout_s, workdir)
    record = parse_record(run.console_text)
    # Where the exit status does not come through, the record alone decides (check_record
    # refuses any record that is not a whole, good one before it looks at the status).
    exit_code = run.exit_code if emulator.propagates_exit_code else 0
    arrays = check_record(record, exit_code, run.console_log, expected=outputs)
    return RunReport(
        target=emulator.name,
        board=board.name,
        outputs=arrays,
        timing=emulator.timing(*record.ticks()),
        memory=record.memory,
        log_path=run.console_log,
    )
