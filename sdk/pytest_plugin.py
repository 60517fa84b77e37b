"""pytest plugin for hardware-in-the-loop benches: a `dut` fixture that runs programs.

    # test_model.py: a HIL bench is a plain pytest file
    def test_model_on_the_board(dut):
        result = dut.run("out/model.pte", [x])        # outputs + timing
        assert result.outputs[0].argmax() == 3

    pytest --target serial --port /dev/ttyACM0 --board corstone300 test_model.py
    pytest --target qemu test_model.py                 # the same file on the emulated board
    pytest --lg-env env.yaml test_model.py             # the board a lab's labgrid env names

Options: `--board` (default corstone300), `--target` (qemu, serial, fvp, host; default qemu),
`--port` and `--baud` (serial), `--firmware` (qemu: the ELF to boot; default a firmware with
every kernel, built once). Fixtures of the same names give the values (`sdk_target` for
--target: labgrid's plugin owns `target`). With labgrid's `--lg-env` (or $LG_ENV) the `dut` is
the board of labgrid's `target` fixture, its serial port and power driver, and the
environment file works unchanged (the lab acquires its RemotePlace as it always does). When
the target cannot be brought up here (`--target serial` with no board reachable at `--port`,
an emulator not installed), tests that use `dut` are skipped with the reason, never passed.
Each test's target, board and timing go into the JUnit XML (`record_property`).

The target is brought up once for the whole test session (its strategy: QEMU booted once, a
board's port opened once) and then driven; a program is sent again only when it changes.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, replace
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
def sdk_target(request: pytest.FixtureRequest) -> str:
    """--target; `labgrid` with labgrid's --lg-env (its plugin owns the `target` fixture)."""
    if _lg_env(request.config):
        return "labgrid"
    return request.config.getoption("--target")


def _lg_env(config: pytest.Config) -> str | None:
    """labgrid's environment file (--lg-env or $LG_ENV), when labgrid's plugin is active."""
    if not config.pluginmanager.hasplugin("labgrid"):
        return None
    import os

    return config.getoption("lg_env", None) or os.environ.get("LG_ENV")


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
    firmware's own record (a failure raises sdk.errors.SdkError). The target is brought up
    once (its strategy's `up`) and kept for every run of the session."""

    def __init__(self, target: str, board: str, options: Any, workdir: Path) -> None:
        from sdk.firmware.boards import load_board
        from sdk.targets.run import make_target

        self.target_name = target
        self.target = make_target(target, load_board(board), options)
        self.board = self.target.board
        self.options = options
        self.workdir = workdir
        self._stack = contextlib.ExitStack()
        self._running: Any = None
        self.last_timing: Any = None  # of the last sample dut.run_dataset ran

    def bring_up(self) -> Any:
        """The target running (an emulator booted with the firmware to use, a board's port
        open), once; an SdkError when it cannot be."""
        if self._running is None:
            options = replace(self.options, workdir=self.workdir / self.target_name)
            self._running = self._stack.enter_context(self.target.strategy.up(options))
        return self._running

    def run(
        self, program: Path | str | bytes, inputs: list[np.ndarray], iterations: int = 1
    ) -> DutResult:
        from sdk.program.pte import load_program

        loaded = load_program(program if isinstance(program, bytes) else Path(program))
        options = replace(self.options, iterations=iterations)
        report = self.bring_up().run(loaded, list(inputs), options)
        return DutResult(report.outputs, report.timing)

    def run_dataset(self, program: Path | str | bytes, dataset: Path | str) -> Any:
        """Every sample of D.npz (`sdk deploy --dataset`'s format) on the loaded program, one
        run each: a sdk.evaluation.dataset.DatasetResult (the outputs per output, stacked; its
        `evaluate` judges them against references)."""
        from sdk.evaluation.dataset import read_dataset, run_dataset
        from sdk.program.pte import load_program, numpy_dtype

        loaded = load_program(program if isinstance(program, bytes) else Path(program))
        example = [np.zeros(t.shape, numpy_dtype(t.scalar_type)) for t in loaded.inputs()]
        data = read_dataset(Path(dataset), example)
        running = self.bring_up()

        def run_one(x: list[np.ndarray]) -> list[np.ndarray]:
            report = running.run(loaded, x, self.options)
            self.last_timing = report.timing
            return report.outputs

        result = run_dataset(data, run_one)
        if result.interrupted:
            raise KeyboardInterrupt  # Ctrl-C stops the test session, as anywhere else
        return result

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="session")
def _sdk_dut(sdk_target: str, board: str, port: str | None, baud: int | None, request) -> Dut:
    from sdk.errors import SdkError, TargetError, UsageError
    from sdk.targets.base import RunOptions

    firmware = request.config.getoption("--firmware")
    target = sdk_target
    # A lab's labgrid environment: the board labgrid's `target` fixture describes.
    lab_target = request.getfixturevalue("target") if _lg_env(request.config) else None
    options = RunOptions(
        port=port, baud=baud, firmware=Path(firmware) if firmware else None,
        labgrid_target=lab_target,
    )  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="sdk-dut-"))
    try:
        dut = Dut(target, board, options, workdir)
    except SdkError as exc:
        raise pytest.UsageError(f"sdk plugin: {exc}") from None
    try:
        dut.bring_up()
    except (TargetError, UsageError) as exc:  # nothing attached or installed: say so, skip
        dut.close()
        pytest.skip(f"--target {target}: cannot be brought up here: {exc.message}")
    # Anything else (a firmware that does not build) fails the tests, never skips them.
    yield dut
    dut.close()


@pytest.fixture
def dut(_sdk_dut: Dut, record_property) -> Dut:
    """The device under test; its target, board and timing land in the JUnit XML."""
    record_property("sdk_target", _sdk_dut.target_name)
    record_property("sdk_board", _sdk_dut.board.name)
    original = _sdk_dut.run
    original_dataset = _sdk_dut.run_dataset

    def record(timing) -> None:
        record_property("sdk_timing_source", timing.source)
        if timing.run_ticks is not None:
            record_property("sdk_run_ticks", timing.run_ticks)
            record_property("sdk_tick_hz", timing.tick_hz)
        if timing.instructions is not None:
            record_property("sdk_instructions", timing.instructions)

    def run(*args, **kwargs) -> DutResult:
        result = original(*args, **kwargs)
        record(result.timing)
        return result

    def run_dataset(*args, **kwargs):
        result = original_dataset(*args, **kwargs)
        if _sdk_dut.last_timing is not None:
            record(_sdk_dut.last_timing)
        return result

    _sdk_dut.run = run  # type: ignore[method-assign]
    _sdk_dut.run_dataset = run_dataset  # type: ignore[method-assign]
    yield _sdk_dut
    _sdk_dut.run = original  # type: ignore[method-assign]
    _sdk_dut.run_dataset = original_dataset  # type: ignore[method-assign]
