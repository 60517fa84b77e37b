"""What the emulator targets (QEMU, FVP) share: the Target protocol and running one process.

A target boots a firmware ELF with files preloaded at addresses, captures the console into a
log file, and reports the exit status. It never judges the run: sdk.firmware.records does.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sdk.errors import TargetError


@dataclass(frozen=True)
class Preload:
    """A file placed in the target's memory before boot."""

    path: Path
    address: int


@dataclass
class ConsoleRun:
    exit_code: int
    console_log: Path
    console_text: str
    stderr_text: str


class Target(Protocol):
    """An emulator (or board) that can boot a firmware and capture its console."""

    name: str
    propagates_exit_code: bool

    def run(
        self, elf: Path, preloads: list[Preload], timeout_s: float, workdir: Path
    ) -> ConsoleRun: ...

    def tick_hz(self, reported_hz: int) -> int:
        """Ticks per second as this target clocks them (may differ from the board's rate)."""
        ...

    def instructions(self, run_ticks: int, tick_hz: int) -> int | None:
        """Instructions retired in `run_ticks` ticks of `tick_hz` (as tick_hz() gave it), when
        the target counts them; else None."""
        ...


def run_process(command: list[str], timeout_s: float, workdir: Path, what: str) -> ConsoleRun:
    """Run `command` with its stdout as the console log; kill it after `timeout_s`."""
    workdir.mkdir(parents=True, exist_ok=True)
    console_log = workdir / "console.log"
    stderr_log = workdir / "emulator.stderr.log"
    (workdir / "command.txt").write_text(" ".join(command) + "\n")
    with open(console_log, "wb") as out, open(stderr_log, "wb") as err:
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=workdir,
                start_new_session=True,  # its own process group: a timeout kills all of it
            )
        except OSError as exc:
            raise TargetError(f"cannot start {what}: {exc}") from exc
        try:
            exit_code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise TargetError(
                f"timeout after {timeout_s:g} s: {what} did not finish (hung firmware?)",
                log_path=console_log,
            ) from None
    return ConsoleRun(
        exit_code=exit_code,
        console_log=console_log,
        console_text=console_log.read_text(errors="replace"),
        stderr_text=stderr_log.read_text(errors="replace"),
    )
