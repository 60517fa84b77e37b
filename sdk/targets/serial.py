"""The serial target: a real board (or anything serving the host link) behind a pyserial URL.

`/dev/ttyACM0`, `socket://host:port`, `rfc2217://host:port` (labgrid, ser2net),
`hwgrep://SERIAL_NUMBER` (a USB port picked by what it reports, stable across re-enumeration).
The board runs the firmware `sdk build` made (flashed with `sdk flash`); nothing is built or
booted here. The board's facts (has it an NPU) come from board.yaml `targets.serial`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sdk.errors import TargetError, UsageError
from sdk.firmware.boards import Board
from sdk.link.session import LinkSession, Timeouts, open_port
from sdk.program.pte import LoadedProgram
from sdk.targets.base import Availability, Capabilities, RunOptions, RunReport, Timing
from sdk.targets.linked import npu_run_of, run_linked

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


class SerialTarget:
    name = "serial"

    def __init__(self, board: Board) -> None:
        self.board = board
        self.config = board.target("serial")

    def capabilities(self) -> Capabilities:
        return Capabilities(
            preload=False,
            npu=bool(self.config.get("has_npu", False)),
            link=True,
            firmware=True,
        )

    def availability(self, options: RunOptions | None = None) -> Availability:
        """Available when --port names a port that opens (opened and closed again here)."""
        if options is None or not options.port:
            return Availability(False, "no --port given", SERIAL_INSTALL)
        try:
            open_port(options.port, options.baud).close()
        except TargetError as exc:
            return Availability(False, exc.message, SERIAL_INSTALL)
        return Availability(True, f"{options.port} opens")

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

    def open(self, options: RunOptions, log_path: Path | None) -> LinkSession:
        """A session on the board at `options.port` (not yet connected)."""
        if not options.port:
            raise UsageError(
                "--target serial needs --port URL (e.g. /dev/ttyACM0, socket://HOST:PORT, "
                "rfc2217://HOST:PORT, hwgrep://SERIAL)"
            )
        return LinkSession(
            open_port(options.port, options.baud),
            board=self.board.name,
            log_path=log_path,
            timeouts=Timeouts(run=options.timeout_s),
            port_name=options.port,
        )

    def run_program(
        self, program: LoadedProgram, inputs: list[np.ndarray], options: RunOptions
    ) -> RunReport:
        program.check_inputs(inputs)
        workdir = Path(options.workdir or tempfile.mkdtemp(prefix="sdk-serial-")).resolve()
        log_path = workdir / "link.log"
        with self.open(options, log_path) as session:
            arrays, record = run_linked(
                session,
                program,
                inputs,
                iterations=options.iterations,
                tosa_dir=options.tosa_dir,
                npu_executor=options.npu_executor,
            )
        init_ticks, run_ticks, tick_hz = record.ticks()
        return RunReport(
            target=self.name,
            board=self.board.name,
            outputs=arrays,
            timing=self.timing(
                init_ticks,
                run_ticks,
                tick_hz,
                virtual_npu=record.result.virtual_npu_ticks > 0,
                npu_cycles=record.npu_cycles,
            ),
            memory=record.memory,
            npu_run=npu_run_of(session, program),
            log_path=log_path,
        )
