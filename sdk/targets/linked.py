"""Running a program over the host link: what the QEMU and serial targets share.

One code path for an emulated and a real board: the session (sdk.link.session) over a pyserial
URL, the typed record it fills, and the one check (sdk.link.record.check_record).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from sdk.errors import TargetError
from sdk.firmware.boards import Board
from sdk.firmware.build import build_firmware
from sdk.firmware.image import pack_program
from sdk.link.record import FirmwareRecord, check_record
from sdk.link.session import LinkSession
from sdk.program.pte import LoadedProgram
from sdk.targets.base import NpuRun, RunOptions, RunReport, Timing
from sdk.targets.emulator import Preload
from sdk.vnpu.executor import VIRTUAL_NPU_EXECUTOR
from sdk.vnpu.u55 import VirtualU55

# Programs larger than this are preloaded into the emulator's program slot (LOAD_SLOT) instead
# of being sent over its emulated UART (QEMU's takes one byte per interrupt: about 17 KiB/s, so
# a 26 KiB program took 1.9 s of a 2.7 s deploy run); smaller ones take LOAD, as over a board's
# port. The rest of the session (INFO, SET_INPUT, RUN, the virtual U55, GET_OUTPUT) is the same.
PRELOAD_PROGRAM_OVER = 16 * 1024


class LinkedEmulator(Protocol):
    """An emulator the host drives over the link (QEMU, the FVP): booted with UART0 on a
    socket and, optionally, files preloaded into memory."""

    name: str
    board: Board

    def session(
        self, elf: Path, workdir: Path, preloads: Sequence[Preload], run_timeout_s: float
    ) -> contextlib.AbstractContextManager[LinkSession]: ...

    def timing(
        self,
        init_ticks: int,
        run_ticks: int,
        reported_hz: int,
        virtual_npu: bool = False,
        npu_cycles: int | None = None,
    ) -> Timing: ...


def run_on_emulator(
    emulator: LinkedEmulator,
    program: LoadedProgram,
    inputs: list[np.ndarray],
    options: RunOptions,
) -> RunReport:
    """Build the firmware (unless given), boot it on `emulator` with UART0 on a socket (a large
    program preloaded into its slot) and run over the link, as on a board."""
    program.check_inputs(inputs)
    workdir = Path(options.workdir or tempfile.mkdtemp(prefix=f"sdk-{emulator.name}-")).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    pte = program.path
    if pte is None:
        pte = workdir / "program.pte"
        pte.write_bytes(program.data)
    elf = options.firmware or build_firmware(
        emulator.board.name, pte, workdir / "executor_runner.elf"
    )
    preloads = []
    preloaded = len(program.data) > PRELOAD_PROGRAM_OVER
    if preloaded:
        blob = workdir / "program.sdkp"
        blob.write_bytes(pack_program(program.data))
        preloads.append(Preload(blob, emulator.board.slots["program"].base))
    with emulator.session(Path(elf), workdir, preloads, options.timeout_s) as session:
        arrays, record = run_linked(
            session,
            program,
            inputs,
            iterations=options.iterations,
            tosa_dir=options.tosa_dir,
            npu_executor=options.npu_executor,
            preloaded=preloaded,
        )
    init_ticks, run_ticks, reported_hz = record.ticks()
    virtual_npu = record.result is not None and record.result.virtual_npu_ticks > 0
    return RunReport(
        target=emulator.name,
        board=emulator.board.name,
        outputs=arrays,
        timing=emulator.timing(
            init_ticks, run_ticks, reported_hz, virtual_npu, npu_cycles=record.npu_cycles
        ),
        memory=record.memory,
        npu_run=npu_run_of(session, program),
        log_path=workdir / "link.log",
    )


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

    The session answers a virtual U55's register exchanges (sdk.vnpu.u55) with a model of the
    firmware's NPU configuration that runs this program's command streams: the firmware's driver
    talks to it when its board has no NPU (QEMU); a board with one never asks."""
    program.check_inputs(inputs)
    if not session.connected:
        session.connect()
    check_kernels(session, program)
    model = virtual_u55_of(session)
    if model is None or model.program is not program:
        assert session.info is not None  # connected
        model = VirtualU55(
            session.info.npu_config,
            program,
            tosa_dir,
            npu_executor=_virtual_npu_executor(npu_executor),
        )
        session.npu_handler = model.handle
    record = session.run_program(
        program.data,
        inputs,
        [int(t.scalar_type) for t in program.inputs()],
        len(program.outputs()),
        iterations=iterations,
        preloaded=preloaded,
    )
    if record.result is not None and not record.result.ok and model.fault:
        reason = f"{record.result.reason}; the host's virtual U55: {model.fault}"
        record.result = dataclasses.replace(record.result, reason=reason)
    arrays = check_record(record, session.log.path, expected=program.outputs())
    if program.plan.delegates and not record.result.virtual_npu_ticks:
        stats = session.stats()  # a real NPU ran the delegates: its PMU counted the cycles
        if stats.npu_counters:
            record.npu_cycles = stats.npu_cycles
    return arrays, record


def virtual_u55_of(session: LinkSession) -> VirtualU55 | None:
    """The virtual U55 answering `session`'s register exchanges, if it has one."""
    model = getattr(session.npu_handler, "__self__", None)
    return model if isinstance(model, VirtualU55) else None


def npu_run_of(session: LinkSession, program: LoadedProgram) -> NpuRun | None:
    """What ran the program's delegates in `session`'s runs: the firmware's driver, on the
    host's virtual U55 when the firmware talked to it (its counts), else on the target's NPU."""
    if not program.plan.delegates:
        return None
    model = virtual_u55_of(session)
    if model is not None and model.register_accesses:
        return NpuRun(
            model.npu_executor, "firmware", model.register_accesses, model.interrupts, model.jobs
        )
    return NpuRun(None, "firmware", None, None, None)


def _virtual_npu_executor(choice: str | None) -> str:
    """The executor the user chose for the virtual NPU, else its default."""
    return choice or VIRTUAL_NPU_EXECUTOR
