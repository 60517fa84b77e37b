"""QEMU as a board's power and console: boot the firmware on `qemu-system-arm` with UART0 on a
TCP socket for the host link (a power driver, sdk.targets.drivers).

Everything QEMU-specific about a board is in board.yaml (`targets.qemu`: binary, machine, args,
link_args, tick rate); this module only assembles command lines and words QEMU's own failures.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from sdk.environment.tools import version_line
from sdk.errors import TargetError
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions, Timing
from sdk.targets.drivers import Console
from sdk.targets.emulator import (
    LinkProcess,
    Preload,
    explain_exit,
    input_preloads,
    program_preloads,
)
from sdk.targets.resources import EmulatorBinary

TIMING_SOURCE = "QEMU instruction count (-icount)"
# What installs the board's QEMU binary (Debian's package, as scripts/bootstrap.sh installs it).
QEMU_INSTALL = "apt-get install qemu-system-arm"


class QemuDriver:
    """Power and console of a board emulated by QEMU."""

    def __init__(self, resource: EmulatorBinary) -> None:
        self.resource = resource
        self.npu = resource.npu
        self.binary = resource.binary

    @property
    def counts_instructions(self) -> bool:
        return "-icount" in self.resource.params.get("args", [])

    def link_command(self, elf: Path, preloads: Sequence[Preload]) -> list[str]:
        """UART0 on the socket passed as `{fd}` (see LinkProcess)."""
        params = self.resource.params
        extra = [*params.get("args", []), *params.get("link_args", [])]
        command = [self.binary, "-M", str(params["machine"]), *map(str, extra)]
        command += ["-kernel", str(elf)]
        for preload in preloads:
            command += [
                "-device",
                f"loader,file={preload.path},addr=0x{preload.address:08x},force-raw=on",
            ]
        return command

    def availability(self, options: RunOptions | None = None) -> Availability:
        """board.yaml's binary on PATH, named with its `--version` line."""
        path = shutil.which(self.binary)
        if path is None:
            return self._not_found()
        try:
            return Availability(True, f"{path} ({version_line([path, '--version'])})")
        except OSError as exc:
            return Availability(False, f"{path} does not run: {exc}", QEMU_INSTALL)

    def _not_found(self) -> Availability:
        return Availability(False, f"{self.binary} not found on PATH", QEMU_INSTALL)

    def preflight(self, options: RunOptions) -> None:
        # Only the lookup: this runs before every boot, the version is for reports.
        if shutil.which(self.binary) is None:
            raise TargetError(self._not_found().describe())

    def follow(self, program: LoadedProgram) -> None:
        """QEMU has no NPU: the virtual U55 takes any program's MAC count."""

    def preloads(self, program: LoadedProgram, workdir: Path, options: RunOptions) -> list[Preload]:
        return program_preloads(self.resource, program, workdir, options.bundle, over=0)

    def input_preloads(self, inputs, workdir: Path):
        return input_preloads(self.resource, inputs, workdir)

    @contextlib.contextmanager
    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> Iterator[Console]:
        """QEMU booted with `image`, UART0 on a socket; stopped when the block ends."""
        if image is None:
            raise TargetError("QEMU boots a firmware image: none was given or built")
        self.preflight(options)
        workdir.mkdir(parents=True, exist_ok=True)
        command = self.link_command(Path(image).resolve(), preloads)
        with LinkProcess(command, workdir, self.binary) as qemu:
            yield Console(
                qemu.url,
                options.baud,
                qemu.console_log,
                lambda exc: explain_exit(qemu, exc),
                files=qemu.workdir,  # QEMU's cwd: where its semihosting opens files
            )

    def tick_hz(self, reported_hz: int) -> int:
        return int(self.resource.params.get("tick_hz", reported_hz))

    def instructions(self, run_ticks: int, tick_hz: int) -> int | None:
        """With -icount, virtual time is proportional to instructions: convert the ticks."""
        per_second = self.resource.params.get("instructions_per_second")
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
