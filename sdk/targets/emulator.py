"""What the emulators (QEMU, FVP) share: running their process with the console UART on a
TCP socket for the host link, files preloaded at addresses.

QEMU takes the socket from us (`LinkProcess`); the FVP opens its own and announces the port
(`AnnouncedLinkProcess`). Neither judges the run: sdk.link.record.check_record does.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from sdk.errors import TargetError
from sdk.firmware.image import pack_program
from sdk.link.bigio import SlotInput, slot_inputs_blob
from sdk.program.pte import LoadedProgram
from sdk.targets.resources import EmulatorBinary


@dataclass(frozen=True)
class Preload:
    """A file placed in the target's memory before boot."""

    path: Path
    address: int


# Programs larger than this are preloaded into the FVP's program slot (LOAD_SLOT) instead of
# being sent over its UART; smaller ones take LOAD, as over a board's port. QEMU preloads every
# program (`over=0`): its UART takes one byte per interrupt, about 15 KiB/s of QEMU's whole
# attention, so a 4 KiB program was half of a 0.7 s run (LOAD over QEMU's UART is the link
# tests' to prove). The rest of the session (INFO, SET_INPUT, RUN, the virtual U55,
# GET_OUTPUT) is the same either way.
PRELOAD_PROGRAM_OVER = 16 * 1024


def program_preloads(
    emulator: EmulatorBinary,
    program: LoadedProgram,
    workdir: Path,
    bundle: Path | None = None,
    over: int = PRELOAD_PROGRAM_OVER,
) -> list[Preload]:
    """A blob for the board's program slot (LOAD_SLOT): the `bundle` the program came from
    (a .bpte: the firmware takes its program in place), else a program over `over` bytes."""
    if bundle is None and len(program.data) <= over:
        return []
    blob = workdir / "program.sdkp"
    blob.write_bytes(pack_program(bundle.read_bytes() if bundle else program.data))
    return [Preload(blob, emulator.board.slots["program"].base)]


def input_preloads(
    emulator: EmulatorBinary, inputs: Sequence[np.ndarray], workdir: Path
) -> tuple[list[Preload], dict[int, SlotInput]]:
    """The run's inputs for the board's inputs slot (docs/link.md "Large inputs and outputs"):
    the blob to preload there and the inputs SET_INPUT_SLOT takes from it (those over
    BIG_IO_OVER bytes); nothing when none is that large."""
    slot = emulator.board.slots["inputs"]
    blob, slots = slot_inputs_blob(inputs, slot.size)
    if not slots:
        return [], {}
    path = workdir / "inputs.bin"
    path.write_bytes(blob)
    return [Preload(path, slot.base)], slots


_Process = TypeVar("_Process", bound="_EmulatorProcess")


class _EmulatorProcess:
    """What both link processes share: `process`, `what`, `stderr_log`, the end and the log."""

    process: subprocess.Popen
    what: str
    stderr_log: Path
    exit_code: int | None = None

    def __enter__(self: _Process) -> _Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> int:
        """End the emulator (it serves the link for ever) and return its exit status."""
        if self.exit_code is None:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
            self.exit_code = self.process.wait()
        return self.exit_code

    def stderr_text(self) -> str:
        return self.stderr_log.read_text(errors="replace") if self.stderr_log.is_file() else ""


class LinkProcess(_EmulatorProcess):
    """An emulator whose console UART is a TCP socket, for the host link.

    The listening socket is made here and handed to the emulator as a file descriptor
    (`{fd}` in its command), so there is no port race and no wait for it to start listening:
    `url` can be opened at once (the emulator waits for it: `wait=on`). `{console_log}` in the
    command names a file for the emulator's own copy of the UART's output (`console_log`)."""

    def __init__(self, command: list[str], workdir: Path, what: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.what = what
        self.workdir = workdir
        self.stderr_log = workdir / "emulator.stderr.log"
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        fd = self.listener.fileno()
        self.url = f"socket://127.0.0.1:{self.listener.getsockname()[1]}"
        self.console_log = workdir.resolve() / "uart.log"
        self.command = [
            arg.replace("{fd}", str(fd)).replace("{console_log}", str(self.console_log))
            for arg in command
        ]
        try:
            (workdir / "command.txt").write_text(" ".join(self.command) + "\n")
            err = open(self.stderr_log, "wb")  # noqa: SIM115 (closed below)
        except OSError:
            self.listener.close()
            raise
        with err:
            try:
                self.process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=err,
                    stderr=subprocess.STDOUT,
                    cwd=workdir,
                    pass_fds=[fd],
                    start_new_session=True,
                )
            except OSError as exc:
                self.listener.close()
                raise TargetError(f"cannot start {what}: {exc}") from exc
        self.listener.close()  # the emulator holds its own copy


class AnnouncedLinkProcess(_EmulatorProcess):
    """An emulator that opens its UART's TCP port itself and says which on its output (the
    FVP: "telnetterminal0: Listening for serial connection on port N", the first free port at
    or above the one asked for). `url` is known once that line came; its output goes on to
    `stderr_log`. `console_log`: where the command has the emulator copy the UART's output."""

    def __init__(
        self,
        command: list[str],
        workdir: Path,
        what: str,
        announce: re.Pattern,
        timeout_s: float,
        console_log: Path,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.what = what
        self.stderr_log = workdir / "emulator.stderr.log"
        self.console_log = console_log
        self.command = command
        (workdir / "command.txt").write_text(" ".join(self.command) + "\n")
        self._log = open(self.stderr_log, "wb")  # noqa: SIM115 (closed by the copy thread)
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                start_new_session=True,
            )
        except OSError as exc:
            self._log.close()
            raise TargetError(f"cannot start {what}: {exc}") from exc
        try:
            port = self._await_port(announce, timeout_s)
        except BaseException:
            self.stop()
            self._log.close()
            raise
        self.url = f"socket://127.0.0.1:{port}"
        threading.Thread(target=self._copy_output, daemon=True).start()

    def _await_port(self, announce: re.Pattern, timeout_s: float) -> int:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        pending = b""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TargetError(
                    f"{self.what} did not say which port its UART listens on within "
                    f"{timeout_s:g} s",
                    log_path=self.stderr_log,
                )
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self._log.flush()
                code = self.process.wait()
                raise TargetError(
                    f"{self.what} exited with {code} before its UART listened",
                    log_path=self.stderr_log,
                )
            self._log.write(chunk)
            pending += chunk
            match = announce.search(pending.decode("latin-1"))
            if match:
                self._log.flush()
                return int(match.group(1))

    def _copy_output(self) -> None:
        assert self.process.stdout is not None
        with self._log:
            for chunk in iter(lambda: self.process.stdout.read1(4096), b""):  # type: ignore[union-attr]
                self._log.write(chunk)
                self._log.flush()


def explain_exit(process: _EmulatorProcess, exc: TargetError) -> TargetError:
    """A link failure because the emulator itself stopped says so (exit status, its output's
    last line); a fault the firmware reported stays as it is."""
    code = process.process.poll()
    if code is None:
        return exc
    output = process.stderr_text().strip().splitlines()
    why = f"{process.what} exited with {code}" + (f" ({output[-1]})" if output else "")
    if "faulted" in exc.message:
        return exc
    return TargetError(f"{exc.message}; {why}", log_path=exc.log_path)
