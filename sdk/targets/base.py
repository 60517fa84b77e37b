"""What every run target shares: a target (its resources and its strategy), the options of a
run, and the one typed run report every target returns (the host reference included).

Callers hold a Target and use its strategy (`up`, `run_program`, `preflight`, `availability`);
none asks what kind of target it is: the strategy and its drivers behave as theirs must.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from sdk.firmware.boards import Board
from sdk.link.record import MemoryUse, ModelledNpu
from sdk.program.pte import LoadedProgram

# Delegates the host's virtual U55 or U85 ran: timed by its cycle model (sdk.ethosu.cycles), else,
# where the model could not time a job, by nothing.
VIRTUAL_NPU_MODELLED = "virtual NPU PMU (modelled)"
VIRTUAL_NPU_TIMING = "virtual NPU (not timed)"


@dataclass(frozen=True)
class Availability:
    """Whether a target can run on this machine, what was found, and how to get it if not."""

    available: bool
    detail: str  # what was found (the binary and its version, the port) or why not
    install: str = ""  # the command or instructions that make it available (when it is not)

    def describe(self) -> str:
        return f"{self.detail}; {self.install}" if self.install else self.detail


@dataclass(frozen=True)
class RunOptions:
    timeout_s: float = 120.0
    workdir: Path | None = None  # firmware, blobs, logs (None: a temporary folder)
    port: str | None = None  # serial: the pyserial URL
    baud: int | None = None  # None: the board's (board.yaml, a farm exporter's speed)
    use_acquired: bool = False  # labgrid: a place this user holds already is used as it is
    tosa_dir: Path | None = None  # host, virtual NPU: folder of delegate_<i>.tosa
    # host, virtual NPU: one of sdk.reference.executor.NPU_EXECUTORS; None: the host reference
    # runs the TOSA, a virtual NPU the command stream (HOST_REFERENCE_/VIRTUAL_NPU_EXECUTOR)
    npu_executor: str | None = None
    npu_trace: Path | None = None  # host + command-stream: the per-operation trace (JSON)
    iterations: int = 1
    firmware: Path | None = None  # a built ELF to boot instead of building one
    fvp: Path | None = None  # fvp: the simulator's binary
    bundle: Path | None = None  # the .bpte the program came from (emulators preload it whole)
    place: str | None = None  # labgrid: the place (sdk.targets.place)
    coordinator: str | None = None  # labgrid: HOST:PORT (default $LG_COORDINATOR)
    acquire_timeout_s: float | None = None  # labgrid: wait for a held place (default board's)
    # labgrid: a lab environment's target (`pytest --lg-env`: labgrid's `target` fixture),
    # in place of --place
    labgrid_target: object | None = None
    drive: Path | None = None  # a board's flash (mps3-usb): its mounted drive
    probe: str | None = None  # a board's flash (pyocd): the probe's id


@dataclass(frozen=True)
class Timing:
    """How long the run took, labelled by where the figure comes from (never mixed up)."""

    source: str  # e.g. "QEMU instruction count", "board ticks", "not timed"
    init_ticks: int | None = None
    run_ticks: int | None = None  # one execute(); the mean when several iterations ran
    tick_hz: int | None = None
    instructions: int | None = None  # QEMU -icount only
    # Delegates ran on the host's virtual NPU: the host's time is in none of the figures
    # above; their NPU time is the cycle model's (`npu_modelled`), never a measurement.
    virtual_npu: bool = False
    npu_cycles: int | None = None  # the NPU's own PMU count (a board over the link), measured
    npu_modelled: ModelledNpu | None = None  # the virtual U55's modelled cycles

    def describe(self) -> str:
        if self.instructions is not None:
            text = f"{self.instructions} instructions ({self.source}: retired, not cycles)"
        elif self.run_ticks is not None and self.tick_hz:
            text = f"{self.run_ticks} ticks at {self.tick_hz} Hz ({self.source})"
        else:
            text = self.source
        if self.npu_modelled is not None:
            npu = f"{self.npu_modelled.cycles} cycles ({VIRTUAL_NPU_MODELLED})"
            if not self.npu_modelled.complete:
                npu += f", some {VIRTUAL_NPU_TIMING}"
            text += f" on the CPU; NPU delegates: {npu}"
        elif self.virtual_npu:
            text += f" on the CPU; NPU delegates: {VIRTUAL_NPU_TIMING}"
        return text


@dataclass(frozen=True)
class NpuRun:
    """What ran a program's NPU delegates, as the deploy report states it (`npu_run`).

    `driver`: "firmware" when the firmware's Ethos-U driver programmed the NPU: the target's
    own (the FVP, a board), or the host's virtual NPU (U55 or U85, `npu`) on a board without
    one (QEMU, the FVP stand-in), which then counts the driver's register accesses, the
    interrupts it raised and the jobs it ran. `executor`: what ran the virtual NPU's jobs on
    the host (sdk.reference.executor.NPU_EXECUTORS), None for a real NPU. Counts a target
    does not report are None."""

    executor: str | None
    driver: str
    register_accesses: int | None
    interrupts: int | None
    jobs: int | None
    npu: str = "Ethos-U55"  # the NPU the driver drove (its layout): Ethos-U55 or Ethos-U85
    npu_config: str | None = None  # the virtual NPU's configuration (None: the target's NPU)
    # The ports' speeds the firmware set in the board's timing adapters, which the virtual NPU
    # timed the jobs at: port -> bytes_per_cycle, read_latency, write_latency (None: not set).
    port_timings: dict[str, dict[str, float]] | None = None

    def to_json(self) -> dict:
        return {
            "executor": self.executor,
            "driver": self.driver,
            "register_accesses": self.register_accesses,
            "interrupts": self.interrupts,
            "jobs": self.jobs,
            "npu": self.npu,
            "npu_config": self.npu_config,
            "port_timings": self.port_timings,
        }

    def describe(self) -> str:
        if self.executor is not None:
            return (
                f"{self.npu} driver ({self.driver}) on a virtual {self.npu.removeprefix('Ethos-')} "
                f"({self.executor.replace('-', ' ')}): "
                f"{self.jobs} job(s), {self.register_accesses} register accesses, "
                f"{self.interrupts} interrupt(s)"
            )
        return f"{self.npu} driver (firmware) on the target's NPU"

    def describe_ports(self) -> str | None:
        """The timing adapters' setting the jobs ran at, e.g. "axi0 8 B/cycle (latency
        32/32), axi1 1 B/cycle (64/0)"; None when the firmware set none."""
        if not self.port_timings:
            return None
        return ", ".join(
            f"{port} {t['bytes_per_cycle']:g} B/cycle (latency {t['read_latency']:g}/"
            f"{t['write_latency']:g})"
            for port, t in sorted(self.port_timings.items())
        )


@dataclass
class RunReport:
    """The outputs of a passed run and what the target said about it."""

    target: str
    board: str | None
    outputs: list[np.ndarray]
    timing: Timing
    memory: MemoryUse | None = None
    log_path: Path | None = None  # the console / link log
    npu_run: NpuRun | None = None  # None: the program has no NPU delegate
    # A board's: which place ran it and whether its firmware was kept or flashed again
    # (sdk.targets.strategy.BoardUse.to_json); None on an emulator or the reference.
    board_use: dict | None = None

    def where(self) -> str:
        """Where it ran, for a summary line (the reference runs on no board)."""
        return f"{self.target} ({self.board})" if self.board else "the host reference"


class Running(Protocol):
    """A target brought up (firmware running, or the host reference ready)."""

    def run(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        """Run and check (the firmware's own record decides); any failure is an SdkError."""
        ...

    def profile(self, program: LoadedProgram) -> object | None:
        """The last run's sdk.evaluation.profile.Profile (None where nothing is timed)."""
        ...

    def watch_transfers(self, progress: Callable[[str, int, int, float], None]) -> None:
        """Have `progress(what, done, total, expected_s)` hear of each large transfer over a
        serial line (sdk.link.session.TransferProgress); nothing where none is slow."""
        ...


class Strategy(Protocol):
    """Brings a target from off to running and runs programs (sdk.targets.strategy)."""

    name: str
    npu: str | None  # what executes NPU delegates (None: the host's virtual U55, or the reference)
    without_image: str  # why image() gives None (a board keeps its firmware, the reference none)

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Can it run here (binary installed, port open)? Cheap, nothing built or booted;
        `options` carry what the user gave (`fvp`, `port`)."""
        ...

    def preflight(self, options: RunOptions) -> None:
        """What makes a run with `options` impossible, said before anything is built."""
        ...

    def image(self, options: RunOptions, build: Callable[[], Path]) -> Path | None:
        """The firmware a run boots (options.firmware, else `build()` where one is booted)."""
        ...

    def up(
        self,
        options: RunOptions,
        program: LoadedProgram | None = None,
        preloads: Sequence = (),
        inputs: Sequence[np.ndarray] | None = None,
    ) -> contextlib.AbstractContextManager[Running]:
        """The target up for `program` (its first run's `inputs` preloaded where it can)."""
        ...

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport: ...


@dataclass(frozen=True)
class Target:
    """A target: what it is made of (sdk.targets.resources) and how it is brought up."""

    name: str
    board: Board
    resources: tuple[object, ...]
    strategy: Strategy

    @property
    def npu(self) -> str | None:
        """What executes NPU delegates on it (None: the host's virtual U55, or the
        reference); a farm's place says so once it is acquired."""
        return self.strategy.npu

    def describe(self) -> str:
        return f"{self.name} ({self.board.name})"
