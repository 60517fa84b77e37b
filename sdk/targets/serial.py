"""A real board (or anything serving the host link) behind a pyserial URL: its power and
console driver (sdk.targets.drivers).

`/dev/ttyACM0`, `socket://host:port`, `rfc2217://host:port` (labgrid, ser2net),
`hwgrep://SERIAL_NUMBER` (a USB port picked by what it reports, stable across re-enumeration).
The board runs the firmware `sdk build` made (flashed with `sdk flash`); nothing is built or
booted here. The board's facts (its NPU) come from board.yaml `targets.serial`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sdk.errors import TargetError, UsageError
from sdk.link.transport import open_port
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, RunOptions, Timing
from sdk.targets.drivers import Console
from sdk.targets.emulator import Preload
from sdk.targets.resources import SerialPort

TIMING_SOURCE = "board measured cycles (SysTick)"
SERIAL_INSTALL = "connect the board and pass --port URL; `sdk boards` lists the serial ports seen"


@dataclass(frozen=True)
class SeenPort:
    """A serial port this machine has: what --port (or hwgrep://SERIAL) can name."""

    device: str
    description: str
    serial_number: str | None


def seen_ports() -> list[SeenPort]:
    """The serial ports pyserial finds here (USB boards, built-in UARTs), by device name."""
    from serial.tools.list_ports import comports

    ports = [SeenPort(p.device, p.description, p.serial_number) for p in comports()]
    return sorted(ports, key=lambda p: p.device)


class SerialDriver:
    """Power and console of a real board: it is on (its USB powers it) and runs what was
    flashed on it; its console is the port the user named (--port, else the resource's)."""

    def __init__(self, resource: SerialPort) -> None:
        self.resource = resource
        self.npu = resource.npu

    def _url(self, options: RunOptions | None) -> str | None:
        return (options.port if options is not None else None) or self.resource.url

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Available when --port names a port that opens (opened and closed again here)."""
        url = self._url(options)
        if not url:
            return Availability(False, "no --port given", SERIAL_INSTALL)
        baud = (options.baud if options is not None else None) or self.resource.baud
        try:
            open_port(url, baud).close()
        except TargetError as exc:
            return Availability(False, exc.message, SERIAL_INSTALL)
        return Availability(True, f"{url} opens")

    def preflight(self, options: RunOptions) -> None:
        """Only that a port was named: opening a board's port twice may reset it."""
        if not self._url(options):
            raise UsageError(
                "--target serial needs --port URL (e.g. /dev/ttyACM0, socket://HOST:PORT, "
                "rfc2217://HOST:PORT, hwgrep://SERIAL)"
            )

    def follow(self, program: LoadedProgram) -> None:
        """The board's NPU is what it is: a program for another MAC count fails at its load."""

    def preloads(self, program: LoadedProgram, workdir: Path, options: RunOptions) -> list[Preload]:
        return []  # nothing is booted: the program goes over the link

    def input_preloads(self, inputs, workdir: Path):
        return [], {}  # nothing is booted: the inputs go over the link

    @contextlib.contextmanager
    def on(
        self, image: Path | None, workdir: Path, preloads: Sequence[Preload], options: RunOptions
    ) -> Iterator[Console]:
        """The board as it is (`image` None: it runs what was flashed on it)."""
        self.preflight(options)
        url = self._url(options)
        assert url is not None  # preflight
        yield Console(url, options.baud or self.resource.baud)

    def timing(
        self,
        init_ticks: int,
        run_ticks: int,
        tick_hz: int,
        virtual_npu: bool = False,
        npu_cycles: int | None = None,
    ) -> Timing:
        return Timing(
            TIMING_SOURCE, init_ticks, run_ticks, tick_hz, virtual_npu=virtual_npu,
            npu_cycles=npu_cycles,
        )  # fmt: skip
