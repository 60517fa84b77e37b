"""The QEMU target: boot the firmware on `qemu-system-arm` as the board's emulator.

Everything QEMU-specific about a board is in board.yaml (`targets.qemu`: binary, machine, args,
tick rate); this module only assembles the command line and interprets QEMU's own failures.
"""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from sdk.errors import TargetError
from sdk.firmware.boards import Board
from sdk.targets.emulator import ConsoleRun, Preload, run_process


class QemuTarget:
    name = "qemu"
    # Semihosting SYS_EXIT_EXTENDED makes QEMU exit with the firmware's code.
    propagates_exit_code = True

    def __init__(self, board: Board) -> None:
        self.board = board
        self.config = board.target("qemu")
        self.binary = str(self.config.get("binary", "qemu-system-arm"))
        self.machine = str(self.config["machine"])
        self.args = [str(a) for a in self.config.get("args", [])]

    def command(self, elf: Path, preloads: list[Preload]) -> list[str]:
        command = [self.binary, "-M", self.machine, *self.args, "-kernel", str(elf)]
        for preload in preloads:
            command += [
                "-device",
                f"loader,file={preload.path},addr=0x{preload.address:08x},force-raw=on",
            ]
        return command

    @property
    def counts_instructions(self) -> bool:
        return "-icount" in self.args

    def tick_hz(self, reported_hz: int) -> int:
        return int(self.config.get("tick_hz", reported_hz))

    def instructions(self, run_ticks: int, tick_hz: int) -> int | None:
        """With -icount, virtual time is proportional to instructions: convert the ticks."""
        per_second = self.config.get("instructions_per_second")
        if not self.counts_instructions or not per_second:
            return None
        return round(run_ticks * int(per_second) / tick_hz)

    def run(
        self, elf: Path, preloads: list[Preload], timeout_s: float, workdir: Path
    ) -> ConsoleRun:
        if shutil.which(self.binary) is None:
            raise TargetError(f"{self.binary} not found on PATH (install qemu-system-arm)")
        run = run_process(self.command(elf, preloads), timeout_s, workdir, f"{self.binary}")
        check_qemu_exit(run)
        return run


def check_qemu_exit(run: ConsoleRun) -> None:
    """QEMU's own failures (as opposed to the firmware's exit code) become TargetErrors."""
    if run.exit_code < 0:
        if "Lockup" in run.stderr_text:
            raise TargetError(
                "the CPU locked up (a fault while handling a fault, or no semihosting)",
                log_path=run.console_log,
            )
        name = signal.Signals(-run.exit_code).name
        raise TargetError(f"qemu died from {name}", log_path=run.console_log)
    if "@sdk begin" not in run.console_text and run.stderr_text.strip():
        first = run.stderr_text.strip().splitlines()[0]
        raise TargetError(f"qemu failed: {first}", log_path=run.console_log)
