"""The Arm FVP (FVP_Corstone_SSE-300_Ethos-U55, FVP_Corstone_SSE-320) as a board's power and
console, driven by board.yaml (a power driver, sdk.targets.drivers): its parameters are data
(board.yaml `targets.fvp.params`), so the SSE-320's `mps4_board.subsystem.*` names are the
Corstone-320 board's, nothing here.

The FVP is not installable here: users install it themselves. The binary is `--fvp PATH`
(RunOptions.fvp), else $SDK_FVP, else board.yaml's `targets.fvp.binary` on PATH; without it
the target fails with "FVP not installed" and how to install it. `ethosu.num_macs` follows the
MAC count the program's command streams were compiled for (a mismatch would be refused by the
driver's OPTIMIZER_CONFIG check at run time, so it is said before starting). Its NPU is
simulated, so Ethos-U programs run on it.

UART0 is the FVP's telnet terminal 0 in raw mode, a TCP port the FVP picks (the first free one
at or above `start_port`) and announces on its output (board.yaml `uart_announce`); a large
program is preloaded with `--data` (LOAD_SLOT). The run passes on the link's records alone,
never on the FVP's exit status.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from sdk.errors import InternalError, ProgramError, TargetError, UsageError
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions, Timing
from sdk.targets.drivers import Console
from sdk.targets.emulator import (
    AnnouncedLinkProcess,
    Preload,
    explain_exit,
    input_preloads,
    program_preloads,
)
from sdk.targets.resources import EmulatorBinary

TIMING_SOURCE = "FVP CPU ticks (approximate: the FVP is not cycle-accurate)"
STAND_IN_TIMING = (
    "not the board's time: the firmware counts at {hz} Hz, not the board's SysTick "
    "({board_hz} Hz): a stand-in for the FVP (the host build's link server) ran it"
)
FVP_ENV = "SDK_FVP"
# From start to the UART's port announcement (an FVP may check its licence first).
START_TIMEOUT_S = 60.0


def compiled_config(config_word: int) -> str:
    """The NPU config a command stream's OPTIMIZER_CONFIG word names ("ethos-u85-128"): its
    product (bits 31:28) and log2 of its MACs (bits 3:0)."""
    from sdk.ethosu.stream.decode import PRODUCTS

    name = PRODUCTS.get(config_word >> 28, f"npu-product-{config_word >> 28}")
    return f"{name.lower()}-{1 << (config_word & 0xF)}"


class FvpDriver:
    """Power and console of a board simulated by an Arm FVP."""

    def __init__(self, resource: EmulatorBinary, npu_config: str | None = None) -> None:
        self.resource = resource
        self.board = resource.board
        self.npu = resource.npu
        self.config = resource.params
        # $SDK_FVP, else board.yaml's binary; `--fvp` (RunOptions.fvp) overrides: binary_for.
        self.binary = os.environ.get(FVP_ENV) or resource.binary
        self.npu_config = self.board.npu_config(npu_config)
        self.running_config: str | None = None  # while an FVP this driver started runs

    def binary_for(self, options: RunOptions | None) -> str:
        """The FVP binary a run with `options` uses: --fvp PATH, else $SDK_FVP / board.yaml."""
        if options is not None and options.fvp is not None:
            return str(options.fvp)
        return self.binary

    def availability(self, options: RunOptions | None = None) -> Availability:
        """The binary a run would use (binary_for), found as an executable (not started:
        an FVP may take a licence check or seconds to come up)."""
        binary = self.binary_for(options)
        path = shutil.which(binary)
        if path is None:
            return Availability(
                False,
                f"FVP not installed: {binary} not found",
                f"install Arm's {self.config['binary']} (Arm Ecosystem FVPs), then put it "
                f"on PATH, set ${FVP_ENV}, or give --fvp PATH",
            )
        return Availability(True, path)

    def follow(self, program: LoadedProgram) -> None:
        """Take the NPU config the program's Ethos-U command streams were compiled for (their
        OPTIMIZER_CONFIG: the product and the MAC count); one the board does not have, or an
        FVP already running with another, is a UsageError (its MAC count is set at start)."""
        from sdk.program.audit import read_delegates

        configs = {
            compiled_config(d.vela.npu_config)
            for d in read_delegates(program)
            if d.vela is not None and d.vela.npu_config is not None
        }
        if not configs:
            return
        if len(configs) > 1:
            raise ProgramError(f"the program's delegates were compiled for {sorted(configs)}")
        (wanted,) = configs
        if wanted not in self.board.npu_configs:
            raise UsageError(
                f"the program was compiled for {wanted}; board {self.board.name} has "
                f"{', '.join(self.board.npu_configs)}"
            )
        if self.running_config is not None and wanted != self.running_config:
            raise UsageError(
                f"the FVP runs {self.running_config}; the program was compiled for {wanted}: "
                "run it on an FVP started for it (a run of its own)"
            )
        self.npu_config = wanted

    @property
    def num_macs(self) -> int:
        """MACs per cycle of the configured NPU ("ethos-u55-128" -> 128)."""
        match = re.search(r"-(\d+)$", self.npu_config)
        if match is None:
            raise InternalError(f"NPU config {self.npu_config!r} does not end in a MAC count")
        return int(match.group(1))

    def command(
        self, elf: Path, preloads: Sequence[Preload], workdir: Path, console_log: Path
    ) -> list[str]:
        values = {"num_macs": self.num_macs, "workdir": workdir, "console_log": console_log}
        command = [self.binary]
        for key, value in self.config.get("params", {}).items():
            command += ["-C", f"{key}={str(value).format(**values)}"]
        command += ["-a", str(elf)]
        for preload in preloads:
            command += ["--data", f"{preload.path}@0x{preload.address:08x}"]
        return command

    def _require_binary(self) -> None:
        found = self.availability()
        if not found.available:
            raise TargetError(found.describe())

    def timing(
        self,
        init_ticks: int,
        run_ticks: int,
        reported_hz: int,
        virtual_npu: bool = False,
        npu_cycles: int | None = None,
    ) -> Timing:
        # The FVP's CPU timing is not meaningful (its NPU timing is cycle-approximate). A
        # firmware counting at another rate than the board's SysTick is not the board's image
        # running on an FVP (a stand-in serving the link from the host build: nanoseconds of
        # the host), and the report says so instead of calling them the FVP's ticks.
        source = TIMING_SOURCE
        if reported_hz != self.board.tick_hz:
            source = STAND_IN_TIMING.format(hz=reported_hz, board_hz=self.board.tick_hz)
        return Timing(
            source, init_ticks, run_ticks, reported_hz, virtual_npu=virtual_npu,
            npu_cycles=npu_cycles,
        )  # fmt: skip

    def preflight(self, options: RunOptions) -> None:
        self.binary = self.binary_for(options)
        self._require_binary()

    def preloads(self, program: LoadedProgram, workdir: Path, options: RunOptions) -> list[Preload]:
        return program_preloads(self.resource, program, workdir, options.bundle)

    def input_preloads(self, inputs, workdir: Path):
        return input_preloads(self.resource, inputs, workdir)

    @contextlib.contextmanager
    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> Iterator[Console]:
        """The FVP booted with `image`; its UART0's announced port is the console. The FVP is
        stopped when the block ends."""
        if image is None:
            raise TargetError("the FVP boots a firmware image: none was given or built")
        self.preflight(options)
        workdir = workdir.resolve()
        console_log = workdir / "uart0.log"
        command = self.command(Path(image).resolve(), list(preloads), workdir, console_log)
        announce = re.compile(str(self.config["uart_announce"]))
        with AnnouncedLinkProcess(
            command, workdir, self.binary, announce, START_TIMEOUT_S, console_log
        ) as fvp:
            self.running_config = self.npu_config
            try:
                yield Console(
                    fvp.url,
                    options.baud,
                    console_log,
                    lambda exc: explain_exit(fvp, exc),
                    files=workdir,  # cpu0.semihosting-cwd
                )
            finally:
                self.running_config = None
