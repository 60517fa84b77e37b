"""The Arm FVP target (e.g. FVP_Corstone_SSE-300_Ethos-U55), driven by board.yaml.

The FVP is not installable here: users install it themselves. The binary is `--fvp PATH`
(RunOptions.fvp), else $SDK_FVP, else board.yaml's `targets.fvp.binary` on PATH; without it
the target fails with "FVP not installed" and how to install it. `ethosu.num_macs` follows the
MAC count the program's command streams were compiled for (a mismatch would be refused by the
driver's OPTIMIZER_CONFIG check at run time, so it is said before starting). Its NPU is
simulated, so Ethos-U programs run on it. Success is proved by the firmware's own record,
never by the FVP's exit status alone.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np

from sdk.errors import InternalError, ProgramError, TargetError, UsageError
from sdk.firmware.boards import Board
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, Capabilities, RunOptions, RunReport, Timing
from sdk.targets.emulator import ConsoleRun, Preload, run_process

TIMING_SOURCE = "FVP CPU ticks (approximate: the FVP is not cycle-accurate)"
FVP_ENV = "SDK_FVP"


class FvpTarget:
    name = "fvp"
    # The FVP's own exit status does not carry the firmware's semihosting exit code.
    propagates_exit_code = False

    def __init__(self, board: Board, npu_config: str | None = None) -> None:
        self.board = board
        self.config = board.target("fvp")
        # $SDK_FVP, else board.yaml's binary; `--fvp` (RunOptions.fvp) overrides: binary_for.
        self.binary = os.environ.get(FVP_ENV) or str(self.config["binary"])
        self.npu_config = board.npu_config(npu_config)

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
                f"install Arm's Corstone-300 FVP (Arm Ecosystem FVPs), then put "
                f"{self.config['binary']} on PATH, set ${FVP_ENV}, or give --fvp PATH",
            )
        return Availability(True, path)

    def follow_program(self, program: LoadedProgram) -> None:
        """Take the NPU config the program's Ethos-U command streams were compiled for."""
        from sdk.program.audit import read_delegates

        macs = {d.vela.macs_per_cycle for d in read_delegates(program) if d.vela is not None}
        macs.discard(None)
        if not macs:
            return
        if len(macs) > 1:
            raise ProgramError(f"the program's delegates were compiled for {sorted(macs)} MACs")
        (count,) = macs
        wanted = [c for c in self.board.npu_configs if c.endswith(f"-{count}")]
        if not wanted:
            raise UsageError(
                f"the program was compiled for a {count}-MAC NPU; board {self.board.name} has "
                f"{', '.join(self.board.npu_configs)}"
            )
        self.npu_config = wanted[0]

    @property
    def num_macs(self) -> int:
        """MACs per cycle of the configured NPU ("ethos-u55-128" -> 128)."""
        match = re.search(r"-(\d+)$", self.npu_config)
        if match is None:
            raise InternalError(f"NPU config {self.npu_config!r} does not end in a MAC count")
        return int(match.group(1))

    def command(
        self,
        elf: Path,
        preloads: list[Preload],
        workdir: Path,
        console_log: Path,
        timeout_s: float | None = None,
    ) -> list[str]:
        values = {"num_macs": self.num_macs, "workdir": workdir, "console_log": console_log}
        command = [self.binary]
        for key, value in self.config.get("params", {}).items():
            command += ["-C", f"{key}={str(value).format(**values)}"]
        command += ["-a", str(elf)]
        for preload in preloads:
            command += ["--data", f"{preload.path}@0x{preload.address:08x}"]
        if timeout_s is not None:
            command += ["--timelimit", str(int(timeout_s))]
        return command

    def capabilities(self) -> Capabilities:
        return Capabilities(
            preload=True,
            npu=bool(self.config.get("has_npu", False)),
            link=False,
            firmware=True,
        )

    def _require_binary(self) -> None:
        found = self.availability()
        if not found.available:
            raise TargetError(found.describe())

    def timing(self, init_ticks: int, run_ticks: int, reported_hz: int) -> Timing:
        # The FVP's CPU timing is not meaningful (its NPU timing is cycle-approximate).
        return Timing(TIMING_SOURCE, init_ticks, run_ticks, reported_hz)

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        """The preloaded path: program and inputs placed in memory, the record from UART0."""
        from sdk.targets.run import run_preloaded

        self.binary = self.binary_for(options)
        self._require_binary()  # before anything is built
        self.follow_program(program)
        return run_preloaded(self, self.board, program, inputs, options)

    def run(
        self, elf: Path, preloads: list[Preload], timeout_s: float, workdir: Path
    ) -> ConsoleRun:
        self._require_binary()
        uart_log = workdir / "uart0.log"
        command = self.command(elf, preloads, workdir, uart_log, timeout_s)
        run = run_process(command, timeout_s + 10, workdir, self.binary)
        # UART0 goes to its own file: that is the console the record is read from.
        text = uart_log.read_text(errors="replace") if uart_log.is_file() else ""
        return ConsoleRun(run.exit_code, uart_log, text, run.stderr_text)
