"""The QEMU target: boot the firmware on `qemu-system-arm` as the board's emulator.

Everything QEMU-specific about a board is in board.yaml (`targets.qemu`: binary, machine, args,
link_args, tick rate); this module only assembles command lines and interprets
QEMU's own failures. `run_program` drives the firmware over the host link with UART0 on a TCP
socket, the code path a real board takes (sdk.targets.linked); `session` boots one firmware
for many programs (the kernel tests, the benchmarks).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from sdk.errors import TargetError
from sdk.firmware.boards import Board
from sdk.link.session import LinkSession, Timeouts, open_port
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, Capabilities, RunOptions, RunReport, Timing
from sdk.targets.emulator import LinkProcess, Preload, explain_exit
from sdk.targets.linked import run_on_emulator
from sdk.tools import version_line

TIMING_SOURCE = "QEMU instruction count (-icount)"
# What installs the board's QEMU binary (Debian's package, as scripts/bootstrap.sh installs it).
QEMU_INSTALL = "apt-get install qemu-system-arm"


class QemuTarget:
    name = "qemu"

    def __init__(self, board: Board) -> None:
        self.board = board
        self.config = board.target("qemu")
        self.binary = str(self.config.get("binary", "qemu-system-arm"))
        self.machine = str(self.config["machine"])
        self.args = [str(a) for a in self.config.get("args", [])]

    def capabilities(self) -> Capabilities:
        return Capabilities(
            preload=True,
            npu=bool(self.config.get("has_npu", False)),
            link=True,
            firmware=True,
        )

    def link_command(self, elf: Path, preloads: list[Preload]) -> list[str]:
        """UART0 on the socket passed as `{fd}` (see LinkProcess)."""
        extra = self.config.get("link_args", [])
        command = [self.binary, "-M", self.machine, *self.args, *map(str, extra)]
        command += ["-kernel", str(elf)]
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

    def timing(
        self,
        init_ticks: int,
        run_ticks: int,
        reported_hz: int,
        virtual_npu: bool = False,
        npu_cycles: int | None = None,
    ) -> Timing:
        """QEMU has no NPU: `npu_cycles` is always None here."""
        tick_hz = self.tick_hz(reported_hz)
        return Timing(
            source=TIMING_SOURCE,
            init_ticks=init_ticks,
            run_ticks=run_ticks,
            tick_hz=tick_hz,
            instructions=self.instructions(run_ticks, tick_hz),
            virtual_npu=virtual_npu,
        )

    def _not_found(self) -> Availability:
        return Availability(False, f"{self.binary} not found on PATH", QEMU_INSTALL)

    def availability(self, options: RunOptions | None = None) -> Availability:
        """board.yaml's binary on PATH, named with its `--version` line."""
        path = shutil.which(self.binary)
        if path is None:
            return self._not_found()
        try:
            return Availability(True, f"{path} ({version_line([path, '--version'])})")
        except OSError as exc:
            return Availability(False, f"{path} does not run: {exc}", QEMU_INSTALL)

    def _require_binary(self) -> None:
        # Only the lookup: this runs before every boot, the version is for reports.
        if shutil.which(self.binary) is None:
            raise TargetError(self._not_found().describe())

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        """Build the firmware (unless given), boot it with UART0 on a socket, run over the link."""
        self._require_binary()
        return run_on_emulator(self, program, inputs, options)

    @contextlib.contextmanager
    def session(
        self, elf: Path, workdir: Path, preloads: Sequence[Preload] = (), run_timeout_s: float = 120
    ) -> Iterator[LinkSession]:
        """QEMU booted with `elf`, UART0 on a socket, and a host-link session on it (not yet
        connected); QEMU is stopped when the block ends. A link failure because QEMU itself
        stopped says so."""
        self._require_binary()
        workdir.mkdir(parents=True, exist_ok=True)
        command = self.link_command(elf.resolve(), list(preloads))
        with LinkProcess(command, workdir, self.binary) as qemu:
            session = LinkSession(
                open_port(qemu.url),
                board=self.board.name,
                log_path=workdir / "link.log",
                timeouts=Timeouts(run=run_timeout_s),
                port_name=qemu.url,
                console_log=qemu.console_log,
            )
            try:
                yield session
            except TargetError as exc:
                raise explain_exit(qemu, exc) from None
            finally:
                session.close()
