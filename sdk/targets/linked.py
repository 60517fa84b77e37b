"""Running a program over the host link: what the QEMU and serial targets share.

One code path for an emulated and a real board: the session (sdk.link.session) over a pyserial
URL, the typed record it fills, and the one check (sdk.firmware.records.check_record).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sdk.errors import TargetError
from sdk.firmware.records import FirmwareRecord, check_record
from sdk.link.session import LinkSession
from sdk.program.pte import LoadedProgram
from sdk.targets.base import NpuRun
from sdk.vnpu.executor import VIRTUAL_NPU_EXECUTOR
from sdk.vnpu.virtual import VirtualNpu


def check_kernels(session: LinkSession, program: LoadedProgram) -> None:
    """The firmware must have a kernel for every operator the program calls (said before the
    LOAD, naming what is missing; the firmware would refuse it with OperatorMissing)."""
    info = session.info
    if info is None or info.kernels_total != len(info.kernels):
        return  # the firmware did not list them all: its own load check decides
    missing = sorted(set(program.operators()) - set(info.kernels))
    if missing:
        raise TargetError(
            f"the firmware on {session.port_name} has no kernel for {', '.join(missing)}: "
            f"build one for this program (`sdk build --board {info.board} PROGRAM.pte`) and "
            "flash it"
        )


def run_linked(
    session: LinkSession,
    program: LoadedProgram,
    inputs: list[np.ndarray],
    *,
    iterations: int = 1,
    preloaded: bool = False,
    tosa_dir: Path | None = None,
    npu_executor: str | None = None,
) -> tuple[list[np.ndarray], FirmwareRecord]:
    """Load, set inputs, run, read outputs; the outputs of a passed run, else an SdkError.

    A program with NPU delegates gets a virtual NPU on the host (sdk.vnpu): the firmware uses
    it when its board has no NPU (QEMU); a board with one never asks."""
    program.check_inputs(inputs)
    if not session.connected:
        session.connect()
    check_kernels(session, program)
    session.npu_handler = (
        VirtualNpu(program, tosa_dir, npu_executor=_virtual_npu_executor(npu_executor)).handle
        if program.plan.delegates
        else None
    )
    record = session.run_program(
        program.data,
        inputs,
        [int(t.scalar_type) for t in program.inputs()],
        len(program.outputs()),
        iterations=iterations,
        preloaded=preloaded,
    )
    # The link has no exit status: the record alone decides (exit code 0 stands for "none").
    arrays = check_record(record, 0, session.log.path, expected=program.outputs())
    if program.plan.delegates and not record.result.virtual_npu_ticks:
        stats = session.stats()  # a real NPU ran the delegates: its PMU counted the cycles
        if stats.npu_counters:
            record.npu_cycles = stats.npu_cycles
    return arrays, record


def npu_run_of(
    session: LinkSession, program: LoadedProgram, npu_executor: str | None
) -> NpuRun | None:
    """What ran the program's delegates in `session`'s runs: the host's virtual NPU when it
    served jobs (the delegate bypassed the driver), else the firmware's driver on the target's
    own NPU."""
    if not program.plan.delegates:
        return None
    if session.npu_jobs:
        return NpuRun(_virtual_npu_executor(npu_executor), "none", 0, 0, session.npu_jobs)
    return NpuRun(None, "firmware", None, None, None)


def _virtual_npu_executor(choice: str | None) -> str:
    """The executor the user chose for the virtual NPU, else its default."""
    return choice or VIRTUAL_NPU_EXECUTOR
