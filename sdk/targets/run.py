"""`run_on_target`: build the firmware for a program, boot it on an emulator, read the result.

    result = run_on_target("qemu", "corstone300", Path("model.pte"), [x], 60.0, Path("out/run"))

The inputs are checked against the program on the host before anything is built or booted.
Targets are looked up in TARGETS by name; nothing here knows a board or an emulator's flags.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdk.errors import UsageError
from sdk.firmware.boards import Board, load_board
from sdk.firmware.build import build_firmware
from sdk.firmware.image import write_blobs
from sdk.firmware.records import check_record, parse_record
from sdk.program.pte import LoadedProgram, TensorInfo, load_program
from sdk.targets.emulator import Preload, Target
from sdk.targets.fvp import FvpTarget
from sdk.targets.qemu import QemuTarget

TARGETS: dict[str, Callable[[Board], Target]] = {
    "qemu": QemuTarget,
    "fvp": FvpTarget,
}


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    init_ticks: int
    run_ticks: int
    tick_hz: int  # as the target clocks the ticks (QEMU: virtual time)
    instructions: int | None  # QEMU with -icount only
    console_log: Path
    memory: dict[str, int]


def make_target(target: str, board: Board) -> Target:
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; targets: {', '.join(sorted(TARGETS))}")
    return TARGETS[target](board)


def run_on_target(
    target: str,
    board: str,
    pte: Path | LoadedProgram,
    inputs: list[np.ndarray],
    timeout_s: float,
    workdir: Path,
) -> RunResult:
    """Build, boot, run and check; any failure is one SdkError line with the log path."""
    program = pte if isinstance(pte, LoadedProgram) else load_program(pte)
    if program.path is None:
        raise UsageError("run_on_target needs the program as a file: the build reads it")
    outputs = program.outputs()  # a non-tensor output is a ProgramError before any build
    spec = load_board(board)
    emulator = make_target(target, spec)
    workdir = Path(workdir)
    program_blob, inputs_blob = write_fitting_blobs(spec, program, inputs, workdir)
    elf = build_firmware(spec.name, program.path, workdir / "executor_runner.elf")
    return run_firmware(
        emulator, spec, elf, program_blob, inputs_blob, timeout_s, workdir, outputs=outputs
    )


def run_built(
    emulator: Target,
    board: Board,
    elf: Path,
    program: LoadedProgram,
    inputs: list[np.ndarray],
    timeout_s: float,
    workdir: Path,
) -> RunResult:
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
            raise UsageError(
                f"the {slot_name} blob ({size} bytes) does not fit board {board.name}'s "
                f"{slot_name} slot ({slot.size} bytes)"
            )
    return blobs


def run_firmware(
    emulator: Target,
    board: Board,
    elf: Path,
    program_blob: Path | None,
    inputs_blob: Path,
    timeout_s: float,
    workdir: Path,
    *,
    outputs: Sequence[TensorInfo],
) -> RunResult:
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
    init_ticks, run_ticks, reported_hz = record.ticks()
    tick_hz = emulator.tick_hz(reported_hz)
    return RunResult(
        outputs=arrays,
        init_ticks=init_ticks,
        run_ticks=run_ticks,
        tick_hz=tick_hz,
        instructions=emulator.instructions(run_ticks, tick_hz),
        console_log=run.console_log,
        memory=record.memory,
    )
