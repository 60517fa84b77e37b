"""pytest plugin for hardware-in-the-loop benches: a `dut` fixture that runs programs.

    # test_model.py: a HIL bench is a plain pytest file
    def test_model_on_the_board(dut):
        result = dut.run("out/model.pte", [x])        # outputs + timing
        assert result.outputs[0].argmax() == 3

    pytest --target serial --port /dev/ttyACM0 --board corstone300 test_model.py
    pytest --target qemu test_model.py                 # the same file on the emulated board

Options: `--board` (default corstone300), `--target` (qemu, serial, fvp, host; default qemu),
`--port` and `--baud` (serial), `--firmware` (qemu: the ELF to boot; default a firmware with
every kernel, built once). Fixtures of the same names give the values. With `--target serial`
and no board reachable at `--port`, tests that use `dut` are skipped with the reason, never
passed. Each test's target, board and timing go into the JUnit XML (`record_property`).

Link targets keep one session for the whole test session: the board is flashed once and
then driven (QEMU is booted once); a program is sent again only when it changes.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

DEFAULT_BOARD = "corstone300"
DEFAULT_TARGET = "qemu"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sdk", "sdk: run programs on a board (hardware in the loop)")
    group.addoption("--board", default=DEFAULT_BOARD, help="board (boards/<name>/board.yaml)")
    group.addoption(
        "--target", default=DEFAULT_TARGET, help="qemu, serial, fvp or host (default qemu)"
    )
    group.addoption("--port", default=None, help="serial: pyserial URL of the board")
    group.addoption("--baud", type=int, default=None, help="serial: baud rate")
    group.addoption("--firmware", default=None, help="qemu: the firmware ELF to boot")


@pytest.fixture(scope="session")
def board(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--board")


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--target")


@pytest.fixture(scope="session")
def port(request: pytest.FixtureRequest) -> str | None:
    return request.config.getoption("--port")


@pytest.fixture(scope="session")
def baud(request: pytest.FixtureRequest) -> int | None:
    return request.config.getoption("--baud")


@dataclass
class DutResult:
    outputs: list[np.ndarray]
    timing: Any  # sdk.targets.base.Timing


class Dut:
    """The device under test: `run(program, inputs)` on the chosen target, checked by the
    firmware's own record (a failure raises sdk.errors.SdkError)."""

    def __init__(self, target: str, board: str, options: Any, workdir: Path) -> None:
        from sdk.firmware.boards import load_board
        from sdk.targets.run import make_target

        self.target_name = target
        self.board = load_board(board)
        self.target = make_target(target, self.board)
        self.options = options
        self.workdir = workdir
        self.session = None
        self._closers: list = []
        self._runs = 0

    def _link_session(self):
        """The session of a link target, opened on first use and kept."""
        if self.session is not None:
            return self.session
        if self.target_name == "qemu":
            from sdk.firmware.build import build_firmware

            elf = self.options.firmware or build_firmware(
                self.board.name, None, self.workdir / "dut_every_kernel.elf"
            )
            context = self.target.session(
                Path(elf), self.workdir / "qemu", run_timeout_s=self.options.timeout_s
            )
            self.session = context.__enter__()
            self._closers.append(lambda: context.__exit__(None, None, None))
        else:
            self.session = self.target.open(self.options, self.workdir / "link.log")
            self._closers.append(self.session.close)
        return self.session

    def run(
        self, program: Path | str | bytes, inputs: list[np.ndarray], iterations: int = 1
    ) -> DutResult:
        from sdk.program.pte import load_program

        loaded = load_program(program if isinstance(program, bytes) else Path(program))
        self._runs += 1
        if self.target.capabilities().link:
            from sdk.targets.linked import run_linked

            arrays, record = run_linked(
                self._link_session(), loaded, list(inputs), iterations=iterations
            )
            return DutResult(arrays, self.target.timing(*record.ticks()))
        from dataclasses import replace

        options = replace(
            self.options, workdir=self.workdir / f"run{self._runs}", iterations=iterations
        )
        report = self.target.run_program(loaded, list(inputs), options)
        return DutResult(report.outputs, report.timing)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()


@pytest.fixture(scope="session")
def _sdk_dut(target: str, board: str, port: str | None, baud: int | None, request) -> Dut:
    from sdk.errors import SdkError
    from sdk.link.session import DEFAULT_BAUD
    from sdk.targets.base import RunOptions

    firmware = request.config.getoption("--firmware")
    options = RunOptions(
        port=port, baud=baud or DEFAULT_BAUD, firmware=Path(firmware) if firmware else None
    )
    workdir = Path(tempfile.mkdtemp(prefix="sdk-dut-"))
    try:
        dut = Dut(target, board, options, workdir)
    except SdkError as exc:
        raise pytest.UsageError(f"sdk plugin: {exc}") from None
    if target == "serial":
        if not port:
            pytest.skip("--target serial: no --port given, so no board is attached")
        try:
            dut._link_session()
        except SdkError as exc:
            pytest.skip(f"--target serial: no board reachable at {port}: {exc.message}")
    yield dut
    dut.close()


@pytest.fixture
def dut(_sdk_dut: Dut, record_property) -> Dut:
    """The device under test; its target, board and timing land in the JUnit XML."""
    record_property("sdk_target", _sdk_dut.target_name)
    record_property("sdk_board", _sdk_dut.board.name)
    original = _sdk_dut.run

    def run(*args, **kwargs) -> DutResult:
        result = original(*args, **kwargs)
        record_property("sdk_timing_source", result.timing.source)
        if result.timing.run_ticks is not None:
            record_property("sdk_run_ticks", result.timing.run_ticks)
            record_property("sdk_tick_hz", result.timing.tick_hz)
        if result.timing.instructions is not None:
            record_property("sdk_instructions", result.timing.instructions)
        return result

    _sdk_dut.run = run  # type: ignore[method-assign]
    yield _sdk_dut
    _sdk_dut.run = original  # type: ignore[method-assign]
