"""Running a program over the host link: what every firmware target shares (the strategy,
sdk.targets.strategy, brings the target up; this runs a program on its session).

One code path for an emulated and a real board: the session (sdk.link.session) over a pyserial
URL, the typed record it fills, and the one check (sdk.link.record.check_record).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from sdk.errors import SdkError, TargetError
from sdk.ethosu.device import U55, U85, NpuJob, VirtualNpu, VirtualU55, VirtualU85, layout_of
from sdk.ethosu.memories import adapter_timing
from sdk.firmware.boards import load_board
from sdk.link.protocol import Info, Stats
from sdk.link.record import DelegateCycles, FirmwareRecord, ModelledNpu, check_record
from sdk.link.session import LinkSession
from sdk.program.layout import program_inputs, program_outputs
from sdk.program.pte import LoadedProgram
from sdk.reference.executor import VIRTUAL_NPU_EXECUTOR
from sdk.targets.base import NpuRun


def missing_kernels(info: Info | None, program: LoadedProgram) -> list[str] | None:
    """The operators `program` calls that the firmware (its INFO) has no kernel for; None
    when the firmware did not list them all."""
    if info is None or info.kernels_total != len(info.kernels):
        return None
    return sorted(set(program.operators()) - set(info.kernels))


def program_ops(program: LoadedProgram) -> str:
    """`program`'s CPU operators, for a report line."""
    return ", ".join(sorted(set(program.operators()))) or "none"


def check_kernels(session: LinkSession, program: LoadedProgram) -> None:
    """The firmware must have a kernel for every operator the program calls (said before the
    LOAD, naming what is missing; the firmware would refuse it with OperatorMissing)."""
    info = session.info
    missing = missing_kernels(info, program)  # None: its own load check decides
    if missing:
        assert info is not None
        raise TargetError(
            f"the firmware on {session.port_name} has no kernel for {', '.join(missing)}: "
            f"build one for this program (`sdk build --board {info.board} PROGRAM.pte`) and "
            "flash it (`sdk flash`); on a farm's place with a power switch, --drive/--probe let "
            "the host flash a firmware with every kernel itself"
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

    The session answers a virtual NPU's register exchanges (sdk.ethosu.device) with a model of
    the firmware's NPU configuration that runs this program's command streams (a U55 or a
    U85, as that configuration names): the firmware's driver talks to it when its board has
    no NPU (QEMU, the FVP stand-in); a board with one never asks."""
    program.check_inputs(inputs)
    if not session.connected:
        session.connect()
    check_kernels(session, program)
    model = virtual_npu_of(session)
    if model is None or model.program is not program:
        assert session.info is not None  # connected
        model = next_virtual_npu(model, session.info, program, tosa_dir, npu_executor)
        session.npu_device = model
    mark, loads = len(model.job_log), session.loads
    record = session.run_program(
        program.data,
        program_inputs(program, inputs),  # the bytes in the program's dim order
        [int(t.scalar_type) for t in program.inputs()],
        len(program.outputs()),
        iterations=iterations,
        preloaded=preloaded,
        output_nbytes=[t.nbytes for t in program.outputs()],
    )
    if record.result is not None and not record.result.ok and model.fault:
        reason = f"{record.result.reason}; the host's {model.name}: {model.fault}"
        record.result = dataclasses.replace(record.result, reason=reason)
    if session.loads != loads:  # the firmware's STATS count from this LOAD on
        model.jobs_at_load = mark
    arrays = program_outputs(
        program, check_record(record, session.log.path, expected=program.outputs())
    )
    if program.plan.delegates:
        stats = session.stats()  # the driver's PMCCNTR reads, summed since the LOAD
        if len(model.job_log) > mark:  # the host's virtual NPU ran them: modelled
            record.npu_modelled = modelled_npu(model, mark, iterations, stats)
        elif not record.result.virtual_npu_ticks and stats.npu_counters:
            record.npu_cycles = stats.npu_cycles  # a real NPU ran them: measured
    return arrays, record


def modelled_npu(model: VirtualNpu, mark: int, iterations: int, stats: Stats) -> ModelledNpu:
    """The run's jobs (job_log from `mark`) per delegate and per inference, beside the
    firmware's STATS and the jobs since its LOAD that STATS counted."""
    run = max(iterations, 1)
    per_delegate: dict[int, list[NpuJob]] = {}
    for job in model.job_log[mark:]:
        per_delegate.setdefault(job.delegate, []).append(job)

    def mean(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return round(sum(known) / run) if len(known) == len(values) else None

    delegates = tuple(
        DelegateCycles(
            index,
            mean([j.cycles for j in jobs]),
            mean([j.macs for j in jobs]),
            mean([j.memory_bound_cycles for j in jobs]),
            next((j.timing_error for j in jobs if j.timing_error), None),
        )
        for index, jobs in sorted(per_delegate.items())
    )
    since_load = sum(job.cycles or 0 for job in model.job_log[model.jobs_at_load :])
    return ModelledNpu(delegates, stats.npu_cycles, stats.runs, since_load)


def next_virtual_npu(
    previous: VirtualNpu | None,
    info: Info,
    program: LoadedProgram,
    tosa_dir: Path | None,
    npu_executor: str | None,
) -> VirtualNpu:
    """The virtual NPU of the firmware's NPU configuration (its INFO) for `program`. The
    board's timing adapters keep what the previous program's jobs left in them: they are the
    board's, a LOAD does not reset them, and the firmware writes them only when its setting
    changes."""
    model = _virtual_npu_class(info.npu_config)(
        info.npu_config,
        program,
        tosa_dir,
        npu_executor=_virtual_npu_executor(npu_executor),
        adapters=board_adapters(info.board),
    )
    if previous is not None:
        model.adapter_values = {p: dict(v) for p, v in previous.adapter_values.items()}
    return model


def board_adapters(board: str) -> dict[int, tuple[str, str]]:
    """The timing adapters of the firmware's board (its INFO names it) as its driver reaches
    them, for the virtual NPU to take their writes; none for a board the SDK does not know
    (the host build's) or one without adapters."""
    try:
        described = load_board(board)
    except SdkError:
        return {}
    memories = described.npu_memories
    return memories.adapter_registers_at(described.npu_base) if memories is not None else {}


def virtual_npu_of(session: LinkSession) -> VirtualNpu | None:
    """The virtual NPU answering `session`'s register exchanges, if it has one."""
    device = session.npu_device
    return device if isinstance(device, VirtualNpu) else None


def _virtual_npu_class(npu_config: str) -> type[VirtualNpu]:
    """The virtual NPU of the firmware's NPU configuration (its INFO's `npu_config`, one of
    its board's: board.yaml npu.kind decides U55 or U85). Named here at call time so a test
    may replace either class."""
    return VirtualU85 if layout_of(npu_config) is U85 else VirtualU55


def npu_run_of(session: LinkSession, program: LoadedProgram) -> NpuRun | None:
    """What ran the program's delegates in `session`'s runs: the firmware's driver, on the
    host's virtual NPU when the firmware talked to it (its counts), else on the target's NPU."""
    if not program.plan.delegates:
        return None
    model = virtual_npu_of(session)
    if model is not None and model.register_accesses:
        return NpuRun(
            model.npu_executor,
            "firmware",
            model.register_accesses,
            model.interrupts,
            model.jobs,
            npu=model.layout.product,
            npu_config=model.npu_config,
            port_timings=port_timings(model) or None,
        )
    info = session.info
    npu = layout_of(info.npu_config).product if info is not None else U55.product
    return NpuRun(None, "firmware", None, None, None, npu=npu)


def port_timings(model: VirtualNpu) -> dict[str, dict[str, float]]:
    """The port speeds the firmware set in the board's timing adapters (what the virtual NPU
    timed the jobs at), per port."""
    keys = ("bytes_per_cycle", "read_latency", "write_latency")
    return {
        port: dict(zip(keys, adapter_timing(values), strict=True))
        for port, values in sorted(model.adapter_values.items())
    }


def _virtual_npu_executor(choice: str | None) -> str:
    """The executor the user chose for the virtual NPU, else its default."""
    return choice or VIRTUAL_NPU_EXECUTOR
